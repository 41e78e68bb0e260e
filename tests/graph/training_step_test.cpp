// A training step is told from an inference graph by its optimizer updates, and the weights it
// updates are the updates' parameter and moment inputs.
#include <goopt/graph/builder.hpp>
#include <goopt/graph/training_step.hpp>

#include <doctest/doctest.h>

using namespace goopt;

TEST_CASE("a graph with optimizer updates is a training step; the updated weights are their state inputs") {
    graph::computation_graph g("step");
    graph::builder b(g);
    const auto x = b.input("x", {2, 3});
    const auto w = b.weight("w", {3, 4});
    const auto fixed = b.weight("fixed", {2, 4});
    const auto y = b.ewadd(b.matmul(x, w), fixed);
    g.mark_output(y);
    CHECK_FALSE(graph::is_training_step(g));
    CHECK(graph::updated_weights(g) == std::vector<bool>(g.num_ops(), false));

    const auto lr = g.add1(ops::op_kind::const_fill, {},
                           {{ops::attr_id::shape, std::vector<std::int64_t>{}}, {ops::attr_id::value, 0.1}}, "lr");
    const auto grad = b.weight("grad", {3, 4});  // stands for a gradient
    g.mark_output(g.add1(ops::op_kind::sgd_update, {w, grad, lr}, {}, "w.sgd_update"));
    CHECK(graph::is_training_step(g));
    const auto updated = graph::updated_weights(g);
    CHECK(updated[*g.find("w")]);
    CHECK_FALSE(updated[*g.find("grad")]);
    CHECK_FALSE(updated[*g.find("fixed")]);
    CHECK_FALSE(updated[*g.find("x")]);
}
