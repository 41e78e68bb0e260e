#pragma once
/// @file
/// @brief A small graph over the variables of a subst::world, compact enough to keep millions of:
/// what the generator enumerates. Attributes are indices into the world's attribute choices.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/world.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace goopt::subst {

/// `op` of a value_ref that names a variable (its `index` is then the variable's index).
inline constexpr std::uint16_t variable_op = 0xffff;

/// A value of a pattern: output `index` of op `op`, or variable `index` when op == variable_op.
struct value_ref {
    std::uint16_t op = variable_op;
    std::uint16_t index = 0;
    bool is_variable() const noexcept { return op == variable_op; }
    friend constexpr bool operator==(const value_ref&, const value_ref&) = default;
    friend constexpr auto operator<=>(const value_ref&, const value_ref&) = default;
};

/// One op of a pattern; its attributes are choice `choice` of its kind in the world.
struct pattern_op {
    ops::op_kind kind{};
    std::uint16_t choice = 0;
    std::uint16_t num_outputs = 1;
    std::vector<value_ref> inputs;  // (a small_vector here trips GCC 12 -Wstringop-overread false positives)
};

/// A graph of a few ops in topological order (an op reads only variables and earlier ops) and its
/// outputs: every op output that no op of the pattern reads.
struct pattern {
    std::vector<pattern_op> ops;
    std::vector<value_ref> outputs;
};

/// The outputs of `p`'s ops that no op reads, in op order: what an enumerated graph returns.
inline std::vector<value_ref> unread_values(const pattern& p);

/// Indices of the variables `p` reads or returns, ascending (a side without ops returns variables).
inline std::vector<std::uint16_t> used_variables(const pattern& p);

/// @brief Exact values of every op output of `p` on the given variable values.
/// @return per op, its outputs. @throws goopt::error when a shape rule or the evaluator rejects an op.
inline std::vector<std::vector<mod_tensor>> evaluate_pattern(const world& w, const pattern& p,
                                                             std::span<const mod_tensor> variables);

/// @brief `p` as a computation graph: an `input` op per used variable (named as the variable, shaped
/// as in `w`), the ops, p.outputs marked as graph outputs in order.
/// @throws goopt::error when a shape rule rejects an op at `w`'s shapes.
inline graph::computation_graph to_graph(const world& w, const pattern& p);

// ---- implementation ----

inline std::vector<value_ref> unread_values(const pattern& p) {
    std::vector<value_ref> out;
    for (std::uint16_t o = 0; o < p.ops.size(); ++o)
        for (std::uint16_t i = 0; i < p.ops[o].num_outputs; ++i) {
            const value_ref v{o, i};
            bool read = false;
            for (const auto& q : p.ops) read = read || std::find(q.inputs.begin(), q.inputs.end(), v) != q.inputs.end();
            if (!read) out.push_back(v);
        }
    return out;
}

inline std::vector<std::uint16_t> used_variables(const pattern& p) {
    std::vector<std::uint16_t> vs;
    for (const auto& o : p.ops)
        for (const auto& v : o.inputs)
            if (v.is_variable()) vs.push_back(v.index);
    for (const auto& v : p.outputs)
        if (v.is_variable()) vs.push_back(v.index);
    std::sort(vs.begin(), vs.end());
    vs.erase(std::unique(vs.begin(), vs.end()), vs.end());
    return vs;
}

inline std::vector<std::vector<mod_tensor>> evaluate_pattern(const world& w, const pattern& p,
                                                             std::span<const mod_tensor> variables) {
    std::vector<std::vector<mod_tensor>> vals;
    vals.reserve(p.ops.size());
    boost::container::small_vector<const mod_tensor*, 2> args;
    boost::container::small_vector<ops::tensor_type, 2> types;
    for (const auto& o : p.ops) {
        args.clear();
        types.clear();
        for (const auto& v : o.inputs) {
            const mod_tensor* t = v.is_variable() ? &variables[v.index] : &vals[v.op][v.index];
            args.push_back(t);
            types.push_back(ops::tensor_type{t->dims});
        }
        const auto& attrs = w.attributes(o.kind, o.choice);
        const auto out = ops::spec(o.kind).infer(std::span<const ops::tensor_type>(types.data(), types.size()), attrs);
        vals.push_back(
            evaluate_modular(o.kind, attrs, std::span<const mod_tensor* const>(args.data(), args.size()), out));
    }
    return vals;
}

inline graph::computation_graph to_graph(const world& w, const pattern& p) {
    graph::computation_graph g;
    std::vector<graph::tensor_id> var(w.variables.size(), 0);
    for (auto v : used_variables(p)) var[v] = g.input(w.variables[v].name, w.variables[v].dims);
    std::vector<std::vector<graph::tensor_id>> outs;
    std::vector<graph::tensor_id> in;
    for (const auto& o : p.ops) {
        in.clear();
        for (const auto& v : o.inputs) in.push_back(v.is_variable() ? var[v.index] : outs[v.op][v.index]);
        const auto ids = g.add(o.kind, in, w.attributes(o.kind, o.choice));
        outs.emplace_back(ids.begin(), ids.end());
    }
    for (const auto& v : p.outputs) g.mark_output(v.is_variable() ? var[v.index] : outs[v.op][v.index]);
    return g;
}

}  // namespace goopt::subst
