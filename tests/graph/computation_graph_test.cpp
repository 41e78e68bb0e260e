// The graph IR: building, queries, rewiring, copies.
#include <goopt/graph/computation_graph.hpp>

#include <doctest/doctest.h>

using namespace goopt;
using ops::attr_id;
using ops::op_kind;

TEST_CASE("building a graph records producers, uses, names and outputs") {
    graph::computation_graph g("block");
    auto x = g.input("x", {1, 8, 4, 4});
    auto w = g.weight("w", {8, 8, 3, 3});
    auto c = g.add1(op_kind::conv2d, {x, w}, {{attr_id::activation, std::int64_t(1)}}, "conv");
    auto s = g.add(op_kind::split, {c},
                   {{attr_id::axis, std::int64_t(1)}, {attr_id::sizes, std::vector<std::int64_t>{3, 5}}});
    REQUIRE(s.size() == 2);
    const graph::tensor_id s0 = s[0], s1 = s[1];
    auto cat = g.add1(op_kind::concat, {s1, s0}, {{attr_id::axis, std::int64_t(1)}});
    auto y = g.add1(op_kind::ewadd, {cat, x});
    g.mark_output(y);

    CHECK(g.name() == "block");
    CHECK(g.num_ops() == 6);
    CHECK(g.num_tensors() == 7);
    CHECK(g.producer(c) == 2);
    CHECK(g.get_op(2).name == "conv");
    CHECK(g.get_op(3).name == "split_3");  // generated name
    CHECK(g.get_tensor(s1).index == 1);
    CHECK(g.get_tensor(x).uses.size() == 2);
    CHECK(g.find("conv") == graph::op_id{2});
    CHECK_FALSE(g.find("nope"));
    CHECK(g.ops_of_kind(op_kind::weight) == std::vector<graph::op_id>{1});
    CHECK(g.outputs() == std::vector<graph::tensor_id>{y});
    CHECK(g.describe(2) == "'conv' (conv2d)");

    const auto pred = g.predecessors(4);  // concat(s1, s0): the split twice
    CHECK(std::vector<graph::op_id>(pred.begin(), pred.end()) == std::vector<graph::op_id>{3, 3});
    const auto succ = g.successors(0);  // x feeds the conv and the add
    CHECK(std::vector<graph::op_id>(succ.begin(), succ.end()) == std::vector<graph::op_id>{2, 5});
    CHECK(g.parameter_bytes() == 8 * 8 * 9 * 4);
}

TEST_CASE("a copy is independent of the original") {
    graph::computation_graph g;
    auto x = g.input("x", {4});
    auto r = g.add1(op_kind::relu, {x});
    graph::computation_graph h = g;
    h.add1(op_kind::sigmoid, {r});
    CHECK(g.num_ops() == 2);
    CHECK(h.num_ops() == 3);
    CHECK(g.get_tensor(r).uses.empty());
    CHECK(h.get_tensor(r).uses.size() == 1);
}

TEST_CASE("rewire moves a use from one tensor to another") {
    graph::computation_graph g;
    auto x = g.input("x", {4});
    auto y = g.input("y", {4});
    auto a = g.add1(op_kind::sub, {x, y});
    g.rewire(g.producer(a), 1, x);
    CHECK(g.get_op(g.producer(a)).inputs[1] == x);
    CHECK(g.get_tensor(y).uses.empty());
    CHECK(g.get_tensor(x).uses.size() == 2);
    CHECK_THROWS_WITH_AS(g.rewire(g.producer(a), 2, x), doctest::Contains("has no input slot 2"), error);
    CHECK_THROWS_WITH_AS(g.rewire(g.producer(a), 0, 99), doctest::Contains("tensor id 99 does not exist"), error);
}

TEST_CASE("add rejects references to tensors that do not exist and multi-output ops in add1") {
    graph::computation_graph g;
    auto x = g.input("x", {4, 4});
    CHECK_THROWS_WITH_AS(g.add1(op_kind::relu, {7}, {}, "r"),
                         doctest::Contains("op 'r' (relu): input 0 refers to tensor 7"), error);
    CHECK_THROWS_WITH_AS(g.add1(op_kind::split, {x},
                                {{attr_id::axis, std::int64_t(0)}, {attr_id::sizes, std::vector<std::int64_t>{2, 2}}}),
                         doctest::Contains("has 2 outputs"), error);
    CHECK_THROWS_AS(g.mark_output(42), error);
}
