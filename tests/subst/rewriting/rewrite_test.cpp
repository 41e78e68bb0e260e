#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using namespace goopt::subst;
using ops::op_kind;

namespace {

world matrix_world() {
    world w = taso_world();
    w.variables = {{"x0", {4, 4}}, {"x1", {4, 4}}, {"x2", {4, 4}}};
    return w;
}

/// ewadd(matmul(x0,x2), matmul(x1,x2)) => matmul(ewadd(x0,x1), x2)
rule matmul_merge() {
    const world w = matrix_world();
    pattern s, t;
    s.ops = {{op_kind::matmul, 0, 1, {{variable_op, 0}, {variable_op, 2}}},
             {op_kind::matmul, 0, 1, {{variable_op, 1}, {variable_op, 2}}},
             {op_kind::ewadd, 0, 1, {{0, 0}, {1, 0}}}};
    s.outputs = {{2, 0}};
    t.ops = {{op_kind::ewadd, 0, 1, {{variable_op, 0}, {variable_op, 1}}},
             {op_kind::matmul, 0, 1, {{0, 0}, {variable_op, 2}}}};
    t.outputs = {{1, 0}};
    return make_rule(w, s, t);
}

/// Largest |a - b| over the outputs of two graphs run on the same random feeds.
double largest_difference(const graph::computation_graph& a, const graph::computation_graph& b, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto feeds = interp::random_feeds<double>(a, rng);
    const auto x = interp::run<double>(a, feeds);
    const auto y = interp::run<double>(b, feeds);
    REQUIRE(x.size() == y.size());
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        REQUIRE(x[i].shape() == y[i].shape());
        for (std::size_t e = 0; e < x[i].size(); ++e) d = std::max(d, std::abs(x[i].data()[e] - y[i].data()[e]));
    }
    return d;
}

}  // namespace

TEST_CASE("a rule is matched and applied in a larger graph, keeping names, layers and outputs") {
    graph::computation_graph g("block");
    const auto a = g.input("a", {8, 16});
    const auto b = g.input("b", {8, 16});
    const auto w = g.weight("w", {16, 16});
    const auto u = g.add1(op_kind::matmul, {a, w}, {}, "mm_a");
    const auto v = g.add1(op_kind::matmul, {b, w}, {}, "mm_b");
    const auto s = g.add1(op_kind::ewadd, {v, u}, {}, "sum");  // the other input order: commutative
    const auto r = g.add1(op_kind::relu, {s}, {}, "act");
    const auto other = g.add1(op_kind::relu, {u}, {}, "side");  // mm_a is also used outside the match
    g.set_layer(g.producer(s), 7);
    g.mark_output(r);
    g.mark_output(other);

    const rule rule = matmul_merge();
    const auto ms = find_matches(g, rule);
    // the sum read either way round: x0 = b, x1 = a or x0 = a, x1 = b (x2 = w both times)
    REQUIRE(ms.size() == 2);
    CHECK(g.get_op(ms[0].ops[2]).name == "sum");
    CHECK(ms[0].variables[2] == w);
    const auto h = apply(g, rule, ms[0]);
    graph::validate(h);
    CHECK(largest_difference(g, h, 1) < 1e-9);
    // mm_b is gone, mm_a stays for "side", the sum is now one matmul of a sum in layer 7
    CHECK(h.find("mm_b") == std::nullopt);
    CHECK(h.find("mm_a").has_value());
    CHECK(h.ops_of_kind(op_kind::matmul).size() == 2);
    CHECK(h.ops_of_kind(op_kind::ewadd).size() == 1);
    const auto act = *h.find("act");
    CHECK(h.get_op(h.producer(h.get_op(act).inputs[0])).kind == op_kind::matmul);
    CHECK(h.get_op(h.producer(h.get_op(act).inputs[0])).layer == 7);
    CHECK(h.outputs().size() == 2);
    CHECK(h.get_op(h.producer(h.outputs()[1])).name == "side");

    // where the rule's source does not occur, nothing matches
    graph::computation_graph plain;
    const auto x = plain.input("x", {4, 4});
    plain.mark_output(plain.add1(op_kind::matmul, {x, x}));
    CHECK(find_matches(plain, rule).empty());
}

TEST_CASE("a rule with two outputs: both are replaced, and a match that would make a cycle is left out") {
    // matmul(x0,x1), matmul(x0,x2) => the two halves of matmul(x0, concat{axis=1}(x1,x2))
    const world w = matrix_world();
    pattern s, t;
    s.ops = {{op_kind::matmul, 0, 1, {{variable_op, 0}, {variable_op, 1}}},
             {op_kind::matmul, 0, 1, {{variable_op, 0}, {variable_op, 2}}}};
    s.outputs = {{0, 0}, {1, 0}};
    t.ops = {{op_kind::concat, 1, 1, {{variable_op, 1}, {variable_op, 2}}},
             {op_kind::matmul, 0, 1, {{variable_op, 0}, {0, 0}}},
             {op_kind::split, 2, 2, {{1, 0}}}};  // choice 2: axis 1, sizes [4,4]
    t.outputs = {{2, 0}, {2, 1}};
    const rule r = make_rule(w, s, t);
    REQUIRE(to_string(r).find("split{axis=1,sizes=[4,4]}") != std::string::npos);

    graph::computation_graph g;
    const auto a = g.input("a", {6, 5});
    const auto w1 = g.weight("w1", {5, 4});
    const auto w2 = g.weight("w2", {5, 4});
    const auto y1 = g.add1(op_kind::matmul, {a, w1}, {}, "y1");
    const auto y2 = g.add1(op_kind::matmul, {a, w2}, {}, "y2");
    g.mark_output(g.add1(op_kind::ewadd, {g.add1(op_kind::relu, {y1}), y2}));
    const auto ms = find_matches(g, r);
    REQUIRE(ms.size() == 2);  // (y1, y2) and (y2, y1)
    const auto h = apply(g, r, ms[0]);
    graph::validate(h);
    CHECK(h.ops_of_kind(op_kind::matmul).size() == 1);
    CHECK(h.ops_of_kind(op_kind::split).size() == 1);
    CHECK(largest_difference(g, h, 3) < 1e-9);

    // x2 computed from the first output: the target would need what it replaces
    graph::computation_graph c;
    const auto x = c.input("x", {4, 4});
    const auto k = c.weight("k", {4, 4});
    const auto z1 = c.add1(op_kind::matmul, {x, k}, {}, "z1");
    const auto z2 = c.add1(op_kind::matmul, {x, c.add1(op_kind::relu, {z1})}, {}, "z2");
    c.mark_output(z2);
    // both ways of matching (z1, z2) bind a variable to relu(z1), computed from a replaced output
    CHECK(find_matches(c, r).empty());
    // given such a match anyway, apply() refuses the rewrite, whether its walk meets the cycle at
    // the target or first at relu (it copies relu, the first live op, before the target): never a
    // report of a cycle in the graph itself
    const auto relu_z1 = c.get_op(c.producer(z2)).inputs[1];
    const match cyclic{{c.producer(z1), c.producer(z2)}, {x, k, relu_z1}};
    CHECK_THROWS_AS(apply(c, r, cyclic), rewrite_refused);
    CHECK_THROWS_WITH(apply(c, r, cyclic), doctest::Contains("computed from what it replaces"));
}

TEST_CASE("a wrong rule is refused with its name: it is not proven at the matched shapes") {
    const world w = matrix_world();
    pattern s, t;  // relu(x0 + x1) => relu(x0) + relu(x1): false
    s.ops = {{op_kind::ewadd, 0, 1, {{variable_op, 0}, {variable_op, 1}}}, {op_kind::relu, 0, 1, {{0, 0}}}};
    s.outputs = {{1, 0}};
    t.ops = {{op_kind::relu, 0, 1, {{variable_op, 0}}},
             {op_kind::relu, 0, 1, {{variable_op, 1}}},
             {op_kind::ewadd, 0, 1, {{0, 0}, {1, 0}}}};
    t.outputs = {{2, 0}};
    const rule bad = make_rule(w, s, t);
    graph::computation_graph g;
    const auto a = g.input("a", {3, 5});
    const auto b = g.input("b", {3, 5});
    g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::ewadd, {a, b})}));
    const auto ms = find_matches(g, bad);
    REQUIRE(ms.size() == 2);                  // x0 = a, x1 = b and, ewadd being commutative, x0 = b, x1 = a
    for (const bool check : {false, true}) {  // refused by the proof, whether or not the numeric net is on
        try {
            (void)apply(g, bad, ms[0], {.check = check});
            FAIL("a wrong rule was applied");
        } catch (const error& e) {
            const std::string what = e.what();
            CHECK(what.find(to_string(bad)) != std::string::npos);
            CHECK(what.find("not proven from the axioms at the matched shapes") != std::string::npos);
        }
    }
    // a match that does not fit the graph is an error, not a crash
    match broken = ms[0];
    broken.variables[0] = 999;
    CHECK_THROWS_AS((void)apply(g, bad, broken), error);
}

TEST_CASE("property: every depth-2 rule of TASO's world, applied at other shapes, leaves the outputs unchanged") {
    const world w = taso_world();
    const world other = taso_world({.n = 5, .c = 2, .h = 7, .w = 4});
    const world check[] = {taso_world({.n = 3, .c = 4, .h = 6, .w = 6}), other};
    const auto rules = generate_rules(w, check, {.max_ops = 2, .threads = 2}).rules;
    REQUIRE(rules.size() > 100);
    std::size_t applied = 0, fixed_shape = 0;
    for (std::size_t i = 0; i < rules.size(); ++i) {
        const rule& r = rules[i];
        // the rule's source as a graph at the other world's shapes, with a consumer after each output
        rule at = r;
        for (auto& v : at.variables)
            for (const auto& x : other.variables)
                if (x.name == v.name) v.dims = x.dims;
        graph::computation_graph g;
        try {
            g = to_graph(at, at.source);
        } catch (const error&) {
            ++fixed_shape;  // a constant of fixed shape, e.g. const_iconv{shape=[3,3,3,3]}: only at its shapes
            continue;
        }
        const std::vector<graph::tensor_id> outs = g.outputs();
        graph::computation_graph h;  // same ops, then relu of every output, which become the outputs
        {
            for (const auto& op : g.ops()) {
                std::vector<graph::tensor_id> in(op.inputs.begin(), op.inputs.end());
                h.add(op.kind, in, op.attrs, op.name);
            }
            for (auto t : outs) h.mark_output(h.add1(op_kind::relu, {t}));
        }
        const auto ms = find_matches(h, r, 4);
        CHECK_MESSAGE(!ms.empty(), to_string(r));
        if (ms.empty()) continue;
        const auto rewritten = apply(h, r, ms[0]);
        graph::validate(rewritten);
        CHECK_MESSAGE(largest_difference(h, rewritten, i) < 1e-9, to_string(r));
        ++applied;
    }
    CHECK(applied + fixed_shape == rules.size());
    CHECK(applied > rules.size() / 2);
}
