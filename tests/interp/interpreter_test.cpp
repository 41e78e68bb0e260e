// Whole-graph evaluation: feeds and their errors, cycles, random feeds, float and double, and
// TASO's axioms checked numerically, which shows that the kernels agree with one another.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp.hpp>
#include <goopt/ops.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace interpreter_test {

constexpr std::int64_t valid = 1;

ints dims_of(const xt::xarray<double>& v) { return ints(v.shape().begin(), v.shape().end()); }

/// Largest elementwise difference of two values of the same shape.
double max_abs_diff(const xt::xarray<double>& a, const xt::xarray<double>& b) {
    REQUIRE(dims_of(a) == dims_of(b));
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a.data()[i] - b.data()[i]));
    return d;
}

/// Evaluates g on random feeds (seeded) and returns the largest difference between tensors a and b,
/// after checking that they are not trivially zero.
double identity_gap(const graph::computation_graph& g, graph::tensor_id a, graph::tensor_id b, unsigned seed = 7) {
    std::mt19937 rng(seed);
    const auto values = interp::evaluate<double>(g, interp::random_feeds<double>(g, rng));
    double scale = 0;
    for (double v : values[a].storage()) scale = std::max(scale, std::abs(v));
    CHECK(scale > 0.01);
    return max_abs_diff(values[a], values[b]);
}

/// A small conv net: conv3x3 + relu, 2x2 max pool, flatten, matmul, softmax.
graph::computation_graph small_net() {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3, 6, 6});
    auto w = g.weight("w", {4, 3, 3, 3});
    auto c = g.add1(op_kind::conv2d, {x, w}, {{attr_id::activation, std::int64_t{1}}});
    auto p = g.add1(op_kind::maxpool2d, {c}, {{attr_id::kernel, ints{2, 2}}, {attr_id::stride, ints{2, 2}}});
    auto f = g.add1(op_kind::flatten, {p});
    auto m = g.weight("m", {36, 5});
    auto y = g.add1(op_kind::softmax, {g.add1(op_kind::matmul, {f, m})});
    g.mark_output(y);
    g.mark_output(c);
    return g;
}

TEST_CASE("a missing feed is an error naming the op and the expected shape") {
    graph::computation_graph g;
    auto x = g.input("image", {1, 3});
    g.mark_output(g.add1(op_kind::relu, {x}));
    CHECK_THROWS_WITH_AS(interp::evaluate<double>(g, {}),
                         "interp: op 'image' (input): no feed given: expected a value of shape [1,3]", error);
    // a feed under another name does not count
    interp::feed_map<double> f;
    f["img"] = xt::xarray<double>::from_shape({1, 3});
    CHECK_THROWS_WITH_AS(interp::run(g, f), doctest::Contains("'image'"), error);
}

TEST_CASE("a feed of the wrong shape is an error naming the op, the expected and the given shape") {
    graph::computation_graph g;
    auto x = g.input("image", {1, 3});
    g.mark_output(g.add1(op_kind::relu, {x}));
    interp::feed_map<double> f;
    f["image"] = xt::xarray<double>::from_shape({3, 1});
    CHECK_THROWS_WITH_AS(interp::evaluate(g, f), "interp: op 'image' (input): feed has shape [3,1]: expected [1,3]",
                         error);
    f["image"] = xt::xarray<double>::from_shape({3});
    CHECK_THROWS_WITH_AS(interp::evaluate(g, f), doctest::Contains("feed has shape [3]"), error);
}

TEST_CASE("a cyclic graph is an error") {
    graph::computation_graph g;
    auto x = g.input("x", {2});
    auto a = g.add1(op_kind::relu, {x});
    auto b = g.add1(op_kind::relu, {a});
    g.rewire(g.producer(a), 0, b);  // a = relu(b), b = relu(a)
    interp::feed_map<double> f;
    f["x"] = xt::xarray<double>::from_shape({2});
    CHECK_THROWS_AS(interp::evaluate(g, f), error);
}

TEST_CASE("an op whose inputs changed shape through rewire is an error naming it") {
    graph::computation_graph g;
    auto x = g.input("x", {2});
    auto y = g.input("y", {3});
    auto r = g.add1(op_kind::relu, {x}, {}, "act");
    g.mark_output(r);
    g.rewire(g.producer(r), 0, y);
    interp::feed_map<double> f;
    f["x"] = xt::xarray<double>::from_shape({2});
    f["y"] = xt::xarray<double>::from_shape({3});
    CHECK_THROWS_WITH_AS(interp::evaluate(g, f), doctest::Contains("'act' (relu): its inputs give outputs f32[3]"),
                         error);
}

TEST_CASE("evaluate keeps every tensor, run returns the outputs in order") {
    const graph::computation_graph g = small_net();
    std::mt19937 rng(1);
    const auto f = interp::random_feeds<double>(g, rng);
    const auto all = interp::evaluate(g, f);
    REQUIRE(all.size() == g.num_tensors());
    for (graph::tensor_id t = 0; t < g.num_tensors(); ++t) {
        const auto& dims = g.type_of(t).dims;
        CHECK(dims_of(all[t]) == ints(dims.begin(), dims.end()));
    }
    const auto out = interp::run(g, f);
    REQUIRE(out.size() == 2);
    CHECK(max_abs_diff(out[0], all[g.outputs()[0]]) == 0);
    CHECK(max_abs_diff(out[1], all[g.outputs()[1]]) == 0);
    // softmax rows sum to 1, relu outputs are non-negative
    CHECK(out[0](0, 0) + out[0](0, 1) + out[0](0, 2) + out[0](0, 3) + out[0](0, 4) == doctest::Approx(1));
    CHECK(*std::min_element(out[1].storage().begin(), out[1].storage().end()) >= 0);
}

TEST_CASE("random_feeds: every source, in range, reproducible with a seed, different with another") {
    graph::computation_graph g = small_net();
    auto table = g.weight("table", {3, 2});
    auto ids = g.input("ids", {50}, ops::dtype::i64);
    g.mark_output(g.add1(op_kind::gather, {table, ids}));
    std::mt19937 a(42), b(42), c(43);
    const auto fa = interp::random_feeds<double>(g, a);
    const auto fb = interp::random_feeds<double>(g, b);
    const auto fc = interp::random_feeds<double>(g, c);
    CHECK(fa.size() == 5);
    for (const char* name : {"x", "w", "m", "table", "ids"}) {
        CAPTURE(name);
        REQUIRE(fa.count(name) == 1);
        CHECK(max_abs_diff(fa.at(name), fb.at(name)) == 0);
        CHECK(max_abs_diff(fa.at(name), fc.at(name)) > 0);
    }
    for (double v : fa.at("x").storage()) CHECK((v >= -1 && v <= 1));
    // indices into an axis of 3 are integers in [0, 3), and all three occur among 50 draws
    std::vector<int> seen(3, 0);
    for (double v : fa.at("ids").storage()) {
        REQUIRE(v == std::floor(v));
        REQUIRE((v >= 0 && v < 3));
        seen[static_cast<std::size_t>(v)] = 1;
    }
    CHECK(seen == std::vector<int>{1, 1, 1});
    CHECK_NOTHROW(interp::evaluate(g, fa));
}

TEST_CASE("float and double evaluation agree") {
    const graph::computation_graph g = small_net();
    std::mt19937 rng(3);
    const auto fd = interp::random_feeds<double>(g, rng);
    interp::feed_map<float> ff;
    for (const auto& [name, v] : fd) {
        auto w = xt::xarray<float>::from_shape(v.shape());
        std::transform(v.data(), v.data() + v.size(), w.data(), [](double e) { return static_cast<float>(e); });
        ff.emplace(name, std::move(w));
    }
    const auto od = interp::run(g, fd);
    const auto of = interp::run(g, ff);
    REQUIRE(od.size() == of.size());
    for (std::size_t k = 0; k < od.size(); ++k) {
        REQUIRE(od[k].size() == of[k].size());
        for (std::size_t i = 0; i < od[k].size(); ++i)
            CHECK(of[k].data()[i] == doctest::Approx(od[k].data()[i]).epsilon(1e-4));
    }
}

// ---- TASO's operator axioms (TASO, SOSP'19) on random inputs

TEST_CASE("axiom: conv2d with a 1x1 kernel equals conv2d with the kernel enlarged to 3x3 (SAME)") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3, 5, 6});
    auto w = g.weight("w", {4, 3, 1, 1});
    auto small = g.add1(op_kind::conv2d, {x, w});
    auto big = g.add1(op_kind::conv2d, {x, g.add1(op_kind::enlarge, {w}, {{attr_id::kernel, ints{3, 3}}})});
    CHECK(identity_gap(g, small, big) < 1e-12);
}

TEST_CASE("axiom: 3x3 average pooling equals a depthwise conv2d with const_pool (VALID)") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3, 5, 6});
    auto pool = g.add1(op_kind::avgpool2d, {x}, {{attr_id::kernel, ints{3, 3}}, {attr_id::padding, valid}});
    auto k = g.add1(op_kind::const_pool, {}, {{attr_id::shape, ints{3, 1, 3, 3}}});
    auto conv = g.add1(op_kind::conv2d, {x, k}, {{attr_id::padding, valid}});
    CHECK(identity_gap(g, pool, conv) < 1e-12);
}

TEST_CASE("axiom: conv2d with const_iconv is the identity (SAME)") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3, 4, 5});
    auto k = g.add1(op_kind::const_iconv, {}, {{attr_id::shape, ints{3, 3, 3, 3}}});
    auto y = g.add1(op_kind::conv2d, {x, k});
    CHECK(identity_gap(g, x, y) == 0);
}

TEST_CASE("axiom: matmul with const_imm and ewmul with const_one are identities") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3, 4});
    auto m = g.add1(op_kind::matmul, {x, g.add1(op_kind::const_imm, {}, {{attr_id::shape, ints{4, 4}}})});
    auto e = g.add1(op_kind::ewmul, {x, g.add1(op_kind::const_one, {}, {{attr_id::shape, ints{3, 4}}})});
    CHECK(identity_gap(g, x, m) == 0);
    CHECK(identity_gap(g, x, e) == 0);
}

TEST_CASE("axiom: conv2d with concatenated kernels is the concatenation of the conv2ds") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 3, 5, 5});
    auto w1 = g.weight("w1", {2, 3, 3, 3});
    auto w2 = g.weight("w2", {3, 3, 3, 3});
    const ops::attribute_map strided{{attr_id::stride, ints{2, 1}}};
    auto both =
        g.add1(op_kind::conv2d, {x, g.add1(op_kind::concat, {w1, w2}, {{attr_id::axis, std::int64_t{0}}})}, strided);
    auto parts =
        g.add1(op_kind::concat, {g.add1(op_kind::conv2d, {x, w1}, strided), g.add1(op_kind::conv2d, {x, w2}, strided)},
               {{attr_id::axis, std::int64_t{1}}});
    CHECK(identity_gap(g, both, parts) < 1e-12);
}

TEST_CASE("axiom: a grouped conv2d is the concatenation of convs over the split channels") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 4, 5, 5});
    auto w = g.weight("w", {6, 2, 3, 3});
    auto grouped = g.add1(op_kind::conv2d, {x, w}, {{attr_id::padding, valid}});
    auto xs = g.add(op_kind::split, {x}, {{attr_id::axis, std::int64_t{1}}, {attr_id::sizes, ints{2, 2}}});
    const std::vector<graph::tensor_id> halves(xs.begin(), xs.end());
    auto w0 = g.add1(op_kind::slice, {w}, {{attr_id::begin, ints{0, 0, 0, 0}}, {attr_id::end, ints{3, 2, 3, 3}}});
    auto w1 = g.add1(op_kind::slice, {w}, {{attr_id::begin, ints{3, 0, 0, 0}}, {attr_id::end, ints{6, 2, 3, 3}}});
    auto c0 = g.add1(op_kind::conv2d, {halves[0], w0}, {{attr_id::padding, valid}});
    auto c1 = g.add1(op_kind::conv2d, {halves[1], w1}, {{attr_id::padding, valid}});
    auto joined = g.add1(op_kind::concat, {c0, c1}, {{attr_id::axis, std::int64_t{1}}});
    CHECK(identity_gap(g, grouped, joined) < 1e-12);
}

TEST_CASE("axiom: transpose(a b) = transpose(b) transpose(a), and fused relu = relu after") {
    graph::computation_graph g;
    auto a = g.input("a", {3, 4});
    auto b = g.input("b", {4, 2});
    auto ab_t = g.add1(op_kind::transpose, {g.add1(op_kind::matmul, {a, b})});
    auto bt_at = g.add1(op_kind::matmul, {g.add1(op_kind::transpose, {b}), g.add1(op_kind::transpose, {a})});
    CHECK(identity_gap(g, ab_t, bt_at) < 1e-12);
    auto fused = g.add1(op_kind::matmul, {a, b}, {{attr_id::activation, std::int64_t{1}}});
    auto after = g.add1(op_kind::relu, {g.add1(op_kind::matmul, {a, b})});
    CHECK(identity_gap(g, fused, after) == 0);
}

TEST_CASE("a ResNet basic block at 56x56x64 evaluates") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 64, 56, 56});
    auto bn = [&](graph::tensor_id t, const std::string& n) {
        return g.add1(op_kind::batchnorm,
                      {t, g.weight(n + "_s", {64}), g.weight(n + "_b", {64}), g.weight(n + "_m", {64}),
                       g.add1(op_kind::const_one, {}, {{attr_id::shape, ints{64}}})});
    };
    auto c1 = g.add1(op_kind::relu, {bn(g.add1(op_kind::conv2d, {x, g.weight("w1", {64, 64, 3, 3})}), "bn1")});
    auto c2 = bn(g.add1(op_kind::conv2d, {c1, g.weight("w2", {64, 64, 3, 3})}), "bn2");
    g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::ewadd, {c2, x})}));
    std::mt19937 rng(5);
    const auto y = interp::run(g, interp::random_feeds<double>(g, rng))[0];
    CHECK(dims_of(y) == ints{1, 64, 56, 56});
    CHECK(std::all_of(y.storage().begin(), y.storage().end(), [](double v) { return std::isfinite(v) && v >= 0; }));
}

}  // namespace interpreter_test
