#pragma once
/// @file
/// @brief What every reference kernel shares: the value type, what a kernel sees of its op
/// (kernel_args), and the index arithmetic of row-major buffers, broadcasting and windows.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/shape.hpp>

#include <xtensor/xarray.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::interp {

/// The value of one tensor: a row-major array of T. Every tensor is held in T, whatever its dtype;
/// integer tensors (gather indices) hold integral values.
template <std::floating_point T> using value = xt::xarray<T>;

// The kernels walk data() buffers in row-major order; a build that makes xtensor's default layout
// column-major (XTENSOR_DEFAULT_LAYOUT) would silently transpose every value.
static_assert(value<float>::static_layout == xt::layout_type::row_major &&
                  value<double>::static_layout == xt::layout_type::row_major,
              "goopt::interp needs xtensor's default layout to be row-major");
namespace detail {

using index = std::int64_t;

/// What a kernel sees of its op: attributes, inferred types and input values.
template <std::floating_point T> struct kernel_args {
    const graph::computation_graph& g;
    graph::op_id o;
    const graph::op& op;
    std::span<const value<T>* const> in;

    const ops::attribute_map& attrs() const noexcept { return op.attrs; }
    const ops::shape& in_dims(std::size_t i) const { return g.type_of(op.inputs[i]).dims; }
    const ops::shape& out_dims(std::size_t k = 0) const { return g.type_of(op.outputs[k]).dims; }
    const T* data(std::size_t i) const { return in[i]->data(); }
    /// `interp: op '<name>' (<kind>): <what>[: expected <expected>]`.
    [[noreturn]] void fail(std::string_view what) const {
        throw error("interp", goopt::concat("op ", g.describe(o), ": ", what));
    }
    [[noreturn]] void fail(std::string_view what, std::string_view expected) const {
        throw error("interp", goopt::concat("op ", g.describe(o), ": ", what), expected);
    }
};

inline typename value<double>::shape_type xshape(const ops::shape& s) {
    typename value<double>::shape_type r(s.rank());
    for (std::size_t i = 0; i < s.rank(); ++i) r[i] = static_cast<std::size_t>(s[i]);
    return r;
}

/// A new value of shape s with every element equal to `fill`.
template <std::floating_point T> value<T> filled(const ops::shape& s, T fill) { return value<T>(xshape(s), fill); }

template <class S> std::string shape_string(const S& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) r += ',';
        r += std::to_string(s[i]);
    }
    return r + "]";
}

template <class S> bool same_shape(const S& s, const ops::shape& dims) {
    if (s.size() != dims.rank()) return false;
    for (std::size_t i = 0; i < dims.rank(); ++i)
        if (static_cast<index>(s[i]) != dims[i]) return false;
    return true;
}

/// Product of dims[from, to).
inline index prod(const ops::shape& dims, std::size_t from, std::size_t to) {
    index n = 1;
    for (std::size_t i = from; i < to; ++i) n *= dims[i];
    return n;
}

using strides_t = std::array<index, ops::max_rank>;

inline strides_t row_major_strides(const ops::shape& s) {
    strides_t st{};
    index acc = 1;
    for (std::size_t i = s.rank(); i-- > 0;) {
        st[i] = acc;
        acc *= s[i];
    }
    return st;
}

/// Strides with which an `in`-shaped row-major buffer is read at `out`'s indices under numpy
/// broadcasting: right-aligned, 0 along axes where `in` has extent 1 or no axis at all.
inline strides_t broadcast_strides(const ops::shape& out, const ops::shape& in) {
    const strides_t own = row_major_strides(in);
    strides_t st{};
    const std::size_t lead = out.rank() - in.rank();
    for (std::size_t i = 0; i < in.rank(); ++i) st[lead + i] = in[i] == 1 ? 0 : own[i];
    return st;
}

/// Calls f(offset) for every index of the box `dims` in row-major order, where
/// offset = base + sum(index[i] * strides[i]). The one loop behind every data-movement kernel.
template <class F> void for_each_offset(const ops::shape& dims, const strides_t& strides, index base, F&& f) {
    const std::size_t r = dims.rank();
    for (std::size_t i = 0; i < r; ++i)
        if (dims[i] == 0) return;
    std::array<index, ops::max_rank> idx{};
    index off = base;
    for (;;) {
        f(off);
        std::size_t k = r;
        for (;;) {
            if (k == 0) return;
            --k;
            if (++idx[k] < dims[k]) {
                off += strides[k];
                break;
            }
            off -= strides[k] * (dims[k] - 1);
            idx[k] = 0;
        }
    }
}

/// Offsets into a row-major `in`-shaped buffer of every element of `out`, under broadcasting.
inline std::vector<index> broadcast_offsets(const ops::shape& out, const ops::shape& in) {
    std::vector<index> r;
    r.reserve(static_cast<std::size_t>(out.num_elements()));
    for_each_offset(out, broadcast_strides(out, in), 0, [&](index off) { r.push_back(off); });
    return r;
}

inline ops::shape prefix(const ops::shape& s, std::size_t n) {
    return ops::shape{std::span<const std::int64_t>(s.begin(), n)};
}

/// max(x, 0) that keeps NaN, as numpy's maximum does: a NaN must not vanish inside a reference value.
template <std::floating_point T> T relu_of(T x) { return x < T(0) ? T(0) : x; }

/// max that propagates NaN (std::max would drop it when it comes second).
template <std::floating_point T> T nan_max(T acc, T v) { return v > acc || std::isnan(v) ? v : acc; }

template <std::floating_point T> T apply_activation(T x, std::int64_t act) {
    switch (static_cast<ops::activation>(act)) {
        case ops::activation::none:
            return x;
        case ops::activation::relu:
            return relu_of(x);
        case ops::activation::sigmoid:
            return T(1) / (T(1) + std::exp(-x));
        case ops::activation::tanh:
            return std::tanh(x);
        case ops::activation::gelu:
            return x * T(0.5) * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>));
    }
    GOOPT_ASSERT(false && "activation checked by shape inference");
    return x;
}

/// The epilogue of a fused product (conv2d_bias, matmul_bias): input `i` added, broadcast to the
/// result, then the fused activation. For the plain ops (no input `i`) only the activation.
template <std::floating_point T> void epilogue(value<T>& r, const kernel_args<T>& a, std::size_t i);

template <std::floating_point T> void activate(value<T>& v, std::int64_t act) {
    if (static_cast<ops::activation>(act) == ops::activation::none) return;
    for (T& x : v.storage()) x = apply_activation(x, act);
}

template <std::floating_point T> T sigmoid_of(T x) { return T(1) / (T(1) + std::exp(-x)); }

/// Padding before the first element of a window axis: TensorFlow's SAME puts the odd cell at the
/// end (bottom / right), VALID pads nothing.
inline index pad_before(index in, index out, index k, index s, std::int64_t padding) {
    if (static_cast<ops::padding_mode>(padding) == ops::padding_mode::valid) return 0;
    return std::max<index>((out - 1) * s + k - in, 0) / 2;
}

/// The outputs [lo, hi) whose window tap t (reading input position o*s - pad + t) falls inside an
/// input axis of extent n: lets the convolution's inner loops run without bounds checks.
inline std::pair<index, index> tap_range(index n, index out, index s, index pad, index t) {
    const index lo = pad - t <= 0 ? 0 : (pad - t + s - 1) / s;
    const index last = n - 1 + pad - t;
    const index hi = last < 0 ? 0 : std::min(last / s + 1, out);
    return {lo, hi};
}

/// Geometry of a grouped, strided, dilated NCHW convolution with input x, weight w and output y,
/// shared by conv2d and its two gradients so that all three walk the same windows.
struct conv_geometry {
    index N, C, H, W, O, Cg, kh, kw, OH, OW, Og, sh, sw, dh, dw, top, left;
    conv_geometry(const ops::shape& xd, const ops::shape& wd, const ops::shape& yd, const ops::attribute_map& at)
        : N(xd[0]),
          C(xd[1]),
          H(xd[2]),
          W(xd[3]),
          O(wd[0]),
          Cg(wd[1]),
          kh(wd[2]),
          kw(wd[3]),
          OH(yd[2]),
          OW(yd[3]),
          Og(O / (C / Cg)) {
        const auto& st = at.get_ints(ops::attr_id::stride);
        const auto& dl = at.get_ints(ops::attr_id::dilation);
        sh = st[0], sw = st[1], dh = dl[0], dw = dl[1];
        const auto padding = at.get_int(ops::attr_id::padding);
        // the window of a dilated kernel spans (k - 1) * d + 1 cells
        top = pad_before(H, OH, (kh - 1) * dh + 1, sh, padding);
        left = pad_before(W, OW, (kw - 1) * dw + 1, sw, padding);
    }
};

/// Splits a shape at `axis` into outer (before), extent, inner (after) element counts.
struct axis_split {
    index outer, extent, inner;

    /// Calls f(start) for every line along the axis: its elements are start + i * inner, i < extent.
    template <class F> void for_each_line(F f) const {
        for (index p = 0; p < outer; ++p)
            for (index q = 0; q < inner; ++q) f(p * extent * inner + q);
    }
};
inline axis_split around(const ops::shape& s, std::size_t axis) {
    return {prod(s, 0, axis), s[axis], prod(s, axis + 1, s.rank())};
}

/// The one output of a single-output kernel, as the kernel table returns outputs.
template <std::floating_point T> std::vector<value<T>> one(value<T> v) {
    std::vector<value<T>> out;
    out.push_back(std::move(v));
    return out;
}

template <std::floating_point T> void epilogue(value<T>& r, const kernel_args<T>& a, std::size_t i) {
    if (a.op.inputs.size() > i) {
        const auto off = broadcast_offsets(a.out_dims(), a.in_dims(i));
        const T* c = a.data(i);
        T* y = r.data();
        for (std::size_t e = 0; e < off.size(); ++e) y[e] += c[off[e]];
    }
    activate(r, a.attrs().get_int(ops::attr_id::activation));
}

}  // namespace detail

}  // namespace goopt::interp
