#pragma once
/// @file
/// @brief How the program trains a learned task that decides on m-ETF's decision (scheduling,
/// fusion, the joint tasks): one GO policy with the task's choices per op, PPO within the run's
/// budget, the incumbents kept, the curve and progress through training_curve. Written once for
/// every such task.

#include "optimizer.hpp"

#include <goopt/nn/go_policy.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/joint_curriculum.hpp>
#include <goopt/tasks/level_prior.hpp>
#include <goopt/tasks/train.hpp>

#include <chrono>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace goopt::cli {

/// The program's network for a learned task of `task`'s choices per op. A task that decodes with its
/// heuristic (rl::GuidedEnvironment) starts from zero logits: its heuristic's own decision.
template <class Task> nn::go_policy<float> fresh_task_policy(const Task& task, std::mt19937_64& rng) {
    nn::go_policy<float> net(
        {.hidden = 64, .shared_attention_layers = 1, .heads = 4, .task_choices = {task.num_choices()}}, rng);
    if constexpr (rl::GuidedEnvironment<Task>)
        if (task.guided()) tasks::start_from_heuristic(net);
    return net;
}

/// @brief Runs `train(config, rng, visitor)` with the program's PPO settings within the run's budget,
/// `incumbents` kept, `samples` decisions per update, the curve and progress through training_curve;
/// fills `out`'s decision, result and time (from `t0`) and returns the trainer's result for the caller's note.
template <class Train>
tasks::train_result train_with_curve(const optimize_context& ctx, std::vector<sim::decision> incumbents,
                                     method_result& out, std::chrono::steady_clock::time_point t0, Train&& train,
                                     std::size_t samples = 16) {
    std::mt19937_64 rng(ctx.seed);
    out.curve_unit = concat("PPO update (", samples, " samples)");
    training_curve v{ctx, out, out.name};
    const tasks::train_config config{.ppo = {.updates = ctx.limits.steps,
                                             .samples_per_update = samples,
                                             .learning_rate = 1e-3,
                                             .threads = 2,
                                             .sharding = ranks().sharding},
                                     .incumbents = std::move(incumbents)};
    auto r = train(config, rng, v);
    ctx.progress.clear();
    out.chosen = r.best.decision;
    out.result = r.best.result;
    if (!ctx.checkpoint.empty()) out.note = "trained from fresh weights: --checkpoint holds a placement policy; ";
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

/// @brief Trains a fresh policy (fresh_task_policy) on `task` (a tasks::TrainableTask) through
/// train_with_curve. With `from_middle_level`, a task of ordered levels starts preferring the middle
/// level (tasks::start_from_middle_level), its heuristic's decision.
template <class Task>
tasks::train_result train_levels(const optimize_context& ctx, Task& task, std::vector<sim::decision> incumbents,
                                 method_result& out, std::chrono::steady_clock::time_point t0,
                                 bool from_middle_level = false) {
    return train_with_curve(ctx, std::move(incumbents), out, t0,
                            [&](const tasks::train_config& config, std::mt19937_64& rng, training_curve& v) {
                                auto net = fresh_task_policy(task, rng);
                                if (from_middle_level) tasks::start_from_middle_level(net);
                                return tasks::train(task, net, config, rng, v);
                            });
}

}  // namespace goopt::cli
