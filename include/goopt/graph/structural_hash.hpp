#pragma once
/// @file
/// @brief A hash of a graph's structure that does not depend on op ids or names: the substitution
/// search uses it to skip graphs it has already seen (TASO §5 keeps a set of graph hashes).

#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/concepts.hpp>
#include <goopt/graph/topological_order.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace goopt::graph {

namespace detail {
/// splitmix64 finalizer: a cheap, well-mixed combination step.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Order-independent combination of per-op hashes.
inline std::uint64_t combine_sorted(std::vector<std::uint64_t>& cone) {
    std::sort(cone.begin(), cone.end());
    std::uint64_t h = mix64(cone.size());
    for (auto c : cone) h = mix64(h ^ c);
    return h;
}
}  // namespace detail

/// @brief Hash of every op's "cone": its label and, in input-slot order, the hashes of its inputs'
/// cones; the graph's hash combines the sorted multiset of all cone hashes. Renumbering or renaming
/// ops leaves it unchanged; changing a kind, an attribute, a shape or a wiring changes it (up to
/// 64-bit collisions). Graph inputs of the same type are interchangeable to it, as in TASO's
/// fingerprints. Throws goopt::error on a cyclic graph.
template <ComputationGraph G> std::uint64_t structural_hash(const G& g) {
    using traits = computation_graph_traits<G>;
    std::vector<std::uint64_t> cone(traits::num_ops(g), 0);
    for (std::size_t v : topological_order(g)) {
        std::uint64_t h = detail::mix64(static_cast<std::uint64_t>(traits::op_label(g, v)));
        for (auto p : traits::predecessors(g, v)) h = detail::mix64(h ^ cone[static_cast<std::size_t>(p)]);
        cone[v] = h;
    }
    return detail::combine_sorted(cone);
}

/// The same hash for goopt's own graph, where an input also says which output of a multi-output
/// producer it reads (split's pieces of equal shape are not interchangeable).
inline std::uint64_t structural_hash(const computation_graph& g) {
    std::vector<std::uint64_t> cone(g.num_ops(), 0);
    for (std::size_t v : topological_order(g)) {
        std::uint64_t h = detail::mix64(g.op_label(static_cast<op_id>(v)));
        for (tensor_id t : g.get_op(static_cast<op_id>(v)).inputs) {
            const auto& in = g.get_tensor(t);
            h = detail::mix64(h ^ detail::mix64(cone[in.producer] + in.index));
        }
        cone[v] = h;
    }
    return detail::combine_sorted(cone);
}

}  // namespace goopt::graph
