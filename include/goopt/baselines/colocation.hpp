#pragma once
/// @file
/// @brief Making a placement respect colocation groups (a parameter, its gradient and its update
/// must share a device), for heuristics that place ops one by one.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/sim/placement.hpp>

#include <unordered_map>

namespace goopt::baselines {

/// Moves every op of a colocation group to one device: that of the group's first op (in id order)
/// with a layer, else of its first op. Heuristics that ignore colocation call this last.
inline void apply_colocation(const graph::computation_graph& g, sim::placement& p) {
    std::unordered_map<std::int32_t, graph::op_id> anchor;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto grp = g.get_op(o).colocation;
        if (grp < 0) continue;
        auto [it, fresh] = anchor.emplace(grp, o);
        if (!fresh && g.get_op(it->second).layer < 0 && g.get_op(o).layer >= 0) it->second = o;
    }
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto grp = g.get_op(o).colocation;
        if (grp >= 0) p[o] = p[anchor.at(grp)];
    }
}

}  // namespace goopt::baselines
