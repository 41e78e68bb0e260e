// Hook of `--tasks substitution`: the graph-to-graph stage before placement, scheduling and fusion.
// Equality saturation (TENSAT MLSys'21), the best search of subst/ on the zoo (docs/substitution.md),
// over the rule library in both directions and TASO's built-in transformations (TASO SOSP'19 §5),
// searched from the graph and, where it is cheaper, from the graph after the standard fusions
// (eqsat_config::start_from_standard_fusions: never costlier than what a runtime fuses unsearched),
// under the cost of the cluster's first device (the program's: the roofline, or with --cost-table the
// measured times and the scaled roofline for the rest), as subst::inference_cost counts a step of
// the graph given (for a training step, the ops on the weights it updates too); every rewrite is
// proven at the shapes it is applied at. The stage hands on the rewritten graph only when its
// simulated step on one device (device 0, FIFO: the default the program measures) is shorter than
// the original's, and says which it hands on.
#include "cli.hpp"

#include <goopt/io/rule_json.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/search/eqsat_search.hpp>
#include <goopt/subst/search/optimize.hpp>

#include <algorithm>
#include <filesystem>

namespace goopt::cli {

task_status substitution_status() {
    // available where the rule library is (built with the benchmarks, installed, or named by
    // GOOPT_RULES_FILE): the default "every available task" leaves it out, and says so, otherwise
    bool there = false;
    try {
        there = std::filesystem::exists(io::default_rules_file());
    } catch (const error&) {}
    return {
        there,
        "the rule library (share/goopt/taso_rules_k3.json: ./bootstrap.sh build makes it; or set GOOPT_RULES_FILE)"};
}

double single_device_step(const graph::computation_graph& g, const cluster_type& cluster, const cost_model_type& cost) {
    simulator_type s(g, cluster, cost);
    const std::vector<sim::device_id> on_first(g.num_ops(), 0);
    return s.run(on_first, {.record_trace = false}).step_time;
}

stage_result optimize_substitution(const optimize_context& ctx) {
    const auto rules = io::read_default_rules();
    // eqsat's count budgets; with the run's opt-in time budget (--time), a quarter of it
    const subst::rewrite_space space{.seconds = ctx.limits.seconds > 0 ? ctx.limits.seconds / 4 : 0.0};
    ctx.progress.update("substitution", 0, 1, "searches");
    const auto& g = ctx.input.graph;
    const auto& cluster = ctx.simulator.cluster();
    const auto& cost = ctx.simulator.cost_model();
    auto r = subst::optimize(g, rules, cost, cluster.device(0), space, subst::eqsat_method{});
    ctx.progress.clear();
    const double before = single_device_step(g, cluster, cost), after = single_device_step(r.graph, cluster, cost);
    const std::string what = concat(
        "equality saturation (", r.stats.rules_applied, " rewrites, ", format_seconds(r.stats.seconds), ") under the ",
        graph::is_training_step(g) ? "training-step" : "inference", " cost: ", format_seconds(r.stats.cost_before),
        " -> ", format_seconds(r.stats.cost_after), ", ", g.num_ops(), " -> ", r.graph.num_ops(),
        " ops; one device (FIFO): ", format_seconds(before), " -> ", format_seconds(after));
    if (!(after < before)) return {g, false, concat(what, ": not faster, so the original graph is handed on")};
    return {std::move(r.graph), true, concat(what, ": the rewritten graph is handed on")};
}

}  // namespace goopt::cli
