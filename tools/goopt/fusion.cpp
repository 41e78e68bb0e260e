// Hook of `--tasks fusion`: a GO policy trained by PPO (tasks::train) that decides a fusion level
// for every op on m-ETF's placement and priorities, decoded from the better of greedy and XLA-style
// priority fusion's groups (tasks/fusion.hpp, fusion_anchor), the policy starting at the middle
// level: that fusion. Greedy fusion and priority fusion on that placement are the incumbents:
// never worse than either.
#include "train_task.hpp"

#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/fusion.hpp>
#include <goopt/tasks/simulated_task.hpp>

#include <chrono>
#include <cstdio>

namespace goopt::cli {

task_status fusion_status() {
    return {true, "the PPO-trained fusion policy: fusion levels on m-ETF's placement (tasks/fusion.hpp)"};
}

method_result optimize_fusion(const optimize_context& ctx, const decisions& metf) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    const tasks::fusion_decider priority(s, metf.placement, metf.priorities);
    const decisions greedy{metf.placement, metf.priorities, baselines::greedy_fusion(s.graph(), metf.placement)};
    const bool from_greedy = sim::run(s, greedy).step_time < priority.reference_step();
    const tasks::fusion_decider decider(
        s, metf.placement, metf.priorities,
        {.anchor = from_greedy ? tasks::fusion_anchor::greedy : tasks::fusion_anchor::priority});
    tasks::simulated_task task(s.graph(), s.cluster(), decider);
    method_result out;
    out.name = "ppo_fusion";
    out.description =
        concat("GO policy trained by PPO on this graph: fusion levels on m-ETF's placement, departing from ",
               from_greedy ? "greedy" : "priority", " fusion's groups");
    const auto r = train_levels(ctx, task, {greedy, priority.heuristic_decision()}, out, t0, true);
    auto ms = [](double t) {
        char b[32];
        std::snprintf(b, sizeof b, "%.4g ms", t * 1e3);
        return std::string(b);
    };
    out.note += concat("on m-ETF's placement: no fusion ", ms(sim::run(s, metf).step_time), ", greedy fusion ",
                       ms(sim::run(s, greedy).step_time), ", priority fusion ", ms(priority.reference_step()),
                       ", ppo_fusion ", ms(r.best.result.step_time));
    if (r.best_from == tasks::best_source::incumbent)
        out.note += r.best_index == 0 ? "; no fusion PPO sampled beat greedy fusion, so ppo_fusion is that decision"
                                      : "; no fusion PPO sampled beat priority fusion, so ppo_fusion is that decision";
    return out;
}

}  // namespace goopt::cli
