#pragma once
/// @file
/// @brief The fusion task: a fusion priority level per op on a given placement (and schedule),
/// decoded by priority fusion (baselines/priority_fusion.hpp), which merges legal producer/consumer
/// pairs greedily in priority order. GO (NeurIPS'20 §3) gives each op a fusion priority; here a
/// level is a residual on the cost model's saving, so that the middle level everywhere is exactly
/// XLA-style priority fusion, the lowest level keeps an op out of every kernel, and the policy
/// learns where to depart from the heuristic (the heuristic as the decoder, as tasks/scheduling.hpp).
/// Anchored (fusion_config::anchor), the decoder starts from a heuristic's groups instead (greedy
/// fusion's, where they beat priority fusion's), and a level says whether the op leaves its group,
/// stays, or opens it to further cost-driven merges, so the middle level everywhere is that
/// heuristic's fusion exactly (as tasks/anchored_decoding.hpp does for placement).

#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/baselines/priority_fusion.hpp>
#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace goopt::tasks {

/// The fusion a fusion decoder starts from.
enum class fusion_anchor {
    none,      ///< from scratch: the levels bias priority fusion's merges
    greedy,    ///< greedy fusion's groups (baselines/greedy_fusion.hpp)
    priority,  ///< priority fusion's groups
    /// groups given by the caller (e.g. the best decision of a training so far, to search around it:
    /// tasks::train_joint's rounds); on a placement that splits a group, its parts on one device start
    /// as groups where they are legal (baselines::fusion_start)
    given,
};

/// Knobs of the fusion task.
struct fusion_config {
    /// Levels per op (odd, >= 3): 0 keeps the op unfused, the middle one adds nothing to its merges'
    /// priorities, each level away from it adds or takes `step` x the largest single-merge saving.
    /// Anchored, see fusion_levels.
    std::size_t levels = 21;
    double step = 0.1;
    fusion_anchor anchor = fusion_anchor::none;
    sim::fusion_groups groups = {};  ///< fusion_anchor::given: the groups (a group id per op, sim::no_group alone)
};

/// @brief What per-op fusion levels ask of baselines::priority_fuser::run. Without an anchor: level 0
/// freezes the op (never merged), level l biases its merges by (l - middle) x `scale`. With one:
/// below the middle the op leaves its anchor group and stays alone; the middle keeps it where the
/// anchor put it and opens it to no new merge; above the middle it stays and opens its group to new
/// merges at a bias of (l - middle - 1) x scale (level middle + 1: priority fusion's own priority).
/// A new merge needs one open op in its pair, so zero departures decode to the anchor's groups
/// exactly, and the nearest levels already depart both ways. (An op left alone but open to merges
/// would mostly be merged straight back: a cost-driven fuser re-takes the saving the anchor took.)
/// Ops that are not `active` (no fusible pair, sources) take no bias and stay where the anchor put them.
struct fusion_levels {
    std::vector<double> bias;
    std::vector<std::uint8_t> frozen, keep, open;

    void assign(std::span<const int> level, std::span<const std::uint8_t> active, int middle, double scale,
                bool anchored) {
        const std::size_t n = level.size();
        bias.assign(n, 0.0);
        frozen.assign(n, 0);
        keep.assign(anchored ? n : 0, 1);
        open.assign(anchored ? n : 0, 0);
        for (std::size_t o = 0; o < n; ++o) {
            if (!active[o]) continue;
            const int l = level[o];
            if (!anchored) {
                frozen[o] = l == 0;
                bias[o] = (l - middle) * scale;
                continue;
            }
            frozen[o] = l < middle;
            keep[o] = l >= middle;
            open[o] = l > middle;
            bias[o] = l > middle ? (l - middle - 1) * scale : 0.0;
        }
    }
    /// Priority fusion from `start` groups (empty: from scratch) with these levels.
    template <class Fuser> sim::fusion_groups run(const Fuser& fuser, std::span<const std::int32_t> start) const {
        return fuser.run(bias, frozen, {.groups = start, .keep = keep, .open = open});
    }
};

/// @throws goopt::error where `a` is fusion_anchor::given and `groups` has not one entry per op (of
/// `n`), or another anchor comes with groups.
inline void check_given_groups(const char* who, fusion_anchor a, std::span<const std::int32_t> groups, std::size_t n) {
    if (a == fusion_anchor::given && groups.size() != n)
        throw error(who, concat(groups.size(), " given fusion groups"), concat("one group id per op (", n, ")"));
    if (a != fusion_anchor::given && !groups.empty())
        throw error(who, "fusion groups given with an anchor other than fusion_anchor::given",
                    "no groups, or fusion_anchor::given");
}

/// The anchor's groups on `fuser`'s placement (empty for fusion_anchor::none; `given` for
/// fusion_anchor::given).
template <class Fuser>
sim::fusion_groups anchor_groups(const graph::computation_graph& g, const Fuser& fuser, fusion_anchor a,
                                 std::span<const std::int32_t> given = {}) {
    switch (a) {
        case fusion_anchor::given:
            return sim::fusion_groups(given.begin(), given.end());
        case fusion_anchor::greedy:
            return baselines::greedy_fusion(g, fuser.placement());
        case fusion_anchor::priority:
            return fuser.run();
        case fusion_anchor::none:
            break;
    }
    return {};
}

/// @brief Fusion as a tasks::Decider (run it with tasks::simulated_task and tasks::train): one
/// level per op that can fuse on `placement`; decision = the placement, the given priorities and
/// priority fusion's groups with per-op biases (level - middle) x step x the largest saving, the ops
/// at level 0 frozen. A merge's priority is its saving plus both ops' biases; merges happen while
/// it is positive. Anchored (fusion_config::anchor), the decode starts from the anchor's groups and
/// the levels depart from them (fusion_levels), and the heuristic and the reward's reference are the
/// anchor's fusion. Reward: -sqrt(step / the heuristic's step) (GO's shape), minus 1 for a decision
/// out of memory.
template <device::DeviceModel D, cost::CostModel<D> Cost> class fusion_decider {
public:
    /// @param priorities per op for the simulator's list scheduler (empty: FIFO).
    /// @throws goopt::error for a level count that is even or under 3, a step that is not positive,
    /// or a placement the simulator refuses; tasks::nothing_to_decide for one that leaves no
    /// producer/consumer pair that can fuse, or a fused step that takes no time.
    fusion_decider(sim::simulator<D, Cost>& s, sim::placement placement, std::vector<double> priorities = {},
                   fusion_config c = {})
        : fuser_(s, std::move(placement)), priorities_(std::move(priorities)), config_(c) {
        if (c.levels < 3 || c.levels % 2 == 0)
            throw error("tasks::fusion_decider", concat(c.levels, " fusion levels"), "an odd number >= 3");
        if (!(c.step > 0) || !std::isfinite(c.step))
            throw error("tasks::fusion_decider", concat("step ", c.step), "a finite step > 0");
        s.check_placement(fuser_.placement());
        if (fuser_.num_pairs() == 0)
            throw nothing_to_decide(
                "tasks::fusion_decider",
                concat("graph '", s.graph().name(), "' has no producer/consumer pair that can fuse on one device"),
                "a graph and placement with at least one fusible pair (sim::can_fuse)");
        check_given_groups("tasks::fusion_decider", c.anchor, config_.groups, fuser_.placement().size());
        scale_ = c.step * std::max(fuser_.max_benefit(), 1e-12);
        anchor_ = anchor_groups(s.graph(), fuser_, c.anchor, config_.groups);
        heuristic_ = decide(heuristic_actions());
        reference_ = sim::run(s, heuristic_).step_time;
        if (!(reference_ > 0))
            throw nothing_to_decide("tasks::fusion_decider", "priority fusion's step takes no time",
                                    "a graph with work to fuse");
    }

    std::size_t num_choices() const { return config_.levels; }
    /// The ops in at least one fusible pair: the others' levels change nothing.
    std::span<const std::uint8_t> active() const { return fuser_.fusible(); }
    /// @throws goopt::error for an action count other than one per op or a level out of range.
    sim::decision decide(std::span<const int> actions) const {
        const std::size_t n = fuser_.placement().size();
        if (actions.size() != n)
            throw error("tasks::fusion_decider", concat(actions.size(), " actions"), concat("one per op (", n, ")"));
        for (std::size_t o = 0; o < n; ++o)
            if (actions[o] < 0 || static_cast<std::size_t>(actions[o]) >= config_.levels)
                throw error("tasks::fusion_decider", concat("level ", actions[o], " of op ", o),
                            concat("a level in [0, ", config_.levels, ")"));
        fusion_levels levels;  // an op in no fusible pair changes nothing: it takes no bias
        levels.assign(actions, fuser_.fusible(), static_cast<int>(config_.levels / 2), scale_,
                      config_.anchor != fusion_anchor::none);
        return {.placement = fuser_.placement(), .priorities = priorities_, .fusion = levels.run(fuser_, anchor_)};
    }
    double reward(const sim::simulation_result& r) const {
        return -std::sqrt(r.step_time / reference_) - (r.oom ? 1.0 : 0.0);
    }

    /// The actions of the heuristic's own decision (every op at the middle level): priority fusion, or
    /// the anchor's fusion.
    std::vector<int> heuristic_actions() const {
        return std::vector<int>(fuser_.placement().size(), static_cast<int>(config_.levels / 2));
    }
    /// Priority fusion or the anchor's fusion on the placement (the decision of heuristic_actions()).
    const sim::decision& heuristic_decision() const noexcept { return heuristic_; }
    /// Its simulated step, the reward's reference (seconds).
    double reference_step() const noexcept { return reference_; }

private:
    baselines::priority_fuser<D, Cost> fuser_;
    std::vector<double> priorities_;
    fusion_config config_;
    double scale_ = 1;
    sim::fusion_groups anchor_;
    sim::decision heuristic_;
    double reference_ = 0;
};

}  // namespace goopt::tasks
