#pragma once
/// @file
/// @brief Data-movement reference kernels: reshape, transpose, pad, slice, enlarge, concat, split,
/// gather and gather's gradient (a scatter-add).

#include <goopt/interp/kernels/common.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace goopt::interp::detail {

/// A copy of input 0's elements in row-major order under the output shape (reshape, flatten, identity).
template <std::floating_point T> value<T> same_elements(const kernel_args<T>& a) {
    value<T> r = filled(a.out_dims(), T(0));
    std::copy(a.data(0), a.data(0) + r.size(), r.data());
    return r;
}

template <std::floating_point T> value<T> transpose(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const auto& perm = a.attrs().get_ints(ops::attr_id::perm);
    const strides_t own = row_major_strides(xd);
    strides_t st{};
    for (std::size_t i = 0; i < xd.rank(); ++i)
        st[i] = own[perm.empty() ? xd.rank() - 1 - i : static_cast<std::size_t>(perm[i])];
    value<T> r = filled(a.out_dims(), T(0));
    const T* x = a.data(0);
    T* z = r.data();
    for_each_offset(a.out_dims(), st, 0, [&](index off) { *z++ = x[off]; });
    return r;
}

/// Writes input 0 into a `fill`-valued output box at offset `begin` per axis (pad and enlarge).
template <std::floating_point T> value<T> place(const kernel_args<T>& a, std::span<const index> begin, T fill) {
    const auto& od = a.out_dims();
    value<T> r = filled(od, fill);
    const strides_t st = row_major_strides(od);
    index base = 0;
    for (std::size_t i = 0; i < od.rank(); ++i) base += begin[i] * st[i];
    const T* x = a.data(0);
    T* z = r.data();
    for_each_offset(a.in_dims(0), st, base, [&](index off) { z[off] = *x++; });
    return r;
}

template <std::floating_point T> value<T> enlarge(const kernel_args<T>& a) {
    const auto& wd = a.in_dims(0);
    const auto& od = a.out_dims();
    const std::array<index, 4> begin{0, 0, (od[2] - wd[2]) / 2, (od[3] - wd[3]) / 2};
    return place(a, begin, T(0));
}

template <std::floating_point T> value<T> pad(const kernel_args<T>& a) {
    const auto& pads = a.attrs().get_ints(ops::attr_id::pads);
    return place(a, std::span<const index>(pads.data(), a.in_dims(0).rank()),
                 static_cast<T>(a.attrs().get_real(ops::attr_id::value)));
}

template <std::floating_point T> value<T> slice(const kernel_args<T>& a) {
    const auto& begin = a.attrs().get_ints(ops::attr_id::begin);
    const auto& xd = a.in_dims(0);
    const strides_t st = row_major_strides(xd);
    index base = 0;
    for (std::size_t i = 0; i < xd.rank(); ++i) base += begin[i] * st[i];
    value<T> r = filled(a.out_dims(), T(0));
    const T* x = a.data(0);
    T* z = r.data();
    for_each_offset(a.out_dims(), st, base, [&](index off) { *z++ = x[off]; });
    return r;
}

template <std::floating_point T> value<T> concat(const kernel_args<T>& a) {
    const auto& od = a.out_dims();
    const std::size_t ax = od.axis(a.attrs().get_int(ops::attr_id::axis));
    const axis_split o = around(od, ax);
    value<T> r = filled(od, T(0));
    index at = 0;  // start of this input's block inside each outer row of the output
    for (std::size_t i = 0; i < a.in.size(); ++i) {
        const index block = a.in_dims(i)[ax] * o.inner;
        for (index p = 0; p < o.outer; ++p)
            std::copy(a.data(i) + p * block, a.data(i) + (p + 1) * block, r.data() + p * o.extent * o.inner + at);
        at += block;
    }
    return r;
}

template <std::floating_point T> std::vector<value<T>> split(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const axis_split x = around(xd, ax);
    std::vector<value<T>> out;
    index at = 0;
    for (std::size_t k = 0; k < a.op.outputs.size(); ++k) {
        const auto& od = a.out_dims(k);
        const index block = od[ax] * x.inner;
        value<T> r = filled(od, T(0));
        for (index p = 0; p < x.outer; ++p)
            std::copy(a.data(0) + p * x.extent * x.inner + at, a.data(0) + p * x.extent * x.inner + at + block,
                      r.data() + p * block);
        at += block;
        out.push_back(std::move(r));
    }
    return out;
}

template <std::floating_point T> std::string number_string(T v) {
    if (std::isfinite(v) && v == std::trunc(v) && std::abs(v) < T(1e15)) return std::to_string(static_cast<index>(v));
    return std::to_string(static_cast<double>(v));
}

/// The index values of input `slot`, negative ones counted from the end as in ONNX Gather, checked
/// to be integers in [-n, n) for axis `ax` of extent n of `xd`.
template <std::floating_point T>
std::vector<index> gather_indices(const kernel_args<T>& a, std::size_t slot, const ops::shape& xd, std::size_t ax) {
    const index n = xd[ax];
    const auto ni = static_cast<std::size_t>(a.in_dims(slot).num_elements());
    std::vector<index> idx(ni);
    for (std::size_t j = 0; j < ni; ++j) {
        const T v = a.data(slot)[j];
        if (!(v == std::trunc(v) && v >= static_cast<T>(-n) && v < static_cast<T>(n)))
            a.fail(goopt::concat("index ", number_string(v), " at position ", j, " for axis ", ax, " of data ",
                                 xd.to_string()),
                   goopt::concat("an integer in [", -n, ", ", n, ")"));
        idx[j] = static_cast<index>(v) < 0 ? static_cast<index>(v) + n : static_cast<index>(v);
    }
    return idx;
}

/// Gather along `axis`.
template <std::floating_point T> value<T> gather(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const axis_split x = around(xd, ax);
    const std::vector<index> idx = gather_indices(a, 1, xd, ax);
    value<T> r = filled(a.out_dims(), T(0));
    T* z = r.data();
    for (index p = 0; p < x.outer; ++p)
        for (index j : idx) {
            const T* src = a.data(0) + (p * x.extent + j) * x.inner;
            z = std::copy(src, src + x.inner, z);
        }
    return r;
}

/// Scatter-add of dy into the gathered data's shape; indices as gather reads them.
template <std::floating_point T> value<T> gather_grad(const kernel_args<T>& a) {
    const auto& xd = a.out_dims();
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const axis_split x = around(xd, ax);
    const std::vector<index> idx = gather_indices(a, 0, xd, ax);
    value<T> r = filled(xd, T(0));
    const T* dy = a.data(1);
    for (index p = 0; p < x.outer; ++p)
        for (index j : idx) {
            T* dst = r.data() + (p * x.extent + j) * x.inner;
            for (index i = 0; i < x.inner; ++i) dst[i] += *dy++;
        }
    return r;
}

}  // namespace goopt::interp::detail
