// Hook of `--tasks scheduling`: a GO policy trained by PPO (tasks::train) that decides a priority
// level for every op on m-ETF's placement, as a residual on the critical-path priority
// (tasks/scheduling.hpp), decoded by the simulator's list scheduler. m-ETF's own decision and the
// critical-path schedule of its placement are the incumbents: never worse than either.
#include "optimizer.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/train.hpp>

#include <chrono>
#include <random>

namespace goopt::cli {

task_status scheduling_status() {
    return {true, "the PPO-trained scheduling policy: priority levels on m-ETF's placement (tasks/scheduling.hpp)"};
}

method_result optimize_scheduling(const optimize_context& ctx, const decisions& metf) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    const tasks::scheduling_decider decider(s, metf.placement);
    tasks::simulated_task task(s.graph(), s.cluster(), decider);
    std::mt19937_64 rng(ctx.seed);
    nn::go_policy<float> net({.hidden = 64, .shared_attention_layers = 1, .heads = 4, .task_choices = {21}}, rng);
    method_result out{"ppo_scheduling",
                      "GO policy trained by PPO on this graph: priority levels on m-ETF's placement",
                      {},
                      {},
                      0,
                      {},
                      "PPO update (16 samples)"};
    training_curve v{ctx, out, "ppo_scheduling"};
    const auto r = tasks::train(
        task, net,
        {.ppo = {.updates = ctx.limits.steps, .samples_per_update = 16, .learning_rate = 1e-3, .threads = 2},
         .incumbents = {metf, decider.heuristic_decision()}},
        rng, v);
    ctx.progress.clear();
    out.chosen = r.best.decision;
    out.result = r.best.result;
    if (!ctx.checkpoint.empty()) out.note = "trained from fresh weights: --checkpoint holds a placement policy; ";
    if (r.best_from == tasks::best_source::incumbent)
        out.note += r.best_index == 0
                        ? "no schedule PPO sampled beat m-ETF's own order, so ppo_scheduling is m-ETF's decision"
                        : "no schedule PPO sampled beat critical-path priorities on m-ETF's placement, so "
                          "ppo_scheduling is that decision";
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace goopt::cli
