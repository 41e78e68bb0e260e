#include <goopt/cost/recording_model.hpp>
#include <goopt/device.hpp>
#include <goopt/graph/structural_hash.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/search/eqsat_search.hpp>
#include <goopt/subst/search/optimize.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

static_assert(cost::CostModel<cost::recording_model<>, device::device_spec>);

namespace {

/// Two products of one activation by two weights, and one by a product of weights: the search can
/// merge the first two into one product by the concatenated weights.
graph::computation_graph two_heads() {
    graph::computation_graph g("two_heads");
    const auto x = g.input("x", {8, 64});
    const auto w1 = g.weight("w1", {64, 64});
    const auto w2 = g.weight("w2", {64, 64});
    g.mark_output(g.add1(op_kind::matmul, {x, w1}, {}, "a"));
    g.mark_output(g.add1(op_kind::matmul, {x, w2}, {}, "b"));
    const auto w12 = g.add1(op_kind::matmul, {w1, w2}, {}, "w12");
    g.mark_output(g.add1(op_kind::matmul, {x, w12}, {}, "c"));
    g.mark_output(g.add1(op_kind::ewmul, {x, x}, {}, "square"));
    return g;
}

cost::cost_table empty_table() { return {.environment = cost::this_machine("1.22.0", 1), .repetitions = 5}; }

}  // namespace

TEST_CASE("single_op_graph: the op alone, with its configuration key") {
    const auto g = two_heads();
    for (const char* name : {"a", "c", "w12", "square"}) {
        CAPTURE(name);
        const auto o = *g.find(name);
        const auto one = cost::single_op_graph(g, o);
        graph::op_id op = 0;
        while (one.get_op(op).spec().has(ops::source)) ++op;
        CHECK(op + 1 == one.num_ops());  // sources, then the op
        CHECK(cost::op_config_key(one, op) == cost::op_config_key(g, o));
        CHECK(one.outputs().size() == 1);
    }
    // the product by a product of weights keys its operand as a weight; x * x reads one input
    CHECK(cost::op_config_key(g, *g.find("c")).find(";in=f32[8,64],w:f32[64,64];") != std::string::npos);
    CHECK(cost::single_op_graph(g, *g.find("square")).num_ops() == 2);
}

TEST_CASE("recording model: the measured model's costs, and what it could not find recorded once") {
    const auto g = two_heads();
    const auto cpu = device::describe(*device::find_preset("CPU"));
    auto t = empty_table();
    t.set(cost::op_config_key(g, *g.find("a")), 2e-6);  // a's configuration is b's and c's too
    const cost::measured_model<> measured(t);
    const cost::recording_model recording(measured);
    const auto copy = recording;  // copies share the record
    for (graph::op_id o = 0; o < g.num_ops(); ++o) CHECK(copy.op_time(g, o, cpu) == measured.op_time(g, o, cpu));
    CHECK(subst::inference_cost(g, recording, cpu) == subst::inference_cost(g, measured, cpu));
    const auto asked = recording.unmeasured();
    REQUIRE(asked.size() == 1);  // square: not w12, on weights alone (folded by a runtime, counted by no search)
    CHECK(asked.count(cost::op_config_key(g, *g.find("w12"))) == 0);
    CHECK(asked.count(cost::op_config_key(g, *g.find("square"))) == 1);
    CHECK(asked.count(cost::op_config_key(g, *g.find("a"))) == 0);
    // recording off: the same costs, nothing recorded
    const cost::recording_model silent(measured, false);
    CHECK(subst::inference_cost(g, silent, cpu) == subst::inference_cost(g, measured, cpu));
    CHECK(silent.unmeasured().empty());
}

TEST_CASE("recording model: a rewrite the fallback refuses is asked about, and chosen once measured fast") {
    // x -> x*w1, x*w2: equality saturation can merge them into one product by [w1 w2] and split it
    graph::computation_graph g("two_products");
    const auto x = g.input("x", {8, 64});
    const auto w1 = g.weight("w1", {64, 64});
    const auto w2 = g.weight("w2", {64, 64});
    g.mark_output(g.add1(op_kind::matmul, {x, w1}, {}, "a"));
    g.mark_output(g.add1(op_kind::matmul, {x, w2}, {}, "b"));
    const auto cpu = device::describe(*device::find_preset("CPU"));
    const std::vector<subst::rule> rules;  // the built-in rules
    auto t = empty_table();
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (cost::is_measurable(g, o)) t.set(cost::op_config_key(g, o), 1e-5);
    // every unmeasured configuration refused: the input is kept, but the search asked about its rewrites
    auto refusing = [](cost::cost_table table) {
        return cost::recording_model(cost::measured_model<cost::scaled_roofline>(
            std::move(table), cost::scaled_roofline::uniform(cost::scaled_roofline::refusal_factor)));
    };
    const auto first_model = refusing(t);
    const auto first = subst::optimize(g, rules, first_model, cpu, {}, subst::eqsat_method{});
    CHECK(graph::structural_hash(first.graph) == graph::structural_hash(g));
    const auto asked = first_model.unmeasured();
    // the merged product's weight operand is the concatenated weights, keyed as a weight (runtimes fold it)
    const auto merged = std::find_if(asked.begin(), asked.end(), [](const auto& a) {
        return a.first.starts_with("matmul(") && a.first.find(";in=f32[8,64],w:f32[64,128];") != std::string::npos;
    });
    REQUIRE(merged != asked.end());
    // measured: everything asked about runs fast; searched again, the merge is taken
    for (const auto& [key, one] : asked) t.set(key, 1e-6);
    const auto second_model = refusing(t);
    const auto second = subst::optimize(g, rules, second_model, cpu, {}, subst::eqsat_method{});
    CHECK(second.stats.cost_after < second.stats.cost_before);
    const auto fused = cost::coverage(t, second.graph, subst::runs_per_inference(second.graph));
    CHECK(fused.measured_configs == fused.configs);  // the result is priced by measurements alone
    CHECK(second_model.unmeasured().empty());        // nothing left to measure: the rounds converge
}
