#pragma once
/// @file
/// @brief The joint task trained as a two-stage curriculum: first the scheduling and fusion levels
/// with the placement fixed at the anchor (tasks::levels_at_anchor), then placement and the levels
/// together, the joint policy starting from the first stage's (tasks::widen_to_placement). Learning
/// placement, scheduling and fusion at once from fresh weights spends the early samples on
/// placement departures, which mostly cost time, before the levels learn anything; on
/// benchmarks/decisions' --quick rows the pair with placement fixed beat the one-stage joint policy
/// on every row, and the curriculum made the joint policy beat the best heuristic pipeline on all of them.

#include <goopt/device/cluster.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/tasks/joint.hpp>
#include <goopt/tasks/train.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <utility>

namespace goopt::tasks {

/// Knobs of the curriculum.
struct joint_curriculum_config {
    /// Share of ppo.updates spent on the first stage (levels with the placement at the anchor);
    /// 0 trains in one stage. In [0, 1). A quarter: on the four quick rows of benchmarks/decisions
    /// it beat a half on every row, since the second stage, where placement departs from the
    /// anchor, still gained in its last updates (docs/joint.md, session 25).
    double first_stage_share = 0.25;
    /// Rounds of the second stage. 1: the first stage's policy, widened, trains on. From 2: each
    /// round trains a fresh policy (`make_net`) on the joint task anchored on the best decision so
    /// far (tasks::anchored_on: its placement, priorities and fusion groups), for an equal share of
    /// the second stage's updates; a fresh policy decodes to its anchor, so each round searches the
    /// neighbourhood of the best decision yet rather than of the heuristic pipeline, as
    /// tasks::train_scheduling's rounds do for orders.
    std::size_t rounds = 1;
};

/// Whether train_joint trains `config` in two stages: placement decided with an anchor, at least one
/// of scheduling and fusion decided, a first-stage share above 0 and at least two updates.
inline bool staged_curriculum(const joint_config& config, std::size_t updates, const joint_curriculum_config& c) {
    return config.tasks.placement && (config.tasks.scheduling || config.tasks.fusion) && !config.anchor.empty() &&
           c.first_stage_share > 0 && updates >= 2;
}

/// @brief Trains joint_task(g, c, cost, config) and returns the best decision of the whole training.
/// Where staged_curriculum holds, the first floor(first_stage_share x ppo.updates) updates (at least
/// one, and at least one left) train the levels at the anchor from `make_net(levels task, rng)`,
/// and the rest the joint task from `make_net(joint task, rng)` widened from the first stage's
/// policy. Otherwise one stage.
/// With curriculum.rounds from 2, the second stage runs in rounds, each a fresh `make_net` policy
/// on the task anchored on the best decision so far (see joint_curriculum_config::rounds).
/// `config.incumbents` belong to the second stage's first round and the checkpoint to its last; the
/// first stage's best decision competes with them (it is a joint decision: the anchor's placement).
/// The random draws are: the first policy, its training, the joint policy, its training, all from
/// `rng`, so a seed gives one result.
/// @param make_net callable (const Task&, Rng&) -> Net: a fresh network for a task's choices.
/// @throws goopt::error for a share outside [0, 1), 0 rounds, or a staged run asked to resume, to start from a
/// pre-trained policy or to imitate (the first stage is its warm start: share 0 for those);
/// what tasks::train throws.
template <device::DeviceModel D, cost::CostModel<D> Cost, class MakeNet, rl::SerializableRng Rng,
          class Visitor = rl::null_visitor>
train_result train_joint(const graph::computation_graph& g, const device::cluster<D>& c, const Cost& cost,
                         const joint_config& config, MakeNet&& make_net, const train_config& tc, Rng& rng,
                         Visitor&& visitor = {}, const joint_curriculum_config& curriculum = {}) {
    constexpr const char* who = "tasks::train_joint";
    if (!(curriculum.first_stage_share >= 0 && curriculum.first_stage_share < 1))
        throw error(who, concat("first_stage_share ", curriculum.first_stage_share), "a share in [0, 1)");
    if (curriculum.rounds == 0) throw error(who, "0 rounds", "at least one round of the second stage");
    joint_task<D, Cost> task(g, c, cost, config);
    if (!staged_curriculum(config, tc.ppo.updates, curriculum)) {
        auto net = make_net(task, rng);
        return train(task, net, tc, rng, visitor);
    }
    if (tc.resume || !tc.pretrained.empty() || !tc.imitate.empty())
        throw error(who, "a two-stage curriculum asked to resume, to start from a pre-trained policy or to imitate",
                    "fresh weights (joint_curriculum_config::first_stage_share 0 to train one stage)");
    const auto t0 = std::chrono::steady_clock::now();
    joint_task<D, Cost> levels_task(g, c, cost, levels_at_anchor(config));
    const auto total = tc.ppo.updates;
    auto first_updates = static_cast<std::size_t>(curriculum.first_stage_share * static_cast<double>(total));
    first_updates = std::clamp<std::size_t>(first_updates, 1, total - 1);

    train_config first = tc;
    first.ppo.updates = first_updates;
    first.incumbents = {};
    first.checkpoint.clear();
    first.checkpoint_every = 0;
    auto levels = make_net(levels_task, rng);
    const auto a = train(levels_task, levels, first, rng, visitor);

    const std::size_t second_updates = total - first_updates;
    const std::size_t rounds = std::min(curriculum.rounds, second_updates);
    train_result best = a;
    std::size_t updates = a.updates, samples = a.samples;
    for (std::size_t k = 0; k < rounds; ++k) {
        train_config round = tc;
        round.ppo.updates = second_updates / rounds + (k < second_updates % rounds ? 1 : 0);
        if (k > 0) round.incumbents = {};
        if (k + 1 < rounds) {
            round.checkpoint.clear();
            round.checkpoint_every = 0;
        }
        train_result b;
        if (rounds == 1) {
            auto joint = make_net(task, rng);
            widen_to_placement(levels, joint, c.num_devices());
            b = train(task, joint, round, rng, visitor);
        } else {
            joint_task<D, Cost> around(g, c, cost, anchored_on(config, best.best.decision));
            auto joint = make_net(around, rng);
            b = train(around, joint, round, rng, visitor);
        }
        const std::size_t samples_before = samples, updates_before = updates;
        updates += b.updates;
        samples += b.samples;
        // compared in one task (better_outcome looks at memory and step time, not at the rounds'
        // rewards); a tie goes to the later stage or round
        if (!detail::better_outcome(task.outcome_of(best.best.result), task.outcome_of(b.best.result))) {
            // a sample's and a mode's index count from the start of the whole training
            if (b.best_from == best_source::sample) b.best_index += samples_before;
            if (b.best_from == best_source::mode) b.best_index += updates_before;
            best = std::move(b);
        }
    }
    best.updates = updates;
    best.samples = samples;
    best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return best;
}

}  // namespace goopt::tasks
