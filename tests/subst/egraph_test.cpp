#include <goopt/subst/egraph.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

using namespace goopt;
using namespace goopt::subst;
using ops::attr_id;
using ops::op_kind;

namespace {
std::vector<class_id> ids(std::initializer_list<class_id> c) { return c; }
}  // namespace

TEST_CASE("e-graph: hash-consing and the shape analysis") {
    e_graph g;
    const auto x = g.add_variable(0, {4, 3});
    const auto y = g.add_variable(1, {3, 5});
    CHECK(g.add_variable(0, {4, 3}) == x);
    const auto mm = g.intern(ops::attribute_map{{attr_id::activation, std::int64_t{0}}});
    CHECK(g.intern(ops::attribute_map{{attr_id::activation, std::int64_t{0}}}) == mm);  // equal maps, one id
    const auto xy = g.add(op_kind::matmul, mm, 0, ids({x, y}));
    REQUIRE(xy);
    CHECK(g.shape(*xy) == ops::shape{4, 5});
    CHECK(g.add(op_kind::matmul, mm, 0, ids({x, y})) == xy);  // the same node is the same class
    CHECK(g.num_nodes() == 3);
    // [3,5] x [4,3]: the shape rule rejects it, and nothing is added
    CHECK_FALSE(g.add(op_kind::matmul, mm, 0, ids({y, x})));
    CHECK_FALSE(g.add(op_kind::ewadd, 0, 0, ids({x, y})));  // [4,3] + [3,5] do not broadcast
    CHECK(g.num_nodes() == 3);
    CHECK(g.classes().size() == 3);

    // split: one class per output, each with its own shape; an output index past the end is rejected
    const auto sp = g.intern(with_defaults(
        op_kind::split, {{attr_id::axis, std::int64_t{1}}, {attr_id::sizes, std::vector<std::int64_t>{1, 2}}}));
    const auto s0 = g.add(op_kind::split, sp, 0, ids({x}));
    const auto s1 = g.add(op_kind::split, sp, 1, ids({x}));
    REQUIRE((s0 && s1));
    CHECK(*s0 != *s1);
    CHECK(g.shape(*s0) == ops::shape{4, 1});
    CHECK(g.shape(*s1) == ops::shape{4, 2});
    CHECK_FALSE(g.add(op_kind::split, sp, 2, ids({x})));
}

TEST_CASE("e-graph: merge, congruence closure on rebuild, shape conflicts") {
    e_graph g;
    const auto a = g.add_variable(0, {2, 2});
    const auto b = g.add_variable(1, {2, 2});
    const auto c = g.add_variable(2, {3});
    const auto ra = *g.add(op_kind::relu, 0, 0, ids({a}));
    const auto rb = *g.add(op_kind::relu, 0, 0, ids({b}));
    const auto sa = *g.add(op_kind::ewadd, 0, 0, ids({ra, a}));
    const auto sb = *g.add(op_kind::ewadd, 0, 0, ids({rb, b}));
    CHECK(g.num_nodes() == 7);
    CHECK(g.find(ra) != g.find(rb));

    CHECK(g.merge(a, b));
    CHECK_FALSE(g.merge(b, a));  // already one class
    CHECK(g.find(a) == g.find(b));
    // congruence is deferred: relu(a) and relu(b) become one class on rebuild, and then so do the sums
    CHECK(g.find(ra) != g.find(rb));
    g.rebuild();
    CHECK(g.find(ra) == g.find(rb));
    CHECK(g.find(sa) == g.find(sb));
    CHECK(g.num_nodes() == 5);  // leaves a and b (one class), one relu, one ewadd, leaf c
    CHECK(g.nodes(a).size() == 2);
    CHECK(g.classes().size() == 4);  // {a,b}, relu, ewadd, c

    // different shapes are never merged
    CHECK_FALSE(g.merge(a, c));
    CHECK(g.shape_conflicts() == 1);
    CHECK(g.find(a) != g.find(c));
}

TEST_CASE("e-graph: term extraction follows every node of a class") {
    e_graph g;
    const auto x = g.add_variable(0, {2, 2});
    const auto y = g.add_variable(1, {2, 2});
    const auto xy = *g.add(op_kind::ewadd, 0, 0, ids({x, y}));
    const auto yx = *g.add(op_kind::ewadd, 0, 0, ids({y, x}));
    const auto r = *g.add(op_kind::relu, 0, 0, ids({xy}));
    g.merge(xy, yx);
    g.rebuild();
    const auto terms = extract_terms(g, 4, 5);
    // classes x, y, the sum, relu
    REQUIRE(terms.size() == 4);
    for (const auto& [c, ts] : terms) {
        if (c == g.find(xy)) {
            CHECK(ts.size() == 2);  // x+y and y+x
            for (const auto& t : ts) CHECK(t.ops.size() == 1);
        }
        if (c == g.find(r)) {
            REQUIRE(ts.size() == 2);  // relu of each spelling of the sum
            CHECK(ts[0].ops.size() == 2);
            CHECK(ts[0].ops.back().kind == op_kind::relu);
            CHECK(ts[0].outputs[0] == value_ref{1, 0});
        }
        if (c == g.find(x)) {
            REQUIRE(ts.size() == 1);
            CHECK(ts[0].ops.empty());
            CHECK(ts[0].outputs[0] == value_ref{variable_op, 0});
        }
    }
    // a bound on the size: only the leaves fit in zero ops
    std::size_t leaves = 0;
    for (const auto& [c, ts] : extract_terms(g, 4, 0)) leaves += ts.size();
    CHECK(leaves == 2);
}
