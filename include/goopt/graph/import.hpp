#pragma once
/// @file
/// @brief The boundary between a user's own graph type and goopt: graph::import copies any
/// ImportableGraph into a goopt computation_graph and keeps an id map, so that every decision goopt
/// takes on the copy (placement, priorities, fusion groups, rewrites) can be read back in the user's ids.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/concepts.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>

#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace goopt::graph {

/// A ComputationGraph that also says what each op computes, which is what goopt needs to copy it:
/// @code
///   computation_graph_traits<G>::op_kind(g, v)       -> ops::op_kind
///   computation_graph_traits<G>::op_attributes(g, v) -> ops::attribute_map  // sources: shape, dtype
///   computation_graph_traits<G>::op_name(g, v)       -> std::string          // optional, unique
/// @endcode
/// predecessors(g, v) lists v's inputs in order; each names an op with exactly one output (the
/// concept names ops, not tensors, so a multi-output producer cannot be told apart and is refused).
template <class G>
concept ImportableGraph = ComputationGraph<G> && requires(const G& g, std::size_t v) {
    { computation_graph_traits<G>::op_kind(g, v) } -> std::convertible_to<ops::op_kind>;
    { computation_graph_traits<G>::op_attributes(g, v) } -> std::convertible_to<ops::attribute_map>;
};

/// Op ids on both sides of graph::import (a permutation: goopt adds ops in topological order).
struct id_map {
    std::vector<op_id> to_goopt;       ///< per user op index: its op id in the imported graph
    std::vector<std::size_t> to_user;  ///< per imported op id: the user's op index
};

/// What graph::import returns: goopt's copy of the user's graph and the ids that relate them.
struct imported_graph {
    computation_graph graph;
    id_map ids;
};

/// @brief Copies `user` into a goopt graph: ops in topological order, named by the traits' op_name
/// (else "op<index>"), every unused output of a non-source op marked as a graph output.
/// @throws goopt::error for a cycle, an input index out of range, a multi-output producer, a
/// duplicate name, or an op goopt refuses (wrong input count, bad attributes, shapes that do not fit).
template <ImportableGraph G> imported_graph import(const G& user);

/// @brief `per_op` (indexed by imported op id) in the user's op order, e.g. a placement or priorities;
/// empty stays empty. @throws goopt::error if its size is not the number of ops.
template <std::copyable T> std::vector<T> to_user_order(const id_map& ids, std::span<const T> per_op);

/// @brief For each op of `rewritten` (a graph derived from imported.graph, e.g. by subst::apply,
/// which keeps the names of the ops it copies), the user's index of the op it is, or nullopt for an
/// op the rewrite created.
inline std::vector<std::optional<std::size_t>> user_ids_of(const imported_graph& imported,
                                                           const computation_graph& rewritten);

// ---- implementation ----

namespace detail {
template <class G>
concept has_op_name = requires(const G& g, std::size_t v) {
    { computation_graph_traits<G>::op_name(g, v) } -> std::convertible_to<std::string>;
};

template <ImportableGraph G> std::string import_op_name(const G& user, std::size_t v) {
    if constexpr (has_op_name<G>) return std::string(computation_graph_traits<G>::op_name(user, v));
    else return concat("op", v);
}

/// The imported tensor an input edge from user op `p` reads: the one output of p's copy.
inline tensor_id import_input(const computation_graph& out, const id_map& ids, std::size_t p,
                              const std::string& where) {
    const op_id producer = ids.to_goopt[p];
    const auto& outputs = out.get_op(producer).outputs;
    if (outputs.size() != 1)
        throw error(where, concat("input from ", out.describe(producer), " which has ", outputs.size(), " outputs"),
                    "an op with one output (ComputationGraph edges name ops, not tensors)");
    return outputs[0];
}
}  // namespace detail

template <ImportableGraph G> imported_graph import(const G& user) {
    using traits = computation_graph_traits<G>;
    const std::size_t n = traits::num_ops(user);
    const std::vector<std::size_t> order = topological_order(user);  // throws on a cycle
    imported_graph r;
    r.ids.to_goopt.assign(n, no_op);
    r.ids.to_user.reserve(n);
    std::unordered_set<std::string> names;
    for (const std::size_t v : order) {
        std::string name = detail::import_op_name(user, v);
        const std::string where = concat("graph::import: user op ", v, " '", name, "'");
        if (!names.insert(name).second) throw error(where, "duplicate name", "unique op names");
        std::vector<tensor_id> inputs;
        for (const auto p : traits::predecessors(user, v)) {
            if (std::cmp_less(p, 0) || std::cmp_greater_equal(p, n))
                throw error(where, concat("input op index ", p, " out of range"), concat("0..", n, " (exclusive)"));
            inputs.push_back(detail::import_input(r.graph, r.ids, static_cast<std::size_t>(p), where));
        }
        try {
            r.graph.add(static_cast<ops::op_kind>(traits::op_kind(user, v)), std::span<const tensor_id>(inputs),
                        static_cast<ops::attribute_map>(traits::op_attributes(user, v)), std::move(name));
        } catch (const error& e) {
            throw error(concat(where, ": ", e.what()));
        }
        r.ids.to_goopt[v] = static_cast<op_id>(r.ids.to_user.size());
        r.ids.to_user.push_back(v);
    }
    for (op_id o = 0; o < r.graph.num_ops(); ++o) {
        if (r.graph.get_op(o).spec().has(ops::source)) continue;
        for (const tensor_id t : r.graph.get_op(o).outputs)
            if (r.graph.get_tensor(t).uses.empty()) r.graph.mark_output(t);
    }
    return r;
}

template <std::copyable T> std::vector<T> to_user_order(const id_map& ids, std::span<const T> per_op) {
    if (per_op.empty()) return {};
    if (per_op.size() != ids.to_user.size())
        throw error("graph::to_user_order", concat(per_op.size(), " values"),
                    concat("one per op (", ids.to_user.size(), ")"));
    std::vector<T> r(per_op.size());
    for (std::size_t o = 0; o < per_op.size(); ++o) r[ids.to_user[o]] = per_op[o];
    return r;
}

inline std::vector<std::optional<std::size_t>> user_ids_of(const imported_graph& imported,
                                                           const computation_graph& rewritten) {
    std::unordered_map<std::string_view, std::size_t> by_name;
    for (op_id o = 0; o < imported.graph.num_ops(); ++o)
        by_name.emplace(imported.graph.get_op(o).name, imported.ids.to_user[o]);
    std::vector<std::optional<std::size_t>> r(rewritten.num_ops());
    for (op_id o = 0; o < rewritten.num_ops(); ++o)
        if (const auto it = by_name.find(rewritten.get_op(o).name); it != by_name.end()) r[o] = it->second;
    return r;
}

}  // namespace goopt::graph
