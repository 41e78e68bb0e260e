// Hook of `--tasks scheduling`: a GO policy trained by PPO (tasks::train) that decides a priority
// level for every op on m-ETF's placement, as a residual on the critical-path priority
// (tasks/scheduling.hpp), decoded by the simulator's list scheduler. m-ETF's own decision and the
// critical-path schedule of its placement are the incumbents: never worse than either.
#include "train_task.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/simulated_task.hpp>

#include <chrono>

namespace goopt::cli {

task_status scheduling_status() {
    return {true, "the PPO-trained scheduling policy: priority levels on m-ETF's placement (tasks/scheduling.hpp)"};
}

method_result optimize_scheduling(const optimize_context& ctx, const decisions& metf) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    const tasks::scheduling_decider decider(s, metf.placement);
    tasks::simulated_task task(s.graph(), s.cluster(), decider);
    method_result out;
    out.name = "ppo_scheduling";
    out.description = "GO policy trained by PPO on this graph: priority levels on m-ETF's placement";
    const auto r = train_levels(ctx, task, {metf, decider.heuristic_decision()}, out, t0, true);
    if (r.best_from == tasks::best_source::incumbent)
        out.note += r.best_index == 0
                        ? "no schedule PPO sampled beat m-ETF's own order, so ppo_scheduling is m-ETF's decision"
                        : "no schedule PPO sampled beat critical-path priorities on m-ETF's placement, so "
                          "ppo_scheduling is that decision";
    return out;
}

}  // namespace goopt::cli
