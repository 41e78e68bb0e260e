// The joint method of `goopt optimize --tasks` with two or more of placement, scheduling and fusion:
// one GO policy trained by PPO on tasks::joint_task (tasks::train_joint: with placement decided, a
// first stage on the levels at the anchor's placement, then all of them), which decodes each op's
// (device, priority level, fusion level) through the heuristic pipeline: m-ETF anchored on the best
// baseline's placement, priorities and fusion groups as the bases the levels depart from
// (tasks::pipeline_bases: the critical path's, the baseline's or FIFO's order; priority or greedy
// fusion's groups; tasks/fusion.hpp, fusion_levels). m-ETF's and the best baseline's
// decisions, each with greedy fusion where fusion is decided, and the pipeline's own decision are
// the incumbents: never worse than any of them.
#include "train_task.hpp"

#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/joint.hpp>
#include <goopt/tasks/joint_bases.hpp>
#include <goopt/tasks/joint_curriculum.hpp>

#include <chrono>

namespace goopt::cli {

method_result optimize_joint(const optimize_context& ctx, const decisions& metf, const method_result& best_baseline,
                             bool placement, bool scheduling, bool fusion) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    const decisions& best = best_baseline.chosen;
    // the levels' bases (tasks::pipeline_bases): the best baseline's priorities where they order its
    // pipeline at least as well as its critical path, else the critical path's, or FIFO's where it is
    // faster; priority or greedy fusion's groups, whichever makes the decoder's own pipeline faster
    const std::vector<double> order =
        !scheduling ? std::vector<double>(s.graph().num_ops(), 0.0)  // FIFO runs: the fusion anchor chosen under it
                    : tasks::own_or_critical_path(
                          s, best.placement, best.priorities,
                          fusion ? baselines::greedy_fusion(s.graph(), best.placement) : sim::fusion_groups{});
    const auto bases = tasks::pipeline_bases(s, best.placement, order, fusion);
    const tasks::joint_config config{.tasks = {.placement = placement, .scheduling = scheduling, .fusion = fusion},
                                     .placement = placement ? sim::placement{} : best.placement,
                                     .anchor = placement ? best.placement : sim::placement{},
                                     .priorities = scheduling ? bases.priorities : std::vector<double>{},
                                     .anchor_fusion = fusion ? bases.fusion : tasks::fusion_anchor::none};
    tasks::joint_task task(s.graph(), s.cluster(), s.cost_model(), config);
    method_result out;
    out.name = "go_" + config.tasks.name();
    const std::string order_name = !scheduling                  ? "FIFO"
                                   : config.priorities.empty()  ? "critical-path priorities"
                                   : config.priorities == order ? best_baseline.name + "'s priorities"
                                                                : "FIFO's order";
    out.description = concat(
        "GO policy trained by PPO on this graph: ", config.tasks.name(), " together, decoded by ",
        placement ? concat("m-ETF anchored on ", best_baseline.name, "'s placement") : best_baseline.name, ", ",
        order_name, (scheduling ? " shifted by levels" : ""),
        fusion ? concat(" and departures from ", bases.fusion == tasks::fusion_anchor::priority ? "priority" : "greedy",
                        " fusion's groups")
               : std::string());
    std::vector<sim::decision> incumbents{metf, best, task.heuristic_decision()};
    const char* names[] = {"m-ETF's own", "the best baseline's", "the heuristic pipeline's",
                           "m-ETF's with greedy fusion", "the best baseline's with greedy fusion"};
    if (fusion)
        for (const decisions* d : {&metf, &best}) {
            incumbents.push_back(*d);
            incumbents.back().fusion = baselines::greedy_fusion(s.graph(), d->placement);
        }
    // GO's joint task trained as a curriculum (tasks::train_joint): with placement decided, a quarter
    // of the updates on the levels at the anchor's placement, then all three from there
    const auto r = train_with_curve(
        ctx, std::move(incumbents), out, t0,
        [&](const tasks::train_config& tc, std::mt19937_64& rng, training_curve& v) {
            return tasks::train_joint(
                s.graph(), s.cluster(), s.cost_model(), config,
                [](const auto& t, std::mt19937_64& gen) { return fresh_task_policy(t, gen); }, tc, rng, v);
        });
    if (r.best_from == tasks::best_source::incumbent)
        out.note +=
            concat("no decision PPO sampled beat ", names[r.best_index], ", so ", out.name, " is that decision");
    return out;
}

}  // namespace goopt::cli
