#pragma once
/// @file
/// @brief How to tell a training step from an inference graph, from the graph alone: a training
/// step updates weights, so it holds optimizer update ops (sgd_update, adam_update) reading them,
/// as models::make_training_graph builds it. The marker is the graph's structure itself, so it
/// survives JSON files and rewrites. Costs that fold work on weights once (subst::inference_cost)
/// need it: a weight the step updates changes every step, and so does everything computed from it.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_kind.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace goopt::graph {

/// The input slots of an optimizer update op that hold the state it updates (the parameter, and
/// Adam's moments); empty for every other op kind.
inline std::span<const std::uint32_t> updated_slots(ops::op_kind k) {
    static constexpr std::uint32_t sgd[] = {0};         // (w, g, lr)
    static constexpr std::uint32_t adam[] = {0, 2, 3};  // (w, g, m, v, lr, beta1, beta2)
    switch (k) {
        case ops::op_kind::sgd_update:
            return sgd;
        case ops::op_kind::adam_update:
            return adam;
        default:
            return {};
    }
}

/// @brief Per op of `g`, whether it is a weight that an optimizer update op of `g` updates (its
/// value changes every step). All false for an inference graph.
inline std::vector<bool> updated_weights(const computation_graph& g) {
    std::vector<bool> updated(g.num_ops(), false);
    for (const auto& op : g.ops())
        for (auto slot : updated_slots(op.kind))
            if (slot < op.inputs.size()) {
                const auto w = g.producer(op.inputs[slot]);
                if (g.get_op(w).kind == ops::op_kind::weight) updated[w] = true;
            }
    return updated;
}

/// Whether `g` is a training step: it holds an optimizer update op.
inline bool is_training_step(const computation_graph& g) {
    return std::any_of(g.ops().begin(), g.ops().end(), [](const op& o) { return !updated_slots(o.kind).empty(); });
}

}  // namespace goopt::graph
