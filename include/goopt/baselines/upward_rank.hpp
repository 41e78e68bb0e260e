#pragma once
/// @file
/// @brief Upward rank (HEFT, Topcuoglu, Hariri, Wu, IEEE TPDS 2002, §4.1): the length of the longest
/// path from an op to an exit, counting op and communication costs. List schedulers run the op with
/// the largest rank first.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>

#include <algorithm>
#include <concepts>
#include <vector>

namespace goopt::baselines {

/// @brief rank(o) = w(o) + max over consumers s of o's outputs t of (c(t, o, s) + rank(s)).
/// @param w callable op id -> seconds of the op
/// @param c callable (tensor id, producer op, consumer op) -> seconds to move the tensor (0 when local)
/// @throws goopt::error when the graph has a cycle.
template <class OpCost, class EdgeCost>
requires std::invocable<OpCost&, graph::op_id> &&
    std::invocable<EdgeCost&, graph::tensor_id, graph::op_id, graph::op_id>
        std::vector<double> upward_rank(const graph::computation_graph& g, OpCost w, EdgeCost c) {
    const auto order = graph::topological_order(g);
    std::vector<double> rank(g.num_ops(), 0.0);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const auto o = static_cast<graph::op_id>(*it);
        double tail = 0;
        for (graph::tensor_id t : g.get_op(o).outputs)
            for (const graph::use& u : g.get_tensor(t).uses)
                tail = std::max(tail, static_cast<double>(c(t, o, u.op)) + rank[u.op]);
        rank[o] = static_cast<double>(w(o)) + tail;
    }
    return rank;
}

}  // namespace goopt::baselines
