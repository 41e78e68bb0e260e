#pragma once
/// @file
/// @brief The one decision type every method produces, heuristic or learned: a device per op, op
/// priorities and fusion groups, exactly what sim::simulator::run takes. Scoring every method
/// through it means every method is judged by the same simulator on the same inputs.

#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulation_result.hpp>
#include <goopt/sim/simulator.hpp>

#include <vector>

namespace goopt::sim {

/// What a placer, scheduler or fuser decides for one graph on one cluster.
struct decision {
    sim::placement placement;        ///< device of every op (op id order)
    std::vector<double> priorities;  ///< per op, larger runs first; empty: FIFO ready queues
    sim::fusion_groups fusion;       ///< per op; empty: no fusion
    /// How the links order the tensors waiting for them (by the priorities above, or as produced).
    transfer_order transfers = transfer_order::produced;
    /// How the devices follow the priorities: list scheduling, or one global order (dispatch_order).
    dispatch_order dispatch = dispatch_order::ready;

    /// The simulation options that carry this decision's priorities and fusion groups (they refer
    /// to this decision's storage: keep it alive while they are used).
    simulation_options options(bool record_trace = false) const {
        return {.priorities = priorities,
                .fusion = fusion,
                .record_trace = record_trace,
                .transfers = transfers,
                .dispatch = dispatch};
    }
};

/// @brief Simulates `d` with `s`. @throws sim::decision_refused or goopt::error as simulator::run does.
template <device::DeviceModel D, cost::CostModel<D> Cost>
simulation_result run(simulator<D, Cost>& s, const decision& d, bool record_trace = false) {
    return s.run(d.placement, d.options(record_trace));
}

/// Better of two simulated decisions: one that fits in memory beats one that does not, then the
/// shorter step.
inline bool better_result(const simulation_result& a, const simulation_result& b) {
    if (a.oom != b.oom) return !a.oom;
    return a.step_time < b.step_time;
}

/// A decision with its simulation: what every search and training returns as its best.
struct scored_decision {
    sim::decision decision;
    simulation_result result;
};

}  // namespace goopt::sim
