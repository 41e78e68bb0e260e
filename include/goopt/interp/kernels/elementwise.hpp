#pragma once
/// @file
/// @brief Elementwise reference kernels: the constant sources, numpy-broadcasting binary ops, unary
/// functions, add_n, pointwise derivatives (y or x, dy) -> dy * f'(.) and the optimizer updates.

#include <goopt/interp/kernels/common.hpp>
#include <goopt/ops/attributes.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <numbers>
#include <vector>

namespace goopt::interp::detail {

// ---- sources

template <std::floating_point T> value<T> const_pool(const kernel_args<T>& a) {
    const auto& d = a.out_dims();
    return filled(d, T(1) / static_cast<T>(d[2] * d[3]));
}

template <std::floating_point T> value<T> const_iconv(const kernel_args<T>& a) {
    const auto& d = a.out_dims();
    value<T> r = filled(d, T(0));
    const index C = d[0], kh = d[2], kw = d[3];
    for (index c = 0; c < C; ++c) r.data()[((c * C + c) * kh + kh / 2) * kw + kw / 2] = T(1);
    return r;
}

template <std::floating_point T> value<T> const_imm(const kernel_args<T>& a) {
    const auto& d = a.out_dims();
    value<T> r = filled(d, T(0));
    for (index i = 0; i < d[0]; ++i) r.data()[i * d[0] + i] = T(1);
    return r;
}

/// Elementwise f(x, y) with numpy broadcasting of both inputs to the output shape.
template <std::floating_point T, class F> value<T> binary(const kernel_args<T>& a, F f) {
    const auto& od = a.out_dims();
    value<T> r = filled(od, T(0));
    const T* x = a.data(0);
    const T* y = a.data(1);
    T* z = r.data();
    const auto n = static_cast<std::size_t>(od.num_elements());
    if (a.in_dims(0) == od && a.in_dims(1) == od) {
        for (std::size_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
        return r;
    }
    const auto xo = broadcast_offsets(od, a.in_dims(0));
    const auto yo = broadcast_offsets(od, a.in_dims(1));
    for (std::size_t i = 0; i < n; ++i) z[i] = f(x[xo[i]], y[yo[i]]);
    return r;
}

template <std::floating_point T, class F> value<T> unary(const kernel_args<T>& a, F f) {
    value<T> r = filled(a.out_dims(), T(0));
    const T* x = a.data(0);
    T* z = r.data();
    const std::size_t n = r.size();
    for (std::size_t i = 0; i < n; ++i) z[i] = f(x[i]);
    return r;
}

// ---- gradients and optimizer updates (training graphs)
// Each kernel is the exact derivative of its forward kernel above (same window geometry, same
// tie-breaking), so that finite differences of the forward ops check the backward pass.

template <std::floating_point T> value<T> add_n(const kernel_args<T>& a) {
    value<T> r = filled(a.out_dims(), T(0));
    T* z = r.data();
    for (std::size_t i = 0; i < a.in.size(); ++i) {
        const T* x = a.data(i);
        for (std::size_t k = 0; k < r.size(); ++k) z[k] += x[k];
    }
    return r;
}

/// (y or x, dy) -> dy * f(y or x), elementwise.
template <std::floating_point T, class F> value<T> pointwise_grad(const kernel_args<T>& a, F f) {
    value<T> r = filled(a.out_dims(), T(0));
    const T* y = a.data(0);
    const T* dy = a.data(1);
    T* z = r.data();
    for (std::size_t i = 0; i < r.size(); ++i) z[i] = dy[i] * f(y[i]);
    return r;
}

/// d/dx of x * Phi(x): Phi(x) + x * phi(x).
template <std::floating_point T> T gelu_derivative(T x) {
    const T cdf = T(0.5) * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>));
    const T pdf = std::exp(T(-0.5) * x * x) * std::numbers::inv_sqrtpi_v<T> / std::numbers::sqrt2_v<T>;
    return cdf + x * pdf;
}

template <std::floating_point T> value<T> sgd_update(const kernel_args<T>& a) {
    const T lr = *a.data(2);
    value<T> r = filled(a.out_dims(), T(0));
    const T *w = a.data(0), *g = a.data(1);
    for (std::size_t i = 0; i < r.size(); ++i) r.data()[i] = w[i] - lr * g[i];
    return r;
}

template <std::floating_point T> std::vector<value<T>> adam_update(const kernel_args<T>& a) {
    const T lr = *a.data(4), b1 = *a.data(5), b2 = *a.data(6);
    const auto eps = static_cast<T>(a.attrs().get_real(ops::attr_id::epsilon));
    std::vector<value<T>> out;
    for (std::size_t k = 0; k < 3; ++k) out.push_back(filled(a.out_dims(k), T(0)));
    const T *w = a.data(0), *g = a.data(1), *m = a.data(2), *v = a.data(3);
    for (std::size_t i = 0; i < out[0].size(); ++i) {
        const T mn = b1 * m[i] + (T(1) - b1) * g[i];
        const T vn = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
        out[0].data()[i] = w[i] - lr * mn / (std::sqrt(vn) + eps);
        out[1].data()[i] = mn;
        out[2].data()[i] = vn;
    }
    return out;
}

// ---- one kernel per elementwise kind, as the kernel table names them

/// input and weight: their values are fed (interp::evaluate), never computed.
template <std::floating_point T> value<T> fed_source(const kernel_args<T>& a) {
    a.fail("the value of a source op is fed, not computed", "evaluation of the graph with interp::evaluate");
}
/// An opaque op (an imported operator goopt has no kind for): its semantics are unknown here.
template <std::floating_point T> std::vector<value<T>> opaque(const kernel_args<T>& a) {
    a.fail("an opaque op (an imported operator goopt has no kind for) cannot be evaluated",
           "a graph without opaque ops (onnxruntime runs the exported model instead)");
}
template <std::floating_point T> value<T> const_one(const kernel_args<T>& a) { return filled(a.out_dims(), T(1)); }
template <std::floating_point T> value<T> const_fill(const kernel_args<T>& a) {
    return filled(a.out_dims(), static_cast<T>(a.attrs().get_real(ops::attr_id::value)));
}

template <std::floating_point T> value<T> ewadd(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return x + y; });
}
template <std::floating_point T> value<T> ewmul(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return x * y; });
}
template <std::floating_point T> value<T> sub(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return x - y; });
}
template <std::floating_point T> value<T> div(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return x / y; });
}
template <std::floating_point T> value<T> pow(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return std::pow(x, y); });
}
template <std::floating_point T> value<T> smul(const kernel_args<T>& a) {
    const T s = *a.data(1);
    return unary(a, [s](T x) { return x * s; });
}
template <std::floating_point T> value<T> relu(const kernel_args<T>& a) {
    return unary(a, [](T x) { return relu_of(x); });
}
template <std::floating_point T> value<T> sqrt(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::sqrt(x); });
}
template <std::floating_point T> value<T> sigmoid(const kernel_args<T>& a) {
    return unary(a, [](T x) { return sigmoid_of(x); });
}
template <std::floating_point T> value<T> tanh(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::tanh(x); });
}
template <std::floating_point T> value<T> gelu(const kernel_args<T>& a) {
    return unary(a, [](T x) { return x * T(0.5) * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>)); });
}
template <std::floating_point T> value<T> erf(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::erf(x); });
}
template <std::floating_point T> value<T> log(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::log(x); });
}
template <std::floating_point T> value<T> clip(const kernel_args<T>& a) {
    const auto lo = static_cast<T>(a.attrs().get_real(ops::attr_id::min));
    const auto hi = static_cast<T>(a.attrs().get_real(ops::attr_id::max));
    return unary(a, [lo, hi](T x) { return std::min(std::max(x, lo), hi); });
}

template <std::floating_point T> value<T> leaky_relu(const kernel_args<T>& a) {
    const auto alpha = static_cast<T>(a.attrs().get_real(ops::attr_id::alpha));
    return unary(a, [alpha](T x) { return x >= T(0) ? x : alpha * x; });
}
template <std::floating_point T> value<T> hard_sigmoid(const kernel_args<T>& a) {
    const auto alpha = static_cast<T>(a.attrs().get_real(ops::attr_id::alpha));
    const auto beta = static_cast<T>(a.attrs().get_real(ops::attr_id::beta));
    return unary(a, [alpha, beta](T x) { return std::min(std::max(alpha * x + beta, T(0)), T(1)); });
}
template <std::floating_point T> value<T> hard_swish(const kernel_args<T>& a) {
    return unary(a, [](T x) { return x * std::min(std::max(x / T(6) + T(0.5), T(0)), T(1)); });
}
template <std::floating_point T> value<T> exp(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::exp(x); });
}

template <std::floating_point T> value<T> prelu(const kernel_args<T>& a) {
    return binary(a, [](T x, T slope) { return x >= T(0) ? x : slope * x; });
}
/// log(1 + e^x) as max(x, 0) + log1p(e^-|x|): e^x overflows for x above 88 in float.
template <std::floating_point T> value<T> softplus(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x))); });
}
template <std::floating_point T> value<T> elu(const kernel_args<T>& a) {
    const auto alpha = static_cast<T>(a.attrs().get_real(ops::attr_id::alpha));
    return unary(a, [alpha](T x) { return x > T(0) ? x : alpha * std::expm1(x); });
}
template <std::floating_point T> value<T> abs(const kernel_args<T>& a) {
    return unary(a, [](T x) { return std::abs(x); });
}
template <std::floating_point T> value<T> softsign(const kernel_args<T>& a) {
    return unary(a, [](T x) { return x / (T(1) + std::abs(x)); });
}
/// NaN in either operand gives NaN, as onnxruntime's Max and Min do.
template <std::floating_point T> value<T> max(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return std::isnan(x) || std::isnan(y) ? x + y : std::max(x, y); });
}
template <std::floating_point T> value<T> min(const kernel_args<T>& a) {
    return binary(a, [](T x, T y) { return std::isnan(x) || std::isnan(y) ? x + y : std::min(x, y); });
}

template <std::floating_point T> value<T> relu_grad(const kernel_args<T>& a) {
    return pointwise_grad(a, [](T y) { return y > T(0) ? T(1) : T(0); });
}
template <std::floating_point T> value<T> sigmoid_grad(const kernel_args<T>& a) {
    return pointwise_grad(a, [](T y) { return y * (T(1) - y); });
}
template <std::floating_point T> value<T> tanh_grad(const kernel_args<T>& a) {
    return pointwise_grad(a, [](T y) { return T(1) - y * y; });
}
template <std::floating_point T> value<T> gelu_grad(const kernel_args<T>& a) {
    return pointwise_grad(a, [](T x) { return gelu_derivative(x); });
}
/// d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2).
template <std::floating_point T> value<T> erf_grad(const kernel_args<T>& a) {
    return pointwise_grad(a, [](T x) { return T(2) * std::numbers::inv_sqrtpi_v<T> * std::exp(-x * x); });
}

}  // namespace goopt::interp::detail
