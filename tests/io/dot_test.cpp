#include <goopt/io/dot.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace {}  // namespace

TEST_CASE("dot: every op a node, every input an edge, outputs marked") {
    using goopt::ops::attr_id;
    using goopt::ops::op_kind;
    goopt::graph::computation_graph g("block");
    const auto x = g.input("x", {1, 4, 8, 8});
    const auto w = g.weight("w", {4, 4, 3, 3});
    const auto c = g.add1(op_kind::conv2d, {x, w}, {}, "conv");
    g.set_layer(g.producer(c), 2);
    // add() returns a view into the graph that the next add() invalidates: copy the ids out first
    const auto split =
        g.add(op_kind::split, {c},
              {{attr_id::axis, std::int64_t{1}}, {attr_id::sizes, std::vector<std::int64_t>{2, 2}}}, "split");
    const auto s0 = split[0], s1 = split[1];
    const auto a = g.add1(op_kind::ewadd, {s0, s1}, {}, "a");
    g.mark_output(a);
    g.mark_output(s1);
    const std::string dot = goopt::io::to_dot(g);

    CHECK(dot.rfind("digraph \"block\" {\n", 0) == 0);
    CHECK(dot.size() >= 2);
    CHECK(dot.substr(dot.size() - 2) == "}\n");
    // nodes: name, kind, output type; sources drawn in their own shapes
    CHECK_HAS(dot, R"(op0 [label="x\ninput\nf32[1,4,8,8]", shape=invhouse)");
    CHECK_HAS(dot, R"(op1 [label="w\nweight\nf32[4,4,3,3]", shape=cylinder)");
    CHECK_HAS(dot, R"(op2 [label="conv\nconv2d\nf32[1,4,8,8]\nlayer 2"])");
    CHECK_HAS(dot, R"(op3 [label="split\nsplit\nf32[1,2,8,8]\nf32[1,2,8,8]"])");
    CHECK_HAS(dot, R"(op4 [label="a\newadd\nf32[1,2,8,8]"])");
    // edges labelled with the tensor type, output index of multi-output producers
    CHECK_HAS(dot, R"(op0 -> op2 [label="f32[1,4,8,8]"])");
    CHECK_HAS(dot, R"(op1 -> op2 [label="f32[4,4,3,3]"])");
    CHECK_HAS(dot, R"(op2 -> op3 [label="f32[1,4,8,8]"])");
    CHECK_HAS(dot, R"(op3 -> op4 [label=":0 f32[1,2,8,8]"])");
    CHECK_HAS(dot, R"(op3 -> op4 [label=":1 f32[1,2,8,8]"])");
    // graph outputs
    CHECK_HAS(dot, R"(output0 [label="output 0", shape=house)");
    CHECK_HAS(dot, R"(op4 -> output0 [label="f32[1,2,8,8]", penwidth=2])");
    CHECK_HAS(dot, R"(op3 -> output1 [label=":1 f32[1,2,8,8]", penwidth=2])");
    std::size_t edges = 0;
    for (std::size_t p = dot.find(" -> "); p != std::string::npos; p = dot.find(" -> ", p + 1)) ++edges;
    CHECK(edges == 7);  // 2 + 1 + 2 inputs, 2 outputs
}

TEST_CASE("dot: names are escaped for DOT strings") {
    goopt::graph::computation_graph g("say \"hi\"");
    g.input("a\"b\\c", {2});
    const std::string dot = goopt::io::to_dot(g);
    CHECK_HAS(dot, R"(digraph "say \"hi\"" {)");
    CHECK_HAS(dot, R"(op0 [label="a\"b\\c\ninput\nf32[2]")");
    CHECK(!goopt::test::contains(dot, "a\"b"));  // no raw quote inside a label
    CHECK(goopt::io::detail::dot_escape("two\nlines") == "two\\nlines");
    goopt::graph::computation_graph unnamed;
    CHECK(goopt::io::to_dot(unnamed).rfind("digraph \"graph\" {", 0) == 0);
}
