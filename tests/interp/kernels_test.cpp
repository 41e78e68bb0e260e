// One test per operator kind: the interpreter's value against numbers worked out by hand, and the
// value's shape against the shape the op table infers.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp.hpp>
#include <goopt/ops.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace goopt;
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;
using feeds = interp::feed_map<double>;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace kernels_test {

constexpr std::int64_t same = 0, valid = 1;
constexpr std::int64_t relu = 1, sigmoid = 2, tanh_act = 3;

/// A row-major value of shape `dims` holding `data`.
xt::xarray<double> tensor(const std::vector<std::size_t>& dims, const std::vector<double>& data) {
    xt::xarray<double> r = xt::xarray<double>::from_shape(dims);
    REQUIRE(r.size() == data.size());
    std::copy(data.begin(), data.end(), r.data());
    return r;
}

ints dims_of(const xt::xarray<double>& v) { return ints(v.shape().begin(), v.shape().end()); }
ints dims_of(const ops::shape& s) { return ints(s.begin(), s.end()); }

/// Evaluates `g` and returns the value of tensor `t`, whose shape must be the one the graph inferred.
xt::xarray<double> eval(const graph::computation_graph& g, graph::tensor_id t, const feeds& f = {}) {
    auto values = interp::evaluate<double>(g, f);
    REQUIRE(values.size() == g.num_tensors());
    CHECK(dims_of(values[t]) == dims_of(g.type_of(t).dims));
    return values[t];
}

/// The value has shape `dims` and elements `expected` in row-major order.
void check_value(const xt::xarray<double>& v, const ints& dims, const std::vector<double>& expected) {
    CHECK(dims_of(v) == dims);
    REQUIRE(v.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CAPTURE(i);
        CHECK(v.data()[i] == doctest::Approx(expected[i]));
    }
}

/// 1..9 as a 1x1x3x3 image: the running example of the window ops.
xt::xarray<double> image3() { return tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

/// conv2d of image3 with the 2x2 kernel [[1,2],[3,4]].
xt::xarray<double> conv_image3(ints stride, std::int64_t padding) {
    graph::computation_graph g;
    auto x = g.input("x", {1, 1, 3, 3});
    auto w = g.weight("w", {1, 1, 2, 2});
    auto y = g.add1(op_kind::conv2d, {x, w}, {{attr_id::stride, stride}, {attr_id::padding, padding}});
    return eval(g, y, {{"x", image3()}, {"w", tensor({1, 1, 2, 2}, {1, 2, 3, 4})}});
}

/// A single unary op on a vector.
xt::xarray<double> unary(op_kind k, const std::vector<double>& x, ops::attribute_map attrs = {}) {
    graph::computation_graph g;
    auto in = g.input("x", {static_cast<std::int64_t>(x.size())});
    auto y = g.add1(k, {in}, std::move(attrs));
    return eval(g, y, {{"x", tensor({x.size()}, x)}});
}

/// A single binary op on two fed inputs.
xt::xarray<double> binary(op_kind k, const xt::xarray<double>& a, const xt::xarray<double>& b) {
    graph::computation_graph g;
    auto x = g.input("a", ops::shape{std::span<const std::int64_t>(dims_of(a))});
    auto y = g.input("b", ops::shape{std::span<const std::int64_t>(dims_of(b))});
    auto z = g.add1(k, {x, y});
    return eval(g, z, {{"a", a}, {"b", b}});
}

// ---- sources

TEST_CASE("input: the value is the feed, including integer dtypes") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 2});
    auto i = g.input("i", {3}, ops::dtype::i64);
    auto values = interp::evaluate<double>(g, {{"x", tensor({2, 2}, {1, 2, 3, 4})}, {"i", tensor({3}, {0, 5, 2})}});
    check_value(values[x], {2, 2}, {1, 2, 3, 4});
    check_value(values[i], {3}, {0, 5, 2});
}

TEST_CASE("weight: the value is the feed, and a missing one is an error naming it") {
    graph::computation_graph g;
    auto w = g.weight("w", {3});
    check_value(eval(g, w, {{"w", tensor({3}, {-1, 0.5, 2})}}), {3}, {-1, 0.5, 2});
    CHECK_THROWS_WITH_AS(interp::evaluate<double>(g, {}), doctest::Contains("'w' (weight)"), error);
}

TEST_CASE("const_pool: every element is 1/(kh*kw)") {
    graph::computation_graph g;
    auto p = g.add1(op_kind::const_pool, {}, {{attr_id::shape, ints{2, 1, 2, 3}}});
    check_value(eval(g, p), {2, 1, 2, 3}, std::vector<double>(12, 1.0 / 6));
}

TEST_CASE("const_iconv: 1 at the center of (c, c), 0 elsewhere") {
    graph::computation_graph g;
    auto k = g.add1(op_kind::const_iconv, {}, {{attr_id::shape, ints{2, 2, 3, 1}}});
    // [c_out][c_in][kh=3][kw=1]: the center is row 1
    check_value(eval(g, k), {2, 2, 3, 1}, {0, 1, 0, /**/ 0, 0, 0, /**/ 0, 0, 0, /**/ 0, 1, 0});
}

TEST_CASE("const_imm: identity matrix") {
    graph::computation_graph g;
    auto m = g.add1(op_kind::const_imm, {}, {{attr_id::shape, ints{3, 3}}});
    check_value(eval(g, m), {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
}

TEST_CASE("const_one: all ones") {
    graph::computation_graph g;
    auto m = g.add1(op_kind::const_one, {}, {{attr_id::shape, ints{2, 3}}});
    check_value(eval(g, m), {2, 3}, std::vector<double>(6, 1.0));
}

// ---- TASO's compute operators

TEST_CASE("conv2d: 2x2 kernel on a 3x3 image, SAME and VALID, strides 1 and 2") {
    // windows of [[1,2],[3,4]] over 1..9; SAME pads one zero row and column at the bottom and right
    SUBCASE("VALID stride 1") { check_value(conv_image3({1, 1}, valid), {1, 1, 2, 2}, {37, 47, 67, 77}); }
    SUBCASE("VALID stride 2") { check_value(conv_image3({2, 2}, valid), {1, 1, 1, 1}, {37}); }
    SUBCASE("SAME stride 1") {
        check_value(conv_image3({1, 1}, same), {1, 1, 3, 3}, {37, 47, 21, 67, 77, 33, 23, 26, 9});
    }
    SUBCASE("SAME stride 2") { check_value(conv_image3({2, 2}, same), {1, 1, 2, 2}, {37, 21, 23, 9}); }
    SUBCASE("SAME 3x3 kernel pads one cell on every side") {
        graph::computation_graph g;
        auto x = g.input("x", {1, 1, 3, 3});
        auto w = g.add1(op_kind::const_one, {}, {{attr_id::shape, ints{1, 1, 3, 3}}});
        auto y = g.add1(op_kind::conv2d, {x, w});
        check_value(eval(g, y, {{"x", image3()}}), {1, 1, 3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
    }
    SUBCASE("SAME stride 2 on a 4-wide row: no padding needed, so the windows start at 0 and 2") {
        graph::computation_graph g;
        auto x = g.input("x", {1, 1, 1, 4});
        auto w = g.weight("w", {1, 1, 1, 2});
        auto y = g.add1(op_kind::conv2d, {x, w}, {{attr_id::stride, ints{1, 2}}});
        check_value(eval(g, y, {{"x", tensor({1, 1, 1, 4}, {1, 2, 3, 4})}, {"w", tensor({1, 1, 1, 2}, {1, 10})}}),
                    {1, 1, 1, 2}, {21, 43});
    }
}

TEST_CASE("conv2d: dilation spreads the taps (WaveNet), VALID and SAME") {
    // row 1..5, kernel [1, 10] with its taps 2 apart: y[t] = x[t] + 10 x[t + 2] (VALID)
    auto run = [](std::int64_t padding) {
        graph::computation_graph g;
        auto x = g.input("x", {1, 1, 1, 5});
        auto w = g.weight("w", {1, 1, 1, 2});
        auto y = g.add1(op_kind::conv2d, {x, w}, {{attr_id::dilation, ints{1, 2}}, {attr_id::padding, padding}});
        return eval(g, y, {{"x", tensor({1, 1, 1, 5}, {1, 2, 3, 4, 5})}, {"w", tensor({1, 1, 1, 2}, {1, 10})}});
    };
    check_value(run(valid), {1, 1, 1, 3}, {31, 42, 53});
    // SAME: the 3-wide window gets one zero on each side, y[t] = x[t - 1] + 10 x[t + 1]
    check_value(run(same), {1, 1, 1, 5}, {20, 31, 42, 53, 4});
}

TEST_CASE("conv2d: groups, batch and fused activations") {
    SUBCASE("two groups, one input channel each") {
        graph::computation_graph g;
        auto x = g.input("x", {1, 2, 2, 2});
        auto w = g.weight("w", {2, 1, 2, 2});
        auto y = g.add1(op_kind::conv2d, {x, w}, {{attr_id::padding, valid}});
        // channel 0 [1,2,3,4] with [1,1,1,1]; channel 1 [5,6,7,8] with [1,2,0,0]
        check_value(eval(g, y,
                         {{"x", tensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
                          {"w", tensor({2, 1, 2, 2}, {1, 1, 1, 1, 1, 2, 0, 0})}}),
                    {1, 2, 1, 1}, {10, 17});
    }
    SUBCASE("two groups of two channels, two outputs per group") {
        graph::computation_graph g;
        auto x = g.input("x", {1, 4, 1, 1});
        auto w = g.weight("w", {4, 2, 1, 1});
        auto y = g.add1(op_kind::conv2d, {x, w});
        // outputs 0,1 see channels (1,2); outputs 2,3 see channels (3,4)
        check_value(
            eval(g, y,
                 {{"x", tensor({1, 4, 1, 1}, {1, 2, 3, 4})}, {"w", tensor({4, 2, 1, 1}, {1, 1, 1, -1, 1, 1, 2, 1})}}),
            {1, 4, 1, 1}, {3, -1, 7, 10});
    }
    SUBCASE("batch of two, activations") {
        const auto run = [](std::int64_t act) {
            graph::computation_graph g;
            auto x = g.input("x", {2, 1, 1, 1});
            auto w = g.weight("w", {1, 1, 1, 1});
            auto y = g.add1(op_kind::conv2d, {x, w}, {{attr_id::activation, act}});
            return eval(g, y, {{"x", tensor({2, 1, 1, 1}, {1, -2})}, {"w", tensor({1, 1, 1, 1}, {-1})}});
        };
        check_value(run(0), {2, 1, 1, 1}, {-1, 2});
        check_value(run(relu), {2, 1, 1, 1}, {0, 2});
        check_value(run(sigmoid), {2, 1, 1, 1}, {0.2689414213699951, 0.8807970779778823});
        check_value(run(tanh_act), {2, 1, 1, 1}, {-0.7615941559557649, 0.9640275800758169});
    }
}

TEST_CASE("matmul: plain, batched with broadcast prefixes, fused relu") {
    SUBCASE("[2,3] x [3,2]") {
        check_value(binary(op_kind::matmul, tensor({2, 3}, {1, 2, 3, 4, 5, 6}), tensor({3, 2}, {7, 8, 9, 10, 11, 12})),
                    {2, 2}, {58, 64, 139, 154});
    }
    SUBCASE("[2,2,2] x [2,1]: the matrix is shared by the batch") {
        check_value(binary(op_kind::matmul, tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), tensor({2, 1}, {1, 2})),
                    {2, 2, 1}, {5, 11, 17, 23});
    }
    SUBCASE("[2,1,1,2] x [3,2,1]: both prefixes broadcast to [2,3]") {
        // x_i . y_j with x = [1,2], [3,4] and y = [1,0], [0,1], [1,1]
        check_value(binary(op_kind::matmul, tensor({2, 1, 1, 2}, {1, 2, 3, 4}), tensor({3, 2, 1}, {1, 0, 0, 1, 1, 1})),
                    {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
    }
    SUBCASE("fused relu") {
        graph::computation_graph g;
        auto x = g.input("x", {1, 2});
        auto y = g.input("y", {2, 2});
        auto z = g.add1(op_kind::matmul, {x, y}, {{attr_id::activation, relu}});
        check_value(eval(g, z, {{"x", tensor({1, 2}, {1, 2})}, {"y", tensor({2, 2}, {1, -1, 1, -1})}}), {1, 2}, {3, 0});
    }
}

TEST_CASE("conv2d_bias and matmul_bias: the product, plus the broadcast addend, then the activation") {
    graph::computation_graph g;
    const auto x = g.input("x", {1, 1, 3, 3});
    const auto k = g.input("k", {2, 1, 1, 1});
    const auto c = g.input("c", {2, 1, 1});
    const auto y = g.add1(op_kind::conv2d_bias, {x, k, c}, {{attr_id::activation, relu}});
    const feeds f{{"x", image3()}, {"k", tensor({2, 1, 1, 1}, {1, -1})}, {"c", tensor({2, 1, 1}, {-5, 8})}};
    // channel 0: relu(x - 5), channel 1: relu(-x + 8)
    check_value(eval(g, y, f), {1, 2, 3, 3}, {0, 0, 0, 0, 0, 1, 2, 3, 4, 7, 6, 5, 4, 3, 2, 1, 0, 0});
    graph::computation_graph m;
    const auto a = m.input("a", {2, 2});
    const auto w = m.input("w", {2, 2});
    const auto r = m.input("r", {2, 2});  // a residual: the addend has the output's shape
    const auto z = m.add1(op_kind::matmul_bias, {a, w, r}, {{attr_id::activation, std::int64_t(4)}});
    const feeds f2{{"a", tensor({2, 2}, {1, 2, 3, 4})},
                   {"w", tensor({2, 2}, {1, 0, 0, 1})},
                   {"r", tensor({2, 2}, {-1, -2, 0, -4})}};
    const auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
    check_value(eval(m, z, f2), {2, 2}, {gelu(0), gelu(0), gelu(3), gelu(0)});
    // an addend that would grow the output is refused by the shape rule
    CHECK_THROWS_AS(m.add1(op_kind::matmul_bias, {a, w, m.input("big", {3, 2, 2})}, {}), error);
}

TEST_CASE("ewadd: numpy broadcasting") {
    check_value(binary(op_kind::ewadd, tensor({2, 3}, {1, 2, 3, 4, 5, 6}), tensor({3}, {10, 20, 30})), {2, 3},
                {11, 22, 33, 14, 25, 36});
    check_value(binary(op_kind::ewadd, tensor({2, 1}, {1, 2}), tensor({1, 3}, {10, 20, 30})), {2, 3},
                {11, 21, 31, 12, 22, 32});
}

TEST_CASE("ewmul: numpy broadcasting") {
    check_value(binary(op_kind::ewmul, tensor({2, 1}, {1, 2}), tensor({3}, {1, 2, 3})), {2, 3}, {1, 2, 3, 2, 4, 6});
    check_value(binary(op_kind::ewmul, tensor({2}, {3, 4}), tensor({2}, {-1, 0.5})), {2}, {-3, 2});
}

TEST_CASE("smul: times the single element of input 1, of shape [1] or []") {
    check_value(binary(op_kind::smul, tensor({2, 2}, {1, 2, 3, 4}), tensor({1}, {3})), {2, 2}, {3, 6, 9, 12});
    check_value(binary(op_kind::smul, tensor({2}, {1, -2}), tensor({}, {-0.5})), {2}, {-0.5, 1});
}

TEST_CASE("relu") { check_value(unary(op_kind::relu, {-1, 0, 2}), {3}, {0, 0, 2}); }

TEST_CASE("transpose: explicit and empty (reversing) permutations") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3});
    auto t = g.add1(op_kind::transpose, {x}, {{attr_id::perm, ints{1, 0}}});
    auto r = g.add1(op_kind::transpose, {x});
    auto y = g.input("y", {2, 1, 3});
    auto p = g.add1(op_kind::transpose, {y}, {{attr_id::perm, ints{2, 0, 1}}});
    const feeds f{{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}, {"y", tensor({2, 1, 3}, {0, 1, 2, 3, 4, 5})}};
    check_value(eval(g, t, f), {3, 2}, {1, 4, 2, 5, 3, 6});
    check_value(eval(g, r, f), {3, 2}, {1, 4, 2, 5, 3, 6});
    // out[k][i][j] = y[i][j][k]
    check_value(eval(g, p, f), {3, 2, 1}, {0, 3, 1, 4, 2, 5});
}

TEST_CASE("enlarge: the kernel sits at the center of zeros") {
    graph::computation_graph g;
    auto w = g.weight("w", {1, 1, 1, 3});
    auto e = g.add1(op_kind::enlarge, {w}, {{attr_id::kernel, ints{3, 5}}});
    check_value(eval(g, e, {{"w", tensor({1, 1, 1, 3}, {1, 2, 3})}}), {1, 1, 3, 5},
                {0, 0, 0, 0, 0, /**/ 0, 1, 2, 3, 0, /**/ 0, 0, 0, 0, 0});
}

TEST_CASE("avgpool2d: padded cells are not counted") {
    const auto pool = [](ints kernel, ints stride, std::int64_t padding, std::int64_t act = 0) {
        graph::computation_graph g;
        auto x = g.input("x", {1, 1, 3, 3});
        auto y = g.add1(op_kind::avgpool2d, {x},
                        {{attr_id::kernel, kernel},
                         {attr_id::stride, stride},
                         {attr_id::padding, padding},
                         {attr_id::activation, act}});
        return eval(g, y, {{"x", image3()}});
    };
    // SAME 2x2 stride 2 pads the bottom row and right column: (1+2+4+5)/4, (3+6)/2, (7+8)/2, 9/1
    check_value(pool({2, 2}, {2, 2}, same), {1, 1, 2, 2}, {3, 4.5, 7.5, 9});
    check_value(pool({2, 2}, {1, 1}, valid), {1, 1, 2, 2}, {3, 4, 6, 7});
    // SAME 3x3 stride 1 pads all around: the corner averages 4 cells, the edge 6
    check_value(pool({3, 3}, {1, 1}, same), {1, 1, 3, 3}, {3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7});
    check_value(pool({3, 3}, {1, 1}, valid, tanh_act), {1, 1, 1, 1}, {std::tanh(5.0)});
}

TEST_CASE("maxpool2d: padded cells are ignored, not zeros") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 1, 3, 3});
    auto y = g.add1(op_kind::maxpool2d, {x}, {{attr_id::kernel, ints{2, 2}}, {attr_id::stride, ints{2, 2}}});
    auto r = g.add1(op_kind::maxpool2d, {x},
                    {{attr_id::kernel, ints{2, 2}}, {attr_id::padding, valid}, {attr_id::activation, relu}});
    // a zero pad would win over -2, -5, -6 and -8
    const feeds f{{"x", tensor({1, 1, 3, 3}, {0, -1, -2, -3, -4, -5, -6, -7, -8})}};
    check_value(eval(g, y, f), {1, 1, 2, 2}, {0, -2, -6, -8});
    check_value(eval(g, r, f), {1, 1, 2, 2}, {0, 0, 0, 0});
    const feeds positive{{"x", image3()}};
    check_value(eval(g, r, positive), {1, 1, 2, 2}, {5, 6, 8, 9});
}

TEST_CASE("concat: any number of inputs along an axis") {
    graph::computation_graph g;
    auto a = g.input("a", {2, 1});
    auto b = g.input("b", {2, 2});
    auto c = g.add1(op_kind::concat, {a, b, a}, {{attr_id::axis, std::int64_t{-1}}});
    auto d = g.add1(op_kind::concat, {b, b}, {{attr_id::axis, std::int64_t{0}}});
    const feeds f{{"a", tensor({2, 1}, {1, 2})}, {"b", tensor({2, 2}, {3, 4, 5, 6})}};
    check_value(eval(g, c, f), {2, 4}, {1, 3, 4, 1, 2, 5, 6, 2});
    check_value(eval(g, d, f), {4, 2}, {3, 4, 5, 6, 3, 4, 5, 6});
}

TEST_CASE("split: one output per size, and concat undoes it") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3});
    auto outs = g.add(op_kind::split, {x}, {{attr_id::axis, std::int64_t{1}}, {attr_id::sizes, ints{1, 2}}});
    const std::vector<graph::tensor_id> parts(outs.begin(), outs.end());
    REQUIRE(parts.size() == 2);
    auto back = g.add1(op_kind::concat, {parts[0], parts[1]}, {{attr_id::axis, std::int64_t{1}}});
    const feeds f{{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}};
    check_value(eval(g, parts[0], f), {2, 1}, {1, 4});
    check_value(eval(g, parts[1], f), {2, 2}, {2, 3, 5, 6});
    check_value(eval(g, back, f), {2, 3}, {1, 2, 3, 4, 5, 6});
}

// ---- arithmetic and activations

TEST_CASE("sub: broadcasting, order matters") {
    check_value(binary(op_kind::sub, tensor({1, 2}, {5, 6}), tensor({1}, {1})), {1, 2}, {4, 5});
    check_value(binary(op_kind::sub, tensor({1}, {1}), tensor({2, 1}, {5, 6})), {2, 1}, {-4, -5});
}

TEST_CASE("div: broadcasting, order matters") {
    check_value(binary(op_kind::div, tensor({3}, {1, 2, 3}), tensor({1}, {2})), {3}, {0.5, 1, 1.5});
    check_value(binary(op_kind::div, tensor({2, 1}, {1, 2}), tensor({1, 2}, {4, 8})), {2, 2}, {0.25, 0.125, 0.5, 0.25});
}

TEST_CASE("pow: base from input 0, exponent from input 1") {
    check_value(binary(op_kind::pow, tensor({3}, {2, 3, 4}), tensor({3}, {2, 2, 0.5})), {3}, {4, 9, 2});
    check_value(binary(op_kind::pow, tensor({1}, {2}), tensor({2}, {3, -1})), {2}, {8, 0.5});
}

TEST_CASE("sqrt") { check_value(unary(op_kind::sqrt, {4, 9, 0.25}), {3}, {2, 3, 0.5}); }

TEST_CASE("sigmoid") { check_value(unary(op_kind::sigmoid, {0, std::log(3.0)}), {2}, {0.5, 0.75}); }

TEST_CASE("tanh") { check_value(unary(op_kind::tanh, {0, 0.5 * std::log(3.0)}), {2}, {0, 0.5}); }

TEST_CASE("gelu: exact erf form") {
    // x * Phi(x): Phi(1) = 0.841344746..., Phi(-1) = 1 - Phi(1)
    check_value(unary(op_kind::gelu, {0, 1, -1}), {3}, {0, 0.8413447460685429, -0.15865525393145707});
}

TEST_CASE("erf") { check_value(unary(op_kind::erf, {0, 1, -1}), {3}, {0, 0.8427007929497149, -0.8427007929497149}); }

TEST_CASE("clip") {
    check_value(unary(op_kind::clip, {-2, 0.5, 3}, {{attr_id::min, -1.0}, {attr_id::max, 1.0}}), {3}, {-1, 0.5, 1});
}

TEST_CASE("leaky_relu, hard_sigmoid, hard_swish, exp") {
    check_value(unary(op_kind::leaky_relu, {-2, 0, 3}, {{attr_id::alpha, 0.1}}), {3}, {-0.2, 0, 3});
    check_value(unary(op_kind::leaky_relu, {-2, 3}), {2}, {-0.02, 3});  // ONNX's default slope
    check_value(unary(op_kind::hard_sigmoid, {-3, 0, 1, 3}), {4}, {0, 0.5, 0.7, 1});
    check_value(unary(op_kind::hard_sigmoid, {-1, 0, 1}, {{attr_id::alpha, 0.25}, {attr_id::beta, 0.25}}), {3},
                {0, 0.25, 0.5});
    check_value(unary(op_kind::hard_swish, {-4, -1.5, 0, 1.5, 4}), {5}, {0, -0.375, 0, 1.125, 4});
    check_value(unary(op_kind::exp, {0, 1, -1}), {3}, {1, std::exp(1.0), std::exp(-1.0)});
}

TEST_CASE("prelu, softplus, elu, abs") {
    check_value(binary(op_kind::prelu, tensor({2, 2}, {-2, 3, -4, 0}), tensor({2, 1}, {0.5, 0.25})), {2, 2},
                {-1, 3, -1, 0});
    check_value(binary(op_kind::prelu, tensor({2}, {-2, 3}), tensor({2, 1}, {0.5, 0.25})), {2, 2},
                {-1, 3, -0.5, 3});  // a slope that widens x
    check_value(unary(op_kind::softplus, {0, 1, -1, 100, -100}), {5},
                {std::log(2.0), std::log1p(std::exp(1.0)), std::log1p(std::exp(-1.0)), 100, std::exp(-100.0)});
    check_value(unary(op_kind::elu, {-1, 0, 2}), {3}, {std::expm1(-1.0), 0, 2});  // ONNX's default alpha 1
    check_value(unary(op_kind::elu, {-2, 2}, {{attr_id::alpha, 0.5}}), {2}, {0.5 * std::expm1(-2.0), 2});
    check_value(unary(op_kind::abs, {-2, 0, 3}), {3}, {2, 0, 3});
}

TEST_CASE("softsign, max, min") {
    check_value(unary(op_kind::softsign, {-3, 0, 1}), {3}, {-0.75, 0, 0.5});
    check_value(binary(op_kind::max, tensor({2, 2}, {-2, 3, -4, 0}), tensor({2}, {-1, 5})), {2, 2}, {-1, 5, -1, 5});
    check_value(binary(op_kind::min, tensor({2}, {-2, 3}), tensor({2, 1}, {0, 1})), {2, 2}, {-2, 0, -2, 1});
}

TEST_CASE("identity") { check_value(unary(op_kind::identity, {-2, 7}), {2}, {-2, 7}); }

// ---- data movement

TEST_CASE("reshape: row-major order, -1 inferred") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3});
    auto r = g.add1(op_kind::reshape, {x}, {{attr_id::shape, ints{3, -1}}});
    const feeds f{{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}};
    check_value(eval(g, r, f), {3, 2}, {1, 2, 3, 4, 5, 6});
}

TEST_CASE("flatten: [prod(d[:axis]), prod(d[axis:])]") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 1, 2});
    auto a = g.add1(op_kind::flatten, {x}, {{attr_id::axis, std::int64_t{2}}});
    auto b = g.add1(op_kind::flatten, {x}, {{attr_id::axis, std::int64_t{0}}});
    const feeds f{{"x", tensor({2, 1, 2}, {1, 2, 3, 4})}};
    check_value(eval(g, a, f), {2, 2}, {1, 2, 3, 4});
    check_value(eval(g, b, f), {1, 4}, {1, 2, 3, 4});
}

TEST_CASE("pad: begins then ends per axis, constant value") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 2});
    auto p = g.add1(op_kind::pad, {x}, {{attr_id::pads, ints{1, 0, 0, 1}}, {attr_id::value, 9.0}});
    check_value(eval(g, p, {{"x", tensor({2, 2}, {1, 2, 3, 4})}}), {3, 3}, {9, 9, 9, 1, 2, 9, 3, 4, 9});
}

TEST_CASE("slice: the box [begin, end)") {
    graph::computation_graph g;
    auto x = g.input("x", {3, 3});
    auto s = g.add1(op_kind::slice, {x}, {{attr_id::begin, ints{1, 0}}, {attr_id::end, ints{3, 2}}});
    check_value(eval(g, s, {{"x", tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}}), {2, 2}, {4, 5, 7, 8});
}

TEST_CASE("gather: data.dims[:axis] + indices.dims + data.dims[axis+1:]") {
    graph::computation_graph g;
    auto data = g.input("data", {3, 2});
    auto rows = g.input("rows", {2}, ops::dtype::i64);
    auto cols = g.input("cols", {2, 1}, ops::dtype::i64);
    auto a = g.add1(op_kind::gather, {data, rows}, {}, "by_row");
    auto b = g.add1(op_kind::gather, {data, cols}, {{attr_id::axis, std::int64_t{1}}});
    feeds f{
        {"data", tensor({3, 2}, {1, 2, 3, 4, 5, 6})}, {"rows", tensor({2}, {2, 0})}, {"cols", tensor({2, 1}, {1, 0})}};
    check_value(eval(g, a, f), {2, 2}, {5, 6, 1, 2});
    check_value(eval(g, b, f), {3, 2, 1}, {2, 1, 4, 3, 6, 5});
    f["rows"] = tensor({2}, {-1, 0});  // negative indices count from the end, as in ONNX
    check_value(eval(g, a, f), {2, 2}, {5, 6, 1, 2});
    f["rows"] = tensor({2}, {3, 0});
    CHECK_THROWS_WITH_AS(interp::evaluate<double>(g, f), doctest::Contains("'by_row' (gather): index 3"), error);
    f["rows"] = tensor({2}, {0.5, 0});
    CHECK_THROWS_AS(interp::evaluate<double>(g, f), error);
}

TEST_CASE("global_avgpool: mean over the spatial axes, kept as size 1") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 2, 2, 2});
    auto y = g.add1(op_kind::global_avgpool, {x});
    check_value(eval(g, y, {{"x", tensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 9})}}), {1, 2, 1, 1}, {2.5, 6.75});
}

// ---- normalization and reductions

TEST_CASE("batchnorm: inputs x, scale, bias, mean, var; channel axis 1") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 2, 1, 2});
    std::vector<graph::tensor_id> p;
    for (const char* name : {"scale", "bias", "mean", "var"}) p.push_back(g.weight(name, {2}));
    auto y = g.add1(op_kind::batchnorm, {x, p[0], p[1], p[2], p[3]}, {{attr_id::epsilon, 1.0}});
    // channel 0: (x - 1) / sqrt(3 + 1) * 2 + 0; channel 1: (x - 2) / sqrt(0 + 1) * 1 + 1
    check_value(eval(g, y,
                     {{"x", tensor({1, 2, 1, 2}, {1, 3, 2, 4})},
                      {"scale", tensor({2}, {2, 1})},
                      {"bias", tensor({2}, {0, 1})},
                      {"mean", tensor({2}, {1, 2})},
                      {"var", tensor({2}, {3, 0})}}),
                {1, 2, 1, 2}, {0, 2, 1, 3});
}

TEST_CASE("instance_norm: per sample and channel over the other axes, then the channel's scale and bias") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 2, 2});
    auto y =
        g.add1(op_kind::instance_norm, {x, g.weight("scale", {2}), g.weight("bias", {2})}, {{attr_id::epsilon, 0.0}});
    // each pair (a, b) normalizes to (-1, 1) when a < b; channel 0 * 2 + 0, channel 1 * 1 + 1
    check_value(eval(g, y,
                     {{"x", tensor({2, 2, 2}, {1, 3, 5, 4, -2, 8, 0, 0.5})},
                      {"scale", tensor({2}, {2, 1})},
                      {"bias", tensor({2}, {0, 1})}}),
                {2, 2, 2}, {-2, 2, 2, 0, -2, 2, 0, 2});
}

TEST_CASE("lrn: x / (bias + alpha / size * the window's sum of squares)^beta, ONNX's window") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 3, 1, 1});
    const ops::attribute_map odd{
        {attr_id::size, std::int64_t{3}}, {attr_id::alpha, 3.0}, {attr_id::beta, 1.0}, {attr_id::bias, 1.0}};
    auto even = odd;
    even.set(attr_id::size, std::int64_t{2});
    even.set(attr_id::alpha, 2.0);
    auto y3 = g.add1(op_kind::lrn, {x}, odd);
    auto y2 = g.add1(op_kind::lrn, {x}, even);
    const feeds f{{"x", tensor({1, 3, 1, 1}, {1, 2, 3})}};
    // size 3: windows {0,1}, {0,1,2}, {1,2}: sums 5, 14, 13; alpha / size = 1
    check_value(eval(g, y3, f), {1, 3, 1, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14});
    // size 2: one channel after, none before: {0,1}, {1,2}, {2}: sums 5, 13, 9
    check_value(eval(g, y2, f), {1, 3, 1, 1}, {1.0 / 6, 2.0 / 14, 3.0 / 10});
}

TEST_CASE("softmax: along the axis, stable for large inputs") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 2});
    auto last = g.add1(op_kind::softmax, {x});
    auto first = g.add1(op_kind::softmax, {x}, {{attr_id::axis, std::int64_t{0}}});
    const double ln3 = std::log(3.0);
    const feeds f{{"x", tensor({2, 2}, {0, ln3, ln3, ln3})}};
    check_value(eval(g, first, f), {2, 2}, {0.25, 0.5, 0.75, 0.5});
    check_value(eval(g, last, f), {2, 2}, {0.25, 0.75, 0.5, 0.5});
    check_value(eval(g, last, {{"x", tensor({2, 2}, {1000, 1000, -1000, 1000})}}), {2, 2}, {0.5, 0.5, 0, 1});

    graph::computation_graph h;
    auto v = h.input("v", {3});
    auto s = h.add1(op_kind::softmax, {v});
    check_value(eval(h, s, {{"v", tensor({3}, {1, 2, 3})}}), {3},
                {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
}

TEST_CASE("layernorm: mean and biased variance over [axis, rank), then gamma and beta") {
    SUBCASE("last axis") {
        graph::computation_graph g;
        auto x = g.input("x", {2, 2});
        auto gamma = g.weight("gamma", {2});
        auto beta = g.weight("beta", {2});
        auto y = g.add1(op_kind::layernorm, {x, gamma, beta}, {{attr_id::epsilon, 0.0}});
        // rows [1,3] and [0,4] both normalize to [-1, 1]
        check_value(
            eval(g, y,
                 {{"x", tensor({2, 2}, {1, 3, 0, 4})}, {"gamma", tensor({2}, {2, 1})}, {"beta", tensor({2}, {0, 10})}}),
            {2, 2}, {-2, 11, -2, 11});
    }
    SUBCASE("two trailing axes") {
        graph::computation_graph g;
        auto x = g.input("x", {1, 2, 2});
        auto gamma = g.add1(op_kind::const_one, {}, {{attr_id::shape, ints{2, 2}}});
        auto beta = g.weight("beta", {2, 2});
        auto y =
            g.add1(op_kind::layernorm, {x, gamma, beta}, {{attr_id::axis, std::int64_t{1}}, {attr_id::epsilon, 0.0}});
        // mean 2.5, variance 1.25
        check_value(eval(g, y, {{"x", tensor({1, 2, 2}, {1, 2, 3, 4})}, {"beta", tensor({2, 2}, {0, 0, 0, 1})}}),
                    {1, 2, 2}, {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 2.3416407864998738});
    }
}

TEST_CASE("reduce_sum: axes and keepdims") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 3});
    auto rows = g.add1(op_kind::reduce_sum, {x}, {{attr_id::axes, ints{1}}, {attr_id::keepdims, std::int64_t{0}}});
    auto all = g.add1(op_kind::reduce_sum, {x});
    auto cols = g.add1(op_kind::reduce_sum, {x}, {{attr_id::axes, ints{0}}});
    const feeds f{{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}};
    check_value(eval(g, rows, f), {2}, {6, 15});
    check_value(eval(g, all, f), {1, 1}, {21});
    check_value(eval(g, cols, f), {1, 3}, {5, 7, 9});
}

TEST_CASE("reduce_mean: over non-adjacent axes") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 2, 2});
    auto m = g.add1(op_kind::reduce_mean, {x}, {{attr_id::axes, ints{0, -1}}, {attr_id::keepdims, std::int64_t{0}}});
    auto a = g.add1(op_kind::reduce_mean, {x}, {{attr_id::keepdims, std::int64_t{0}}});
    const feeds f{{"x", tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}};
    // axis 1 = 0: 1, 2, 5, 6; axis 1 = 1: 3, 4, 7, 8
    check_value(eval(g, m, f), {2}, {3.5, 5.5});
    check_value(eval(g, a, f), {}, {4.5});
}

TEST_CASE("reduce_max: negative values, not zero-initialized") {
    graph::computation_graph g;
    auto x = g.input("x", {2, 2});
    auto r = g.add1(op_kind::reduce_max, {x}, {{attr_id::axes, ints{1}}, {attr_id::keepdims, std::int64_t{0}}});
    auto a = g.add1(op_kind::reduce_max, {x});
    const feeds f{{"x", tensor({2, 2}, {-1, -5, -3, -2})}};
    check_value(eval(g, r, f), {2}, {-1, -2});
    check_value(eval(g, a, f), {1, 1}, {-1});
}

// ---- recurrent cells

TEST_CASE("lstm_cell: H = 1, gates i, f, g, o") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 1});
    auto h = g.input("h", {1, 1});
    auto c = g.input("c", {1, 1});
    auto w = g.weight("w", {1, 4});
    auto u = g.weight("u", {1, 4});
    auto b = g.weight("b", {4});
    auto outs = g.add(op_kind::lstm_cell, {x, h, c, w, u, b});
    const std::vector<graph::tensor_id> hc(outs.begin(), outs.end());
    REQUIRE(hc.size() == 2);
    // gates = 1*w + 0.5*u + b = i 0, f 1, g 1, o 0.5
    // c' = sigmoid(1)*2 + sigmoid(0)*tanh(1); h' = sigmoid(0.5)*tanh(c')
    const feeds f{{"x", tensor({1, 1}, {1})},           {"h", tensor({1, 1}, {0.5})},
                  {"c", tensor({1, 1}, {2})},           {"w", tensor({1, 4}, {1, 2, 0.5, -1})},
                  {"u", tensor({1, 4}, {2, -2, 1, 2})}, {"b", tensor({4}, {-2, 0, 0, 0.5})}};
    check_value(eval(g, hc[0], f), {1, 1}, {0.592004949952377});
    check_value(eval(g, hc[1], f), {1, 1}, {1.8429142352378922});
}

TEST_CASE("gru_cell: H = 1, gates r, z, n; r scales h*u inside n") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 1});
    auto h = g.input("h", {1, 1});
    auto w = g.weight("w", {1, 3});
    auto u = g.weight("u", {1, 3});
    auto b = g.weight("b", {3});
    auto y = g.add1(op_kind::gru_cell, {x, h, w, u, b});
    // r = sigmoid(1 + 1 - 2) = 0.5; z = sigmoid(0 + 1 - 1) = 0.5; n = tanh(2 + 0.5*0.5 + 0)
    // h' = 0.5 * tanh(2.25) + 0.5 * 0.5
    const feeds f{{"x", tensor({1, 1}, {1})},
                  {"h", tensor({1, 1}, {0.5})},
                  {"w", tensor({1, 3}, {1, 0, 2})},
                  {"u", tensor({1, 3}, {2, 2, 1})},
                  {"b", tensor({3}, {-2, -1, 0})}};
    check_value(eval(g, y, f), {1, 1}, {0.7390130573694068});
}

TEST_CASE("evaluate_op refuses input values whose shapes are not the graph's") {
    graph::computation_graph g;
    auto x = g.input("x", {2});
    auto r = g.add1(op_kind::relu, {x}, {}, "act");
    const xt::xarray<double> wrong = tensor({3}, {1, 2, 3});
    const std::vector<const xt::xarray<double>*> args{&wrong};
    CHECK_THROWS_WITH_AS(interp::evaluate_op<double>(g, g.producer(r), args),
                         doctest::Contains("'act' (relu): input 0 has shape [3]: expected [2]"), error);
    const std::vector<const xt::xarray<double>*> none;
    CHECK_THROWS_AS(interp::evaluate_op<double>(g, g.producer(x), none), error);
}

}  // namespace kernels_test
