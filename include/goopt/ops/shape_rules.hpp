#pragma once
/// @file
/// @brief Shape and dtype inference rules of the operator table, one function per family of ops.

#include <goopt/error.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_spec.hpp>
#include <goopt/ops/shape.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::ops::shape_rules {

namespace detail {
using ints = std::vector<std::int64_t>;

/// An ints attribute written as [a,b,c] when a message is built (and only then).
struct bracketed {
    explicit bracketed(const ints& values) : v(values) {}  // a constructor: clang 14 lacks paren-init of aggregates
    const ints& v;
    friend std::ostream& operator<<(std::ostream& o, const bracketed& b) {
        o << '[';
        for (std::size_t i = 0; i < b.v.size(); ++i) o << (i ? "," : "") << b.v[i];
        return o << ']';
    }
};

/// Separates a refusal's `<what>` from its `<expected>` in expect's parts.
struct expecting_t {
    friend std::ostream& operator<<(std::ostream& o, expecting_t) { return o << ": expected "; }
};
inline constexpr expecting_t expecting{};

/// A shape rule's refusal, `<what>` or `<what>: expected <expected>` (the parts after `expecting`).
/// No module: the caller that names the op (graph, interpreter, importer) puts its own module and the
/// op's name in front. The parts are streamed only on failure: shape inference runs for every op a
/// graph adds and the interpreter evaluates, so the success path builds no string.
template <class... Parts> void expect(bool ok, const Parts&... parts) {
    if (!ok) [[unlikely]]
        throw error(goopt::concat(parts...));
}

/// a + b and a * b on dimensions, with overflow as bad input rather than undefined behaviour.
inline std::int64_t add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) throw error(std::string("a dimension overflows 64 bits"));
    return r;
}
inline std::int64_t mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) throw error(std::string("a dimension product overflows 64 bits"));
    return r;
}

inline void same_dtype(std::span<const tensor_type> in) {
    for (std::size_t i = 1; i < in.size(); ++i)
        expect(in[i].type == in[0].type, "input ", i, " has dtype ", name(in[i].type), detail::expecting,
               name(in[0].type), " like input 0");
}

inline void rank_is(const tensor_type& t, std::size_t r, const char* what) {
    expect(t.dims.rank() == r, what, " has shape ", t.dims, detail::expecting, "rank ", r);
}

/// Window geometry shared by conv2d and pooling (TensorFlow's SAME / VALID).
inline std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t s, padding_mode p, const char* axis) {
    expect(k >= 1 && s >= 1, "window along ", axis, " needs kernel and stride >= 1");
    if (p == padding_mode::same) return add(in, s - 1) / s;
    expect(in >= k, "VALID window of ", k, " does not fit input extent ", in, " along ", axis);
    return (in - k) / s + 1;
}

inline ints pair_attr(const attribute_map& a, attr_id id) {
    const ints& v = a.get_ints(id);
    expect(v.size() == 2, "attribute '", name(id), "' is ", detail::bracketed(v), detail::expecting, "2 values [h, w]");
    return v;
}

inline padding_mode padding_of(const attribute_map& a) {
    const auto p = a.get_int(attr_id::padding);
    expect(p == 0 || p == 1, "attribute 'padding' is ", p, detail::expecting, "same (0) or valid (1)");
    return static_cast<padding_mode>(p);
}

inline void check_activation(const attribute_map& a) {
    const auto v = a.get_int(attr_id::activation);
    expect(v >= 0 && v < num_activations, "attribute 'activation' is ", v, detail::expecting,
           "none/relu/sigmoid/tanh/gelu (0-4)");
}

/// numpy broadcasting of two shapes.
inline shape broadcast(const shape& a, const shape& b) {
    const std::size_t r = std::max(a.rank(), b.rank());
    shape out;
    for (std::size_t i = 0; i < r; ++i) {
        const std::int64_t da = i + a.rank() >= r ? a[i + a.rank() - r] : 1;
        const std::int64_t db = i + b.rank() >= r ? b[i + b.rank() - r] : 1;
        expect(da == db || da == 1 || db == 1, "shapes ", a, " and ", b, " do not broadcast");
        out.push_back(da == 1 ? db : da);
    }
    return out;
}

inline shape shape_attr(const attribute_map& a) {
    const ints& v = a.get_ints(attr_id::shape);
    expect(v.size() <= max_rank, "attribute 'shape' has rank ", v.size(), ", at most ", max_rank, " supported");
    for (auto d : v)
        expect(d >= 1, "attribute 'shape' is ", detail::bracketed(v), detail::expecting, "every dimension >= 1");
    shape s{std::span<const std::int64_t>(v)};
    (void)s.num_elements();  // throws on overflow
    return s;
}

inline dtype dtype_attr(const attribute_map& a) {
    const auto t = a.get_int(attr_id::dtype);
    expect(t >= 0 && t < static_cast<std::int64_t>(num_dtypes), "attribute 'dtype' is out of range");
    return static_cast<dtype>(t);
}

inline std::vector<std::size_t> reduced_axes(const shape& s, const attribute_map& a) {
    const ints& axes = a.get_ints(attr_id::axes);
    std::vector<bool> mark(s.rank(), axes.empty());
    for (auto ax : axes) {
        const auto k = s.axis(ax);
        expect(!mark[k], "attribute 'axes' ", detail::bracketed(axes), " names an axis twice");
        mark[k] = true;
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < s.rank(); ++i)
        if (mark[i]) out.push_back(i);
    return out;
}
}  // namespace detail

using detail::broadcast;

/// input, weight and const_one: shape and dtype from the attributes.
inline output_types source(std::span<const tensor_type>, const attribute_map& a) {
    return {tensor_type{detail::shape_attr(a), detail::dtype_attr(a)}};
}

/// An opaque op's output types, as its attributes record them (the importer took them from ONNX
/// shape inference): `shapes` holds each output's rank and then its dimensions, `dtypes` each
/// output's element type. Its inputs say nothing about them.
inline output_types opaque(std::span<const tensor_type>, const attribute_map& a) {
    const std::vector<std::int64_t>& s = a.get_ints(attr_id::shapes);
    const std::vector<std::int64_t>& types = a.get_ints(attr_id::dtypes);
    detail::expect(!types.empty(), "an opaque op without outputs", detail::expecting, "one dtype per output");
    output_types out;
    std::size_t at = 0;
    for (const auto t : types) {
        detail::expect(t >= 0 && t < static_cast<std::int64_t>(num_dtypes), "attribute 'dtypes' is out of range");
        detail::expect(at < s.size() && s[at] >= 0 && s[at] <= static_cast<std::int64_t>(max_rank) &&
                           static_cast<std::size_t>(s[at]) < s.size() - at,
                       "attribute 'shapes' ", detail::bracketed(s), " does not hold output ", out.size(),
                       detail::expecting, "a rank of at most ", max_rank, " and that many dimensions per output");
        shape d;
        for (std::int64_t k = s[at++]; k > 0; --k) {
            detail::expect(s[at] >= 1, "attribute 'shapes' has a dimension ", s[at], detail::expecting, "at least 1");
            d.push_back(s[at++]);
        }
        out.push_back(tensor_type{d, static_cast<dtype>(t)});
    }
    detail::expect(at == s.size(), "attribute 'shapes' ", detail::bracketed(s), " holds more than ", types.size(),
                   " outputs");
    return out;
}

/// Average-pool kernel for a depthwise conv: shape [C, 1, kh, kw].
inline output_types const_pool(std::span<const tensor_type>, const attribute_map& a) {
    shape s = detail::shape_attr(a);
    detail::expect(s.rank() == 4 && s[1] == 1, "const_pool shape ", s, detail::expecting, "[C,1,kh,kw]");
    return {tensor_type{s, detail::dtype_attr(a)}};
}

/// Identity conv kernel: shape [C, C, kh, kw] with odd kh, kw so that it has a center.
inline output_types const_iconv(std::span<const tensor_type>, const attribute_map& a) {
    shape s = detail::shape_attr(a);
    detail::expect(s.rank() == 4 && s[0] == s[1] && s[2] % 2 == 1 && s[3] % 2 == 1, "const_iconv shape ", s,
                   detail::expecting, "[C,C,kh,kw] with odd kh, kw");
    return {tensor_type{s, detail::dtype_attr(a)}};
}

/// Identity matrix: shape [n, n].
inline output_types const_imm(std::span<const tensor_type>, const attribute_map& a) {
    shape s = detail::shape_attr(a);
    detail::expect(s.rank() == 2 && s[0] == s[1], "const_imm shape ", s, detail::expecting, "[n,n]");
    return {tensor_type{s, detail::dtype_attr(a)}};
}

/// Grouped 2-D convolution, NCHW input, [O, C/groups, kh, kw] weight; groups = C / weight dim 1.
/// A dilation d spreads the taps d apart, so the window covers (k - 1) * d + 1 input cells.
inline output_types conv2d(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    detail::rank_is(in[0], 4, "input");
    detail::rank_is(in[1], 4, "weight");
    const shape& x = in[0].dims;
    const shape& w = in[1].dims;
    detail::expect(w[1] >= 1 && x[1] % w[1] == 0, "input channels ", x[1], " are not a multiple of weight's ", w[1]);
    const std::int64_t groups = x[1] / w[1];
    detail::expect(w[0] % groups == 0, "output channels ", w[0], " are not a multiple of groups ", groups);
    const auto st = detail::pair_attr(a, attr_id::stride);
    const auto dl = detail::pair_attr(a, attr_id::dilation);
    detail::expect(dl[0] >= 1 && dl[1] >= 1, "attribute 'dilation' is ", detail::bracketed(dl), detail::expecting,
                   "values >= 1");
    const auto p = detail::padding_of(a);
    detail::check_activation(a);
    const std::int64_t kh = detail::add(detail::mul(w[2] - 1, dl[0]), 1);
    const std::int64_t kw = detail::add(detail::mul(w[3] - 1, dl[1]), 1);
    return {tensor_type{
        {x[0], w[0], detail::window_out(x[2], kh, st[0], p, "height"), detail::window_out(x[3], kw, st[1], p, "width")},
        in[0].type}};
}

/// Batched matmul [..., M, K] x [..., K, N]; the batch prefixes broadcast.
inline output_types matmul(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    const shape& x = in[0].dims;
    const shape& y = in[1].dims;
    detail::expect(x.rank() >= 2 && y.rank() >= 2, "matmul of ", x, " and ", y, detail::expecting, "rank >= 2 on both");
    detail::expect(x.back() == y[y.rank() - 2], "matmul of ", x, " and ", y, ": inner dimensions differ");
    detail::check_activation(a);
    shape bx{std::span<const std::int64_t>(x.begin(), x.rank() - 2)};
    shape by{std::span<const std::int64_t>(y.begin(), y.rank() - 2)};
    shape out = broadcast(bx, by);
    out.push_back(x[x.rank() - 2]);
    out.push_back(y.back());
    return {tensor_type{out, in[0].type}};
}

/// Elementwise binary ops with numpy broadcasting.
inline output_types binary(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    return {tensor_type{broadcast(in[0].dims, in[1].dims), in[0].type}};
}

/// Multiplication by a scalar tensor (rank 0 or a single element).
inline output_types smul(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    detail::expect(in[1].dims.num_elements() == 1 && in[1].dims.rank() <= 1, "smul scalar has shape ", in[1].dims,
                   detail::expecting, "[] or [1]");
    return {in[0]};
}

/// Unary elementwise ops keep the input type.
inline output_types unary(std::span<const tensor_type> in, const attribute_map&) { return {in[0]}; }

inline output_types clip(std::span<const tensor_type> in, const attribute_map& a) {
    detail::expect(a.get_real(attr_id::min) <= a.get_real(attr_id::max), "clip needs min <= max");
    return {in[0]};
}

inline output_types transpose(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    const auto& perm = a.get_ints(attr_id::perm);
    shape out;
    if (perm.empty()) {
        for (std::size_t i = x.rank(); i-- > 0;) out.push_back(x[i]);
        return {tensor_type{out, in[0].type}};
    }
    detail::expect(perm.size() == x.rank(), "perm ", detail::bracketed(perm), " does not match rank ", x.rank());
    std::vector<bool> seen(x.rank(), false);
    for (auto p : perm) {
        detail::expect(p >= 0 && p < static_cast<std::int64_t>(x.rank()) && !seen[static_cast<std::size_t>(p)], "perm ",
                       detail::bracketed(perm), " is not a permutation of the axes");
        seen[static_cast<std::size_t>(p)] = true;
        out.push_back(x[static_cast<std::size_t>(p)]);
    }
    return {tensor_type{out, in[0].type}};
}

/// Enlarge a conv kernel [O, I, kh, kw] to [O, I, KH, KW] by centering it in zeros.
inline output_types enlarge(std::span<const tensor_type> in, const attribute_map& a) {
    detail::rank_is(in[0], 4, "kernel");
    const auto k = detail::pair_attr(a, attr_id::kernel);
    const shape& w = in[0].dims;
    detail::expect(k[0] >= w[2] && k[1] >= w[3] && (k[0] - w[2]) % 2 == 0 && (k[1] - w[3]) % 2 == 0,
                   "cannot enlarge kernel ", w, " to ", detail::bracketed(k), detail::expecting,
                   "a larger size of the same parity");
    return {tensor_type{{w[0], w[1], k[0], k[1]}, in[0].type}};
}

inline output_types pool2d(std::span<const tensor_type> in, const attribute_map& a) {
    detail::rank_is(in[0], 4, "input");
    const shape& x = in[0].dims;
    const auto k = detail::pair_attr(a, attr_id::kernel);
    const auto st = detail::pair_attr(a, attr_id::stride);
    const auto p = detail::padding_of(a);
    detail::check_activation(a);
    return {tensor_type{{x[0], x[1], detail::window_out(x[2], k[0], st[0], p, "height"),
                         detail::window_out(x[3], k[1], st[1], p, "width")},
                        in[0].type}};
}

/// [N, C, spatial...] -> [N, C, 1, ...].
inline output_types global_avgpool(std::span<const tensor_type> in, const attribute_map&) {
    detail::expect(in[0].dims.rank() >= 3, "input has shape ", in[0].dims, detail::expecting, "[N,C,spatial...]");
    shape out = in[0].dims;
    for (std::size_t i = 2; i < out.rank(); ++i) out[i] = 1;
    return {tensor_type{out, in[0].type}};
}

inline output_types concat(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    shape out = in[0].dims;
    const auto ax = out.axis(a.get_int(attr_id::axis));
    for (std::size_t i = 1; i < in.size(); ++i) {
        const shape& s = in[i].dims;
        bool ok = s.rank() == out.rank();
        for (std::size_t d = 0; ok && d < s.rank(); ++d) ok = d == ax || s[d] == out[d];
        detail::expect(ok, "input ", i, " has shape ", s, detail::expecting, in[0].dims, " except along axis ", ax);
        out[ax] = detail::add(out[ax], s[ax]);
    }
    return {tensor_type{out, in[0].type}};
}

inline output_types split(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    const auto ax = x.axis(a.get_int(attr_id::axis));
    const auto& sizes = a.get_ints(attr_id::sizes);
    detail::expect(!sizes.empty(), "split needs at least one size");
    std::int64_t total = 0;
    output_types out;
    for (auto s : sizes) {
        detail::expect(s >= 1, "split sizes ", detail::bracketed(sizes), detail::expecting, "every size >= 1");
        total = detail::add(total, s);
        shape o = x;
        o[ax] = s;
        out.push_back(tensor_type{o, in[0].type});
    }
    detail::expect(total == x[ax], "split sizes ", detail::bracketed(sizes), " add up to ", total, detail::expecting,
                   x[ax]);
    return out;
}

/// Reshape to the `shape` attribute; one dimension may be -1 and is inferred.
inline output_types reshape(std::span<const tensor_type> in, const attribute_map& a) {
    const auto& target = a.get_ints(attr_id::shape);
    detail::expect(target.size() <= max_rank, "reshape target has too high a rank");
    std::int64_t known = 1;
    int infer_at = -1;
    for (std::size_t i = 0; i < target.size(); ++i) {
        if (target[i] == -1) {
            detail::expect(infer_at < 0, "reshape target ", detail::bracketed(target), " has more than one -1");
            infer_at = static_cast<int>(i);
        } else {
            detail::expect(target[i] >= 1, "reshape target ", detail::bracketed(target), detail::expecting,
                           "dimensions >= 1 or one -1");
            known = detail::mul(known, target[i]);
        }
    }
    const std::int64_t n = in[0].dims.num_elements();
    shape out{std::span<const std::int64_t>(target)};
    if (infer_at >= 0) {
        detail::expect(n % known == 0, "cannot reshape ", in[0].dims, " to ", detail::bracketed(target));
        out[static_cast<std::size_t>(infer_at)] = n / known;
    }
    detail::expect(out.num_elements() == n, "cannot reshape ", in[0].dims, " (", n, " elements) to ",
                   detail::bracketed(target));
    return {tensor_type{out, in[0].type}};
}

/// [d0..d(axis-1)] x [d(axis)..] -> rank 2, as ONNX Flatten.
inline output_types flatten(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    const auto ax = a.get_int(attr_id::axis);
    detail::expect(ax >= 0 && ax <= static_cast<std::int64_t>(x.rank()), "flatten axis ", ax,
                   " is out of range for rank ", x.rank());
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        std::int64_t& part = static_cast<std::int64_t>(i) < ax ? outer : inner;
        part = detail::mul(part, x[i]);
    }
    return {tensor_type{{outer, inner}, in[0].type}};
}

inline output_types pad(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    const auto& p = a.get_ints(attr_id::pads);
    detail::expect(p.size() == 2 * x.rank(), "pads ", detail::bracketed(p), detail::expecting, 2 * x.rank(),
                   " values (begins then ends)");
    shape out = x;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        detail::expect(p[i] >= 0 && p[i + x.rank()] >= 0, "pads ", detail::bracketed(p), detail::expecting,
                       "non-negative values");
        out[i] = detail::add(out[i], detail::add(p[i], p[i + x.rank()]));
    }
    return {tensor_type{out, in[0].type}};
}

/// Slice [begin, end) along every axis with step 1.
inline output_types slice(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    const auto& b = a.get_ints(attr_id::begin);
    const auto& e = a.get_ints(attr_id::end);
    detail::expect(b.size() == x.rank() && e.size() == x.rank(), "slice begin ", detail::bracketed(b), " / end ",
                   detail::bracketed(e), detail::expecting, "one value per axis of ", x);
    shape out = x;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        detail::expect(0 <= b[i] && b[i] < e[i] && e[i] <= x[i], "slice [", b[i], ", ", e[i],
                       ") is empty or outside axis ", i, " of ", x);
        out[i] = e[i] - b[i];
    }
    return {tensor_type{out, in[0].type}};
}

/// data[..., indices, ...] along axis: data.dims[:axis] + indices.dims + data.dims[axis+1:].
inline output_types gather(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    detail::expect(is_integral(in[1].type), "gather indices have dtype ", name(in[1].type), detail::expecting,
                   "an integer type");
    const auto ax = x.axis(a.get_int(attr_id::axis));
    shape out;
    for (std::size_t i = 0; i < ax; ++i) out.push_back(x[i]);
    for (auto d : in[1].dims) out.push_back(d);
    for (std::size_t i = ax + 1; i < x.rank(); ++i) out.push_back(x[i]);
    return {tensor_type{out, in[0].type}};
}

namespace detail {
/// x [N, C, ...] of at least `rank` dimensions (`form` says which) and one value per channel in each
/// of the other inputs, as batchnorm and instance_norm take them.
inline output_types per_channel_normalization(std::span<const tensor_type> in, std::size_t rank,
                                              std::string_view form) {
    same_dtype(in);
    expect(in[0].dims.rank() >= rank, "input has shape ", in[0].dims, expecting, form);
    for (std::size_t i = 1; i < in.size(); ++i)
        expect(in[i].dims == shape{in[0].dims[1]}, "input ", i, " has shape ", in[i].dims, expecting, "[",
               in[0].dims[1], "] (channels)");
    return {in[0]};
}
}  // namespace detail

/// Inference-mode batch normalization: x [N, C, ...], scale/bias/mean/var [C].
inline output_types batchnorm(std::span<const tensor_type> in, const attribute_map&) {
    return detail::per_channel_normalization(in, 2, "[N,C,...]");
}

/// Instance normalization: x [N, C, ...] normalized per sample and channel over the rest; scale and
/// bias [C].
inline output_types instance_norm(std::span<const tensor_type> in, const attribute_map&) {
    return detail::per_channel_normalization(in, 3, "[N,C,D1,...]");
}

/// Local response normalization across the channels of x [N, C, ...] in a window of `size`.
inline output_types lrn(std::span<const tensor_type> in, const attribute_map& a) {
    detail::expect(in[0].dims.rank() >= 3, "input has shape ", in[0].dims, detail::expecting, "[N,C,D1,...]");
    detail::expect(a.get_int(attr_id::size) >= 1, "attribute 'size' is ", a.get_int(attr_id::size), detail::expecting,
                   "a window of at least 1 channel");
    return {in[0]};
}

inline output_types softmax(std::span<const tensor_type> in, const attribute_map& a) {
    (void)in[0].dims.axis(a.get_int(attr_id::axis));
    return {in[0]};
}

/// Layer normalization over axes [axis, rank); gamma and beta have those trailing dimensions.
inline output_types layernorm(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    const shape& x = in[0].dims;
    const auto ax = x.axis(a.get_int(attr_id::axis));
    shape norm{std::span<const std::int64_t>(x.begin() + ax, x.rank() - ax)};
    for (std::size_t i = 1; i < 3; ++i)
        detail::expect(in[i].dims == norm, "input ", i, " has shape ", in[i].dims, detail::expecting, norm);
    return {in[0]};
}

inline output_types reduce(std::span<const tensor_type> in, const attribute_map& a) {
    const shape& x = in[0].dims;
    const auto axes = detail::reduced_axes(x, a);
    const bool keep = a.get_int(attr_id::keepdims) != 0;
    shape out;
    std::size_t k = 0;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        const bool r = k < axes.size() && axes[k] == i;
        if (r) ++k;
        if (!r) out.push_back(x[i]);
        else if (keep) out.push_back(1);
    }
    return {tensor_type{out, in[0].type}};
}

/// LSTM cell: x [B,I], h [B,H], c [B,H], w [I,4H], u [H,4H], b [4H] -> h' [B,H], c' [B,H].
inline output_types lstm_cell(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    for (std::size_t i = 0; i < 5; ++i) detail::rank_is(in[i], 2, "an LSTM operand");
    const std::int64_t B = in[0].dims[0], I = in[0].dims[1], H = in[1].dims[1], H4 = detail::mul(4, H);
    detail::expect(in[1].dims == shape{B, H} && in[2].dims == shape{B, H} && in[3].dims == shape{I, H4} &&
                       in[4].dims == shape{H, H4} && in[5].dims == shape{H4},
                   "LSTM operands x", in[0].dims, " h", in[1].dims, " c", in[2].dims, " w", in[3].dims, " u",
                   in[4].dims, " b", in[5].dims, detail::expecting, "x[B,I] h[B,H] c[B,H] w[I,4H] u[H,4H] b[4H]");
    return {in[1], in[2]};
}

/// GRU cell: x [B,I], h [B,H], w [I,3H], u [H,3H], b [3H] -> h' [B,H].
inline output_types gru_cell(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    for (std::size_t i = 0; i < 4; ++i) detail::rank_is(in[i], 2, "a GRU operand");
    const std::int64_t B = in[0].dims[0], I = in[0].dims[1], H = in[1].dims[1], H3 = detail::mul(3, H);
    detail::expect(in[1].dims == shape{B, H} && in[2].dims == shape{I, H3} && in[3].dims == shape{H, H3} &&
                       in[4].dims == shape{H3},
                   "GRU operands x", in[0].dims, " h", in[1].dims, " w", in[2].dims, " u", in[3].dims, " b", in[4].dims,
                   detail::expecting, "x[B,I] h[B,H] w[I,3H] u[H,3H] b[3H]");
    return {in[1]};
}

/// Whether `c` broadcasts to `out` without growing it (numpy rules): the condition on the addend
/// of a fused epilogue (conv2d_bias, matmul_bias), as a per-channel bias or a residual meets it.
inline bool broadcasts_to(const shape& c, const shape& out) {
    if (c.rank() > out.rank()) return false;
    for (std::size_t i = 0; i < c.rank(); ++i) {
        const std::int64_t d = c[c.rank() - 1 - i];
        if (d != 1 && d != out[out.rank() - 1 - i]) return false;
    }
    return true;
}

namespace detail {
inline void epilogue_addend(const tensor_type& c, const tensor_type& out, const char* op) {
    expect(c.type == out.type, op, "'s addend has dtype ", name(c.type), detail::expecting, name(out.type));
    expect(broadcasts_to(c.dims, out.dims), op, "'s addend ", c.dims, " does not broadcast to its output ", out.dims);
}
}  // namespace detail

/// conv2d_bias(x, w, c) = act(conv2d(x, w) + c): conv2d's shape, c broadcast to it.
inline output_types conv2d_bias(std::span<const tensor_type> in, const attribute_map& a) {
    auto out = conv2d(in.first(2), a);
    detail::epilogue_addend(in[2], out[0], "conv2d_bias");
    return out;
}

/// matmul_bias(x, w, c) = act(matmul(x, w) + c): matmul's shape, c broadcast to it.
inline output_types matmul_bias(std::span<const tensor_type> in, const attribute_map& a) {
    auto out = matmul(in.first(2), a);
    detail::epilogue_addend(in[2], out[0], "matmul_bias");
    return out;
}

// ---- gradients and optimizer updates (training graphs)
// A gradient op is checked against its forward op: the forward rule applied to the shapes the
// gradient op knows must give the shape of the incoming gradient, so a miswired backward pass
// fails shape inference instead of computing nonsense.

namespace detail {
inline void same_dims(const tensor_type& a, const tensor_type& b, const char* what_a, const char* what_b) {
    expect(a.dims == b.dims, what_b, " has shape ", b.dims, detail::expecting, a.dims, " like ", what_a);
}
inline void is_scalar(const tensor_type& t, const char* what) {
    expect(t.dims.num_elements() == 1 && t.dims.rank() <= 1, what, " has shape ", t.dims, detail::expecting,
           "[] or [1]");
}
/// The forward op's input as the `shape` attribute records it, with the dtype of the gradient.
inline tensor_type recorded(const attribute_map& a, dtype t) { return {shape_attr(a), t}; }
/// Attributes of a window gradient as its forward op reads them (no fused activation: the
/// transform differentiates the activation separately).
inline attribute_map forward_window_attrs(const attribute_map& a, bool conv) {
    attribute_map f;
    f.set(attr_id::stride, a.get(attr_id::stride));
    f.set(attr_id::padding, a.get(attr_id::padding));
    f.set(attr_id::activation, std::int64_t(0));
    if (conv) f.set(attr_id::dilation, a.get(attr_id::dilation));
    else f.set(attr_id::kernel, a.get(attr_id::kernel));
    return f;
}
inline void forward_gives(const output_types& fwd, const tensor_type& dy) {
    expect(fwd[0].dims == dy.dims, "incoming gradient has shape ", dy.dims, ", but the forward op gives ", fwd[0].dims);
}
}  // namespace detail

/// add_n: the sum of one or more tensors of one type (accumulated partial gradients).
inline output_types add_n(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    for (std::size_t i = 1; i < in.size(); ++i) detail::same_dims(in[0], in[i], "input 0", "an addend");
    return {in[0]};
}

/// (forward value, incoming gradient) -> gradient of the same shape: relu_grad, sigmoid_grad, ...
inline output_types pointwise_grad(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    detail::same_dims(in[0], in[1], "the forward value", "the incoming gradient");
    return {in[1]};
}

/// softmax_grad(y, dy): the axis must exist.
inline output_types softmax_grad(std::span<const tensor_type> in, const attribute_map& a) {
    (void)in[0].dims.axis(a.get_int(attr_id::axis));
    return pointwise_grad(in, a);
}

/// conv2d_grad_input(dy, w; shape = x): conv2d(x, w) must have dy's shape.
inline output_types conv2d_grad_input(std::span<const tensor_type> in, const attribute_map& a) {
    const tensor_type x = detail::recorded(a, in[0].type);
    const tensor_type fin[2] = {x, in[1]};
    detail::forward_gives(conv2d(fin, detail::forward_window_attrs(a, true)), in[0]);
    return {x};
}

/// conv2d_grad_weight(x, dy; shape = w): conv2d(x, w) must have dy's shape.
inline output_types conv2d_grad_weight(std::span<const tensor_type> in, const attribute_map& a) {
    const tensor_type w = detail::recorded(a, in[1].type);
    const tensor_type fin[2] = {in[0], w};
    detail::forward_gives(conv2d(fin, detail::forward_window_attrs(a, true)), in[1]);
    return {w};
}

/// avgpool2d_grad(dy; shape = x).
inline output_types avgpool2d_grad(std::span<const tensor_type> in, const attribute_map& a) {
    const tensor_type x = detail::recorded(a, in[0].type);
    const tensor_type fin[1] = {x};
    detail::forward_gives(pool2d(fin, detail::forward_window_attrs(a, false)), in[0]);
    return {x};
}

/// maxpool2d_grad(x, dy): the window maximum is found again from x.
inline output_types reduce_max_grad(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    detail::forward_gives(reduce(in.first(1), a), in[1]);
    return {in[0]};
}
inline output_types maxpool2d_grad(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    detail::forward_gives(pool2d(in.first(1), detail::forward_window_attrs(a, false)), in[1]);
    return {in[0]};
}

/// layernorm_grad(x, gamma, dy) -> dx, dgamma, dbeta.
inline output_types layernorm_grad(std::span<const tensor_type> in, const attribute_map& a) {
    const tensor_type fin[3] = {in[0], in[1], in[1]};
    detail::forward_gives(layernorm(fin, a), in[2]);
    return {in[0], in[1], in[1]};
}

/// lrn_grad(x, dy) -> dx.
inline output_types lrn_grad(std::span<const tensor_type> in, const attribute_map& a) {
    detail::same_dtype(in);
    detail::forward_gives(lrn(in.first(1), a), in[1]);
    return {in[0]};
}

/// batchnorm_grad(x, scale, mean, var, dy) -> dx, dscale, dbias, dmean, dvar.
inline output_types batchnorm_grad(std::span<const tensor_type> in, const attribute_map& a) {
    const tensor_type fin[5] = {in[0], in[1], in[1], in[2], in[3]};
    detail::forward_gives(batchnorm(fin, a), in[4]);
    return {in[0], in[1], in[1], in[2], in[3]};
}

/// gather_grad(indices, dy; shape = data): scatter-add of dy into a zero tensor shaped as data.
inline output_types gather_grad(std::span<const tensor_type> in, const attribute_map& a) {
    const tensor_type data = detail::recorded(a, in[1].type);
    const tensor_type fin[2] = {data, in[0]};
    detail::forward_gives(gather(fin, a), in[1]);
    return {data};
}

/// lstm_cell_grad(x, h, c, w, u, b, dh', dc') -> dx, dh, dc, dw, du, db.
inline output_types lstm_cell_grad(std::span<const tensor_type> in, const attribute_map& a) {
    const auto fwd = lstm_cell(in.first(6), a);
    detail::forward_gives(fwd, in[6]);
    detail::same_dims(fwd[1], in[7], "the cell state", "the cell state's gradient");
    return {in[0], in[1], in[2], in[3], in[4], in[5]};
}

/// gru_cell_grad(x, h, w, u, b, dh') -> dx, dh, dw, du, db.
inline output_types gru_cell_grad(std::span<const tensor_type> in, const attribute_map& a) {
    detail::forward_gives(gru_cell(in.first(5), a), in[5]);
    return {in[0], in[1], in[2], in[3], in[4]};
}

/// sgd_update(w, g, lr) -> w'.
inline output_types sgd_update(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    detail::same_dims(in[0], in[1], "the parameter", "the gradient");
    detail::is_scalar(in[2], "the learning rate");
    return {in[0]};
}

/// adam_update(w, g, m, v, lr, beta1, beta2) -> w', m', v'.
inline output_types adam_update(std::span<const tensor_type> in, const attribute_map&) {
    detail::same_dtype(in);
    detail::same_dims(in[0], in[1], "the parameter", "the gradient");
    detail::same_dims(in[0], in[2], "the parameter", "the first moment");
    detail::same_dims(in[0], in[3], "the parameter", "the second moment");
    detail::is_scalar(in[4], "the learning rate");
    detail::is_scalar(in[5], "beta1");
    detail::is_scalar(in[6], "beta2");
    return {in[0], in[0], in[0]};
}

}  // namespace goopt::ops::shape_rules
