// Hook of `--tasks scheduling`: GO policies trained by PPO in rounds (tasks::train_scheduling, 256
// samples per update, as benchmarks/decisions measured) that decide a priority level for every op
// on m-ETF's placement, as a residual on the best order of the rounds before (the first: the best
// of critical-path priorities, HEFT's upward rank and m-ETF's own order on that placement),
// decoded by the simulator's list scheduler. m-ETF's own decision and the critical-path schedule of
// its placement are the incumbents: never worse than either.
#include "train_task.hpp"

#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/baselines/heft.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/scheduling_rounds.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace goopt::cli {

task_status scheduling_status() {
    return {true,
            "the PPO-trained scheduling policy: priority levels on m-ETF's placement in rounds "
            "(tasks/scheduling_rounds.hpp)"};
}

method_result optimize_scheduling(const optimize_context& ctx, const decisions& metf) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    const sim::placement& p = metf.placement;
    // the base order: the best priority heuristic on m-ETF's placement (the first one on ties)
    std::vector<std::pair<std::string, std::vector<double>>> orders{
        {"critical-path priorities", baselines::critical_path_priorities(s, p)},
        {"HEFT's upward rank", baselines::detail::heft_steps::heft_ranks(s)}};
    if (!metf.priorities.empty()) orders.emplace_back("m-ETF's own order", metf.priorities);
    std::size_t base = 0;
    double base_step = 0;
    for (std::size_t i = 0; i < orders.size(); ++i) {
        const double step = s.run(p, {.priorities = orders[i].second, .fusion = {}, .record_trace = false}).step_time;
        if (i == 0 || step < base_step) std::tie(base, base_step) = std::pair{i, step};
    }
    const sim::decision critical_path{.placement = p, .priorities = orders[0].second, .fusion = {}};
    method_result out;
    out.name = "ppo_scheduling";
    out.description = concat(
        "GO policies trained by PPO on this graph in rounds: priority levels on m-ETF's "
        "placement, from ",
        orders[base].first);
    constexpr std::size_t samples = 256;
    const auto r = train_with_curve(
        ctx, {metf, critical_path}, out, t0,
        [&](const tasks::train_config& tc, std::mt19937_64& rng, training_curve& v) {
            return tasks::train_scheduling(
                s, p, orders[base].second,
                [](const auto& task, std::mt19937_64& gen) { return fresh_task_policy(task, gen); }, tc, rng, v);
        },
        samples);
    if (r.best_from == tasks::best_source::incumbent)
        out.note += r.best_index == 0
                        ? "no schedule PPO sampled beat m-ETF's own order, so ppo_scheduling is m-ETF's decision"
                        : "no schedule PPO sampled beat critical-path priorities on m-ETF's placement, so "
                          "ppo_scheduling is that decision";
    return out;
}

}  // namespace goopt::cli
