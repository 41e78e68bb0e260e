#pragma once
/// @file
/// @brief The key of a measured op time: an op's configuration (kind, attributes, input and output
/// types), so that every op that a runtime runs the same way shares one measurement (TASO (SOSP'19)
/// §5 measures each distinct configuration once). Names, layers and the op's place in the graph are
/// not part of it.
///
/// An op's key is the kind's name, its attributes in the order of ops::attr_id, then its input and
/// output types (element type and dimensions); an input read from a weight or a constant, or computed
/// from them alone (a product of two weights, a transposed or concatenated weight: a runtime folds
/// it into one constant before the first run, as onnxruntime's constant folding does), is marked
/// `w:`, since a runtime prepares those once (packs a GEMM's matrix, reorders a kernel) and runs the
/// op faster than on an activation of the same type:
/// @code
///   conv2d(activation=1,group=1,kernel=[3,3],...;in=f32[1,3,224,224],w:f32[64,3,3,3];out=f32[1,64,112,112])
/// @endcode
/// A fused group's key lists its members' keys in the group's order and, per member, where each
/// input comes from (the index of the member that produces it, or `-` from outside the group):
/// @code
///   group{conv2d(...)<-,-|relu(...)<0}
/// @endcode
/// Real-valued attributes are written with 17 significant digits, so that two keys are equal exactly
/// when the configurations are.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace goopt::cost {

/// The configuration key of op `o` of `g` (see the file comment).
inline std::string op_config_key(const graph::computation_graph& g, graph::op_id o);

/// The configuration key of the fused group `group` of `g`, run as one kernel (see the file comment).
inline std::string group_config_key(const graph::computation_graph& g, std::span<const graph::op_id> group);

/// Whether op `o` can have a measured time: not a source (graph inputs and weights cost nothing to
/// run) and not an opaque operator (its key cannot tell one foreign operator from another).
inline bool is_measurable(const graph::computation_graph& g, graph::op_id o) {
    const auto& op = g.get_op(o);
    return !op.spec().has(ops::source) && op.kind != ops::op_kind::opaque;
}

// ---- implementation ----

namespace detail {

inline void append_value(std::string& out, const ops::attr_value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) out += std::to_string(*i);
    else if (const auto* r = std::get_if<double>(&v)) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.17g", *r);
        out += buffer;
    } else {
        out += '[';
        const auto& items = std::get<std::vector<std::int64_t>>(v);
        for (std::size_t k = 0; k < items.size(); ++k) (out += k ? "," : "") += std::to_string(items[k]);
        out += ']';
    }
}

/// How many ops deep is_fixed() follows a tensor back to the weights it is computed from: enough for
/// the weight preprocessing that rewrites make (a product of two weights, scaled, transposed or
/// concatenated), while a key costs a bounded walk whatever the graph's depth. A deeper chain of
/// weight-only ops is keyed as an activation (measured as such: slower, never wrong).
inline constexpr int fixed_depth = 4;

/// Whether tensor `t` is a weight or a constant, or computed from them alone within `depth` more
/// ops: a runtime folds the latter into a constant and may prepare either once (pack a GEMM's
/// matrix, reorder a kernel), so the same op runs differently on it than on an activation.
inline bool is_fixed(const graph::computation_graph& g, graph::tensor_id t, int depth = fixed_depth) {
    const auto& p = g.get_op(g.producer(t));
    if (p.spec().has(ops::source)) return p.kind != ops::op_kind::input;
    if (depth == 0 || p.inputs.empty() || p.kind == ops::op_kind::opaque) return false;
    return std::all_of(p.inputs.begin(), p.inputs.end(), [&](graph::tensor_id u) { return is_fixed(g, u, depth - 1); });
}

inline void append_types(std::string& out, const graph::computation_graph& g, std::span<const graph::tensor_id> tensors,
                         bool mark_fixed) {
    for (std::size_t k = 0; k < tensors.size(); ++k) {
        out += k ? "," : "";
        if (mark_fixed && is_fixed(g, tensors[k])) out += "w:";
        out += ops::to_string(g.type_of(tensors[k]));
    }
}

}  // namespace detail

inline std::string op_config_key(const graph::computation_graph& g, graph::op_id o) {
    const auto& op = g.get_op(o);
    std::string key(ops::name(op.kind));
    key += '(';
    bool first = true;
    for (const auto& [id, value] : op.attrs) {
        (key += first ? "" : ",") += ops::name(id);
        key += '=';
        detail::append_value(key, value);
        first = false;
    }
    key += ";in=";
    detail::append_types(key, g, {op.inputs.data(), op.inputs.size()}, true);
    key += ";out=";
    detail::append_types(key, g, {op.outputs.data(), op.outputs.size()}, false);
    key += ')';
    return key;
}

inline std::string group_config_key(const graph::computation_graph& g, std::span<const graph::op_id> group) {
    std::string key = "group{";
    for (std::size_t m = 0; m < group.size(); ++m) {
        (key += m ? "|" : "") += op_config_key(g, group[m]);
        key += "<";
        const auto& inputs = g.get_op(group[m]).inputs;
        for (std::size_t s = 0; s < inputs.size(); ++s) {
            const auto it = std::find(group.begin(), group.end(), g.producer(inputs[s]));
            (key += s ? "," : "") += it == group.end() ? std::string("-") : std::to_string(it - group.begin());
        }
    }
    key += '}';
    return key;
}

}  // namespace goopt::cost
