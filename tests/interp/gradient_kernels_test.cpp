// Kernels of the gradient and update op kinds against numbers worked out by hand; the training
// transform's test checks them all together against finite differences.
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

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace gradient_kernels_test {

constexpr std::int64_t valid = 1;

/// A graph whose inputs are fed the given values; `check` evaluates one tensor of it.
struct bench {
    graph::computation_graph g;
    interp::feed_map<double> feeds;

    graph::tensor_id in(const ops::shape& s, const std::vector<double>& data, ops::dtype t = ops::dtype::f32) {
        const std::string name = "in" + std::to_string(feeds.size());
        std::vector<std::size_t> dims(s.begin(), s.end());
        xt::xarray<double> v = xt::xarray<double>::from_shape(dims);
        REQUIRE(v.size() == data.size());
        std::copy(data.begin(), data.end(), v.data());
        feeds.emplace(name, std::move(v));
        return g.input(name, s, t);
    }

    void check(graph::tensor_id t, const std::vector<double>& expected) {
        const auto values = interp::evaluate<double>(g, feeds);
        const auto& v = values[t];
        REQUIRE(v.size() == expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
            CAPTURE(i);
            CHECK(v.data()[i] == doctest::Approx(expected[i]));
        }
    }
};

const std::vector<double> image3{1, 2, 3, 4, 5, 6, 7, 8, 9};

TEST_CASE("add_n and the pointwise gradients") {
    bench b;
    auto x = b.in({2}, {1, 2}), y = b.in({2}, {3, 4}), z = b.in({2}, {5, 6});
    b.check(b.g.add1(op_kind::add_n, {x, y, z}), {9, 12});
    auto out = b.in({3}, {0, 2, 0.5}), dy = b.in({3}, {5, 6, 2});
    b.check(b.g.add1(op_kind::relu_grad, {out, dy}), {0, 6, 2});
    // y (1 - y) = 0.25 at y = 0.5; 1 - y^2 = 0.75; 0 and 2 give 0 and -2
    b.check(b.g.add1(op_kind::sigmoid_grad, {out, dy}), {0, 6 * 2 * -1, 2 * 0.25});
    b.check(b.g.add1(op_kind::tanh_grad, {out, dy}), {5, 6 * -3, 2 * 0.75});
    // d/dx x Phi(x) at 0 is Phi(0) = 1/2
    auto zero = b.in({1}, {0}), one = b.in({1}, {4});
    b.check(b.g.add1(op_kind::gelu_grad, {zero, one}), {2});
    b.check(b.g.add1(op_kind::const_fill, {}, {{attr_id::shape, ints{2}}, {attr_id::value, -1.5}}), {-1.5, -1.5});
}

TEST_CASE("conv2d gradients on the 3x3 image with the kernel [[1,2],[3,4]], VALID") {
    bench b;
    auto x = b.in({1, 1, 3, 3}, image3);
    auto w = b.in({1, 1, 2, 2}, {1, 2, 3, 4});
    auto dy = b.in({1, 1, 2, 2}, {1, 1, 1, 1});
    // dx: every cell gets the kernel taps whose windows cover it
    b.check(
        b.g.add1(op_kind::conv2d_grad_input, {dy, w}, {{attr_id::padding, valid}, {attr_id::shape, ints{1, 1, 3, 3}}}),
        {1, 3, 2, 4, 10, 6, 3, 7, 4});
    // dw: tap (i, j) sums the image over the window shifted by (i, j)
    b.check(
        b.g.add1(op_kind::conv2d_grad_weight, {x, dy}, {{attr_id::padding, valid}, {attr_id::shape, ints{1, 1, 2, 2}}}),
        {12, 16, 24, 28});
}

TEST_CASE("pooling gradients: the average spreads, the max routes to the maximum") {
    bench b;
    auto x = b.in({1, 1, 3, 3}, image3);
    auto dy = b.in({1, 1, 2, 2}, {4, 8, 12, 16});
    const ops::attribute_map window{{attr_id::kernel, ints{2, 2}}, {attr_id::padding, valid}};
    auto avg = window;
    avg.set(attr_id::shape, ints{1, 1, 3, 3});
    // shares 1, 2, 3, 4 of the four 2x2 windows
    b.check(b.g.add1(op_kind::avgpool2d_grad, {dy}, avg), {1, 3, 2, 4, 10, 6, 3, 7, 4});
    // the maxima 5, 6, 8, 9 sit at the bottom-right of each window
    b.check(b.g.add1(op_kind::maxpool2d_grad, {x, dy}, window), {0, 0, 0, 0, 4, 8, 0, 12, 16});
}

TEST_CASE("gather_grad adds rows picked twice; softmax_grad") {
    bench b;
    auto idx = b.in({3}, {2, 0, 2}, ops::dtype::i64);
    auto dy = b.in({3, 2}, {1, 2, 3, 4, 5, 6});
    b.check(b.g.add1(op_kind::gather_grad, {idx, dy}, {{attr_id::shape, ints{3, 2}}}), {3, 4, 0, 0, 6, 8});
    auto y = b.in({2}, {0.5, 0.5}), g = b.in({2}, {1, 0});
    // y * (dy - <y, dy>) with <y, dy> = 0.5
    b.check(b.g.add1(op_kind::softmax_grad, {y, g}), {0.25, -0.25});
}

TEST_CASE("layernorm_grad and batchnorm_grad on two elements") {
    bench b;
    // x = [1, 3]: mean 2, var 1, xhat = [-1, 1]; with eps 0, rstd = 1
    auto x = b.in({1, 2}, {1, 3}), gamma = b.in({2}, {2, 2}), dy = b.in({1, 2}, {1, 0});
    auto ln = b.g.add(op_kind::layernorm_grad, {x, gamma, dy}, {{attr_id::epsilon, 0.0}});
    // dxhat = [2, 0], mean 1, mean(dxhat * xhat) = -1: dx = [2 - 1 - 1, 0 - 1 + 1] = [0, 0]
    b.check(ln[0], {0, 0});
    b.check(ln[1], {-1, 0});
    b.check(ln[2], {1, 0});
    // batchnorm with one channel: x = [1, 3], scale 2, mean 1, var 4, eps 0: den 2
    auto bx = b.in({2, 1}, {1, 3}), s = b.in({1}, {2}), m = b.in({1}, {1}), v = b.in({1}, {4});
    auto bdy = b.in({2, 1}, {1, 1});
    auto bn = b.g.add(op_kind::batchnorm_grad, {bx, s, m, v, bdy}, {{attr_id::epsilon, 0.0}});
    b.check(bn[0], {1, 1});              // dy * scale / den
    b.check(bn[1], {(0.0 + 2.0) / 2});   // sum dy (x - mean) / den
    b.check(bn[2], {2});                 // sum dy
    b.check(bn[3], {-2});                // -sum dy scale / den
    b.check(bn[4], {-0.5 * 2 * 2 / 8});  // -1/2 sum dy (x - mean) scale / den^3
}

TEST_CASE("erf_grad, reduce_max_grad (ties to the first maximum) and log") {
    bench b;
    auto x = b.in({3}, {0, 1, -2}), dy = b.in({3}, {1, 2, 3});
    // 2 / sqrt(pi) exp(-x^2)
    const double c = 2 / std::sqrt(3.14159265358979323846);
    b.check(b.g.add1(op_kind::erf_grad, {x, dy}), {c, 2 * c * std::exp(-1.0), 3 * c * std::exp(-4.0)});
    b.check(b.g.add1(op_kind::log, {b.in({2}, {1, std::exp(2.0)})}), {0, 2});
    // rows [1 5 5], [7 2 7]: maxima at columns 1 and 0 (the first of the ties)
    auto m = b.in({2, 3}, {1, 5, 5, 7, 2, 7}), dm = b.in({2}, {10, 20});
    b.check(
        b.g.add1(op_kind::reduce_max_grad, {m, dm}, {{attr_id::axes, ints{1}}, {attr_id::keepdims, std::int64_t(0)}}),
        {0, 10, 0, 20, 0, 0});
    // all axes, kept: one maximum of the whole tensor
    auto dall = b.in({1, 1}, {4});
    b.check(b.g.add1(op_kind::reduce_max_grad, {m, dall}), {0, 0, 0, 4, 0, 0});
}

}  // namespace gradient_kernels_test
