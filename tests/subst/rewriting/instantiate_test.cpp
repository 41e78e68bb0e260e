// A rule applies only where it is a theorem: instantiate() carries a rule to the matched shapes and
// proves it there; these tests check that no application changes a graph's values, at shapes other
// than the rule's own (sizes doubled or set to 1, a leading batch axis added, a vector broadcast),
// and that the rules the library holds for real models (merges with split, identities) apply there.
#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using namespace goopt::subst;
using ops::op_kind;

namespace {

/// The largest relative output difference of two graphs on the same random feeds (subst/rewriting/equivalence.hpp).
double relative_difference(const graph::computation_graph& a, const graph::computation_graph& b, std::uint64_t seed) {
    return max_relative_difference(a, b, seed);
}

/// `r`'s source at other variable shapes, its shape-dependent attributes (split sizes, constant
/// shapes) carried over by the sizes' correspondence, and a relu after each output (so that the
/// matched outputs have a use); nullopt when it does not build there.
std::optional<graph::computation_graph> source_at(const rule& r, const std::vector<ops::shape>& dims) {
    rule at = r;
    auto image = [&](std::int64_t v) {
        for (std::size_t i = 0; i < r.variables.size(); ++i) {
            const auto& a = r.variables[i].dims;
            const auto& b = dims[i];
            for (std::size_t k = 0; k < a.rank() && k < b.rank(); ++k)
                if (a[a.rank() - 1 - k] == v) return b[b.rank() - 1 - k];
        }
        return v;
    };
    for (std::size_t i = 0; i < at.variables.size(); ++i) at.variables[i].dims = dims[i];
    for (auto& o : at.source.ops)
        for (const auto& [id, v] : r.source.ops[&o - at.source.ops.data()].attrs)
            if (role_of(o.kind, id) == attr_role::shape_dependent)
                if (const auto* xs = std::get_if<std::vector<std::int64_t>>(&v)) {
                    std::vector<std::int64_t> ys;
                    for (auto x : *xs) ys.push_back(image(x));
                    o.attrs.set(id, ys);
                }
    try {
        const auto g = to_graph(at, at.source);
        graph::computation_graph h;
        for (const auto& op : g.ops()) {
            std::vector<graph::tensor_id> in(op.inputs.begin(), op.inputs.end());
            h.add(op.kind, in, op.attrs, op.name);
        }
        for (auto t : g.outputs()) h.mark_output(h.add1(op_kind::relu, {t}));
        return h;
    } catch (const error&) {
        return std::nullopt;
    }
}

/// Shapes of `r`'s variables perturbed in one of several ways (`how`), drawn from `rng`.
std::vector<ops::shape> perturbed(const rule& r, int how, std::mt19937_64& rng) {
    std::vector<ops::shape> dims;
    // one new value per recorded size, so that sizes equal in the rule stay equal (most rules need it)
    std::vector<std::pair<std::int64_t, std::int64_t>> image;
    auto new_size = [&](std::int64_t v) {
        for (auto [a, b] : image)
            if (a == v) return b;
        const std::int64_t choices[] = {1, 2 * v, v + 1, 2};
        const std::int64_t b = how == 0 ? 2 * v : how == 1 ? choices[rng() % 4] : v;
        image.emplace_back(v, b);
        return b;
    };
    for (const auto& v : r.variables) {
        ops::shape s;
        if (how == 2 && v.dims.rank() == 2 && !v.weight && rng() % 2 == 0) s.push_back(2);  // a leading batch axis
        for (auto d : v.dims)
            s.push_back(how == 3 && rng() % 3 == 0 ? 1 : new_size(d));  // 1: broadcast where it builds
        if (how == 4 && v.dims.rank() == 2 && rng() % 2 == 0) s = ops::shape{v.dims[1]};  // a vector (a bias)
        dims.push_back(s);
    }
    return dims;
}

/// Applies every rule of `rules` (both directions) at several perturbed shapes; every application
/// must leave the outputs unchanged. @return {applied, refused}.
std::pair<std::size_t, std::size_t> check_at_other_shapes(const std::vector<rule>& stored, int perturbations) {
    const auto rules = both_directions(stored);
    std::mt19937_64 rng(12);
    soundness_cache cache;
    std::size_t applied = 0, refused = 0;
    for (std::size_t i = 0; i < rules.size(); ++i) {
        const rule& r = rules[i];
        for (int p = 0; p < perturbations; ++p) {
            const auto g = source_at(r, perturbed(r, p % 5, rng));
            if (!g) continue;
            for (const auto& m : find_matches(*g, r, 4)) {
                graph::computation_graph h;
                try {
                    h = apply(*g, r, m, {.cache = &cache});
                } catch (const error& e) {
                    ++refused;
                    continue;
                }
                ++applied;
                graph::validate(h);
                const double d = relative_difference(*g, h, i * 31 + static_cast<std::uint64_t>(p));
                CHECK_MESSAGE(d < 1e-9, to_string(r), " at ",
                              g->describe(g->producer(m.variables.empty() ? 0 : m.variables[0])));
            }
        }
    }
    return {applied, refused};
}

rule find_rule(const std::vector<rule>& rules, const std::string& text) {
    for (const auto& r : rules)
        if (to_string(r) == text) return r;
    for (const auto& r : rules)
        if (auto q = reversed(r); q && to_string(*q) == text) return *q;
    FAIL("rule not in the library: " << text);
    return {};
}

}  // namespace

#if defined(GOOPT_RULES_FILE)

TEST_CASE("every shipped rule, applied at perturbed shapes in both directions, changes no output") {
    const auto rules = io::read_rules_file(GOOPT_RULES_FILE);
    const auto [applied, refused] = check_at_other_shapes(rules, 5);
    MESSAGE(applied << " applications checked, " << refused << " refused");
    CHECK(applied > rules.size());
    CHECK(refused > 0);  // some rules hold only at some shapes: the proof refuses them there
}

TEST_CASE("the extra rule file named by GOOPT_CHECK_RULES_FILE (e.g. depth 4), when set, changes no output") {
    const char* file = std::getenv("GOOPT_CHECK_RULES_FILE");
    if (file == nullptr || *file == '\0') {
        MESSAGE("skipped: GOOPT_CHECK_RULES_FILE is not set (generate_rules --max-ops 4 writes the depth-4 file)");
        return;
    }
    const auto rules = io::read_rules_file(file);
    for (const auto& r : rules) CHECK_MESSAGE(!find_matches(to_graph(r, r.source), r, 1).empty(), to_string(r));
    const auto [applied, refused] = check_at_other_shapes(rules, 2);
    MESSAGE(applied << " applications checked, " << refused << " refused");
}

TEST_CASE("every shipped rule matches its own source graph") {
    const auto rules = both_directions(io::read_rules_file(GOOPT_RULES_FILE));
    for (const auto& r : rules) {
        const auto g = to_graph(r, r.source);
        CHECK_MESSAGE(!find_matches(g, r, 1).empty(), to_string(r));
    }
}

TEST_CASE("regression: the sum of a 3x3 and a 1x1 convolution is not one convolution of the summed kernels") {
    // TASO's README block: one input, a 3x3 and a 1x1 convolution of it, added, relu. ewadd would
    // broadcast the 1x1 kernel over the 3x3 one; the rule holds only for kernels of one shape.
    const auto rules = io::read_rules_file(GOOPT_RULES_FILE);
    const rule r = find_rule(rules, "ewadd(conv2d(a0,w0),conv2d(a0,w1)) => conv2d(a0,ewadd(w0,w1))");
    for (const std::int64_t k : {1, 3}) {
        graph::computation_graph g("block");
        const auto x = g.input("x", {1, 16, 9, 9});
        const auto c3 = g.add1(op_kind::conv2d, {x, g.weight("w3", {16, 16, 3, 3})});
        const auto c1 = g.add1(op_kind::conv2d, {x, g.weight("wk", {16, 16, k, k})});
        g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::ewadd, {c3, c1})}));
        const auto ms = find_matches(g, r);
        REQUIRE(!ms.empty());
        for (const auto& m : ms) {
            if (k == 1) {
                CHECK_THROWS_WITH_AS((void)apply(g, r, m),
                                     doctest::Contains("not proven from the axioms at the matched shapes"), error);
            } else {
                const auto h = apply(g, r, m);
                CHECK(h.ops_of_kind(op_kind::conv2d).size() == 1);
                CHECK(relative_difference(g, h, 5) < 1e-9);
            }
        }
    }
}

TEST_CASE("regression: concat of one convolution twice is refused where the image's channels make it grouped") {
    const auto rules = io::read_rules_file(GOOPT_RULES_FILE);
    const rule r = find_rule(rules, "concat{axis=1}(conv2d(a0,w0),conv2d(a0,w0)) => conv2d(a0,concat{axis=0}(w0,w0))");
    for (const std::int64_t channels : {4, 8}) {  // 8 channels over a kernel of 4: a grouped convolution
        graph::computation_graph g;
        const auto x = g.input("x", {1, channels, 6, 6});
        const auto w = g.weight("w", {4, 4, 3, 3});
        const auto y = g.add1(op_kind::conv2d, {x, w});  // the rule's source reads one convolution twice
        g.mark_output(g.add1(op_kind::concat, {y, y}, {{ops::attr_id::axis, std::int64_t{1}}}));
        const auto ms = find_matches(g, r);
        REQUIRE(!ms.empty());
        for (const auto& m : ms) {
            try {
                const auto h = apply(g, r, m);
                CHECK(channels == 4);
                CHECK(relative_difference(g, h, 7) < 1e-9);
            } catch (const error& e) {
                CHECK(channels == 8);
            }
        }
    }
}

TEST_CASE("the merge of two matmuls that share an input applies at a real model's sizes, split sizes solved") {
    const auto rules = both_directions(io::read_rules_file(GOOPT_RULES_FILE));
    // NasRNN-like: [1,512] x [512,512] twice, and BERT-like: [2,6,16] x [16,16] twice (a batch axis)
    for (const ops::shape& xs : {ops::shape{1, 24}, ops::shape{2, 6, 16}}) {
        graph::computation_graph g;
        const auto x = g.input("x", xs);
        const auto k = xs[xs.rank() - 1];
        g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::matmul, {x, g.weight("a", {k, k})})}));
        g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::matmul, {x, g.weight("b", {k, k / 2})})}));
        std::size_t merged = 0;
        for (const auto& r : rules)
            for (const auto& m : find_matches(g, r, 4)) try {
                    const auto h = apply(g, r, m);
                    CHECK(relative_difference(g, h, 9) < 1e-9);
                    merged += h.ops_of_kind(op_kind::matmul).size() == 1;
                } catch (const error&) {}
        CHECK_MESSAGE(merged > 0, xs.to_string());
    }
}

TEST_CASE("rules with a side without ops remove what rewrites leave behind") {
    const auto rules = io::read_rules_file(GOOPT_RULES_FILE);
    std::size_t op_free = 0;
    for (const auto& r : rules) op_free += r.target.ops.empty();
    CHECK(op_free > 0);
    // split(concat(x0,x1)) => x0, x1 at sizes other than the rule's own
    graph::computation_graph g;
    const auto a = g.input("a", {3, 5});
    const auto b = g.input("b", {3, 7});
    const auto c = g.add1(op_kind::concat, {a, b}, {{ops::attr_id::axis, std::int64_t{1}}});
    const auto parts =
        g.add(op_kind::split, std::vector<graph::tensor_id>{c},
              {{ops::attr_id::axis, std::int64_t{1}}, {ops::attr_id::sizes, std::vector<std::int64_t>{5, 7}}});
    g.mark_output(g.add1(op_kind::relu, {parts[0]}));
    g.mark_output(g.add1(op_kind::relu, {parts[1]}));
    std::size_t removed = 0;
    for (const auto& r : rules) {
        if (!r.target.ops.empty()) continue;
        for (const auto& m : find_matches(g, r)) try {
                const auto h = apply(g, r, m);
                CHECK(relative_difference(g, h, 11) < 1e-12);
                removed += h.ops_of_kind(op_kind::split).empty() && h.ops_of_kind(op_kind::concat).empty();
            } catch (const error&) {}
    }
    CHECK(removed > 0);
}

#endif

TEST_CASE("regression: a multi-output rule whose outputs use a split's #1 before its #0 matches without an exception") {
    // concat{axis=0}(a0,split(...)#1), split(...)#0: binding #1 first used to index a one-output op
    rule r;
    r.variables = {{"a0", {2, 4}}, {"b0", {4, 6}}};
    r.source.ops = {{op_kind::matmul, {}, {{variable_op, 0}, {variable_op, 1}}, 1},
                    {op_kind::split, {}, {{0, 0}}, 2},
                    {op_kind::concat, {}, {{variable_op, 0}, {1, 1}}, 1}};
    r.source.ops[0].attrs = with_defaults(op_kind::matmul, {});
    r.source.ops[1].attrs = with_defaults(op_kind::split, {{ops::attr_id::axis, std::int64_t{1}},
                                                           {ops::attr_id::sizes, std::vector<std::int64_t>{3, 3}}});
    r.source.ops[2].attrs = with_defaults(op_kind::concat, {{ops::attr_id::axis, std::int64_t{1}}});
    r.source.outputs = {{2, 0}, {1, 0}};
    r.target = r.source;
    const auto g = to_graph(r, r.source);
    std::vector<match> ms;
    CHECK_NOTHROW(ms = find_matches(g, r));
    CHECK(ms.size() == 1);
}

TEST_CASE("attributes: axes count from the end, shape-dependent ones are free, the rest exact") {
    const auto concat1 = with_defaults(op_kind::concat, {{ops::attr_id::axis, std::int64_t{1}}});
    const auto concat2 = with_defaults(op_kind::concat, {{ops::attr_id::axis, std::int64_t{2}}});
    CHECK(attributes_match(op_kind::concat, concat1, 2, concat2, 3));
    CHECK_FALSE(attributes_match(op_kind::concat, concat1, 2, concat1, 3));
    CHECK(attributes_match(op_kind::concat, concat1, 2,
                           with_defaults(op_kind::concat, {{ops::attr_id::axis, std::int64_t{-1}}}), 2));
    const auto split44 = with_defaults(op_kind::split, {{ops::attr_id::axis, std::int64_t{1}},
                                                        {ops::attr_id::sizes, std::vector<std::int64_t>{4, 4}}});
    const auto split57 = with_defaults(op_kind::split, {{ops::attr_id::axis, std::int64_t{1}},
                                                        {ops::attr_id::sizes, std::vector<std::int64_t>{5, 7}}});
    CHECK(attributes_match(op_kind::split, split44, 2, split57, 2));
    const auto conv_s1 = with_defaults(op_kind::conv2d, {});
    const auto conv_s2 = with_defaults(op_kind::conv2d, {{ops::attr_id::stride, std::vector<std::int64_t>{2, 2}}});
    CHECK_FALSE(attributes_match(op_kind::conv2d, conv_s1, 4, conv_s2, 4));
    const auto t10 = with_defaults(op_kind::transpose, {{ops::attr_id::perm, std::vector<std::int64_t>{1, 0}}});
    const auto t021 = with_defaults(op_kind::transpose, {{ops::attr_id::perm, std::vector<std::int64_t>{0, 2, 1}}});
    CHECK(attributes_match(op_kind::transpose, t10, 2, t021, 3));
}
