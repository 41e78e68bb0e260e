#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/scaled_roofline.hpp>
#include <goopt/device.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/search/optimize.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace goopt;
using ops::op_kind;

static_assert(cost::CostModel<cost::scaled_roofline, device::device_spec>);
static_assert(cost::CostModel<cost::measured_model<cost::scaled_roofline>, device::device_spec>);

namespace {

/// Two matmuls of different shapes with a bias and a relu, and a sigmoid nobody measures.
graph::computation_graph two_matmuls() {
    graph::computation_graph g("two_matmuls");
    const auto x = g.input("x", {4, 256});
    const auto w1 = g.weight("w1", {256, 256});
    const auto w2 = g.weight("w2", {256, 128});
    const auto b = g.weight("b", {256});
    const auto h = g.add1(op_kind::matmul, {x, w1}, {}, "h");
    const auto hb = g.add1(op_kind::ewadd, {h, b}, {}, "hb");
    const auto r = g.add1(op_kind::relu, {hb}, {}, "r");
    g.mark_output(g.add1(op_kind::matmul, {r, w2}, {}, "k"));
    g.mark_output(g.add1(op_kind::sigmoid, {r}, {}, "s"));
    return g;
}

}  // namespace

TEST_CASE("scaled roofline: per kind the median measured/roofline ratio, else the median over all kinds") {
    const auto g = two_matmuls();
    const auto cpu = device::describe(*device::find_preset("CPU"));
    const cost::roofline_model roofline;
    const auto h = *g.find("h"), k = *g.find("k"), hb = *g.find("hb"), r = *g.find("r"), s = *g.find("s");
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    t.set(cost::op_config_key(g, h), 2 * roofline.op_time(g, h, cpu));
    t.set(cost::op_config_key(g, k), 6 * roofline.op_time(g, k, cpu));
    t.set(cost::op_config_key(g, hb), 20 * roofline.op_time(g, hb, cpu));
    const graph::computation_graph* graphs[] = {&g};
    const std::vector<bool> every[] = {{}};
    const auto f = cost::scaled_roofline::fit(t, graphs, every, cpu);
    CHECK(f.factor(op_kind::matmul) == doctest::Approx(4.0));  // the median of 2 and 6
    CHECK(f.factor(op_kind::ewadd) == doctest::Approx(20.0));
    CHECK(f.overall() == doctest::Approx(6.0));  // the median of 2, 6 and 20
    CHECK(f.factor(op_kind::relu) == f.overall());
    CHECK(f.op_time(g, s, cpu) == doctest::Approx(6.0 * roofline.op_time(g, s, cpu)));
    CHECK(f.op_time(g, *g.find("x"), cpu) == 0.0);
    // a group: its roofline time, scaled by its members' factors weighted by their roofline times
    const std::vector<graph::op_id> group{h, hb, r};
    const double weighted =
        (4 * roofline.op_time(g, h, cpu) + 20 * roofline.op_time(g, hb, cpu) + 6 * roofline.op_time(g, r, cpu)) /
        (roofline.op_time(g, h, cpu) + roofline.op_time(g, hb, cpu) + roofline.op_time(g, r, cpu));
    CHECK(f.group_time(g, group, cpu) == doctest::Approx(weighted * roofline.group_time(g, group, cpu)));
    // only the counted ops' configurations: without k, matmul's factor is h's
    std::vector<bool> counted(g.num_ops(), true);
    counted[k] = false;
    const std::vector<bool> masks[] = {counted};
    CHECK(cost::scaled_roofline::fit(t, graphs, masks, cpu).factor(op_kind::matmul) == doctest::Approx(2.0));
    // nothing measured, or no graph: the roofline itself
    const auto none = cost::scaled_roofline::fit(cost::cost_table{}, graphs, every, cpu);
    CHECK(none.overall() == 1.0);
    CHECK(none.by_kind().empty());
    CHECK(cost::scaled_roofline{}.op_time(g, h, cpu) == roofline.op_time(g, h, cpu));
    // times measured 0 (under the dispatch cost) give no factor of 0: unmeasured ops never cost nothing
    cost::cost_table zero{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    zero.set(cost::op_config_key(g, r), 0.0);
    const auto z = cost::scaled_roofline::fit(zero, graphs, every, cpu);
    CHECK(z.overall() == 1.0);
    CHECK(z.by_kind().empty());
    zero.set(cost::op_config_key(g, h), 3 * roofline.op_time(g, h, cpu));
    zero.set(cost::op_config_key(g, hb), 0.0);
    const auto y = cost::scaled_roofline::fit(zero, graphs, every, cpu);
    CHECK(y.overall() == doctest::Approx(3.0));  // not the median of 0, 0 and 3
    CHECK(y.factor(op_kind::relu) == doctest::Approx(3.0));
}

TEST_CASE("unbiased model: a partly measured table does not make unmeasured configurations look cheap") {
    const auto g = two_matmuls();
    const auto cpu = device::describe(*device::find_preset("CPU"));
    const cost::roofline_model roofline;
    // this runtime is 10x the roofline on every configuration of the original, measured
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (cost::is_measurable(g, o)) t.set(cost::op_config_key(g, o), 10 * roofline.op_time(g, o, cpu));
    const auto runs = subst::runs_per_inference(g);
    const auto unbiased = cost::unbiased_model(t, g, runs, cpu);
    const cost::measured_model<> plain(t);
    const std::vector<subst::rule> rules;  // the built-in rules: the bias add and relu fuse into the matmul
    const auto by_roofline = subst::optimize(g, rules, roofline, cpu);
    REQUIRE(by_roofline.stats.cost_after < by_roofline.stats.cost_before);
    const auto c = cost::coverage(t, by_roofline.graph, subst::runs_per_inference(by_roofline.graph));
    REQUIRE(c.measured_configs < c.configs);  // the rewrites made configurations nobody measured
    // the plain fallback prices them 10x cheaper than the measured ones; the unbiased one does not
    const double roof_after = subst::inference_cost(by_roofline.graph, roofline, cpu);
    CHECK(subst::inference_cost(by_roofline.graph, unbiased, cpu) == doctest::Approx(10 * roof_after));
    CHECK(subst::inference_cost(by_roofline.graph, plain, cpu) < 10 * roof_after);
    CHECK(subst::inference_cost(g, unbiased, cpu) == doctest::Approx(subst::inference_cost(g, plain, cpu)));
    // refusing: a search keeps to measured configurations, so its result's cost is measured
    const cost::measured_model<cost::scaled_roofline> refusing(
        t, cost::scaled_roofline::uniform(cost::scaled_roofline::refusal_factor));
    CHECK(refusing.fallback().factor(op_kind::sigmoid) == cost::scaled_roofline::refusal_factor);
    const auto kept = subst::optimize(g, rules, refusing, cpu);
    const auto k = cost::coverage(t, kept.graph, subst::runs_per_inference(kept.graph));
    CHECK(k.measured_configs == k.configs);
    CHECK(kept.stats.cost_after <= kept.stats.cost_before);
    // a search with it is deterministic
    const auto first = subst::optimize(g, rules, unbiased, cpu);
    const auto second = subst::optimize(g, rules, unbiased, cpu);
    CHECK(first.stats.cost_after == second.stats.cost_after);
    CHECK(first.graph.num_ops() == second.graph.num_ops());
}
