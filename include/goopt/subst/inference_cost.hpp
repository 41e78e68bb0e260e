#pragma once
/// @file
/// @brief The cost a substitution search minimizes: the time of the ops that run per step of the
/// graph: per inference, or per training step. Ops computed from fixed weights and constants only
/// are weight preprocessing, folded once before the graph runs (TASO's preprocess_weights), and
/// cost nothing per step. In an inference graph every weight is fixed; a training step
/// (graph::is_training_step) updates its trained weights every step, so the ops on those run every
/// step and are counted (a rewrite that moves work onto them saves nothing there). A split whose
/// pieces are contiguous blocks of its input (every axis before the split axis has size 1: a
/// channel split at batch 1, a feature split of one row) is a view, offsets into its input, and
/// costs nothing either (TASO's cost model takes every split as free; a strided split is a copy).

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/graph/training_step.hpp>
#include <goopt/ops/op_table.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace goopt::subst {

/// @brief Per op of `g`, whether it is computed from fixed weights and constants only (no graph
/// input and no weight that `g` updates reaches it): weight preprocessing, done once before the
/// graph runs (TASO's preprocess_weights). In a training step the updated weights are not fixed.
inline std::vector<bool> weight_only(const graph::computation_graph& g);

/// @brief The time of one run of `g` (an inference, or a training step) under `cost` on `device`:
/// the sum of op_time over the ops that run per step (not sources, not weight preprocessing, not
/// views), one op per kernel as TASO costs graphs. For a training step the ops on the weights it
/// updates count too, chosen from the graph itself (graph::is_training_step).
template <class Cost, device::DeviceModel Device>
requires cost::CostModel<Cost, Device>
double inference_cost(const graph::computation_graph& g, const Cost& cost, const Device& device);

/// The number of ops that run per step (not sources, not weight preprocessing, not views).
inline std::size_t inference_ops(const graph::computation_graph& g);

/// Whether op `o` of `g` is a split into contiguous pieces of its input (a view, no copy).
inline bool is_view(const graph::computation_graph& g, graph::op_id o);

/// Per op of `g`, whether it runs per step: not a source, weight preprocessing or a view.
inline std::vector<bool> runs_per_inference(const graph::computation_graph& g);

// ---- implementation ----

inline std::vector<bool> weight_only(const graph::computation_graph& g) {
    const auto updated = graph::updated_weights(g);
    std::vector<bool> w(g.num_ops(), false);
    for (const auto i : graph::topological_order(g)) {
        const auto o = static_cast<graph::op_id>(i);
        const auto& op = g.get_op(o);
        if (op.kind == ops::op_kind::input || updated[o]) continue;
        bool all = true;
        for (auto t : op.inputs) all = all && w[g.producer(t)];
        w[o] = all;  // fixed weights and constants have no inputs
    }
    return w;
}

inline bool is_view(const graph::computation_graph& g, graph::op_id o) {
    const auto& op = g.get_op(o);
    if (op.kind != ops::op_kind::split) return false;
    const auto& d = g.type_of(op.inputs[0]).dims;
    const auto ax = d.axis(op.attrs.get_int(ops::attr_id::axis));
    for (std::size_t i = 0; i < ax; ++i)
        if (d[i] != 1) return false;
    return true;
}

inline std::vector<bool> runs_per_inference(const graph::computation_graph& g) {
    auto r = weight_only(g);
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        r[o] = !r[o] && !g.get_op(o).spec().has(ops::source) && !is_view(g, o);
    return r;
}

template <class Cost, device::DeviceModel Device>
requires cost::CostModel<Cost, Device>
double inference_cost(const graph::computation_graph& g, const Cost& cost, const Device& device) {
    const auto runs = runs_per_inference(g);
    double total = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (runs[o]) total += cost.op_time(g, o, device);
    return total;
}

inline std::size_t inference_ops(const graph::computation_graph& g) {
    const auto runs = runs_per_inference(g);
    return static_cast<std::size_t>(std::count(runs.begin(), runs.end(), true));
}

}  // namespace goopt::subst
