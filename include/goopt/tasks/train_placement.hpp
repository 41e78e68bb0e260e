#pragma once
/// @file
/// @brief Learned device placement in one call: the GO policy trained by PPO on the placement task
/// of one graph (GO-one, NeurIPS'20 §4) through tasks::train, with an optional warm start,
/// incumbents and checkpoints, or from a policy pre-trained across graphs (tasks/pretrain.hpp).

#include <goopt/error.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/rl/progress.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/train.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::tasks {

/// Everything train_placement can be told.
struct placement_config {
    rl::ppo_config ppo = {};
    /// The network; task_choices is set to the cluster's device count.
    nn::policy_config policy = {};
    placement_task_config task = {};
    /// Decision to imitate before PPO (for ppo.imitation_steps steps), e.g. the best heuristic's;
    /// empty: no warm start.
    sim::placement warm_start = {};
    /// Decisions scored before training; the best is kept as the best seen until a sample or mode
    /// beats it, so that training never returns worse than any: give the heuristics' own decisions
    /// (with their priorities). With a warm start, its placement under the task's schedule
    /// (placement_task::decision_of) is an incumbent too, after these: a heuristic's placement is
    /// sometimes faster under the task's priorities than under its own.
    std::vector<sim::decision> incumbents = {};
    /// Checkpoint file; empty: none. Written every `checkpoint_every` updates (0: at the end only) and
    /// at the end, atomically.
    std::filesystem::path checkpoint = {};
    std::size_t checkpoint_every = 0;
    /// Continue from `checkpoint` (it must exist and match: see rl::ppo::load_checkpoint).
    bool resume = false;
    /// A pre-trained policy to start from (a checkpoint of pretrain_placement or train_placement for
    /// as many devices and the same network shape): its weights and Adam's moments, then the warm
    /// start (if any) and `ppo.updates` more updates on this graph, drawn from the caller's generator.
    /// Empty: freshly initialized weights.
    std::filesystem::path pretrained = {};
    /// With `pretrained` and the guided decoder: zero the policy's output after loading
    /// (start_from_heuristic), keeping the pre-trained trunk and hidden layer, so that fine-tuning
    /// starts where a fresh policy does (zero logits: the decoder's heuristic is the first mode, and
    /// samples depart from it at the decoder's temperature). Why: pre-training on graphs where most
    /// departures from the heuristic cost time teaches the output to stay, and a policy that stays
    /// samples nothing better on a new graph (docs/transfer.md, "Telling equal devices apart").
    bool pretrained_from_heuristic = false;
    /// A status line and metrics file, drawn by the library only when asked for (the default draws
    /// nothing); a caller may instead watch through its visitor.
    rl::progress_config progress = {.status = rl::status_mode::never};
};

/// What train_placement returns.
struct placement_result {
    sim::scored_decision best;  ///< the best decision seen (fits in memory first, then step time)
    best_source best_from = best_source::none;
    /// 1-based index of the sample that found it (best_from == sample), or of the update whose mode
    /// it is (mode); the 0-based index of the incumbent (incumbent: the warm start's comes last).
    std::size_t best_sample = 0;
    /// After the warm start: the share of deciding ops whose most likely device is the imitated one;
    /// -1 without a warm start.
    double imitation_agreement = -1;
    /// After a warm start with ppo.imitation_min_agreement: the mode's simulated step / the imitated
    /// placement's - 1; NaN otherwise.
    double imitation_mode_gap = std::numeric_limits<double>::quiet_NaN();
    std::size_t imitation_steps = 0;  ///< cross-entropy steps the warm start took
    /// After a guided warm start: the ops the decoder keeps from the imitated device whatever the
    /// policy's logits (closed, forced, diverged: rl::imitation_reach); zeros otherwise.
    rl::imitation_reach imitation_reach{};
    std::size_t updates = 0;  ///< PPO updates done in total (with those before a resume)
    std::size_t samples = 0;  ///< decisions simulated in total
    double seconds = 0;       ///< wall time of this call
};

/// @brief Trains a GO policy with PPO to place `g`'s ops on `c` and returns the best decision it
/// saw (the incumbent, a sample or the policy's mode at some update), with its simulation.
/// Randomness comes from `rng` alone: the network's initial weights, every sampled decision and
/// minibatch order, so the same seed gives the same result on any `config.ppo.threads`, and a run
/// resumed from its checkpoint ends exactly as an uninterrupted one.
/// @param visitor an rl::PpoVisitor over placement_task outcomes (progress, early stop).
/// @throws goopt::error for a bad configuration, graph or cluster, or an unusable checkpoint.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng,
          class Visitor = rl::null_visitor>
requires rl::SerializableRng<Rng> placement_result train_placement(const graph::computation_graph& g,
                                                                   const device::cluster<D>& c, const Cost& cost,
                                                                   const placement_config& config, Rng& rng,
                                                                   Visitor&& visitor = {}) {
    placement_task<D, Cost> task(g, c, cost, config.task);
    nn::policy_config pc = config.policy;
    pc.task_choices = {c.num_devices()};
    nn::go_policy<float> net(pc, rng);
    if (config.task.decoder == placement_decoder::guided && config.pretrained.empty()) start_from_heuristic(net);
    train_config tc{.ppo = config.ppo,
                    .imitate = {},
                    .incumbents = config.incumbents,
                    .checkpoint = config.checkpoint,
                    .checkpoint_every = config.checkpoint_every,
                    .resume = config.resume,
                    .pretrained = config.pretrained};
    if (config.pretrained_from_heuristic) {
        if (config.pretrained.empty())
            throw error("tasks::train_placement", "pretrained_from_heuristic without a pre-trained policy",
                        "a pretrained checkpoint to start from");
        if (config.task.decoder != placement_decoder::guided)
            throw error("tasks::train_placement", "pretrained_from_heuristic with the independent decoder",
                        "the guided decoder (zero logits decode to its heuristic)");
        tc.after_pretrained = [&net] { start_from_heuristic(net); };
    }
    if (config.policy.head == nn::first_head::pair && !tells_devices_apart(task.features()))
        throw error("tasks::train_placement",
                    concat("a pair head on ", c.num_devices(),
                           " devices its features cannot tell apart (equal devices, no reference placement): its "
                           "logits could not move any decision"),
                    "the guided decoder (its own plan is the reference), a feature_reference or anchor placement, "
                    "or the per-device head");
    if (!config.warm_start.empty()) {
        task.simulator().check_placement(config.warm_start);
        tc.imitate = task.actions_of(config.warm_start);
        tc.incumbents.push_back(task.decision_of(config.warm_start));
    }
    for (const auto& d : tc.incumbents) task.simulator().check_placement(d.placement);
    // the status line and metrics file when asked for: a visitor around the caller's
    rl::progress_config progress = config.progress;
    progress.total_updates = config.ppo.updates;
    progress.append = progress.append || config.resume;
    const bool report = progress.status != rl::status_mode::never || !progress.metrics.empty();
    std::optional<rl::progress_reporter> reporter;
    if (report) reporter.emplace(progress);
    using outcome = typename placement_task<D, Cost>::outcome;
    struct reporting {
        std::optional<rl::progress_reporter>& out;
        std::remove_reference_t<Visitor>& user;
        outcome best{};
        void on_best(const outcome& o) { best = o; }
        void on_sample(std::span<const int> a, const outcome& o) { user.on_sample(a, o); }
        void on_mode(std::span<const int> a, const outcome& o) { rl::notify_mode(user, a, o); }
        bool on_update(const rl::update_stats& s) {
            if (out)
                out->report(s, "best ms", best.step_time * 1e3,
                            {{"best_ms", best.step_time * 1e3}, {"best_oom", best.oom ? 1.0 : 0.0}});
            return user.on_update(s);
        }
    } v{reporter, visitor};
    const auto t = train(task, net, tc, rng, v);
    placement_result r;
    r.best = t.best;
    r.best_from = t.best_from;
    r.best_sample = t.best_index;
    r.updates = t.updates;
    r.samples = t.samples;
    r.imitation_agreement = t.imitation_agreement;
    r.imitation_mode_gap = t.imitation_mode_gap;
    r.imitation_steps = t.imitation_steps;
    r.imitation_reach = t.imitation_reach;
    r.seconds = t.seconds;
    return r;
}

}  // namespace goopt::tasks
