#pragma once
/// @file
/// @brief Critical path under a per-op cost: the lower bound on step time with unlimited devices and
/// free communication, used by list schedulers (upward rank) and as a sanity bound for the simulator.

#include <goopt/error.hpp>
#include <goopt/graph/concepts.hpp>
#include <goopt/graph/topological_order.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <string>
#include <vector>

namespace goopt::graph {

struct critical_path_result {
    double length = 0;              ///< sum of the costs along the path
    std::vector<std::size_t> path;  ///< ops from a source to a sink, in execution order
    std::vector<double> finish;     ///< earliest finish time of every op (start of its longest chain + own cost)
};

/// @brief Longest path where each op weighs cost(v) (edges are free).
/// @param cost callable op index -> non-negative finite double; a negative or NaN cost is bad
///        input and raises goopt::error naming the op.
template <ComputationGraph G, class Cost>
requires std::invocable<Cost&, std::size_t> critical_path_result critical_path(const G& g, Cost cost) {
    using traits = computation_graph_traits<G>;
    const std::size_t n = traits::num_ops(g);
    critical_path_result r;
    r.finish.assign(n, 0.0);
    std::vector<std::size_t> via(n, n);
    for (std::size_t v : topological_order(g)) {
        const double c = static_cast<double>(cost(v));
        if (!(c >= 0) || !std::isfinite(c))
            throw error("graph::critical_path", concat("op ", v, " has cost ", c), "a finite value >= 0");
        double start = 0;
        for (auto p : traits::predecessors(g, v)) {
            const auto u = static_cast<std::size_t>(p);
            if (via[v] == n || r.finish[u] > start) {
                start = r.finish[u];
                via[v] = u;
            }
        }
        r.finish[v] = start + c;
    }
    if (n == 0) return r;
    std::size_t end = static_cast<std::size_t>(std::max_element(r.finish.begin(), r.finish.end()) - r.finish.begin());
    r.length = r.finish[end];
    for (std::size_t v = end; v != n; v = via[v]) r.path.push_back(v);
    std::reverse(r.path.begin(), r.path.end());
    return r;
}

}  // namespace goopt::graph
