#pragma once
/// @file
/// @brief The cost a substitution search minimizes: the time of the ops that run per inference.
/// Ops computed from weights and constants only are weight preprocessing, folded once before
/// inference (TASO's preprocess_weights), and cost nothing per inference.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/ops/op_table.hpp>

#include <cstddef>
#include <vector>

namespace goopt::subst {

/// @brief Per op of `g`, whether it is computed from weights and constants only (no graph input
/// reaches it): weight preprocessing, done once before inference (TASO's preprocess_weights).
inline std::vector<bool> weight_only(const graph::computation_graph& g);

/// @brief The inference time of `g` under `cost` on `device`: the sum of op_time over the ops that
/// run per inference (not sources, not weight preprocessing), one op per kernel as TASO costs graphs.
template <class Cost, device::DeviceModel Device>
    requires cost::CostModel<Cost, Device>
double inference_cost(const graph::computation_graph& g, const Cost& cost, const Device& device);

/// The number of ops that run per inference (not sources, not weight preprocessing).
inline std::size_t inference_ops(const graph::computation_graph& g);

// ---- implementation ----

inline std::vector<bool> weight_only(const graph::computation_graph& g) {
    std::vector<bool> w(g.num_ops(), false);
    for (const auto i : graph::topological_order(g)) {
        const auto o = static_cast<graph::op_id>(i);
        const auto& op = g.get_op(o);
        if (op.kind == ops::op_kind::input) continue;
        bool all = true;
        for (auto t : op.inputs) all = all && w[g.producer(t)];
        w[o] = all;  // weights and constants have no inputs
    }
    return w;
}

template <class Cost, device::DeviceModel Device>
    requires cost::CostModel<Cost, Device>
double inference_cost(const graph::computation_graph& g, const Cost& cost, const Device& device) {
    const auto w = weight_only(g);
    double total = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (!w[o] && !g.get_op(o).spec().has(ops::source)) total += cost.op_time(g, o, device);
    return total;
}

inline std::size_t inference_ops(const graph::computation_graph& g) {
    const auto w = weight_only(g);
    std::size_t n = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (!w[o] && !g.get_op(o).spec().has(ops::source)) ++n;
    return n;
}

}  // namespace goopt::subst
