#pragma once
/// @file
/// @brief Applying a substitution rule to a computation graph: find where its source matches, build
/// the graph with the matched outputs computed by its target instead, and (in test and debug
/// builds) re-check the rewrite on the interpreter at the shapes it is applied at, so that a rule
/// that holds only at the shapes it was found at never silently changes a graph. TASO (SOSP'19) §5.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/rewriting/instantiate.hpp>
#include <goopt/subst/rewriting/pattern_matcher.hpp>
#include <goopt/subst/rewriting/soundness_cache.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <variant>
#include <vector>

namespace goopt::subst {
inline namespace rewriting {

/// @brief Every structural match of `r.source` in `g`, at most `limit`, in a deterministic order (by
/// the graph op that the first source output's op maps to, then by the later choices).
///
/// A source op matches a graph op of the same kind and arity whose attributes agree as
/// attributes_match() says (exact ones equal, axes counted from the end, shape-dependent ones such
/// as split sizes free); a commutative binary op matches either input order; distinct source ops
/// match distinct graph ops; a variable matches a tensor of any rank >= 1 (a scalar variable a
/// scalar), the same tensor wherever it occurs. A match whose target would read a value computed
/// from a matched output (a cycle after the rewrite) is left out. Whether the rule holds at the
/// matched shapes is decided by instantiate() (which apply() runs): a structural match is a
/// candidate, not a licence.
/// @throws goopt::error naming the rule when it has a variable as a source output or does not build
/// at its recorded shapes.
inline std::vector<match> find_matches(const graph::computation_graph& g, const rule& r, std::size_t limit = SIZE_MAX);

/// @brief A rule refused at a match: not proven (nor, where allowed, shown numerically) at the
/// matched shapes, or its target does not build or fit there. A search counts it and moves on; any
/// other goopt::error from apply() is a bad graph or a bug, and propagates.
class rewrite_refused : public error {
public:
    using error::error;
};

/// Knobs of apply(). The same in every build: what a rewrite guarantees does not depend on NDEBUG.
struct rewrite_options {
    /// Also run both sides of the instantiated rule on the float interpreter at the matched shapes
    /// (a second net behind the proof; costs an evaluation of the matched subgraph in double).
    bool check = false;
    std::uint64_t seed = 0x5eed;  ///< inputs of the re-check
    /// The memo of soundness decisions a search shares across its rewrites (nullptr: decide afresh).
    soundness_cache* cache = nullptr;
    soundness_options soundness{};  ///< how the rule is decided at the match (proof, numeric evidence)
};

/// @brief `g` with `r` applied at `m`: the target's ops are added (reading the tensors the variables
/// are bound to), every use of a matched source output and every graph output that is one now uses
/// the target's output, and ops that no longer contribute to an output are removed (graph inputs
/// and weights stay). Names, layers and colocation groups of the remaining ops are kept; a target
/// op takes the layer of the source op whose output it replaces, when it replaces one.
/// The target built is the rule instantiated at the match (instantiate()): it is applied only when
/// the axioms prove it at the matched shapes.
/// @throws subst::rewrite_refused naming the rule when it does not hold or is not proven at the
/// matched shapes, when its target does not fit there, and (opts.check) when the instantiated sides
/// disagree on the interpreter; goopt::error when `g` itself is malformed (a cycle).
inline graph::computation_graph apply(const graph::computation_graph& g, const rule& r, const match& m,
                                      const rewrite_options& opts = {});

// ---- implementation ----

}  // namespace rewriting

inline namespace rewriting {

inline std::vector<match> find_matches(const graph::computation_graph& g, const rule& r, std::size_t limit) {
    std::vector<match> out;
    if (r.source.outputs.empty() || limit == 0) return out;
    std::vector<std::size_t> input_rank;
    try {
        input_rank = detail::source_input_ranks(r);
    } catch (const error& e) {
        throw error(concat("rule '", to_string(r), "': the source does not build at the recorded shapes: ", e.what()));
    }
    detail::pattern_matcher(g, r, std::move(input_rank)).run(limit, out);
    return out;
}

}  // namespace rewriting

namespace detail {

/// Which tensors of the graph the rule replaces: per tensor, the index of the target output that
/// replaces it (-1: none); per target output, the layer of the op whose output it replaces.
struct replaced_tensors {
    std::vector<std::int64_t> by;
    std::vector<std::int32_t> layer_of_output;
};

inline replaced_tensors find_replaced_tensors(const graph::computation_graph& g, const rule& r, const match& m) {
    replaced_tensors rep{std::vector<std::int64_t>(g.num_tensors(), -1),
                         std::vector<std::int32_t>(r.target.outputs.size(), -1)};
    for (std::size_t k = 0; k < r.source.outputs.size(); ++k) {
        const value_ref v = r.source.outputs[k];
        const auto& op = g.get_op(m.ops.at(v.op));
        rep.by[op.outputs.at(v.index)] = static_cast<std::int64_t>(k);
        rep.layer_of_output[k] = op.layer;
    }
    return rep;
}

/// Ops an output depends on once the replaced tensors come from the target (which reads the
/// matched variables), plus every graph input and weight.
inline std::vector<bool> live_ops(const graph::computation_graph& g, const match& m,
                                  const std::vector<std::int64_t>& replaced_by) {
    std::vector<bool> live(g.num_ops(), false);
    std::vector<graph::tensor_id> stack;
    auto need = [&](graph::tensor_id t) {
        if (replaced_by[t] >= 0) {
            for (auto v : m.variables) stack.push_back(v);  // the target reads the variables
        } else {
            stack.push_back(t);
        }
    };
    for (auto t : g.outputs()) need(t);
    while (!stack.empty()) {
        const auto t = stack.back();
        stack.pop_back();
        const auto o = g.producer(t);
        if (live[o]) continue;
        live[o] = true;
        for (auto i : g.get_op(o).inputs) need(i);
    }
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (g.get_op(o).kind == ops::op_kind::input || g.get_op(o).kind == ops::op_kind::weight) live[o] = true;
    return live;
}

/// Builds the rewritten graph: live ops are copied depth first (copy_depth_first), so that an op
/// that reads a replaced tensor comes after the target, and the target (built once, when first
/// needed) after every op its variables need.
class rewritten_graph_builder {
public:
    rewritten_graph_builder(const graph::computation_graph& g, const rule& r, const match& m,
                            const replaced_tensors& rep, const std::string& where)
        : g_(g),
          rule_(r),
          match_(m),
          replaced_(rep),
          where_(where),
          out_(g.name()),
          new_id_(g.num_tensors(), unset),
          state_(g.num_ops(), fresh) {
        out_.reserve(g.num_ops() + r.target.ops.size(), g.num_tensors() + r.target.ops.size());
        for (const auto& op : g.ops()) names_.insert(op.name);
    }

    /// Copies `root` after everything it reads (and the target, if it reads a replaced tensor).
    void copy_depth_first(graph::op_id root);
    /// Adds the target's ops, reading the tensors the variables are bound to (already copied).
    void build_target();
    bool target_built() const noexcept { return !target_out_.empty(); }
    /// The graph, with the original outputs (or what replaces them) marked as outputs.
    graph::computation_graph finish() &&;

private:
    static constexpr graph::tensor_id unset = UINT32_MAX;
    static constexpr graph::op_id target_frame = UINT32_MAX;  // the stack entry that stands for the target
    enum : std::uint8_t { fresh, on_stack, copied };
    struct frame {
        graph::op_id op;
        std::size_t next = 0;
    };

    /// A name unused in the original graph, so that the result keeps names unique.
    std::string fresh_name(ops::op_kind k);
    void copy_op(graph::op_id o);
    /// The new id of an original tensor, or of the target output that replaces it.
    graph::tensor_id map_tensor(graph::tensor_id t) const {
        return replaced_.by[t] >= 0 ? target_out_[static_cast<std::size_t>(replaced_.by[t])] : new_id_[t];
    }

    const graph::computation_graph& g_;
    const rule& rule_;
    const match& match_;
    const replaced_tensors& replaced_;
    const std::string& where_;
    graph::computation_graph out_;
    std::vector<graph::tensor_id> new_id_;      // per original tensor
    std::vector<graph::tensor_id> target_out_;  // new ids of the target's outputs, once built
    std::vector<std::uint8_t> state_;           // per original op
    std::vector<frame> stack_;
    bool target_on_stack_ = false;
    std::unordered_set<std::string> names_;
    std::size_t serial_ = 0;
};

inline std::string rewritten_graph_builder::fresh_name(ops::op_kind k) {
    std::string n;
    do n = "rewritten_" + std::string(ops::name(k)) + "_" + std::to_string(serial_++);
    while (!names_.insert(n).second);
    return n;
}

inline void rewritten_graph_builder::build_target() {
    std::vector<std::vector<graph::tensor_id>> vals;
    auto resolve = [&](value_ref v) {
        if (!v.is_variable()) return vals.at(v.op).at(v.index);
        const auto t = new_id_[match_.variables.at(v.index)];
        if (t == unset)
            throw rewrite_refused(where_, concat("variable ", rule_.variables[v.index].name,
                                                 " is not computed before the target needs it"));
        return t;
    };
    for (std::size_t i = 0; i < rule_.target.ops.size(); ++i) {
        const rule_op& ro = rule_.target.ops[i];
        std::vector<graph::tensor_id> in;
        for (auto v : ro.inputs) in.push_back(resolve(v));
        try {
            const auto ids = out_.add(ro.kind, in, ro.attrs, fresh_name(ro.kind));
            vals.emplace_back(ids.begin(), ids.end());
        } catch (const error& e) {
            throw rewrite_refused(concat(where_, ": the target does not build at the matched shapes: ", e.what()));
        }
    }
    for (std::size_t k = 0; k < rule_.target.outputs.size(); ++k) {
        const auto t = resolve(rule_.target.outputs[k]);
        const value_ref replaced = rule_.source.outputs[k];
        const auto& src = g_.type_of(g_.get_op(match_.ops[replaced.op]).outputs[replaced.index]);
        if (!(out_.type_of(t) == src))
            throw rewrite_refused(where_, concat("target output ", k, " has another type than the output it replaces"),
                                  "the type of the replaced output");
        if (!rule_.target.outputs[k].is_variable() && replaced_.layer_of_output[k] >= 0)
            out_.set_layer(out_.producer(t), replaced_.layer_of_output[k]);
        target_out_.push_back(t);
    }
}

inline void rewritten_graph_builder::copy_op(graph::op_id o) {
    const auto& op = g_.get_op(o);
    std::vector<graph::tensor_id> in;
    for (auto t : op.inputs) in.push_back(map_tensor(t));
    const auto ids = out_.add(op.kind, in, op.attrs, op.name);
    const auto id = out_.producer(ids[0]);
    out_.set_layer(id, op.layer);
    out_.set_colocation(id, op.colocation);
    for (std::size_t k = 0; k < ids.size(); ++k) new_id_[op.outputs[k]] = ids[k];
}

inline void rewritten_graph_builder::copy_depth_first(graph::op_id root) {
    if (state_[root] != fresh) return;
    stack_.push_back({root});
    state_[root] = on_stack;
    while (!stack_.empty()) {
        frame& f = stack_.back();
        // what the frame's op (or the target) needs next
        std::optional<graph::tensor_id> need;
        if (f.op == target_frame) {
            if (f.next < match_.variables.size()) need = match_.variables[f.next++];
        } else if (f.next < g_.get_op(f.op).inputs.size()) {
            need = g_.get_op(f.op).inputs[f.next++];
        }
        if (!need) {
            if (f.op == target_frame) {
                build_target();
                target_on_stack_ = false;
            } else {
                copy_op(f.op);
                state_[f.op] = copied;
            }
            stack_.pop_back();
            continue;
        }
        if (replaced_.by[*need] >= 0) {
            if (target_built()) continue;
            if (target_on_stack_)
                throw rewrite_refused(where_, "the target would read a value computed from what it replaces");
            target_on_stack_ = true;
            stack_.push_back({target_frame});
            continue;
        }
        const auto p = g_.producer(*need);
        if (state_[p] == copied) continue;
        // apply() ordered the graph first (a cycle of its own throws there), so a cycle found here
        // runs through the target: entered at an op on it, not at the target
        if (state_[p] == on_stack)
            throw rewrite_refused(
                where_,
                concat("the target would read a value computed from what it replaces (through ", g_.describe(p), ")"));
        state_[p] = on_stack;
        stack_.push_back({p});
    }
}

inline graph::computation_graph rewritten_graph_builder::finish() && {
    for (auto t : g_.outputs()) out_.mark_output(map_tensor(t));
    return std::move(out_);
}

}  // namespace detail

inline namespace rewriting {

inline graph::computation_graph apply(const graph::computation_graph& g, const rule& given, const match& m,
                                      const rewrite_options& opts) {
    const std::string where = concat("rewrite with rule '", to_string(given), "'");
    std::optional<soundness_cache::decision> own;
    if (!opts.cache) own = decide_soundness(g, given, m, opts.soundness);
    const auto& decided = opts.cache ? opts.cache->decide(g, given, m, opts.soundness) : *own;
    if (const auto* why = std::get_if<std::string>(&decided))
        throw rewrite_refused(where, concat("not applied at this match: ", *why));
    const rule& r = std::get<rule>(decided);  // the rule at the matched shapes, sound there
    if (opts.check) {
        std::mt19937_64 rng(opts.seed);
        if (auto why = check_rule(r, rng, 1))
            throw rewrite_refused(where, concat("changes the graph's values at the matched shapes: ", *why));
    }
    const detail::replaced_tensors replaced = detail::find_replaced_tensors(g, r, m);
    const std::vector<bool> live = detail::live_ops(g, m, replaced.by);
    detail::rewritten_graph_builder builder(g, r, m, replaced, where);
    for (graph::op_id o : graph::topological_order(g))
        if (live[o]) builder.copy_depth_first(o);
    for (auto t : g.outputs())  // an output replaced by the target, which no live op reads
        if (replaced.by[t] >= 0 && !builder.target_built()) builder.build_target();
    return std::move(builder).finish();
}

}  // namespace rewriting
}  // namespace goopt::subst
