// Equality saturation (subst/search/eqsat_search.hpp, subst/search/model_egraph.hpp): TASO's README block and
// small cases reach their known optimum, the optimized graph computes what the original does at
// shapes other than the rules' own, multi-output merges are extracted with their shared op counted
// once, and every bound is reported.

#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/resnet.hpp>
#include <goopt/models/taso_graphs.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include "../shipped_rules.hpp"

#include <string>
#include <vector>

using namespace goopt;
using namespace goopt::subst;
using ops::op_kind;

namespace {

/// TASO's README block: a 3x3 and a 1x1 conv of one input, added, relu.
graph::computation_graph taso_readme_block(std::int64_t channels, std::int64_t side) {
    graph::computation_graph g("taso_readme");
    graph::builder b(g);
    const auto x = b.input("x", {1, channels, side, side});
    const auto w1 = b.weight("w1", {channels, channels, 3, 3});
    const auto w2 = b.weight("w2", {channels, channels, 1, 1});
    g.mark_output(
        b.relu(b.ewadd(b.conv2d(x, w1, {.name = "conv3x3"}), b.conv2d(x, w2, {.name = "conv1x1"}), "add"), "relu"));
    return g;
}

template <class Bound> void check_sound(const graph::computation_graph& before, const search_result<Bound>& r) {
    CHECK(r.stats.cost_after <= r.stats.cost_before);
    CHECK(r.stats.cost_after == doctest::Approx(inference_cost(r.graph, cost::roofline_model{}, device::t4)));
    CHECK(r.stats.rules_applied == r.stats.applied.size());
    CHECK_NOTHROW(graph::validate(r.graph));
    for (std::uint64_t seed : {3, 11}) CHECK(max_relative_difference(before, r.graph, seed) <= 1e-9);
}

}  // namespace

TEST_CASE("eqsat: TASO's README block becomes one conv with relu fused, at several sizes") {
    const auto rules = shipped_rules();
    for (auto [channels, side] : {std::pair{8, 6}, std::pair{5, 9}, std::pair{16, 4}}) {
        CAPTURE(channels);
        const auto g = taso_readme_block(channels, side);
        const auto r = eqsat_search(g, rules, cost::roofline_model{}, device::t4);
        check_sound(g, r);
        REQUIRE(inference_ops(r.graph) == 1);
        const auto& out = r.graph.get_op(r.graph.producer(r.graph.outputs()[0]));
        CHECK(out.kind == op_kind::conv2d);
        CHECK(out.attrs.get_int(ops::attr_id::activation) == static_cast<std::int64_t>(ops::activation::relu));
        CHECK(r.stats.cost_after < r.stats.cost_before);
        // the generated rules (both directions) keep growing even this e-graph, unsaturated: the rounds
        // end when one stops making it cheaper (or at 4)
        CHECK((r.stats.bound == eqsat_bound::plateau || r.stats.bound == eqsat_bound::iterations ||
               r.stats.bound == eqsat_bound::converged));
        CHECK(r.stats.rules_applied >= 1);
    }
}

TEST_CASE("eqsat: parallel matmuls of one input merge into one, the shared matmul counted once") {
    // three matmuls of one input, each with its own tanh: the optimum is one matmul with tanh fused
    // and a split (a view at one row), which the greedy tree cost alone cannot see
    graph::computation_graph g("three_matmuls");
    graph::builder b(g);
    const auto x = b.input("x", {1, 24});
    for (int i = 0; i < 3; ++i)
        g.mark_output(b.unary(op_kind::tanh, b.matmul(x, b.weight("w" + std::to_string(i), {24, 16 + 4 * i}))));
    const auto r = eqsat_search(g, shipped_rules(), cost::roofline_model{}, device::t4);
    check_sound(g, r);
    CHECK(r.stats.cost_after < r.stats.cost_before);
    std::size_t matmuls = 0;
    for (const auto& op : r.graph.ops()) matmuls += op.kind == op_kind::matmul;
    CHECK(matmuls == 1);
    CHECK(inference_ops(r.graph) == 1);
}

TEST_CASE("eqsat: a small NasRNN gets cheaper, keeps its values, names and sources") {
    const auto g = models::nasrnn({.hidden = 8, .steps = 2});
    const auto r = optimize(g, shipped_rules(), cost::roofline_model{}, device::t4, {}, eqsat_method{});
    check_sound(g, r);
    CHECK(r.stats.cost_after < r.stats.cost_before);
    for (const auto& op : r.graph.ops()) {
        for (const auto& orig : g.ops())
            if (orig.name == op.name) CHECK(orig.layer == op.layer);
        if (!op.spec().has(ops::source)) CHECK_MESSAGE(op.layer >= 0, op.name);
    }
    std::size_t sources = 0;
    for (const auto& op : g.ops()) sources += op.spec().has(ops::source);
    std::size_t kept = 0;
    for (const auto& op : r.graph.ops()) kept += op.spec().has(ops::source);
    CHECK(kept == sources);
}

TEST_CASE("eqsat: every step's parallel matmuls of a NasRNN are merged, at sizes of its own") {
    // per step eight matmuls of x and eight of h: the merges are matched in the e-graph itself, so
    // that the extraction can take every group merged at once; step 0's h0 is a weight, so its
    // matmuls are weight preprocessing and the optimum runs one matmul in step 0 and two after. With
    // the sums of products (x W_i + h U_i = [x h] [W_i; U_i]) the search may find a cheaper graph
    // still, never a costlier one
    for (auto [batch, hidden] : {std::pair{3, 12}, std::pair{2, 20}}) {
        CAPTURE(hidden);
        const auto g = models::nasrnn({.batch = batch, .hidden = hidden, .steps = 3});
        rewrite_space unjoined;
        unjoined.builtins.sum_of_products = false;
        for (const auto& rules : {std::vector<rule>{}, shipped_rules()}) {
            const auto r = eqsat_search(g, rules, cost::roofline_model{}, device::t4, unjoined);
            check_sound(g, r);
            const auto preprocessing = weight_only(r.graph);
            // products with a fused addend count too: the step's joined add goes into one of them
            std::size_t matmuls = 0;
            for (graph::op_id o = 0; o < r.graph.num_ops(); ++o) {
                const auto k = r.graph.get_op(o).kind;
                matmuls += (k == op_kind::matmul || k == op_kind::matmul_bias) && !preprocessing[o];
            }
            CHECK(matmuls == 5);
            const auto joined = eqsat_search(g, rules, cost::roofline_model{}, device::t4);
            check_sound(g, joined);
            CHECK(joined.stats.cost_after <= r.stats.cost_after);
        }
    }
}

TEST_CASE("eqsat: never costlier than the standard fusions alone, which it starts from") {
    // ResNet's conv-bn-relu blocks: from the model itself, merges of parallel convs could leave an
    // extraction that fuses fewer epilogues than a runtime does; started from the standard
    // fusions' graph, the result costs at most that graph's cost, and computes what the model does
    const auto rules = shipped_rules();
    const cost::roofline_model cost;
    for (const auto& g : {models::resnet50({.image = 16, .num_classes = 10, .blocks = {1, 1, 1, 1}, .width = 8}),
                          models::resnet50_taso({.image = 8, .blocks = {1, 1, 1, 1}, .width = 8})}) {
        CAPTURE(g.name());
        standard_fusions_stats fusions;
        const auto fused = standard_fusions(g, 2e7, &fusions);
        const double standard = inference_cost(fused, cost, device::t4);
        REQUIRE(standard < inference_cost(g, cost, device::t4));
        const auto r = eqsat_search(g, rules, cost, device::t4, {}, {.iterations = 2});
        check_sound(g, r);
        CHECK(r.stats.cost_after <= standard * (1 + 1e-12));
        // the fusions taken at the start are among the rewrites the result names
        CHECK(fusions.applied > 0);
        CHECK(r.stats.rules_applied >= fusions.applied);
        // started from the model itself (the option off), the search still keeps the values
        const auto from_model =
            eqsat_search(g, rules, cost, device::t4, {}, {.iterations = 2, .start_from_standard_fusions = false});
        check_sound(g, from_model);
        // without the built-ins there are no standard fusions to start from
        const auto none = eqsat_search(g, std::vector<rule>{}, cost, device::t4, {.use_builtins = false});
        CHECK(none.stats.cost_after == none.stats.cost_before);
    }
}

TEST_CASE("eqsat: each bound is reported") {
    const auto g = models::nasrnn({.hidden = 8, .steps = 2});
    const auto rules = shipped_rules();
    const auto one = eqsat_search(g, rules, cost::roofline_model{}, device::t4, {}, {.iterations = 1});
    CHECK(one.stats.bound == eqsat_bound::iterations);
    CHECK(one.stats.steps == 1);
    // a round that does not make the graph cheaper ends the rounds unless min_round_gain is 0:
    // (x + y) * z, which distributivity (given here: the sanitizer build ships no rule library)
    // rewrites but nothing makes cheaper, whatever the machine's speed does to the extraction
    graph::computation_graph flat_graph("distributable");
    graph::builder fb(flat_graph);
    flat_graph.mark_output(fb.ewmul(fb.ewadd(fb.input("x", {4, 8}), fb.input("y", {4, 8})), fb.input("z", {4, 8})));
    const std::vector<rule> distributivity{distributivity_rule()};
    const rewrite_space no_builtins{.use_builtins = false};
    const eqsat_config three{.iterations = 3};
    const auto flat = eqsat_search(flat_graph, distributivity, cost::roofline_model{}, device::t4, no_builtins, three);
    CHECK(flat.stats.bound == eqsat_bound::plateau);
    CHECK(flat.stats.steps == 1);
    auto every_round = three;
    every_round.min_round_gain = 0;
    const auto all =
        eqsat_search(flat_graph, distributivity, cost::roofline_model{}, device::t4, no_builtins, every_round);
    CHECK(all.stats.steps > 1);
    CHECK(all.stats.bound != eqsat_bound::plateau);
    CHECK(all.stats.cost_after == flat.stats.cost_after);
    check_sound(flat_graph, flat);
    const auto small = eqsat_search(g, rules, cost::roofline_model{}, device::t4, {}, {.max_nodes = 10});
    CHECK(small.stats.bound == eqsat_bound::e_graph_size);
    struct stop_now {
        bool progress(const search_progress&) { return false; }
    };
    const auto stopped = eqsat_search(g, rules, cost::roofline_model{}, device::t4, {}, {}, stop_now{});
    CHECK(stopped.stats.bound == eqsat_bound::stopped);
    CHECK(stopped.stats.steps == 1);
    // the wall-clock limit is opt-in: a limit too short for one round stops the rounds at once
    const auto timed = eqsat_search(g, rules, cost::roofline_model{}, device::t4, {.seconds = 1e-9});
    CHECK(timed.stats.bound == eqsat_bound::time);
    for (const auto* r : {&one, &small, &stopped, &timed}) check_sound(g, *r);
    // with no rules and no built-ins nothing changes and the rounds saturate at once
    const auto none = eqsat_search(g, std::vector<rule>{}, cost::roofline_model{}, device::t4, {.use_builtins = false});
    CHECK(none.stats.bound == eqsat_bound::converged);
    CHECK(none.stats.cost_after == none.stats.cost_before);
    CHECK(inference_ops(none.graph) == inference_ops(g));
}
