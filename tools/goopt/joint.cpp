// The joint method of `goopt optimize --tasks` with two or more of placement, scheduling and fusion:
// one GO policy trained by PPO (tasks::train) on tasks::joint_task, which decodes each op's
// (device, priority level, fusion level) through the heuristic pipeline m-ETF, critical-path
// priorities and priority fusion. m-ETF's own decision, the same with greedy fusion where fusion is
// decided, and the pipeline's own decision are the incumbents: never worse than any of them.
#include "train_task.hpp"

#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/joint.hpp>

#include <chrono>

namespace goopt::cli {

method_result optimize_joint(const optimize_context& ctx, const decisions& metf, bool placement, bool scheduling,
                             bool fusion) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    const tasks::joint_config config{.tasks = {.placement = placement, .scheduling = scheduling, .fusion = fusion},
                                     .placement = placement ? sim::placement{} : metf.placement};
    tasks::joint_task task(s.graph(), s.cluster(), s.cost_model(), config);
    method_result out;
    out.name = "go_" + config.tasks.name();
    out.description = concat("GO policy trained by PPO on this graph: ", config.tasks.name(),
                             " together, decoded by m-ETF, critical-path priorities and priority fusion");
    std::vector<sim::decision> incumbents{metf, task.heuristic_decision()};
    if (fusion) {
        incumbents.push_back(metf);
        incumbents.back().fusion = baselines::greedy_fusion(s.graph(), metf.placement);
    }
    const auto r = train_levels(ctx, task, std::move(incumbents), out, t0);
    if (r.best_from == tasks::best_source::incumbent)
        out.note += concat("no decision PPO sampled beat ",
                           r.best_index == 0   ? "m-ETF's own"
                           : r.best_index == 1 ? "the heuristic pipeline's"
                                               : "m-ETF's with greedy fusion",
                           ", so ", out.name, " is that decision");
    return out;
}

}  // namespace goopt::cli
