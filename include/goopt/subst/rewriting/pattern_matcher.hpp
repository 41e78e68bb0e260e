#pragma once
/// @file
/// @brief The backtracking matcher behind subst::find_matches(): binds a rule's source ops and
/// variables to graph ops and tensors, undoing bindings on failure. TASO (SOSP'19) §5.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/rewriting/cycle_check.hpp>
#include <goopt/subst/rewriting/instantiate.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace goopt::subst::detail {

/// Rank of each source op's first input at the rule's recorded shapes: the matcher's anchor for
/// counting axes from the end. @throws goopt::error when the source does not build at those shapes.
inline std::vector<std::size_t> source_input_ranks(const rule& r) {
    const auto types = side_types(r.source, recorded_types(r));
    std::vector<std::size_t> ranks;
    ranks.reserve(r.source.ops.size());
    for (const auto& o : r.source.ops)
        ranks.push_back(o.inputs.empty()            ? 0
                        : o.inputs[0].is_variable() ? r.variables.at(o.inputs[0].index).dims.rank()
                                                    : types.at(o.inputs[0].op).at(o.inputs[0].index).dims.rank());
    return ranks;
}

/// A non-owning reference to a `void()` callable, two pointers wide: the matcher's continuations.
/// Not a template parameter, because each level's continuation wraps the one before (bind_inputs
/// calls bind with a lambda over its own continuation), which would instantiate without end; not
/// std::function, which allocates for those captures on every binding tried.
class continuation {
public:
    template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, continuation>) &&
        std::invocable<const F&> continuation(
            F&& f) noexcept  // NOLINT(google-explicit-constructor): a lambda converts in place
        : callable_(static_cast<const void*>(std::addressof(f))),
    call_([](const void* c) { (*static_cast<const std::remove_reference_t<F>*>(c))(); }) {}
    void operator()() const { call_(callable_); }

private:
    const void* callable_;
    void (*call_)(const void*);
};

/// Backtracking matcher: binds rule values to graph tensors, undoing bindings on failure.
class pattern_matcher {
public:
    pattern_matcher(const graph::computation_graph& g, const rule& r, std::vector<std::size_t> input_rank)
        : g_(g),
          r_(r),
          input_rank_(std::move(input_rank)),
          op_of_(r.source.ops.size(), unbound),
          var_of_(r.variables.size(), unbound),
          used_(g.num_ops(), false) {}

    void run(std::size_t limit, std::vector<match>& out) {
        limit_ = limit;
        out_ = &out;
        match_output(0);
    }

private:
    static constexpr std::uint32_t unbound = UINT32_MAX;

    /// Matches source output `k` (and then the rest), trying every graph tensor when its op is
    /// not bound yet by an earlier output.
    void match_output(std::size_t k) {
        if (out_->size() >= limit_) return;
        if (k == r_.source.outputs.size()) return record();
        const value_ref v = r_.source.outputs[k];
        if (v.is_variable())
            throw error(concat("rule '", to_string(r_), "'"), "a source output is a variable", "an op output");
        if (op_of_[v.op] != unbound) {
            const auto t = g_.get_op(op_of_[v.op]).outputs.at(v.index);
            bind(v, t, [&] { match_output(k + 1); });
            return;
        }
        for (graph::op_id o = 0; o < g_.num_ops() && out_->size() < limit_; ++o) {
            const auto& op = g_.get_op(o);
            if (op.kind != r_.source.ops[v.op].kind || v.index >= op.outputs.size()) continue;
            bind(v, op.outputs[v.index], [&] { match_output(k + 1); });
        }
    }

    /// Binds rule value `v` to graph tensor `t`, then calls `next`; undoes what it bound.
    void bind(value_ref v, graph::tensor_id t, continuation next) {
        if (v.is_variable()) {
            auto& slot = var_of_[v.index];
            if (slot != unbound) {
                if (slot == t) next();
                return;
            }
            if ((g_.type_of(t).dims.rank() == 0) != (r_.variables[v.index].dims.rank() == 0)) return;
            slot = t;
            next();
            slot = unbound;
            return;
        }
        const rule_op& ro = r_.source.ops[v.op];
        const graph::op_id o = g_.producer(t);
        const auto& go = g_.get_op(o);
        if (v.index >= go.outputs.size() || go.outputs[v.index] != t) return;  // another output, or another kind of op
        if (op_of_[v.op] != unbound) {
            if (op_of_[v.op] == o) next();
            return;
        }
        if (used_[o] || go.kind != ro.kind || go.inputs.size() != ro.inputs.size()) return;
        const std::size_t rank = go.inputs.empty() ? 0 : g_.type_of(go.inputs[0]).dims.rank();
        if (!attributes_match(ro.kind, ro.attrs, input_rank_[v.op], go.attrs, rank)) return;
        op_of_[v.op] = o;
        used_[o] = true;
        bind_inputs(ro, go, 0, false, next);
        if (ops::spec(ro.kind).has(ops::commutative) && ro.inputs.size() == 2) bind_inputs(ro, go, 0, true, next);
        used_[o] = false;
        op_of_[v.op] = unbound;
    }

    void bind_inputs(const rule_op& ro, const graph::op& go, std::size_t i, bool swapped, continuation next) {
        if (i == ro.inputs.size()) return next();
        const std::size_t gi = swapped ? ro.inputs.size() - 1 - i : i;
        bind(ro.inputs[i], go.inputs[gi], [&] { bind_inputs(ro, go, i + 1, swapped, next); });
    }

    void record() {
        match m;
        m.ops.assign(op_of_.begin(), op_of_.end());
        m.variables.assign(var_of_.begin(), var_of_.end());
        for (auto o : m.ops)
            if (o == unbound) return;  // a source op no output reaches: not a well-formed rule side
        for (auto t : m.variables)
            if (t == unbound) {
                // a variable only the target reads (e.g. a => ewmul(a, const)) cannot be bound here
                return;
            }
        if (std::find(out_->begin(), out_->end(), m) != out_->end()) return;  // commutative twin
        if (cycles_.cyclic_after_rewrite(r_, m.ops, m.variables)) return;
        out_->push_back(std::move(m));
    }

    const graph::computation_graph& g_;
    const rule& r_;
    std::vector<std::size_t> input_rank_;  // per source op, the rank of its first input where the rule was found
    std::vector<std::uint32_t> op_of_;     // source op -> graph op
    std::vector<std::uint32_t> var_of_;    // variable -> graph tensor
    std::vector<bool> used_;
    std::size_t limit_ = 0;
    std::vector<match>* out_ = nullptr;
    cycle_check cycles_{g_};  // a match whose target would read what it replaces is left out
};

}  // namespace goopt::subst::detail
