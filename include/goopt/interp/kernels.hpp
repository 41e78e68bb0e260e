#pragma once
/// @file
/// @brief Reference kernels: the value semantics of every operator kind, one function per kind.
/// These define what an op computes; the op table (ops/op_table.hpp) defines its shapes. Rewrites
/// are checked against them on random inputs, as TASO (SOSP'19) fingerprints candidate graphs.

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
#include <limits>
#include <numbers>
#include <span>
#include <string>
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

/// @brief Computes the outputs of op `o` of `g` from the values of its inputs.
/// @tparam T the scalar every tensor is evaluated in (float or double).
/// @param inputs one pointer per input slot of the op, each a row-major value whose shape is the
///        type the graph holds for that input.
/// @return one value per output of the op, shaped as the graph infers.
/// @throws goopt::error naming the op when an input's shape is not the graph's, when the op's
///         inputs no longer give the output types the graph holds (a rewire without re-inference),
///         for a gather index out of range, and for input and weight ops, whose values are fed
///         (interp::evaluate).
template <std::floating_point T>
std::vector<value<T>> evaluate_op(const graph::computation_graph& g, graph::op_id o,
                                  std::span<const value<T>* const> inputs);

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
    [[noreturn]] void fail(const std::string& what) const { throw error("op " + g.describe(o) + ": " + what); }
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
template <std::floating_point T> T relu(T x) { return x < T(0) ? T(0) : x; }

/// max that propagates NaN (std::max would drop it when it comes second).
template <std::floating_point T> T nan_max(T acc, T v) { return v > acc || std::isnan(v) ? v : acc; }

template <std::floating_point T> T apply_activation(T x, std::int64_t act) {
    switch (static_cast<ops::activation>(act)) {
        case ops::activation::none:
            return x;
        case ops::activation::relu:
            return relu(x);
        case ops::activation::sigmoid:
            return T(1) / (T(1) + std::exp(-x));
        case ops::activation::tanh:
            return std::tanh(x);
    }
    GOOPT_ASSERT(false && "activation checked by shape inference");
    return x;
}

template <std::floating_point T> void activate(value<T>& v, std::int64_t act) {
    if (static_cast<ops::activation>(act) == ops::activation::none) return;
    for (T& x : v.storage()) x = apply_activation(x, act);
}

template <std::floating_point T> T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

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

// ---- TASO's compute operators

/// Grouped NCHW convolution as direct loops: for every weight tap the valid output range is
/// computed once, so the innermost loop is a branch-free axpy over an output row.
template <std::floating_point T> value<T> conv2d(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto [N, C, H, W, O, Cg, kh, kw, OH, OW, Og, sh, sw, dh, dw, top, left] =
        conv_geometry(a.in_dims(0), a.in_dims(1), a.out_dims(), a.attrs());
    value<T> r = filled(a.out_dims(), T(0));
    const T* x = a.data(0);
    const T* w = a.data(1);
    T* y = r.data();
    for (index n = 0; n < N; ++n)
        for (index oc = 0; oc < O; ++oc) {
            T* yp = y + (n * O + oc) * OH * OW;
            const index g = oc / Og;
            for (index c = 0; c < Cg; ++c) {
                const T* xp = x + (n * C + g * Cg + c) * H * W;
                const T* wp = w + (oc * Cg + c) * kh * kw;
                for (index i = 0; i < kh; ++i) {
                    const auto [oh0, oh1] = tap_range(H, OH, sh, top, i * dh);
                    for (index j = 0; j < kw; ++j) {
                        const auto [ow0, ow1] = tap_range(W, OW, sw, left, j * dw);
                        const T wv = wp[i * kw + j];
                        for (index oh = oh0; oh < oh1; ++oh) {
                            const index row = (oh * sh - top + i * dh) * W - left + j * dw;  // + ow * sw: the tap
                            T* yrow = yp + oh * OW;
                            for (index ow = ow0; ow < ow1; ++ow) yrow[ow] += wv * xp[row + ow * sw];
                        }
                    }
                }
            }
        }
    activate(r, a.attrs().get_int(attr_id::activation));
    return r;
}

/// c[M,N] += a[M,K] b[K,N], row-major, k in the middle loop so the inner loop runs along rows.
template <std::floating_point T> void gemm_acc(const T* x, const T* y, T* c, index M, index K, index N) {
    for (index m = 0; m < M; ++m)
        for (index k = 0; k < K; ++k) {
            const T v = x[m * K + k];
            const T* yr = y + k * N;
            T* cr = c + m * N;
            for (index n = 0; n < N; ++n) cr[n] += v * yr[n];
        }
}

template <std::floating_point T> value<T> matmul(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const auto& yd = a.in_dims(1);
    const auto& od = a.out_dims();
    const index M = xd[xd.rank() - 2], K = xd.back(), N = yd.back();
    const ops::shape batch = prefix(od, od.rank() - 2);
    const auto xo = broadcast_offsets(batch, prefix(xd, xd.rank() - 2));
    const auto yo = broadcast_offsets(batch, prefix(yd, yd.rank() - 2));
    value<T> r = filled(od, T(0));
    for (std::size_t b = 0; b < xo.size(); ++b)
        gemm_acc(a.data(0) + xo[b] * M * K, a.data(1) + yo[b] * K * N, r.data() + static_cast<index>(b) * M * N, M, K,
                 N);
    activate(r, a.attrs().get_int(ops::attr_id::activation));
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

/// Pooling windows with SAME / VALID geometry; padded cells are not part of any window, so the
/// average divides by the cells actually covered (count_include_pad = false) and the max ignores them.
template <std::floating_point T, bool Max> value<T> pool2d(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto& xd = a.in_dims(0);
    const auto& od = a.out_dims();
    const index NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = od[2], OW = od[3];
    const auto& k = a.attrs().get_ints(attr_id::kernel);
    const auto& st = a.attrs().get_ints(attr_id::stride);
    const auto padding = a.attrs().get_int(attr_id::padding);
    const index top = pad_before(H, OH, k[0], st[0], padding), left = pad_before(W, OW, k[1], st[1], padding);
    value<T> r = filled(od, T(0));
    T* z = r.data();
    for (index p = 0; p < NC; ++p) {
        const T* xp = a.data(0) + p * H * W;
        for (index oh = 0; oh < OH; ++oh) {
            const index h0 = std::max<index>(oh * st[0] - top, 0), h1 = std::min(oh * st[0] - top + k[0], H);
            for (index ow = 0; ow < OW; ++ow) {
                const index w0 = std::max<index>(ow * st[1] - left, 0), w1 = std::min(ow * st[1] - left + k[1], W);
                GOOPT_ASSERT(h0 < h1 && w0 < w1);  // SAME and VALID windows always cover a cell
                T acc = Max ? -std::numeric_limits<T>::infinity() : T(0);
                for (index h = h0; h < h1; ++h)
                    for (index w = w0; w < w1; ++w) acc = Max ? nan_max(acc, xp[h * W + w]) : acc + xp[h * W + w];
                *z++ = Max ? acc : acc / static_cast<T>((h1 - h0) * (w1 - w0));
            }
        }
    }
    activate(r, a.attrs().get_int(attr_id::activation));
    return r;
}

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

/// Gather along `axis`. Index values must be integers in [-n, n) for an axis of extent n; negative
/// ones count from the end as in ONNX Gather.
template <std::floating_point T> value<T> gather(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const axis_split x = around(xd, ax);
    const auto ni = static_cast<std::size_t>(a.in_dims(1).num_elements());
    std::vector<index> idx(ni);
    for (std::size_t j = 0; j < ni; ++j) {
        const T v = a.data(1)[j];
        if (!(v == std::trunc(v) && v >= static_cast<T>(-x.extent) && v < static_cast<T>(x.extent)))
            a.fail("index " + number_string(v) + " at position " + std::to_string(j) + " is not an integer in [" +
                   std::to_string(-x.extent) + ", " + std::to_string(x.extent) + ") for axis " + std::to_string(ax) +
                   " of data " + xd.to_string());
        idx[j] = static_cast<index>(v) < 0 ? static_cast<index>(v) + x.extent : static_cast<index>(v);
    }
    value<T> r = filled(a.out_dims(), T(0));
    T* z = r.data();
    for (index p = 0; p < x.outer; ++p)
        for (index j : idx) {
            const T* src = a.data(0) + (p * x.extent + j) * x.inner;
            z = std::copy(src, src + x.inner, z);
        }
    return r;
}

template <std::floating_point T> value<T> global_avgpool(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const index NC = xd[0] * xd[1], S = prod(xd, 2, xd.rank());
    value<T> r = filled(a.out_dims(), T(0));
    for (index p = 0; p < NC; ++p) {
        T acc = 0;
        for (index s = 0; s < S; ++s) acc += a.data(0)[p * S + s];
        r.data()[p] = acc / static_cast<T>(S);
    }
    return r;
}

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

template <std::floating_point T> value<T> layernorm(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const index outer = prod(xd, 0, ax), inner = prod(xd, ax, xd.rank());
    const auto eps = static_cast<T>(a.attrs().get_real(ops::attr_id::epsilon));
    const T *gamma = a.data(1), *beta = a.data(2);
    value<T> r = filled(a.out_dims(), T(0));
    for (index p = 0; p < outer; ++p) {
        const T* xp = a.data(0) + p * inner;
        T* z = r.data() + p * inner;
        T mean = 0, var = 0;
        for (index i = 0; i < inner; ++i) mean += xp[i];
        mean /= static_cast<T>(inner);
        for (index i = 0; i < inner; ++i) var += (xp[i] - mean) * (xp[i] - mean);
        var /= static_cast<T>(inner);
        const T den = std::sqrt(var + eps);
        for (index i = 0; i < inner; ++i) z[i] = (xp[i] - mean) / den * gamma[i] + beta[i];
    }
    return r;
}

enum class reduction { sum, mean, max };

/// Reduction over `axes` (empty: all). Each input element is folded into the output element whose
/// index is its own with the reduced axes dropped, found through strides that are 0 on those axes.
template <std::floating_point T> value<T> reduce(const kernel_args<T>& a, reduction how) {
    const auto& xd = a.in_dims(0);
    const auto& axes = a.attrs().get_ints(ops::attr_id::axes);
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
    value<T> r = filled(a.out_dims(), how == reduction::max ? -std::numeric_limits<T>::infinity() : T(0));
    const T* x = a.data(0);
    T* z = r.data();
    if (how == reduction::max) for_each_offset(xd, st, 0, [&](index off) { z[off] = nan_max(z[off], *x++); });
    else for_each_offset(xd, st, 0, [&](index off) { z[off] += *x++; });
    if (how == reduction::mean)
        for (T& v : r.storage()) v /= static_cast<T>(count);
    return r;
}

// ---- recurrent cells

/// x [B,I] times w [I,G] into a new [B,G] buffer: the gate pre-activations of a recurrent cell.
template <std::floating_point T> std::vector<T> affine(const T* x, const T* w, index B, index I, index G) {
    std::vector<T> r(static_cast<std::size_t>(B * G), T(0));
    gemm_acc(x, w, r.data(), B, I, G);
    return r;
}

template <std::floating_point T> std::vector<value<T>> lstm_cell(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    std::vector<T> gates = affine(a.data(0), a.data(3), B, I, 4 * H);
    gemm_acc(a.data(1), a.data(4), gates.data(), B, H, 4 * H);
    value<T> h = filled(a.out_dims(0), T(0)), c = filled(a.out_dims(1), T(0));
    const T* bias = a.data(5);
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const T* gt = gates.data() + n * 4 * H;
            const T i = sigmoid(gt[j] + bias[j]);
            const T f = sigmoid(gt[H + j] + bias[H + j]);
            const T g = std::tanh(gt[2 * H + j] + bias[2 * H + j]);
            const T o = sigmoid(gt[3 * H + j] + bias[3 * H + j]);
            const T cn = f * a.data(2)[n * H + j] + i * g;
            c.data()[n * H + j] = cn;
            h.data()[n * H + j] = o * std::tanh(cn);
        }
    std::vector<value<T>> out;
    out.push_back(std::move(h));
    out.push_back(std::move(c));
    return out;
}

template <std::floating_point T> value<T> gru_cell(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    const std::vector<T> xw = affine(a.data(0), a.data(2), B, I, 3 * H);
    const std::vector<T> hu = affine(a.data(1), a.data(3), B, H, 3 * H);
    const T* bias = a.data(4);
    value<T> r = filled(a.out_dims(), T(0));
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const index at = n * 3 * H;
            const T rg = sigmoid(xw[at + j] + hu[at + j] + bias[j]);
            const T z = sigmoid(xw[at + H + j] + hu[at + H + j] + bias[H + j]);
            const T nn = std::tanh(xw[at + 2 * H + j] + rg * hu[at + 2 * H + j] + bias[2 * H + j]);
            r.data()[n * H + j] = (T(1) - z) * nn + z * a.data(1)[n * H + j];
        }
    return r;
}

template <std::floating_point T> std::vector<value<T>> one(value<T> v) {
    std::vector<value<T>> out;
    out.push_back(std::move(v));
    return out;
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

/// The loops of conv2d with the roles turned around: Input accumulates into dx from (dy, w),
/// otherwise into dw from (x, dy). Shapes: x = dx or input 0, w = dw or input 1, y = dy.
template <std::floating_point T, bool Input> value<T> conv2d_grad(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto [N, C, H, W, O, Cg, kh, kw, OH, OW, Og, sh, sw, dh, dw, top, left] =
        conv_geometry(Input ? a.out_dims() : a.in_dims(0), Input ? a.in_dims(1) : a.out_dims(),
                      Input ? a.in_dims(0) : a.in_dims(1), a.attrs());
    value<T> r = filled(a.out_dims(), T(0));
    const T* dy = Input ? a.data(0) : a.data(1);
    for (index n = 0; n < N; ++n)
        for (index oc = 0; oc < O; ++oc) {
            const T* yp = dy + (n * O + oc) * OH * OW;
            const index g = oc / Og;
            for (index c = 0; c < Cg; ++c) {
                const index xoff = (n * C + g * Cg + c) * H * W, woff = (oc * Cg + c) * kh * kw;
                for (index i = 0; i < kh; ++i) {
                    const auto [oh0, oh1] = tap_range(H, OH, sh, top, i * dh);
                    for (index j = 0; j < kw; ++j) {
                        const auto [ow0, ow1] = tap_range(W, OW, sw, left, j * dw);
                        T acc = 0;
                        for (index oh = oh0; oh < oh1; ++oh) {
                            const index row = (oh * sh - top + i * dh) * W - left + j * dw;
                            const T* yrow = yp + oh * OW;
                            if constexpr (Input) {
                                const T wv = a.data(1)[woff + i * kw + j];
                                T* xp = r.data() + xoff;
                                for (index ow = ow0; ow < ow1; ++ow) xp[row + ow * sw] += wv * yrow[ow];
                            } else {
                                const T* xp = a.data(0) + xoff;
                                for (index ow = ow0; ow < ow1; ++ow) acc += xp[row + ow * sw] * yrow[ow];
                            }
                        }
                        if constexpr (!Input) r.data()[woff + i * kw + j] += acc;
                    }
                }
            }
        }
    return r;
}

/// Pooling gradients with pool2d's windows: the average spreads dy over the covered cells, the
/// max routes it to the window's first maximum (pool2d's nan_max keeps the first of equal values).
template <std::floating_point T, bool Max> value<T> pool2d_grad(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto& xd = a.out_dims();
    const auto& od = a.in_dims(a.in.size() - 1);
    const index NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = od[2], OW = od[3];
    const auto& k = a.attrs().get_ints(attr_id::kernel);
    const auto& st = a.attrs().get_ints(attr_id::stride);
    const auto padding = a.attrs().get_int(attr_id::padding);
    const index top = pad_before(H, OH, k[0], st[0], padding), left = pad_before(W, OW, k[1], st[1], padding);
    value<T> r = filled(xd, T(0));
    const T* dy = a.data(a.in.size() - 1);
    for (index p = 0; p < NC; ++p) {
        T* dx = r.data() + p * H * W;
        const T* xp = Max ? a.data(0) + p * H * W : nullptr;
        for (index oh = 0; oh < OH; ++oh) {
            const index h0 = std::max<index>(oh * st[0] - top, 0), h1 = std::min(oh * st[0] - top + k[0], H);
            for (index ow = 0; ow < OW; ++ow) {
                const index w0 = std::max<index>(ow * st[1] - left, 0), w1 = std::min(ow * st[1] - left + k[1], W);
                const T g = *dy++;
                if constexpr (Max) {
                    T acc = -std::numeric_limits<T>::infinity();
                    index at = h0 * W + w0;
                    for (index h = h0; h < h1; ++h)
                        for (index w = w0; w < w1; ++w)
                            if (xp[h * W + w] > acc || std::isnan(xp[h * W + w])) {
                                acc = xp[h * W + w];
                                at = h * W + w;
                            }
                    dx[at] += g;
                } else {
                    const T share = g / static_cast<T>((h1 - h0) * (w1 - w0));
                    for (index h = h0; h < h1; ++h)
                        for (index w = w0; w < w1; ++w) dx[h * W + w] += share;
                }
            }
        }
    }
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

/// Scatter-add of dy into the gathered data's shape; indices as gather reads them.
template <std::floating_point T> value<T> gather_grad(const kernel_args<T>& a) {
    const auto& xd = a.out_dims();
    const std::size_t ax = xd.axis(a.attrs().get_int(ops::attr_id::axis));
    const axis_split x = around(xd, ax);
    const auto ni = static_cast<std::size_t>(a.in_dims(0).num_elements());
    std::vector<index> idx(ni);
    for (std::size_t j = 0; j < ni; ++j) {
        const T v = a.data(0)[j];
        if (!(v == std::trunc(v) && v >= static_cast<T>(-x.extent) && v < static_cast<T>(x.extent)))
            a.fail("index " + number_string(v) + " at position " + std::to_string(j) + " is not an integer in [" +
                   std::to_string(-x.extent) + ", " + std::to_string(x.extent) + ") for axis " + std::to_string(ax) +
                   " of data " + xd.to_string());
        idx[j] = static_cast<index>(v) < 0 ? static_cast<index>(v) + x.extent : static_cast<index>(v);
    }
    value<T> r = filled(xd, T(0));
    const T* dy = a.data(1);
    for (index p = 0; p < x.outer; ++p)
        for (index j : idx) {
            T* dst = r.data() + (p * x.extent + j) * x.inner;
            for (index i = 0; i < x.inner; ++i) dst[i] += *dy++;
        }
    return r;
}

/// c[M,N] += a^T b for a [K,M], b [K,N] (weight gradients: x^T times the gate gradients).
template <std::floating_point T> void gemm_tn_acc(const T* x, const T* y, T* c, index M, index K, index N) {
    for (index k = 0; k < K; ++k)
        for (index m = 0; m < M; ++m) {
            const T v = x[k * M + m];
            for (index n = 0; n < N; ++n) c[m * N + n] += v * y[k * N + n];
        }
}
/// c[M,N] += a b^T for a [M,K], b [N,K] (input gradients: gate gradients times w^T).
template <std::floating_point T> void gemm_nt_acc(const T* x, const T* y, T* c, index M, index K, index N) {
    for (index m = 0; m < M; ++m)
        for (index n = 0; n < N; ++n) {
            T acc = 0;
            for (index k = 0; k < K; ++k) acc += x[m * K + k] * y[n * K + k];
            c[m * N + n] += acc;
        }
}

/// Recomputes the gates, then back through c' = f c + i g, h' = o tanh(c').
template <std::floating_point T> std::vector<value<T>> lstm_cell_grad(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    std::vector<T> gates = affine(a.data(0), a.data(3), B, I, 4 * H);
    gemm_acc(a.data(1), a.data(4), gates.data(), B, H, 4 * H);
    const T *bias = a.data(5), *c = a.data(2), *dhn = a.data(6), *dcn = a.data(7);
    std::vector<value<T>> out;
    for (std::size_t k = 0; k < 6; ++k) out.push_back(filled(a.out_dims(k), T(0)));
    std::vector<T> dgates(gates.size());
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const T* gt = gates.data() + n * 4 * H;
            T* dg = dgates.data() + n * 4 * H;
            const index at = n * H + j;
            const T i = sigmoid(gt[j] + bias[j]);
            const T f = sigmoid(gt[H + j] + bias[H + j]);
            const T g = std::tanh(gt[2 * H + j] + bias[2 * H + j]);
            const T o = sigmoid(gt[3 * H + j] + bias[3 * H + j]);
            const T tc = std::tanh(f * c[at] + i * g);
            const T dct = dcn[at] + dhn[at] * o * (T(1) - tc * tc);
            dg[j] = dct * g * i * (T(1) - i);
            dg[H + j] = dct * c[at] * f * (T(1) - f);
            dg[2 * H + j] = dct * i * (T(1) - g * g);
            dg[3 * H + j] = dhn[at] * tc * o * (T(1) - o);
            out[2].data()[at] = dct * f;
        }
    gemm_nt_acc(dgates.data(), a.data(3), out[0].data(), B, 4 * H, I);
    gemm_nt_acc(dgates.data(), a.data(4), out[1].data(), B, 4 * H, H);
    gemm_tn_acc(a.data(0), dgates.data(), out[3].data(), I, B, 4 * H);
    gemm_tn_acc(a.data(1), dgates.data(), out[4].data(), H, B, 4 * H);
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < 4 * H; ++j) out[5].data()[j] += dgates[static_cast<std::size_t>(n * 4 * H + j)];
    return out;
}

/// Recomputes the gates, then back through h' = (1 - z) n + z h, n = tanh(xw_n + r * hu_n + b_n).
template <std::floating_point T> std::vector<value<T>> gru_cell_grad(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    const std::vector<T> xw = affine(a.data(0), a.data(2), B, I, 3 * H);
    const std::vector<T> hu = affine(a.data(1), a.data(3), B, H, 3 * H);
    const T *bias = a.data(4), *h = a.data(1), *dhn = a.data(5);
    std::vector<value<T>> out;
    for (std::size_t k = 0; k < 5; ++k) out.push_back(filled(a.out_dims(k), T(0)));
    std::vector<T> dxw(xw.size()), dhu(hu.size());
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const index at = n * 3 * H;
            const T rg = sigmoid(xw[at + j] + hu[at + j] + bias[j]);
            const T z = sigmoid(xw[at + H + j] + hu[at + H + j] + bias[H + j]);
            const T nn = std::tanh(xw[at + 2 * H + j] + rg * hu[at + 2 * H + j] + bias[2 * H + j]);
            const T d = dhn[n * H + j];
            const T dan = d * (T(1) - z) * (T(1) - nn * nn);
            const T daz = d * (h[n * H + j] - nn) * z * (T(1) - z);
            const T dar = dan * hu[at + 2 * H + j] * rg * (T(1) - rg);
            dxw[at + j] = dhu[at + j] = dar;
            dxw[at + H + j] = dhu[at + H + j] = daz;
            dxw[at + 2 * H + j] = dan;
            dhu[at + 2 * H + j] = dan * rg;
            out[1].data()[n * H + j] = d * z;
            out[4].data()[j] += dar;
            out[4].data()[H + j] += daz;
            out[4].data()[2 * H + j] += dan;
        }
    gemm_nt_acc(dxw.data(), a.data(2), out[0].data(), B, 3 * H, I);
    gemm_nt_acc(dhu.data(), a.data(3), out[1].data(), B, 3 * H, H);
    gemm_tn_acc(a.data(0), dxw.data(), out[2].data(), I, B, 3 * H);
    gemm_tn_acc(a.data(1), dhu.data(), out[3].data(), H, B, 3 * H);
    return out;
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

}  // namespace detail

// ---- implementation ----

template <std::floating_point T>
std::vector<value<T>> evaluate_op(const graph::computation_graph& g, graph::op_id o,
                                  std::span<const value<T>* const> inputs) {
    using ops::op_kind;
    const graph::op& op = g.get_op(o);
    const detail::kernel_args<T> a{g, o, op, inputs};
    if (inputs.size() != op.inputs.size())
        a.fail("given " + std::to_string(inputs.size()) + " input values, expected " +
               std::to_string(op.inputs.size()));
    // The kernels index raw buffers by the graph's shapes, so a value that disagrees (a graph
    // rewired without re-inference, a wrong argument) must stop here, not read out of bounds.
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] == nullptr) a.fail("input " + std::to_string(i) + " has no value");
        if (!detail::same_shape(inputs[i]->shape(), a.in_dims(i)))
            a.fail("input " + std::to_string(i) + " has shape " + detail::shape_string(inputs[i]->shape()) +
                   ", expected " + a.in_dims(i).to_string());
    }
    // Kernels also trust that output and input shapes agree; rewire() changes inputs without
    // re-inferring outputs, so infer again (cheap next to any kernel) rather than index past a buffer.
    if (op.spec().max_inputs != 0) {
        const ops::output_types in_types = g.input_types(o), held = g.output_types(o);
        ops::output_types inferred;
        try {
            inferred = op.spec().infer(ops::view(in_types), op.attrs);
        } catch (const error& e) {
            a.fail(std::string(e.what()) + " (shape inference was not redone after a rewire)");
        }
        if (!std::equal(inferred.begin(), inferred.end(), held.begin(), held.end())) {
            std::string got, want;
            for (const auto& t : inferred) got += (got.empty() ? "" : " ") + ops::to_string(t);
            for (const auto& t : held) want += (want.empty() ? "" : " ") + ops::to_string(t);
            a.fail("its inputs give outputs " + got + " but the graph holds " + want +
                   " (shape inference was not redone after a rewire)");
        }
    }
    const auto attr_real = [&](ops::attr_id id) { return static_cast<T>(op.attrs.get_real(id)); };

    std::vector<value<T>> out;
    switch (op.kind) {
        case op_kind::input:
        case op_kind::weight:
            a.fail("the value of a source op is fed, not computed: evaluate the graph with interp::evaluate");
        case op_kind::const_pool:
            out = detail::one(detail::const_pool(a));
            break;
        case op_kind::const_iconv:
            out = detail::one(detail::const_iconv(a));
            break;
        case op_kind::const_imm:
            out = detail::one(detail::const_imm(a));
            break;
        case op_kind::const_one:
            out = detail::one(detail::filled(a.out_dims(), T(1)));
            break;
        case op_kind::conv2d:
            out = detail::one(detail::conv2d(a));
            break;
        case op_kind::matmul:
            out = detail::one(detail::matmul(a));
            break;
        case op_kind::ewadd:
            out = detail::one(detail::binary(a, [](T x, T y) { return x + y; }));
            break;
        case op_kind::ewmul:
            out = detail::one(detail::binary(a, [](T x, T y) { return x * y; }));
            break;
        case op_kind::smul: {
            const T s = *a.data(1);
            out = detail::one(detail::unary(a, [s](T x) { return x * s; }));
            break;
        }
        case op_kind::relu:
            out = detail::one(detail::unary(a, [](T x) { return detail::relu(x); }));
            break;
        case op_kind::transpose:
            out = detail::one(detail::transpose(a));
            break;
        case op_kind::enlarge:
            out = detail::one(detail::enlarge(a));
            break;
        case op_kind::avgpool2d:
            out = detail::one(detail::pool2d<T, false>(a));
            break;
        case op_kind::maxpool2d:
            out = detail::one(detail::pool2d<T, true>(a));
            break;
        case op_kind::concat:
            out = detail::one(detail::concat(a));
            break;
        case op_kind::split:
            out = detail::split(a);
            break;
        case op_kind::sub:
            out = detail::one(detail::binary(a, [](T x, T y) { return x - y; }));
            break;
        case op_kind::div:
            out = detail::one(detail::binary(a, [](T x, T y) { return x / y; }));
            break;
        case op_kind::pow:
            out = detail::one(detail::binary(a, [](T x, T y) { return std::pow(x, y); }));
            break;
        case op_kind::sqrt:
            out = detail::one(detail::unary(a, [](T x) { return std::sqrt(x); }));
            break;
        case op_kind::sigmoid:
            out = detail::one(detail::unary(a, [](T x) { return detail::sigmoid(x); }));
            break;
        case op_kind::tanh:
            out = detail::one(detail::unary(a, [](T x) { return std::tanh(x); }));
            break;
        case op_kind::gelu:
            out = detail::one(
                detail::unary(a, [](T x) { return x * T(0.5) * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>)); }));
            break;
        case op_kind::erf:
            out = detail::one(detail::unary(a, [](T x) { return std::erf(x); }));
            break;
        case op_kind::clip: {
            const T lo = attr_real(ops::attr_id::min), hi = attr_real(ops::attr_id::max);
            out = detail::one(detail::unary(a, [lo, hi](T x) { return std::min(std::max(x, lo), hi); }));
            break;
        }
        case op_kind::identity:
        case op_kind::reshape:
        case op_kind::flatten:
            out = detail::one(detail::same_elements(a));
            break;
        case op_kind::pad:
            out = detail::one(detail::pad(a));
            break;
        case op_kind::slice:
            out = detail::one(detail::slice(a));
            break;
        case op_kind::gather:
            out = detail::one(detail::gather(a));
            break;
        case op_kind::global_avgpool:
            out = detail::one(detail::global_avgpool(a));
            break;
        case op_kind::batchnorm:
            out = detail::one(detail::batchnorm(a));
            break;
        case op_kind::softmax:
            out = detail::one(detail::softmax(a));
            break;
        case op_kind::layernorm:
            out = detail::one(detail::layernorm(a));
            break;
        case op_kind::reduce_sum:
            out = detail::one(detail::reduce(a, detail::reduction::sum));
            break;
        case op_kind::reduce_mean:
            out = detail::one(detail::reduce(a, detail::reduction::mean));
            break;
        case op_kind::reduce_max:
            out = detail::one(detail::reduce(a, detail::reduction::max));
            break;
        case op_kind::lstm_cell:
            out = detail::lstm_cell(a);
            break;
        case op_kind::gru_cell:
            out = detail::one(detail::gru_cell(a));
            break;
        // gradients and optimizer updates (training graphs)
        case op_kind::const_fill:
            out = detail::one(detail::filled(a.out_dims(), attr_real(ops::attr_id::value)));
            break;
        case op_kind::add_n:
            out = detail::one(detail::add_n(a));
            break;
        case op_kind::conv2d_grad_input:
            out = detail::one(detail::conv2d_grad<T, true>(a));
            break;
        case op_kind::conv2d_grad_weight:
            out = detail::one(detail::conv2d_grad<T, false>(a));
            break;
        case op_kind::relu_grad:
            out = detail::one(detail::pointwise_grad(a, [](T y) { return y > T(0) ? T(1) : T(0); }));
            break;
        case op_kind::sigmoid_grad:
            out = detail::one(detail::pointwise_grad(a, [](T y) { return y * (T(1) - y); }));
            break;
        case op_kind::tanh_grad:
            out = detail::one(detail::pointwise_grad(a, [](T y) { return T(1) - y * y; }));
            break;
        case op_kind::gelu_grad:
            out = detail::one(detail::pointwise_grad(a, [](T x) { return detail::gelu_derivative(x); }));
            break;
        case op_kind::avgpool2d_grad:
            out = detail::one(detail::pool2d_grad<T, false>(a));
            break;
        case op_kind::maxpool2d_grad:
            out = detail::one(detail::pool2d_grad<T, true>(a));
            break;
        case op_kind::softmax_grad:
            out = detail::one(detail::softmax_grad(a));
            break;
        case op_kind::layernorm_grad:
            out = detail::layernorm_grad(a);
            break;
        case op_kind::batchnorm_grad:
            out = detail::batchnorm_grad(a);
            break;
        case op_kind::gather_grad:
            out = detail::one(detail::gather_grad(a));
            break;
        case op_kind::lstm_cell_grad:
            out = detail::lstm_cell_grad(a);
            break;
        case op_kind::gru_cell_grad:
            out = detail::gru_cell_grad(a);
            break;
        case op_kind::sgd_update:
            out = detail::one(detail::sgd_update(a));
            break;
        case op_kind::adam_update:
            out = detail::adam_update(a);
            break;
    }
    GOOPT_ASSERT(out.size() == op.outputs.size());
    for (std::size_t k = 0; k < out.size(); ++k) GOOPT_ASSERT(detail::same_shape(out[k].shape(), a.out_dims(k)));
    return out;
}

}  // namespace goopt::interp
