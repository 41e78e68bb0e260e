// The substitution cost of a training step: the ops on the weights a step updates run every step
// and count (graph::is_training_step tells a training step from an inference graph), so that the
// searches do not fold work onto them as if it ran once; and the stage's search (equality
// saturation) on a small training step never hands on a graph whose single-device step is slower.
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/training_step.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include "shipped_rules.hpp"

#include <vector>

using namespace goopt;

namespace {

/// conv -> batchnorm -> relu -> conv -> relu, then a matmul by a transposed weight: the batchnorm
/// fold and the transpose are weight preprocessing at inference, work of every training step.
graph::computation_graph conv_bn_block() {
    graph::computation_graph g("conv_bn_block");
    graph::builder b(g);
    const auto x = b.input("x", {2, 4, 8, 8});
    auto bn = [&](graph::tensor_id y, const std::string& n, std::int64_t c) {
        return b.batchnorm(y, b.weight(n + ".s", {c}), b.weight(n + ".b", {c}), b.weight(n + ".m", {c}),
                           b.weight(n + ".v", {c}), 1e-3, n);
    };
    const auto y = b.relu(bn(b.conv2d(x, b.weight("k1", {8, 4, 3, 3})), "bn1", 8));
    const auto z = b.relu(b.conv2d(y, b.weight("k2", {8, 8, 1, 1})));
    g.mark_output(z);
    const auto h = b.input("h", {3, 16});
    g.mark_output(b.matmul(h, b.transpose(b.weight("u", {5, 16}), {1, 0})));
    return g;
}

double single_device_step(const graph::computation_graph& g) {
    const auto cl = device::cluster<device::device_spec>::all_to_all(device::describe(device::v100), 1, 1e11, 1e-6);
    sim::simulator s(g, cl);
    const std::vector<sim::device_id> first(g.num_ops(), 0);
    return s.run(first, {.record_trace = false}).step_time;
}

}  // namespace

TEST_CASE("a training step's updated weights are not fixed: the ops on them count every step") {
    const auto forward = conv_bn_block();
    const auto step = models::make_training_graph(forward);
    CHECK_FALSE(graph::is_training_step(forward));
    CHECK(graph::is_training_step(step));
    CHECK(graph::updated_weights(forward) == std::vector<bool>(forward.num_ops(), false));
    // every weight of the forward graph gets an Adam update, and Adam's moments too
    const auto updated = graph::updated_weights(step);
    const auto u = *step.find("u");
    CHECK(updated[u]);
    CHECK(updated[*step.find("u.adam_m")]);
    // the transpose of `u` is preprocessing at inference, not in the step
    const auto t = step.get_tensor(step.get_op(u).outputs[0]).uses;
    graph::op_id transpose = step.num_ops();
    for (const auto& use : t)
        if (step.get_op(use.op).kind == ops::op_kind::transpose) transpose = use.op;
    REQUIRE(transpose < step.num_ops());
    CHECK(subst::weight_only(forward)[*forward.find(step.get_op(transpose).name)]);
    CHECK_FALSE(subst::weight_only(step)[transpose]);
    CHECK(subst::runs_per_inference(step)[transpose]);
    // the step's cost is that of every computing op but the views and the constants' preprocessing
    const auto runs = subst::runs_per_inference(step);
    double total = 0;
    for (graph::op_id o = 0; o < step.num_ops(); ++o)
        if (runs[o]) total += cost::roofline_model{}.op_time(step, o, device::t4);
    CHECK(subst::inference_cost(step, cost::roofline_model{}, device::t4) == doctest::Approx(total));
    CHECK(subst::inference_ops(step) > subst::inference_ops(forward));
}

TEST_CASE("the stage's search on a training step never gives a slower single-device step") {
    const auto rules = shipped_rules();
    const auto forward = conv_bn_block();
    const auto step = models::make_training_graph(forward);
    const auto dev = device::describe(device::v100);
    const auto r = subst::optimize(step, rules, cost::roofline_model{}, dev, {}, subst::eqsat_method{});
    CHECK(r.stats.cost_after <= r.stats.cost_before);
    CHECK(single_device_step(r.graph) <= single_device_step(step));
    // the fold of the batchnorm into the conv (free at inference) is no gain in a step: the
    // batchnorm's gradient still reads the conv's output, so the step would run the conv twice
    const auto inference = subst::optimize(forward, rules, cost::roofline_model{}, dev, {}, subst::eqsat_method{});
    CHECK(inference.graph.ops_of_kind(ops::op_kind::batchnorm).empty());
    CHECK(r.graph.ops_of_kind(ops::op_kind::conv2d_bias).empty());
}
