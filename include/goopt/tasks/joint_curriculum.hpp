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
    /// 0 trains in one stage. In [0, 1).
    double first_stage_share = 0.5;
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
/// policy; `net_out` (if given) receives the policy that trained last. Otherwise one stage.
/// `config.incumbents` and the checkpoint belong to the joint task's stage (the second); the first
/// stage's best decision competes with them (it is a joint decision: the anchor's placement).
/// The random draws are: the first policy, its training, the joint policy, its training, all from
/// `rng`, so a seed gives one result.
/// @param make_net callable (const Task&, Rng&) -> Net: a fresh network for a task's choices.
/// @throws goopt::error for a share outside [0, 1), or a staged run asked to resume, to start from a
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

    train_config second = tc;
    second.ppo.updates = total - first_updates;
    auto joint = make_net(task, rng);
    widen_to_placement(levels, joint, c.num_devices());
    auto b = train(task, joint, second, rng, visitor);

    const bool first_wins = detail::better_outcome(task.outcome_of(a.best.result), task.outcome_of(b.best.result));
    const std::size_t updates = a.updates + b.updates, samples = a.samples + b.samples;
    train_result r = first_wins ? a : std::move(b);
    // a sample's and a mode's index count from the start of the whole training
    if (!first_wins && r.best_from == best_source::sample) r.best_index += a.samples;
    if (!first_wins && r.best_from == best_source::mode) r.best_index += a.updates;
    r.updates = updates;
    r.samples = samples;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace goopt::tasks
