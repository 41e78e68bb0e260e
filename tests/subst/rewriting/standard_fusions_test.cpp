// The standard fusions (batchnorm fold, bias and activation epilogues): applied wherever they match,
// nothing else, the graph's values kept.
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

using namespace goopt;
using ops::op_kind;

TEST_CASE("standard fusions fold batchnorm, take biases and activations into the product, and nothing else") {
    graph::computation_graph g("standard");
    graph::builder b(g);
    const auto x = b.input("x", {1, 4, 6, 6});
    const auto y = b.relu(b.batchnorm(b.conv2d(x, b.weight("k1", {6, 4, 3, 3})), b.weight("s", {6}), b.weight("b", {6}),
                                      b.weight("m", {6}), b.weight("v", {6}), 1e-3, "bn"));
    const auto h = b.input("h", {3, 7});
    const auto m = b.unary(op_kind::tanh, b.ewadd(b.matmul(h, b.weight("u", {7, 5})), b.weight("c", {5})));
    // two convs of one input: a merge is a search's rewrite, not a standard fusion
    const auto p = b.conv2d(x, b.weight("k2", {3, 4, 1, 1}));
    const auto q = b.conv2d(x, b.weight("k3", {3, 4, 1, 1}));
    for (auto t : {y, m, p, q}) g.mark_output(t);

    subst::standard_fusions_stats stats;
    const auto f = subst::standard_fusions(g, 2e7, &stats);
    CHECK_NOTHROW(graph::validate(f));
    CHECK(stats.applied >= 4);                   // fold, relu, bias, tanh
    CHECK(stats.rules.size() == stats.applied);  // each fusion's rule, named
    // what runs per inference: the three products, fused (the fold's own ops are preprocessing)
    const auto runs = subst::runs_per_inference(f);
    for (auto k : {op_kind::batchnorm, op_kind::relu, op_kind::tanh, op_kind::ewadd, op_kind::matmul})
        for (auto o : f.ops_of_kind(k)) CHECK_MESSAGE(!runs[o], f.describe(o));
    CHECK(subst::inference_ops(f) == 4);
    CHECK(f.ops_of_kind(op_kind::conv2d_bias).size() == 1);
    CHECK(f.ops_of_kind(op_kind::matmul_bias).size() == 1);
    CHECK(f.ops_of_kind(op_kind::conv2d).size() == 2);  // not merged
    CHECK(subst::max_relative_difference(g, f, 3) <= 1e-9);
    const cost::roofline_model cost;
    CHECK(subst::inference_cost(f, cost, device::t4) < subst::inference_cost(g, cost, device::t4));
    // a fixed point: nothing is left to fuse
    subst::standard_fusions_stats again;
    const auto f2 = subst::standard_fusions(f, 2e7, &again);
    CHECK(again.applied == 0);
    CHECK(f2.num_ops() == f.num_ops());
}
