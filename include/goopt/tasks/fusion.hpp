#pragma once
/// @file
/// @brief The fusion task: a fusion priority level per op on a given placement (and schedule),
/// decoded by priority fusion (baselines/priority_fusion.hpp), which merges legal producer/consumer
/// pairs greedily in priority order. GO (NeurIPS'20 §3) gives each op a fusion priority; here a
/// level is a residual on the cost model's saving, so that the middle level everywhere is exactly
/// XLA-style priority fusion, the lowest level keeps an op out of every kernel, and the policy
/// learns where to depart from the heuristic (the heuristic as the decoder, as tasks/scheduling.hpp).

#include <goopt/baselines/priority_fusion.hpp>
#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace goopt::tasks {

/// Knobs of the fusion task.
struct fusion_config {
    /// Levels per op (odd, >= 3): 0 keeps the op unfused, the middle one adds nothing to its merges'
    /// priorities, each level away from it adds or takes `step` x the largest single-merge saving.
    std::size_t levels = 21;
    double step = 0.1;
};

/// @brief Fusion as a tasks::Decider (run it with tasks::simulated_task and tasks::train): one
/// level per op that can fuse on `placement`; decision = the placement, the given priorities and
/// priority fusion's groups with per-op biases (level - middle) x step x the largest saving, the ops
/// at level 0 frozen. A merge's priority is its saving plus both ops' biases; merges happen while
/// it is positive. Reward: -sqrt(step / priority fusion's step) (GO's shape), minus 1 for a decision
/// out of memory.
template <device::DeviceModel D, cost::CostModel<D> Cost> class fusion_decider {
public:
    /// @param priorities per op for the simulator's list scheduler (empty: FIFO).
    /// @throws goopt::error for a level count that is even or under 3, a step that is not positive,
    /// a placement the simulator refuses, or one that leaves no producer/consumer pair that can fuse.
    fusion_decider(sim::simulator<D, Cost>& s, sim::placement placement, std::vector<double> priorities = {},
                   fusion_config c = {})
        : fuser_(s, std::move(placement)), priorities_(std::move(priorities)), config_(c) {
        if (c.levels < 3 || c.levels % 2 == 0)
            throw error("tasks::fusion_decider", concat(c.levels, " fusion levels"), "an odd number >= 3");
        if (!(c.step > 0) || !std::isfinite(c.step))
            throw error("tasks::fusion_decider", concat("step ", c.step), "a finite step > 0");
        s.check_placement(fuser_.placement());
        if (fuser_.num_pairs() == 0)
            throw error(
                "tasks::fusion_decider",
                concat("graph '", s.graph().name(), "' has no producer/consumer pair that can fuse on one device"),
                "a graph and placement with at least one fusible pair (sim::can_fuse)");
        scale_ = c.step * std::max(fuser_.max_benefit(), 1e-12);
        heuristic_ = {.placement = fuser_.placement(), .priorities = priorities_, .fusion = fuser_.run()};
        reference_ = sim::run(s, heuristic_).step_time;
        if (!(reference_ > 0))
            throw error("tasks::fusion_decider", "priority fusion's step takes no time", "a graph with work to fuse");
    }

    std::size_t num_choices() const { return config_.levels; }
    /// The ops in at least one fusible pair: the others' levels change nothing.
    std::span<const std::uint8_t> active() const { return fuser_.fusible(); }
    /// @throws goopt::error for an action count other than one per op or a level out of range.
    sim::decision decide(std::span<const int> actions) const {
        const std::size_t n = fuser_.placement().size();
        if (actions.size() != n)
            throw error("tasks::fusion_decider", concat(actions.size(), " actions"), concat("one per op (", n, ")"));
        std::vector<double> bias(n, 0.0);
        std::vector<std::uint8_t> frozen(n, 0);
        const int middle = static_cast<int>(config_.levels / 2);
        for (std::size_t o = 0; o < n; ++o) {
            if (actions[o] < 0 || static_cast<std::size_t>(actions[o]) >= config_.levels)
                throw error("tasks::fusion_decider", concat("level ", actions[o], " of op ", o),
                            concat("a level in [0, ", config_.levels, ")"));
            frozen[o] = actions[o] == 0;
            bias[o] = (actions[o] - middle) * scale_;
        }
        return {.placement = fuser_.placement(), .priorities = priorities_, .fusion = fuser_.run(bias, frozen)};
    }
    double reward(const sim::simulation_result& r) const {
        return -std::sqrt(r.step_time / reference_) - (r.oom ? 1.0 : 0.0);
    }

    /// The actions of priority fusion's own decision (every op at the middle level).
    std::vector<int> heuristic_actions() const {
        return std::vector<int>(fuser_.placement().size(), static_cast<int>(config_.levels / 2));
    }
    /// Priority fusion on the placement (the decision of heuristic_actions()).
    const sim::decision& heuristic_decision() const noexcept { return heuristic_; }
    /// Its simulated step, the reward's reference (seconds).
    double reference_step() const noexcept { return reference_; }

private:
    baselines::priority_fuser<D, Cost> fuser_;
    std::vector<double> priorities_;
    fusion_config config_;
    double scale_ = 1;
    sim::decision heuristic_;
    double reference_ = 0;
};

}  // namespace goopt::tasks
