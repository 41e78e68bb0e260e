#pragma once
/// @file
/// @brief Rule-based greedy fusion as XLA's basic instruction fusion does it: an elementwise op joins
/// the fused kernel of a producer on the same device, where sim::can_fuse allows it.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/fusion_legality.hpp>
#include <goopt/sim/placement.hpp>

#include <span>
#include <vector>

namespace goopt::baselines {

/// @brief Fusion groups for sim::simulation_options::fusion.
///
/// In topological order, an elementwise op joins the group of the producer of its first input that
/// is a non-source op on the same device and may take it (sim::can_fuse: a contraction takes its
/// elementwise epilogue, a reduction takes nothing; a producer alone starts a group, with the
/// producer's id). Only a group's first op can be a contraction or a reduction, and every other
/// member is elementwise and reads a member, so every group passes sim::fusion_check.
/// Legality without reachability queries: each group's rank is its first op's topological position,
/// and an op may join group G only if every other op it reads from (sources excepted) lies in a group
/// of smaller rank. Then every edge between groups goes from a smaller rank to a larger one, so the
/// contracted graph is acyclic and every group is convex.
inline sim::fusion_groups greedy_fusion(const graph::computation_graph& g, std::span<const sim::device_id> placement) {
    const std::size_t n = g.num_ops();
    const auto topo = graph::topological_order(g);
    std::vector<std::size_t> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[topo[i]] = i;
    sim::fusion_groups group(n, sim::no_group);
    auto rank_of = [&](graph::op_id o) { return group[o] < 0 ? pos[o] : pos[static_cast<std::size_t>(group[o])]; };
    auto is_source = [&](graph::op_id o) { return g.get_op(o).spec().has(ops::source); };
    for (std::size_t v : topo) {
        const auto o = static_cast<graph::op_id>(v);
        const auto& x = g.get_op(o);
        if (!x.spec().has(ops::elementwise) || x.spec().has(ops::source)) continue;
        for (graph::tensor_id t : x.inputs) {
            const graph::op_id p = g.producer(t);
            if (is_source(p) || placement[p] != placement[o] || !sim::can_fuse(g.get_op(p).spec(), x.spec())) continue;
            const std::int32_t target = group[p] < 0 ? static_cast<std::int32_t>(p) : group[p];
            const std::size_t rank = pos[static_cast<std::size_t>(target)];
            bool legal = true;
            for (graph::tensor_id u : x.inputs) {
                const graph::op_id q = g.producer(u);
                if (is_source(q) || q == p || group[q] == target) continue;
                if (rank_of(q) >= rank) legal = false;
            }
            if (!legal) continue;
            group[p] = target;
            group[o] = target;
            break;
        }
    }
    return group;
}

}  // namespace goopt::baselines
