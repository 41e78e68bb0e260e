#pragma once
/// @file
/// @brief Learned scheduling in rounds: each round trains a fresh policy at the middle level of a
/// scheduling_decider whose base order is the best order of the rounds before. A policy that starts
/// at the middle level samples orders near its base (a few ops a few levels away), so re-centring on
/// the best order so far is a trust region around the incumbent order: each round searches the
/// neighbourhood of the last round's best, not of the heuristic's. Every base after the first is a
/// sampled order (or a policy's mode), so the result counts as learned, never as an injected
/// incumbent. On benchmarks/decisions' 8 scheduling rows, 4 rounds of 256 samples per update at
/// prior 4 took the learned order from 1.22 % to 2.23 % below the best priority heuristic
/// (docs/placement.md).

#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/level_prior.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/train.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace goopt::tasks {

/// Knobs of train_scheduling.
struct scheduling_rounds_config {
    std::size_t rounds = 4;  ///< rounds (at most one per update), each re-based on the best order so far
    /// tasks::start_from_middle_level's prior for each round's fresh policy: with 21 levels, 4 leaves
    /// about 4 % of ops off the middle level per sample (1: about half), a near neighbourhood.
    double prior = 4;
    scheduling_config levels = {};  ///< each round's scheduling_decider
    /// The last `sequence_rounds` of the rounds decide sequences instead (sequence_levels, whose
    /// dispatch is sim::dispatch_order::sequence; its transfers are `levels`'): the best list
    /// schedule so far, run as one order per device, is their middle level, and a level moves an op
    /// earlier or later in its device's order, so a device may wait for an op about to arrive, a
    /// schedule no priority list can give. Why last: from a fresh heuristic order most moves that
    /// make a device wait cost time (docs/placement.md, session 19), but around an order the list
    /// rounds already tuned, a sample that waits where it pays is what is left to find.
    std::size_t sequence_rounds = 0;
    /// The sequence rounds' levels: geometric from a step of 0.0005 of the largest start position,
    /// so that the nearest levels swap an op with its neighbours and the farthest move it across the
    /// whole order.
    scheduling_config sequence_levels = {
        .step = 0.0005, .spacing = level_spacing::geometric, .dispatch = sim::dispatch_order::sequence};
};

/// @brief Learns priorities for `placement` in `c.rounds` rounds (see the file comment) and returns
/// the best decision of all of them. Round k trains `make_net(task, rng)`, started at the middle
/// level with `c.prior`, for ppo.updates / rounds updates (the first ppo.updates % rounds rounds one
/// more) on tasks::simulated_task(s's graph and cluster, scheduling_decider(s, placement, c.levels,
/// base)); the first base is `base` (empty: the placement's critical path), each later one the
/// priorities of the best decision so far. `tc.incumbents` compete in the first round only (an
/// incumbent on `placement` that wins becomes the next base, as a heuristic order would); the
/// checkpoint is written by the last round. The random draws are each round's policy then its
/// training, all from `rng`, so a seed gives one result. best_index counts samples and updates from
/// the start of the first round; updates, samples and seconds are totals.
/// @param make_net callable (const Task&, Rng&) -> Net: a fresh network for the task's levels.
/// @throws goopt::error for zero rounds, a negative or non-finite prior, or several rounds asked to
/// resume, start from a pre-trained policy or imitate (one round: the checkpoint's task is its own);
/// what scheduling_decider and tasks::train throw.
template <device::DeviceModel D, cost::CostModel<D> Cost, class MakeNet, rl::SerializableRng Rng,
          class Visitor = rl::null_visitor>
train_result train_scheduling(sim::simulator<D, Cost>& s, const sim::placement& placement, std::vector<double> base,
                              MakeNet&& make_net, const train_config& tc, Rng& rng, Visitor&& visitor = {},
                              const scheduling_rounds_config& c = {}) {
    constexpr const char* who = "tasks::train_scheduling";
    if (c.rounds == 0) throw error(who, "0 rounds", "at least one round");
    if (!(c.prior >= 0) || !std::isfinite(c.prior)) throw error(who, concat("prior ", c.prior), "a finite prior >= 0");
    if (c.sequence_rounds > c.rounds)
        throw error(who, concat(c.sequence_rounds, " sequence rounds of ", c.rounds),
                    "at most as many sequence rounds as rounds");
    if (c.sequence_rounds > 0 && c.sequence_levels.dispatch != sim::dispatch_order::sequence)
        throw error(who, "sequence rounds whose levels dispatch as a list scheduler",
                    "sequence_levels.dispatch = sim::dispatch_order::sequence");
    const std::size_t rounds = std::min(c.rounds, std::max<std::size_t>(tc.ppo.updates, 1));
    if (rounds > 1 && (tc.resume || !tc.pretrained.empty() || !tc.imitate.empty()))
        throw error(who, concat(rounds, " rounds asked to resume, to start from a pre-trained policy or to imitate"),
                    "fresh weights (scheduling_rounds_config::rounds 1 for those)");
    const auto t0 = std::chrono::steady_clock::now();
    train_result best;
    std::size_t samples = 0, updates = 0;
    // with fewer updates than rounds, the rounds dropped are list rounds, and the sequence rounds stay last
    const std::size_t sequence_from = rounds - std::min(c.sequence_rounds, rounds);
    for (std::size_t k = 0; k < rounds; ++k) {
        scheduling_config levels = c.levels;
        if (k >= sequence_from) {
            levels = c.sequence_levels;
            levels.transfers = c.levels.transfers;
        }
        const scheduling_decider decider(s, placement, levels, base);
        simulated_task<scheduling_decider, D, Cost> task(s.graph(), s.cluster(), decider, s.cost_model());
        auto net = make_net(task, rng);
        start_from_middle_level(net, c.prior);
        train_config round = tc;
        round.ppo.updates = tc.ppo.updates / rounds + (k < tc.ppo.updates % rounds ? 1 : 0);
        if (k > 0) round.incumbents = {};
        if (k + 1 < rounds) {
            round.checkpoint.clear();
            round.checkpoint_every = 0;
        }
        auto t = train(task, net, round, rng, visitor);
        const std::size_t samples_before = samples, updates_before = updates;
        samples += t.samples;
        updates += t.updates;
        if (k == 0 || detail::better_outcome(task.outcome_of(t.best.result), task.outcome_of(best.best.result))) {
            if (t.best_from == best_source::sample) t.best_index += samples_before;
            if (t.best_from == best_source::mode) t.best_index += updates_before;
            best = std::move(t);
            if (best.best.decision.placement == placement) base = best.best.decision.priorities;
        }
    }
    best.samples = samples;
    best.updates = updates;
    best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return best;
}

}  // namespace goopt::tasks
