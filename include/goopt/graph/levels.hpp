#pragma once
/// @file
/// @brief Levels (longest distance in edges from a source op), the "topological position" feature of
/// GO's node features and the wavefronts a list scheduler sees.

#include <goopt/graph/concepts.hpp>
#include <goopt/graph/topological_order.hpp>

#include <algorithm>
#include <vector>

namespace goopt::graph {

/// @brief level[v] = 0 for ops without inputs, else 1 + the largest level of a predecessor.
/// Throws goopt::error on a cyclic graph.
template <ComputationGraph G> std::vector<std::size_t> levels(const G& g) {
    using traits = computation_graph_traits<G>;
    std::vector<std::size_t> level(traits::num_ops(g), 0);
    for (std::size_t v : topological_order(g))
        for (auto p : traits::predecessors(g, v)) level[v] = std::max(level[v], level[static_cast<std::size_t>(p)] + 1);
    return level;
}

}  // namespace goopt::graph
