#pragma once
/// @file
/// @brief Topological order of any ComputationGraph (Kahn's algorithm), and cycle detection.

#include <goopt/error.hpp>
#include <goopt/graph/concepts.hpp>

#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <queue>
#include <string>
#include <vector>

namespace goopt::graph {

/// @brief One directed cycle as a list of op indices (v0 -> v1 -> ... -> v0); empty if acyclic.
template <ComputationGraph G> std::vector<std::size_t> find_cycle(const G& g) {
    using traits = computation_graph_traits<G>;
    const std::size_t n = traits::num_ops(g);
    enum : std::uint8_t { white, grey, black };
    std::vector<std::uint8_t> color(n, white);
    // iterative DFS: graphs of 80k ops would overflow a recursive one
    struct frame {
        std::size_t v;
        std::vector<std::size_t> next;
        std::size_t i;
    };
    for (std::size_t root = 0; root < n; ++root) {
        if (color[root] != white) continue;
        std::vector<frame> stack;
        auto push = [&](std::size_t v) {
            color[v] = grey;
            frame f{v, {}, 0};
            for (auto s : traits::successors(g, v)) f.next.push_back(static_cast<std::size_t>(s));
            stack.push_back(std::move(f));
        };
        push(root);
        while (!stack.empty()) {
            frame& f = stack.back();
            if (f.i == f.next.size()) {
                color[f.v] = black;
                stack.pop_back();
                continue;
            }
            const std::size_t s = f.next[f.i++];
            if (color[s] == grey) {  // back edge f.v -> s closes a cycle
                std::vector<std::size_t> cycle;
                for (std::size_t k = stack.size(); k-- > 0;) {
                    cycle.push_back(stack[k].v);
                    if (stack[k].v == s) break;
                }
                return {cycle.rbegin(), cycle.rend()};
            }
            if (color[s] == white) push(s);
        }
    }
    return {};
}

/// @brief A topological order of the ops, smallest index first among the ready ones, so that a
/// graph built in dependency order gets the identity order.
/// @return nullopt when the graph has a cycle.
template <ComputationGraph G> std::optional<std::vector<std::size_t>> try_topological_order(const G& g) {
    using traits = computation_graph_traits<G>;
    const std::size_t n = traits::num_ops(g);
    std::vector<std::uint32_t> pending(n, 0);
    bool in_id_order = true;  // every op after its inputs: the order below is the identity
    for (std::size_t v = 0; v < n; ++v)
        for (auto p : traits::predecessors(g, v)) {
            ++pending[v];
            in_id_order = in_id_order && static_cast<std::size_t>(p) < v;
        }
    if (in_id_order) {  // the common case (a graph built or rewritten op by op), without the queue
        std::vector<std::size_t> order(n);
        std::iota(order.begin(), order.end(), std::size_t{0});
        return order;
    }
    // smallest ready index first: deterministic, and a graph built in dependency order (every op after
    // its inputs, as computation_graph::add guarantees) gets exactly the identity order
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t v = 0; v < n; ++v)
        if (pending[v] == 0) ready.push(v);
    std::vector<std::size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
        const std::size_t v = ready.top();
        ready.pop();
        order.push_back(v);
        for (auto s : traits::successors(g, v))
            if (--pending[static_cast<std::size_t>(s)] == 0) ready.push(static_cast<std::size_t>(s));
    }
    if (order.size() != n) return std::nullopt;
    return order;
}

/// @brief A topological order of the ops; throws goopt::error naming an op on a cycle.
template <ComputationGraph G> std::vector<std::size_t> topological_order(const G& g) {
    if (auto order = try_topological_order(g)) return std::move(*order);
    const std::size_t v = find_cycle(g).front();
    if constexpr (requires { g.describe(v); })
        throw error("graph::topological_order", concat("graph has a cycle through op ", g.describe(v)),
                    "an acyclic graph");
    else throw error("graph::topological_order", concat("graph has a cycle through op ", v), "an acyclic graph");
}

}  // namespace goopt::graph
