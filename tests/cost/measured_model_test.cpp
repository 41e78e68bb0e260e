#include <goopt/cost/measured_model.hpp>
#include <goopt/device.hpp>
#include <goopt/graph/structural_hash.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/search/optimize.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace goopt;
using ops::op_kind;

static_assert(cost::CostModel<cost::measured_model<>, device::device_spec>);
static_assert(cost::CostModel<cost::measured_model<cost::roofline_model>, device::preset>);

namespace {

/// x -> matmul(w) -> relu, and a second matmul of x beside it: fusable and mergeable.
graph::computation_graph small_mlp() {
    graph::computation_graph g("small_mlp");
    const auto x = g.input("x", {4, 256});
    const auto w1 = g.weight("w1", {256, 256});
    const auto w2 = g.weight("w2", {256, 256});
    const auto b = g.weight("b", {256});
    const auto h = g.add1(op_kind::matmul, {x, w1}, {}, "h");
    const auto hb = g.add1(op_kind::ewadd, {h, b}, {}, "hb");
    g.mark_output(g.add1(op_kind::relu, {hb}, {}, "r"));
    g.mark_output(g.add1(op_kind::matmul, {x, w2}, {}, "k"));
    return g;
}

cost::cost_table table_of(const graph::computation_graph& g, double seconds) {
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (cost::is_measurable(g, o)) t.set(cost::op_config_key(g, o), seconds);
    return t;
}

}  // namespace

TEST_CASE("measured model: measured configurations first, the fallback for the rest, counted") {
    const auto g = small_mlp();
    const auto cpu = device::describe(*device::find_preset("CPU"));
    const cost::roofline_model roofline;
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    const auto h = *g.find("h");
    const auto r = *g.find("r");
    t.set(cost::op_config_key(g, h), 3e-5);
    const cost::measured_model m(t);
    CHECK(m.op_time(g, h, cpu) == 3e-5);
    CHECK(m.op_time(g, *g.find("k"), cpu) == 3e-5);  // the same configuration as h
    CHECK(m.op_time(g, r, cpu) == roofline.op_time(g, r, cpu));
    CHECK(m.op_time(g, *g.find("x"), cpu) == 0.0);  // sources cost nothing
    const auto c = cost::coverage(t, g);
    CHECK(c.ops == 4);
    CHECK(c.configs == 3);  // the two matmuls share one
    CHECK(c.measured_configs == 1);
    CHECK(c.measured_ops == 2);
    // counting only the ops a search adds up
    std::vector<bool> counted(g.num_ops(), false);
    counted[r] = true;
    CHECK(cost::coverage(t, g, counted).measured_ops == 0);
    CHECK(cost::coverage(t, g, counted).ops == 1);
    // an empty table is the fallback exactly
    const cost::measured_model none(cost::cost_table{});
    CHECK(subst::inference_cost(g, none, cpu) == subst::inference_cost(g, roofline, cpu));
    CHECK_THROWS_AS(t.set("relu(x)", -1.0), error);
    CHECK_THROWS_AS(t.set("relu(x)", cost::max_op_seconds * 2), error);  // a sum of such times could overflow
}

TEST_CASE("measured model: a fused group measured as one costs that, else its members' estimate") {
    const auto g = small_mlp();
    const auto cpu = device::describe(*device::find_preset("CPU"));
    const std::vector<graph::op_id> group{*g.find("h"), *g.find("hb"), *g.find("r")};
    auto t = table_of(g, 1e-5);
    const cost::measured_model members(t);
    const double estimate = members.group_time(g, group, cpu);
    CHECK(estimate <= 3e-5);
    CHECK(estimate >= 1e-5);  // never below the slowest member
    t.set(cost::group_config_key(g, group), 1.5e-5);
    CHECK(cost::measured_model(t).group_time(g, group, cpu) == 1.5e-5);
    // a member not measured: the fallback's group time
    cost::cost_table partial = table_of(g, 1e-5);
    partial.seconds.erase(cost::op_config_key(g, *g.find("r")));
    CHECK(cost::measured_model(partial).group_time(g, group, cpu) == cost::roofline_model{}.group_time(g, group, cpu));
}

TEST_CASE("a search given a table is deterministic, and follows the table") {
    const auto g = small_mlp();
    const auto cpu = device::describe(*device::find_preset("CPU"));
    const std::vector<subst::rule> rules;  // the built-in rules
    // what the roofline search makes of the graph
    const auto by_roofline = subst::optimize(g, rules, cost::roofline_model{}, cpu);
    REQUIRE(graph::structural_hash(by_roofline.graph) != graph::structural_hash(g));
    // a table in which every configuration of the roofline's result but the original's is slow
    auto t = table_of(by_roofline.graph, 1.0);
    for (const auto& [key, seconds] : table_of(g, 1e-5).seconds) t.set(key, seconds);
    const cost::measured_model m(t);
    const auto first = subst::optimize(g, rules, m, cpu);
    const auto second = subst::optimize(g, rules, m, cpu);
    CHECK(graph::structural_hash(first.graph) == graph::structural_hash(second.graph));
    CHECK(first.stats.cost_after == second.stats.cost_after);
    CHECK(first.stats.cost_after <= first.stats.cost_before);
    CHECK(first.stats.cost_after < subst::inference_cost(by_roofline.graph, m, cpu));
    CHECK(graph::structural_hash(first.graph) != graph::structural_hash(by_roofline.graph));
}
