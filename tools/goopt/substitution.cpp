// Hook of `--tasks substitution`: the graph-to-graph stage before placement, scheduling and fusion.
// The greedy search of subst/ (first improvement, then one step of lookahead) over the rule library
// in both directions and TASO's built-in transformations (TASO SOSP'19 §5), under the roofline cost
// of the cluster's first device; every rewrite is proven at the shapes it is applied at.
#include "optimizer.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/io/rule_json.hpp>
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

graph::computation_graph optimize_substitution(const optimize_context& ctx) {
    const auto rules = io::read_default_rules();
    // the greedy search's count budget; with the run's opt-in time budget (--time), a quarter of it
    const subst::rewrite_space space{.seconds = ctx.limits.seconds > 0 ? ctx.limits.seconds / 4 : 0.0};
    ctx.progress.update("substitution", 0, 1, "searches");
    auto r = subst::optimize(ctx.input.graph, rules, cost::roofline_model{}, ctx.simulator.cluster().device(0), space);
    ctx.progress.clear();
    return std::move(r.graph);
}

}  // namespace goopt::cli
