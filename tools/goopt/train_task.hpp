#pragma once
/// @file
/// @brief How the program trains a learned task that decides on m-ETF's decision (scheduling,
/// fusion, the joint tasks): one GO policy with the task's choices per op, PPO within the run's
/// budget, the incumbents kept, the curve and progress through training_curve. Written once for
/// every such task.

#include "optimizer.hpp"

#include <goopt/nn/go_policy.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/level_prior.hpp>
#include <goopt/tasks/train.hpp>

#include <chrono>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace goopt::cli {

/// @brief Trains a fresh policy on `task` (a tasks::TrainableTask) with `incumbents`, fills `out`'s
/// decision, result, curve and time (from `t0`) and returns the trainer's result for the caller's note.
/// A task that decodes with its heuristic (rl::GuidedEnvironment) starts from zero logits: its
/// heuristic's own decision; with `from_middle_level`, a task of ordered levels starts preferring the
/// middle level (tasks::start_from_middle_level), its heuristic's decision.
template <class Task>
tasks::train_result train_levels(const optimize_context& ctx, Task& task, std::vector<sim::decision> incumbents,
                                 method_result& out, std::chrono::steady_clock::time_point t0,
                                 bool from_middle_level = false) {
    std::mt19937_64 rng(ctx.seed);
    nn::go_policy<float> net(
        {.hidden = 64, .shared_attention_layers = 1, .heads = 4, .task_choices = {task.num_choices()}}, rng);
    if constexpr (rl::GuidedEnvironment<Task>)
        if (task.guided()) tasks::start_from_heuristic(net);
    if (from_middle_level) tasks::start_from_middle_level(net);
    out.curve_unit = "PPO update (16 samples)";
    training_curve v{ctx, out, out.name};
    auto r = tasks::train(task, net,
                          {.ppo = {.updates = ctx.limits.steps,
                                   .samples_per_update = 16,
                                   .learning_rate = 1e-3,
                                   .threads = 2,
                                   .sharding = ranks().sharding},
                           .incumbents = std::move(incumbents)},
                          rng, v);
    ctx.progress.clear();
    out.chosen = r.best.decision;
    out.result = r.best.result;
    if (!ctx.checkpoint.empty()) out.note = "trained from fresh weights: --checkpoint holds a placement policy; ";
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace goopt::cli
