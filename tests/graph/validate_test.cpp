// Validation reports what an importer or a rewrite could get wrong, naming the op.
#include <goopt/graph/validate.hpp>

#include <doctest/doctest.h>

using namespace goopt;
using ops::op_kind;

TEST_CASE("a valid graph has no problems") {
    graph::computation_graph g("ok");
    auto x = g.input("x", {2, 3});
    g.mark_output(g.add1(op_kind::relu, {x}));
    CHECK(graph::problems(g).empty());
    CHECK_NOTHROW(graph::validate(g));
    CHECK_NOTHROW(graph::validate(graph::computation_graph{}));
}

TEST_CASE("duplicate names are reported with both ops") {
    graph::computation_graph g;
    auto x = g.input("x", {2});
    g.add1(op_kind::relu, {x}, {}, "x");
    CHECK_THROWS_WITH_AS(graph::validate(g), "graph: op 'x' (relu): duplicate name, also used by op 0", error);
}

TEST_CASE("a cycle is reported with the names of the ops on it") {
    graph::computation_graph g("loop");
    auto x = g.input("x", {2});
    auto a = g.add1(op_kind::relu, {x}, {}, "a");
    auto b = g.add1(op_kind::tanh, {a}, {}, "b");
    g.add1(op_kind::sigmoid, {b}, {}, "c");
    g.rewire(g.producer(a), 0, b);
    CHECK_THROWS_WITH_AS(graph::validate(g), "graph 'loop': graph has a cycle: 'a' -> 'b' -> 'a'", error);
}

TEST_CASE("a rewiring that breaks shapes or dtypes is reported at the op") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3});
    auto y = g.input("y", {3, 2});
    auto z = g.input("z", {2, 3}, ops::dtype::f64);
    auto a = g.add1(op_kind::ewadd, {x, x}, {}, "a");
    auto m = g.add1(op_kind::matmul, {x, y}, {}, "m");  // [2,2]
    g.add1(op_kind::relu, {a}, {}, "r");

    auto h = g;
    h.rewire(h.producer(a), 1, y);  // [2,3] + [3,2] does not broadcast
    CHECK_THROWS_WITH_AS(graph::validate(h),
                         doctest::Contains("op 'a' (ewadd): shapes [2,3] and [3,2] do not broadcast"), error);

    h = g;
    h.rewire(h.producer(a), 1, z);
    CHECK_THROWS_WITH_AS(graph::validate(h), doctest::Contains("op 'a' (ewadd): input 1 has dtype f64: expected f32"),
                         error);

    h = g;
    h.rewire(*h.find("r"), 0, m);  // relu now gets [2,2]
    CHECK_THROWS_WITH_AS(
        graph::validate(h),
        doctest::Contains("op 'r' (relu): output 0 is recorded as f32[2,3], but its inputs give f32[2,2]"), error);
    CHECK(graph::problems(h).size() == 1);
}

TEST_CASE("several problems are counted in one message") {
    graph::computation_graph g;
    auto x = g.input("x", {2});
    g.add1(op_kind::relu, {x}, {}, "x");
    g.add1(op_kind::relu, {x}, {}, "x");
    CHECK(graph::problems(g).size() == 2);
    CHECK_THROWS_WITH_AS(graph::validate(g), doctest::Contains("(and 1 more problems)"), error);
}
