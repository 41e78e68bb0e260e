#pragma once
/// @file
/// @brief Normalization, softmax and reduction reference kernels and their gradients.

#include <goopt/interp/kernels/common.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace goopt::interp::detail {

// ---- normalization and reductions

/// Inputs in ONNX BatchNormalization order: x, scale, bias, mean, var.
template <std::floating_point T> value<T> batchnorm(const kernel_args<T>& a) {
    const axis_split x = around(a.in_dims(0), 1);
    const auto eps = static_cast<T>(a.attrs().get_real(ops::attr_id::epsilon));
    const T *scale = a.data(1), *bias = a.data(2), *mean = a.data(3), *var = a.data(4);
    value<T> r = filled(a.out_dims(), T(0));
    for (index p = 0; p < x.outer; ++p)
        for (index c = 0; c < x.extent; ++c) {
            const T den = std::sqrt(var[c] + eps);
            const index at = (p * x.extent + c) * x.inner;
            for (index i = at; i < at + x.inner; ++i) r.data()[i] = (a.data(0)[i] - mean[c]) / den * scale[c] + bias[c];
        }
    return r;
}

template <std::floating_point T> value<T> softmax(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const axis_split x = around(xd, xd.axis(a.attrs().get_int(ops::attr_id::axis)));
    value<T> r = filled(a.out_dims(), T(0));
    x.for_each_line([&](index at) {
        const T* xp = a.data(0) + at;
        T* z = r.data() + at;
        T top = -std::numeric_limits<T>::infinity();
        for (index i = 0; i < x.extent; ++i) top = std::max(top, xp[i * x.inner]);
        T sum = 0;
        for (index i = 0; i < x.extent; ++i) sum += z[i * x.inner] = std::exp(xp[i * x.inner] - top);
        for (index i = 0; i < x.extent; ++i) z[i * x.inner] /= sum;
    });
    return r;
}

/// Each of `runs` consecutive runs of `inner` values of x normalized by its own mean and biased
/// variance, then `affine(run, i, normalized)`: layernorm and instance_norm differ only in that.
template <std::floating_point T, class Affine>
value<T> normalize_runs(const kernel_args<T>& a, index runs, index inner, Affine affine) {
    const auto eps = static_cast<T>(a.attrs().get_real(ops::attr_id::epsilon));
    value<T> r = filled(a.out_dims(), T(0));
    for (index p = 0; p < runs; ++p) {
        const T* xp = a.data(0) + p * inner;
        T* z = r.data() + p * inner;
        T mean = 0, var = 0;
        for (index i = 0; i < inner; ++i) mean += xp[i];
        mean /= static_cast<T>(inner);
        for (index i = 0; i < inner; ++i) var += (xp[i] - mean) * (xp[i] - mean);
        var /= static_cast<T>(inner);
        const T den = std::sqrt(var + eps);
        for (index i = 0; i < inner; ++i) z[i] = affine(p, i, (xp[i] - mean) / den);
    }
    return r;
}

template <std::floating_point T> value<T> layernorm(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const T *gamma = a.data(1), *beta = a.data(2);
    return normalize_runs(a, prod(xd, 0, ax), prod(xd, ax, xd.rank()),
                          [&](index, index i, T v) { return v * gamma[i] + beta[i]; });
}

/// x [N, C, ...]: each (sample, channel) normalized over the other axes, then * scale[c] + bias[c].
template <std::floating_point T> value<T> instance_norm(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const index channels = xd[1];
    const T *scale = a.data(1), *bias = a.data(2);
    return normalize_runs(a, prod(xd, 0, 2), prod(xd, 2, xd.rank()),
                          [&](index p, index, T v) { return v * scale[p % channels] + bias[p % channels]; });
}

/// LRN's window of channels around c, as ONNX defines it: [c - floor((size - 1) / 2),
/// c + ceil((size - 1) / 2)], cut to [0, C).
struct lrn_window {
    index before, after;
    explicit lrn_window(std::int64_t size) : before((size - 1) / 2), after(size / 2) {}
};

/// s = bias + alpha / size * (sum of x^2 over each element's window of channels), per element of x.
template <std::floating_point T> std::vector<T> lrn_denominator_base(const kernel_args<T>& a) {
    const axis_split x = around(a.in_dims(0), 1);
    const auto& at = a.attrs();
    const std::int64_t size = at.get_int(ops::attr_id::size);
    const lrn_window w(size);
    const auto scale = static_cast<T>(at.get_real(ops::attr_id::alpha) / static_cast<double>(size));
    const auto bias = static_cast<T>(at.get_real(ops::attr_id::bias));
    const T* xp = a.data(0);
    std::vector<T> s(static_cast<std::size_t>(x.outer * x.extent * x.inner));
    x.for_each_line([&](index start) {
        for (index c = 0; c < x.extent; ++c) {
            T sum = 0;
            for (index k = std::max<index>(0, c - w.before); k <= std::min<index>(x.extent - 1, c + w.after); ++k)
                sum += xp[start + k * x.inner] * xp[start + k * x.inner];
            s[static_cast<std::size_t>(start + c * x.inner)] = bias + scale * sum;
        }
    });
    return s;
}

/// y = x / s^beta (ONNX LRN across channels).
template <std::floating_point T> value<T> lrn(const kernel_args<T>& a) {
    const auto beta = static_cast<T>(a.attrs().get_real(ops::attr_id::beta));
    const std::vector<T> s = lrn_denominator_base(a);
    value<T> r = filled(a.out_dims(), T(0));
    for (std::size_t i = 0; i < s.size(); ++i) r.data()[i] = a.data(0)[i] * std::pow(s[i], -beta);
    return r;
}

/// (x, dy) -> dx of lrn: dx_j = dy_j s_j^-beta - 2 alpha beta / size x_j (sum over the outputs i whose
/// window holds channel j of dy_i x_i s_i^(-beta - 1)); those i are [j - after, j + before].
template <std::floating_point T> value<T> lrn_grad(const kernel_args<T>& a) {
    const axis_split x = around(a.in_dims(0), 1);
    const auto& at = a.attrs();
    const std::int64_t size = at.get_int(ops::attr_id::size);
    const lrn_window w(size);
    const auto beta = static_cast<T>(at.get_real(ops::attr_id::beta));
    const auto coef = static_cast<T>(2 * at.get_real(ops::attr_id::alpha) * at.get_real(ops::attr_id::beta) /
                                     static_cast<double>(size));
    const std::vector<T> s = lrn_denominator_base(a);
    const T *xp = a.data(0), *dy = a.data(1);
    std::vector<T> q(s.size());  // dy_i x_i s_i^(-beta - 1)
    for (std::size_t i = 0; i < s.size(); ++i) q[i] = dy[i] * xp[i] * std::pow(s[i], -beta - T(1));
    value<T> r = filled(a.out_dims(), T(0));
    x.for_each_line([&](index start) {
        for (index j = 0; j < x.extent; ++j) {
            T sum = 0;
            for (index i = std::max<index>(0, j - w.after); i <= std::min<index>(x.extent - 1, j + w.before); ++i)
                sum += q[static_cast<std::size_t>(start + i * x.inner)];
            const auto e = static_cast<std::size_t>(start + j * x.inner);
            r.data()[e] = dy[e] * std::pow(s[e], -beta) - coef * xp[e] * sum;
        }
    });
    return r;
}

enum class reduction { sum, mean, max };

/// Strides that map an element of x (shape xd) to the element of its reduction over `axes` (empty:
/// all), 0 on the reduced axes, and the number of elements folded into each output element.
inline std::pair<strides_t, index> reduction_strides(const ops::shape& xd, const ops::attribute_map& attrs) {
    const auto& axes = attrs.get_ints(ops::attr_id::axes);
    std::array<bool, ops::max_rank> reduced{};
    for (std::size_t i = 0; i < xd.rank(); ++i) reduced[i] = axes.empty();
    for (auto ax : axes) reduced[xd.axis(ax)] = true;
    strides_t st{};
    index acc = 1, count = 1;
    for (std::size_t i = xd.rank(); i-- > 0;) {
        if (reduced[i]) {
            count *= xd[i];
            continue;
        }
        st[i] = acc;
        acc *= xd[i];
    }
    return {st, count};
}

/// Reduction over `axes` (empty: all). Each input element is folded into the output element whose
/// index is its own with the reduced axes dropped, found through strides that are 0 on those axes.
template <std::floating_point T> value<T> reduce(const kernel_args<T>& a, reduction how) {
    const auto& xd = a.in_dims(0);
    const auto [st, count] = reduction_strides(xd, a.attrs());
    value<T> r = filled(a.out_dims(), how == reduction::max ? -std::numeric_limits<T>::infinity() : T(0));
    const T* x = a.data(0);
    T* z = r.data();
    if (how == reduction::max) for_each_offset(xd, st, 0, [&](index off) { z[off] = nan_max(z[off], *x++); });
    else for_each_offset(xd, st, 0, [&](index off) { z[off] += *x++; });
    if (how == reduction::mean)
        for (T& v : r.storage()) v /= static_cast<T>(count);
    return r;
}

template <std::floating_point T> value<T> reduce_sum(const kernel_args<T>& a) { return reduce(a, reduction::sum); }
template <std::floating_point T> value<T> reduce_mean(const kernel_args<T>& a) { return reduce(a, reduction::mean); }
template <std::floating_point T> value<T> reduce_max(const kernel_args<T>& a) { return reduce(a, reduction::max); }

/// (x, dy) -> dx of reduce_max: each output's gradient to the first element (row-major) that
/// attains its maximum, as maxpool2d_grad routes a window's; NaN counts as the maximum it is.
template <std::floating_point T> value<T> reduce_max_grad(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const auto [st, count] = reduction_strides(xd, a.attrs());
    (void)count;
    const auto n_out = static_cast<std::size_t>(a.in_dims(1).num_elements());
    std::vector<T> best(n_out, -std::numeric_limits<T>::infinity());
    const T* x = a.data(0);
    for_each_offset(xd, st, 0, [&](index off) { best[off] = nan_max(best[off], *x++); });
    std::vector<char> routed(n_out, 0);
    value<T> r = filled(xd, T(0));
    const T* dy = a.data(1);
    T* z = r.data();
    x = a.data(0);
    for_each_offset(xd, st, 0, [&](index off) {
        const T v = *x++;
        const bool is_max = v == best[off] || (std::isnan(v) && std::isnan(best[off]));
        if (is_max && !routed[off]) {
            *z = dy[off];
            routed[off] = 1;
        }
        ++z;
    });
    return r;
}

template <std::floating_point T> value<T> softmax_grad(const kernel_args<T>& a) {
    const auto& yd = a.in_dims(0);
    const axis_split x = around(yd, yd.axis(a.attrs().get_int(ops::attr_id::axis)));
    value<T> r = filled(a.out_dims(), T(0));
    x.for_each_line([&](index at) {
        const T* y = a.data(0) + at;
        const T* dy = a.data(1) + at;
        T dot = 0;
        for (index i = 0; i < x.extent; ++i) dot += y[i * x.inner] * dy[i * x.inner];
        for (index i = 0; i < x.extent; ++i) r.data()[at + i * x.inner] = y[i * x.inner] * (dy[i * x.inner] - dot);
    });
    return r;
}

/// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) with dxhat = dy * gamma.
template <std::floating_point T> std::vector<value<T>> layernorm_grad(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const index outer = prod(xd, 0, ax), inner = prod(xd, ax, xd.rank());
    const auto eps = static_cast<T>(a.attrs().get_real(ops::attr_id::epsilon));
    const T* gamma = a.data(1);
    std::vector<value<T>> out;
    out.push_back(filled(a.out_dims(0), T(0)));
    out.push_back(filled(a.out_dims(1), T(0)));
    out.push_back(filled(a.out_dims(2), T(0)));
    std::vector<T> xhat(static_cast<std::size_t>(inner)), dxhat(static_cast<std::size_t>(inner));
    for (index p = 0; p < outer; ++p) {
        const T* xp = a.data(0) + p * inner;
        const T* dy = a.data(2) + p * inner;
        T mean = 0, var = 0;
        for (index i = 0; i < inner; ++i) mean += xp[i];
        mean /= static_cast<T>(inner);
        for (index i = 0; i < inner; ++i) var += (xp[i] - mean) * (xp[i] - mean);
        var /= static_cast<T>(inner);
        const T rstd = T(1) / std::sqrt(var + eps);
        T m1 = 0, m2 = 0;
        for (index i = 0; i < inner; ++i) {
            const auto k = static_cast<std::size_t>(i);
            xhat[k] = (xp[i] - mean) * rstd;
            dxhat[k] = dy[i] * gamma[i];
            m1 += dxhat[k];
            m2 += dxhat[k] * xhat[k];
            out[1].data()[i] += dy[i] * xhat[k];
            out[2].data()[i] += dy[i];
        }
        m1 /= static_cast<T>(inner);
        m2 /= static_cast<T>(inner);
        for (index i = 0; i < inner; ++i) {
            const auto k = static_cast<std::size_t>(i);
            out[0].data()[p * inner + i] = rstd * (dxhat[k] - m1 - xhat[k] * m2);
        }
    }
    return out;
}

/// The exact derivatives of batchnorm's (x - mean) / sqrt(var + eps) * scale + bias in all five inputs.
template <std::floating_point T> std::vector<value<T>> batchnorm_grad(const kernel_args<T>& a) {
    const axis_split x = around(a.in_dims(0), 1);
    const auto eps = static_cast<T>(a.attrs().get_real(ops::attr_id::epsilon));
    const T *scale = a.data(1), *mean = a.data(2), *var = a.data(3), *dy = a.data(4);
    std::vector<value<T>> out;
    for (std::size_t k = 0; k < 5; ++k) out.push_back(filled(a.out_dims(k), T(0)));
    for (index p = 0; p < x.outer; ++p)
        for (index c = 0; c < x.extent; ++c) {
            const T den = std::sqrt(var[c] + eps);
            const index at = (p * x.extent + c) * x.inner;
            T sum_dy = 0, sum_dy_xc = 0;
            for (index i = at; i < at + x.inner; ++i) {
                out[0].data()[i] = dy[i] * scale[c] / den;
                sum_dy += dy[i];
                sum_dy_xc += dy[i] * (a.data(0)[i] - mean[c]);
            }
            out[1].data()[c] += sum_dy_xc / den;
            out[2].data()[c] += sum_dy;
            out[3].data()[c] -= sum_dy * scale[c] / den;
            out[4].data()[c] -= T(0.5) * sum_dy_xc * scale[c] / (den * den * den);
        }
    return out;
}

}  // namespace goopt::interp::detail
