#pragma once
/// @file
/// @brief Where a joint task's levels start: the scheduling base and the fusion anchor that give the
/// decoder's own pipeline (zero logits: the anchor's placement, the base's priorities, the anchor's
/// groups) its shortest step. A level departs from its base, so a policy at the middle levels decodes
/// to that pipeline; starting from the better of FIFO and the heuristic's priorities, and of priority
/// and greedy fusion, lets the samples search around the best pipeline the heuristics give on that
/// placement, where a fixed choice (critical path, greedy fusion) can start several percent above it
/// (transformer_xl2 on 2 devices, m-ETF's placement: 46.288 against 48.146 ms with greedy fusion).

#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/baselines/priority_fusion.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/fusion.hpp>

#include <utility>
#include <vector>

namespace goopt::tasks {

/// A joint task's bases: joint_config::priorities and joint_config::anchor_fusion.
struct joint_bases {
    /// Empty: the critical path's priorities of each decoded placement; all equal: FIFO's order.
    std::vector<double> priorities;
    fusion_anchor fusion = fusion_anchor::greedy;
};

/// A heuristic's own priorities `own` on placement `p` with fusion `groups` where they give a step
/// no longer than its critical path's, else none (the critical path's): the order a joint task's
/// scheduling base starts from (pipeline_bases' `priorities`).
template <device::DeviceModel D, class Cost>
std::vector<double> own_or_critical_path(sim::simulator<D, Cost>& s, const sim::placement& p,
                                         const std::vector<double>& own, const sim::fusion_groups& groups) {
    if (own.empty()) return {};
    sim::decision d{.placement = p, .priorities = own, .fusion = groups};
    const double own_step = sim::run(s, d).step_time;
    d.priorities = baselines::critical_path_priorities(s, p);
    return own_step <= sim::run(s, d).step_time ? own : std::vector<double>{};
}

/// @brief The bases for a joint task anchored on placement `p`: `priorities` (empty: the critical
/// path's) or FIFO's order (equal priorities, the simulator's ties going to the op ready first),
/// whichever gives the shorter step, with greedy fusion's groups where `fusion` is decided; then,
/// where `fusion` is decided, priority fusion's groups instead of greedy fusion's where they give a
/// shorter step with the chosen priorities. Ties keep `priorities` and greedy fusion. A task that
/// does not decide scheduling runs FIFO's order whatever is chosen here; its fusion anchor is still
/// the one chosen under these priorities.
template <device::DeviceModel D, class Cost>
joint_bases pipeline_bases(sim::simulator<D, Cost>& s, const sim::placement& p, std::vector<double> priorities,
                           bool fusion) {
    const std::size_t n = s.graph().num_ops();
    joint_bases b{.priorities = std::move(priorities)};
    sim::decision d{.placement = p,
                    .priorities = b.priorities.empty() ? baselines::critical_path_priorities(s, p) : b.priorities,
                    .fusion = fusion ? baselines::greedy_fusion(s.graph(), p) : sim::fusion_groups{}};
    double best = sim::run(s, d).step_time;
    std::vector<double> given = std::move(d.priorities);
    d.priorities.assign(n, 0.0);
    if (const double fifo = sim::run(s, d).step_time; fifo < best) {
        b.priorities = d.priorities;
        best = fifo;
    } else {
        d.priorities = std::move(given);
    }
    if (fusion) {
        d.fusion = baselines::priority_fusion(s, p);
        if (sim::run(s, d).step_time < best) b.fusion = fusion_anchor::priority;
    }
    return b;
}

}  // namespace goopt::tasks
