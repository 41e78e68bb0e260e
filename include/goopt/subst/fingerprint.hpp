#pragma once
/// @file
/// @brief Exact evaluation of TASO's operator subset modulo the prime 2^61 - 1, and the hashes of
/// values and graphs built on it. Equal fingerprints mean equal polynomials in the inputs with
/// overwhelming probability (Schwartz-Zippel); no floating point, so no rounding ever separates two
/// equal graphs. TASO (SOSP'19) §3.2.

#include <goopt/error.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/kind_table.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_spec.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::subst {

/// Arithmetic modulo the Mersenne prime 2^61 - 1: every nonzero element has an inverse, so average
/// pooling and the 1/(kh*kw) pooling kernel are exact (multiplication by a modular inverse).
namespace modular {
inline constexpr std::uint64_t prime = (std::uint64_t{1} << 61) - 1;
__extension__ typedef unsigned __int128 wide;  // GCC and Clang; __extension__ keeps -Wpedantic quiet

constexpr std::uint64_t add(std::uint64_t a, std::uint64_t b) noexcept {
    const std::uint64_t s = a + b;
    return s >= prime ? s - prime : s;
}
constexpr std::uint64_t mul(std::uint64_t a, std::uint64_t b) noexcept {
    const wide p = static_cast<wide>(a) * b;
    const std::uint64_t r = (static_cast<std::uint64_t>(p) & prime) + static_cast<std::uint64_t>(p >> 61);
    return r >= prime ? r - prime : r;
}
constexpr std::uint64_t power(std::uint64_t a, std::uint64_t e) noexcept {
    std::uint64_t r = 1;
    for (; e; e >>= 1, a = mul(a, a))
        if (e & 1) r = mul(r, a);
    return r;
}
constexpr std::uint64_t inverse(std::uint64_t a) noexcept { return power(a, prime - 2); }
/// TASO's stand-in for relu: x(x + 1) + 1 is not linear, so relu is never confused with identity,
/// and it is a function of x alone, so relu still commutes with data movement.
constexpr std::uint64_t relu(std::uint64_t x) noexcept { return add(mul(x, add(x, 1)), 1); }
static_assert(mul(prime - 1, prime - 1) == 1 && mul(inverse(9), 9) == 1 && relu(2) == 7);
}  // namespace modular

/// A tensor of residues modulo modular::prime, row-major.
struct mod_tensor {
    ops::shape dims;
    std::vector<std::uint64_t> data;
};

/// Mixing function of splitmix64: turns structured integers into well-spread 64-bit hashes.
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// Hash of a value together with its shape (two values of different shapes never collide by design).
inline std::uint64_t value_hash(const mod_tensor& t) noexcept {
    std::uint64_t h = mix(t.dims.rank());
    for (auto d : t.dims) h = mix(h ^ static_cast<std::uint64_t>(d));
    for (auto v : t.data) h = mix(h ^ v);
    return h;
}

/// Order-independent combination of output hashes: a graph's fingerprint is the same whatever order
/// its outputs are listed in (a sum of mixed hashes is a multiset hash).
inline std::uint64_t combine_unordered(std::span<const std::uint64_t> hashes) noexcept {
    std::uint64_t s = 0;
    for (auto h : hashes) s += mix(h ^ 0x5851f42d4c957f2dULL);
    return s;
}

/// @brief A tensor of the given shape with residues drawn from `rng` (the fixed random inputs of
/// fingerprinting; the caller's seed makes fingerprints reproducible).
template <std::uniform_random_bit_generator Rng> mod_tensor random_mod_tensor(const ops::shape& s, Rng& rng) {
    std::uniform_int_distribution<std::uint64_t> dist(0, modular::prime - 1);
    mod_tensor t{s, std::vector<std::uint64_t>(static_cast<std::size_t>(s.num_elements()))};
    for (auto& v : t.data) v = dist(rng);
    return t;
}

/// @brief Evaluates one op exactly. Supports TASO's operator subset: the four constants, conv2d
/// (grouped, strided, dilated, SAME/VALID), rank-2 matmul, ewadd and ewmul on equal shapes, smul,
/// relu (as modular::relu, also as a fused activation), transpose, enlarge, avgpool2d (window sum
/// times the inverse of the covered cell count, as the interpreter divides), concat and split.
/// @param out the output types that the op's shape rule inferred.
/// @throws goopt::error for any other op kind (subst::detail::modular_table says not_enumerated) or activation.
inline std::vector<mod_tensor> evaluate_modular(ops::op_kind kind, const ops::attribute_map& attrs,
                                                std::span<const mod_tensor* const> in, const ops::output_types& out);

// ---- implementation ----

namespace detail {
using index = std::int64_t;

inline mod_tensor zeros(const ops::shape& s) {
    return {s, std::vector<std::uint64_t>(static_cast<std::size_t>(s.num_elements()), 0)};
}
inline std::uint64_t activate(std::uint64_t x, std::int64_t act) {
    if (act == static_cast<std::int64_t>(ops::activation::none)) return x;
    if (act == static_cast<std::int64_t>(ops::activation::relu)) return modular::relu(x);
    throw error("fingerprint", concat("activation ", act, " is not supported"), "none or relu");
}
inline index pad_before(index in, index out, index k, index s, std::int64_t padding) {
    if (padding == static_cast<std::int64_t>(ops::padding_mode::valid)) return 0;
    return std::max<index>((out - 1) * s + k - in, 0) / 2;
}
/// Outer, extent and inner element counts around `axis`.
inline std::array<index, 3> around(const ops::shape& s, std::size_t axis) {
    index outer = 1, inner = 1;
    for (std::size_t i = 0; i < axis; ++i) outer *= s[i];
    for (std::size_t i = axis + 1; i < s.rank(); ++i) inner *= s[i];
    return {outer, s[axis], inner};
}

inline mod_tensor conv2d(const mod_tensor& x, const mod_tensor& w, const ops::attribute_map& a, const ops::shape& od) {
    using ops::attr_id;
    const index C = x.dims[1], H = x.dims[2], W = x.dims[3];
    const index O = w.dims[0], Cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
    const index N = x.dims[0], OH = od[2], OW = od[3], groups = C / Cg, Og = O / groups;
    const auto& st = a.get_ints(attr_id::stride);
    const auto& dl = a.get_ints(attr_id::dilation);
    const auto padding = a.get_int(attr_id::padding);
    const index top = pad_before(H, OH, (kh - 1) * dl[0] + 1, st[0], padding);
    const index left = pad_before(W, OW, (kw - 1) * dl[1] + 1, st[1], padding);
    const auto act = a.get_int(attr_id::activation);
    mod_tensor r = zeros(od);
    for (index n = 0; n < N; ++n)
        for (index oc = 0; oc < O; ++oc) {
            const index g = oc / Og;
            for (index oh = 0; oh < OH; ++oh)
                for (index ow = 0; ow < OW; ++ow) {
                    std::uint64_t acc = 0;
                    for (index c = 0; c < Cg; ++c)
                        for (index i = 0; i < kh; ++i) {
                            const index ih = oh * st[0] - top + i * dl[0];
                            if (ih < 0 || ih >= H) continue;
                            for (index j = 0; j < kw; ++j) {
                                const index iw = ow * st[1] - left + j * dl[1];
                                if (iw < 0 || iw >= W) continue;
                                acc = modular::add(
                                    acc,
                                    modular::mul(
                                        w.data[static_cast<std::size_t>(((oc * Cg + c) * kh + i) * kw + j)],
                                        x.data[static_cast<std::size_t>(((n * C + g * Cg + c) * H + ih) * W + iw)]));
                            }
                        }
                    r.data[static_cast<std::size_t>(((n * O + oc) * OH + oh) * OW + ow)] = activate(acc, act);
                }
        }
    return r;
}

inline mod_tensor matmul(const mod_tensor& x, const mod_tensor& y, std::int64_t act, const ops::shape& od) {
    if (x.dims.rank() != 2 || y.dims.rank() != 2)
        throw error("fingerprint", concat("matmul of ", x.dims.to_string(), " and ", y.dims.to_string()), "rank 2");
    const index M = x.dims[0], K = x.dims[1], N = y.dims[1];
    mod_tensor r = zeros(od);
    for (index m = 0; m < M; ++m)
        for (index n = 0; n < N; ++n) {
            std::uint64_t acc = 0;
            for (index k = 0; k < K; ++k)
                acc = modular::add(acc, modular::mul(x.data[static_cast<std::size_t>(m * K + k)],
                                                     y.data[static_cast<std::size_t>(k * N + n)]));
            r.data[static_cast<std::size_t>(m * N + n)] = activate(acc, act);
        }
    return r;
}

inline mod_tensor transpose(const mod_tensor& x, const std::vector<std::int64_t>& perm_attr, const ops::shape& od) {
    const std::size_t r = x.dims.rank();
    std::vector<std::size_t> perm(r);
    for (std::size_t i = 0; i < r; ++i)
        perm[i] = perm_attr.empty() ? r - 1 - i : static_cast<std::size_t>(perm_attr[i]);
    std::vector<index> in_stride(r, 1);
    for (std::size_t i = r; i-- > 1;) in_stride[i - 1] = in_stride[i] * x.dims[i];
    mod_tensor out = zeros(od);
    std::vector<index> idx(r, 0);
    for (std::size_t o = 0; o < out.data.size(); ++o) {
        index off = 0;
        for (std::size_t i = 0; i < r; ++i) off += idx[i] * in_stride[perm[i]];
        out.data[o] = x.data[static_cast<std::size_t>(off)];
        for (std::size_t i = r; i-- > 0;) {
            if (++idx[i] < od[i]) break;
            idx[i] = 0;
        }
    }
    return out;
}

inline mod_tensor avgpool2d(const mod_tensor& x, const ops::attribute_map& a, const ops::shape& od) {
    using ops::attr_id;
    const auto& k = a.get_ints(attr_id::kernel);
    const auto& st = a.get_ints(attr_id::stride);
    const auto padding = a.get_int(attr_id::padding);
    const auto act = a.get_int(attr_id::activation);
    const index NC = x.dims[0] * x.dims[1], H = x.dims[2], W = x.dims[3], OH = od[2], OW = od[3];
    const index top = pad_before(H, OH, k[0], st[0], padding), left = pad_before(W, OW, k[1], st[1], padding);
    mod_tensor r = zeros(od);
    std::size_t z = 0;
    for (index p = 0; p < NC; ++p)
        for (index oh = 0; oh < OH; ++oh) {
            const index h0 = std::max<index>(oh * st[0] - top, 0), h1 = std::min(oh * st[0] - top + k[0], H);
            for (index ow = 0; ow < OW; ++ow) {
                const index w0 = std::max<index>(ow * st[1] - left, 0), w1 = std::min(ow * st[1] - left + k[1], W);
                std::uint64_t acc = 0;
                for (index h = h0; h < h1; ++h)
                    for (index w = w0; w < w1; ++w)
                        acc = modular::add(acc, x.data[static_cast<std::size_t>((p * H + h) * W + w)]);
                const auto count = static_cast<std::uint64_t>((h1 - h0) * (w1 - w0));
                r.data[z++] = activate(modular::mul(acc, modular::inverse(count)), act);
            }
        }
    return r;
}
/// What a modular kernel sees of one op.
struct modular_args {
    ops::op_kind kind;
    const ops::attribute_map& attrs;
    std::span<const mod_tensor* const> in;
    const ops::output_types& out;
    const ops::shape& od() const { return out[0].dims; }
};
using modular_fn = std::vector<mod_tensor> (*)(const modular_args&);

/// Tag of the kinds outside TASO's subset: the enumerator never generates them, so they have no
/// exact semantics here (fingerprints of graphs holding them are refused).
struct not_enumerated_t {};
inline constexpr not_enumerated_t not_enumerated{};

/// A row's entry: the modular kernel of a kind, or not_enumerated.
struct modular_semantics {
    modular_fn fn = nullptr;
    constexpr modular_semantics(std::vector<mod_tensor> (&f)(const modular_args&)) noexcept : fn(&f) {}
    constexpr modular_semantics(not_enumerated_t) noexcept {}
};

inline std::vector<mod_tensor> one(mod_tensor t) {
    std::vector<mod_tensor> r;
    r.push_back(std::move(t));
    return r;
}

template <class F> std::vector<mod_tensor> elementwise(const modular_args& m, F f) {
    if (!(m.in[0]->dims == m.in[1]->dims))
        throw error("fingerprint",
                    concat(ops::name(m.kind), " of ", m.in[0]->dims.to_string(), " and ", m.in[1]->dims.to_string()),
                    "equal shapes");
    mod_tensor r = zeros(m.od());
    for (std::size_t i = 0; i < r.data.size(); ++i) r.data[i] = f(m.in[0]->data[i], m.in[1]->data[i]);
    return one(std::move(r));
}

inline std::vector<mod_tensor> const_one_mod(const modular_args& m) {
    mod_tensor r = zeros(m.od());
    std::fill(r.data.begin(), r.data.end(), 1);
    return one(std::move(r));
}
inline std::vector<mod_tensor> const_pool_mod(const modular_args& m) {
    const ops::shape& od = m.od();
    mod_tensor r = zeros(od);
    std::fill(r.data.begin(), r.data.end(), modular::inverse(static_cast<std::uint64_t>(od[2] * od[3])));
    return one(std::move(r));
}
inline std::vector<mod_tensor> const_iconv_mod(const modular_args& m) {
    const ops::shape& od = m.od();
    mod_tensor r = zeros(od);
    const std::int64_t C = od[0], kh = od[2], kw = od[3];
    for (std::int64_t c = 0; c < C; ++c)
        r.data[static_cast<std::size_t>(((c * C + c) * kh + kh / 2) * kw + kw / 2)] = 1;
    return one(std::move(r));
}
inline std::vector<mod_tensor> const_imm_mod(const modular_args& m) {
    const ops::shape& od = m.od();
    mod_tensor r = zeros(od);
    for (std::int64_t i = 0; i < od[0]; ++i) r.data[static_cast<std::size_t>(i * od[0] + i)] = 1;
    return one(std::move(r));
}
inline std::vector<mod_tensor> conv2d_mod(const modular_args& m) {
    return one(conv2d(*m.in[0], *m.in[1], m.attrs, m.od()));
}
inline std::vector<mod_tensor> matmul_mod(const modular_args& m) {
    return one(matmul(*m.in[0], *m.in[1], m.attrs.get_int(ops::attr_id::activation), m.od()));
}
inline std::vector<mod_tensor> ewadd_mod(const modular_args& m) {
    return elementwise(m, [](std::uint64_t a, std::uint64_t b) { return modular::add(a, b); });
}
inline std::vector<mod_tensor> ewmul_mod(const modular_args& m) {
    return elementwise(m, [](std::uint64_t a, std::uint64_t b) { return modular::mul(a, b); });
}
inline std::vector<mod_tensor> smul_mod(const modular_args& m) {
    mod_tensor r = *m.in[0];
    for (auto& v : r.data) v = modular::mul(v, m.in[1]->data[0]);
    return one(std::move(r));
}
inline std::vector<mod_tensor> relu_mod(const modular_args& m) {
    mod_tensor r = *m.in[0];
    for (auto& v : r.data) v = modular::relu(v);
    return one(std::move(r));
}
inline std::vector<mod_tensor> transpose_mod(const modular_args& m) {
    return one(transpose(*m.in[0], m.attrs.get_ints(ops::attr_id::perm), m.od()));
}
inline std::vector<mod_tensor> enlarge_mod(const modular_args& m) {
    const mod_tensor& w = *m.in[0];
    const ops::shape& od = m.od();
    mod_tensor r = zeros(od);
    const std::int64_t kh = w.dims[2], kw = w.dims[3], KH = od[2], KW = od[3];
    const std::int64_t top = (KH - kh) / 2, left = (KW - kw) / 2;
    for (std::int64_t p = 0; p < w.dims[0] * w.dims[1]; ++p)
        for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j)
                r.data[static_cast<std::size_t>((p * KH + top + i) * KW + left + j)] =
                    w.data[static_cast<std::size_t>((p * kh + i) * kw + j)];
    return one(std::move(r));
}
inline std::vector<mod_tensor> avgpool2d_mod(const modular_args& m) {
    return one(avgpool2d(*m.in[0], m.attrs, m.od()));
}
inline std::vector<mod_tensor> concat_mod(const modular_args& m) {
    const ops::shape& od = m.od();
    const std::size_t ax = od.axis(m.attrs.get_int(ops::attr_id::axis));
    const auto [outer, extent, inner] = around(od, ax);
    (void)extent;
    mod_tensor r = zeros(od);
    std::size_t z = 0;
    for (std::int64_t o = 0; o < outer; ++o)
        for (const mod_tensor* t : m.in) {
            const auto chunk = static_cast<std::size_t>(t->dims[ax] * inner);
            std::copy_n(t->data.begin() + static_cast<std::ptrdiff_t>(o * static_cast<std::int64_t>(chunk)), chunk,
                        r.data.begin() + static_cast<std::ptrdiff_t>(z));
            z += chunk;
        }
    return one(std::move(r));
}
inline std::vector<mod_tensor> split_mod(const modular_args& m) {
    const mod_tensor& x = *m.in[0];
    const std::size_t ax = x.dims.axis(m.attrs.get_int(ops::attr_id::axis));
    const auto [outer, extent, inner] = around(x.dims, ax);
    std::vector<mod_tensor> rs;
    std::int64_t begin = 0;
    for (const auto& t : m.out) {
        mod_tensor r = zeros(t.dims);
        const std::int64_t len = t.dims[ax];
        std::size_t z = 0;
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t e = begin; e < begin + len; ++e)
                for (std::int64_t i = 0; i < inner; ++i)
                    r.data[z++] = x.data[static_cast<std::size_t>((o * extent + e) * inner + i)];
        begin += len;
        rs.push_back(std::move(r));
    }
    return rs;
}

/// The exact semantics of every op kind, indexed by op_kind: TASO's operator subset, which the
/// substitution generator enumerates, and not_enumerated for the rest.
inline constexpr std::array<modular_semantics, ops::num_op_kinds> modular_table = ops::by_kind<modular_semantics>({{
    {ops::op_kind::input, not_enumerated},
    {ops::op_kind::weight, not_enumerated},
    {ops::op_kind::const_pool, const_pool_mod},
    {ops::op_kind::const_iconv, const_iconv_mod},
    {ops::op_kind::const_imm, const_imm_mod},
    {ops::op_kind::const_one, const_one_mod},
    {ops::op_kind::conv2d, conv2d_mod},
    {ops::op_kind::matmul, matmul_mod},
    {ops::op_kind::ewadd, ewadd_mod},
    {ops::op_kind::ewmul, ewmul_mod},
    {ops::op_kind::smul, smul_mod},
    {ops::op_kind::relu, relu_mod},
    {ops::op_kind::transpose, transpose_mod},
    {ops::op_kind::enlarge, enlarge_mod},
    {ops::op_kind::avgpool2d, avgpool2d_mod},
    {ops::op_kind::maxpool2d, not_enumerated},
    {ops::op_kind::concat, concat_mod},
    {ops::op_kind::split, split_mod},
    {ops::op_kind::sub, not_enumerated},
    {ops::op_kind::div, not_enumerated},
    {ops::op_kind::pow, not_enumerated},
    {ops::op_kind::sqrt, not_enumerated},
    {ops::op_kind::sigmoid, not_enumerated},
    {ops::op_kind::tanh, not_enumerated},
    {ops::op_kind::gelu, not_enumerated},
    {ops::op_kind::erf, not_enumerated},
    {ops::op_kind::log, not_enumerated},
    {ops::op_kind::clip, not_enumerated},
    {ops::op_kind::identity, not_enumerated},
    {ops::op_kind::reshape, not_enumerated},
    {ops::op_kind::flatten, not_enumerated},
    {ops::op_kind::pad, not_enumerated},
    {ops::op_kind::slice, not_enumerated},
    {ops::op_kind::gather, not_enumerated},
    {ops::op_kind::global_avgpool, not_enumerated},
    {ops::op_kind::batchnorm, not_enumerated},
    {ops::op_kind::softmax, not_enumerated},
    {ops::op_kind::layernorm, not_enumerated},
    {ops::op_kind::reduce_sum, not_enumerated},
    {ops::op_kind::reduce_mean, not_enumerated},
    {ops::op_kind::reduce_max, not_enumerated},
    {ops::op_kind::lstm_cell, not_enumerated},
    {ops::op_kind::gru_cell, not_enumerated},
    {ops::op_kind::conv2d_bias, not_enumerated},
    {ops::op_kind::matmul_bias, not_enumerated},
    {ops::op_kind::const_fill, not_enumerated},
    {ops::op_kind::add_n, not_enumerated},
    {ops::op_kind::conv2d_grad_input, not_enumerated},
    {ops::op_kind::conv2d_grad_weight, not_enumerated},
    {ops::op_kind::relu_grad, not_enumerated},
    {ops::op_kind::sigmoid_grad, not_enumerated},
    {ops::op_kind::tanh_grad, not_enumerated},
    {ops::op_kind::gelu_grad, not_enumerated},
    {ops::op_kind::erf_grad, not_enumerated},
    {ops::op_kind::avgpool2d_grad, not_enumerated},
    {ops::op_kind::maxpool2d_grad, not_enumerated},
    {ops::op_kind::softmax_grad, not_enumerated},
    {ops::op_kind::layernorm_grad, not_enumerated},
    {ops::op_kind::batchnorm_grad, not_enumerated},
    {ops::op_kind::gather_grad, not_enumerated},
    {ops::op_kind::reduce_max_grad, not_enumerated},
    {ops::op_kind::lstm_cell_grad, not_enumerated},
    {ops::op_kind::gru_cell_grad, not_enumerated},
    {ops::op_kind::sgd_update, not_enumerated},
    {ops::op_kind::adam_update, not_enumerated},
    {ops::op_kind::constant, not_enumerated},
    {ops::op_kind::opaque, not_enumerated},
    {ops::op_kind::leaky_relu, not_enumerated},
    {ops::op_kind::hard_sigmoid, not_enumerated},
    {ops::op_kind::hard_swish, not_enumerated},
    {ops::op_kind::exp, not_enumerated},
    {ops::op_kind::prelu, not_enumerated},
    {ops::op_kind::softplus, not_enumerated},
    {ops::op_kind::elu, not_enumerated},
    {ops::op_kind::abs, not_enumerated},
    {ops::op_kind::lrn, not_enumerated},
    {ops::op_kind::lrn_grad, not_enumerated},
    {ops::op_kind::instance_norm, not_enumerated},
    {ops::op_kind::softsign, not_enumerated},
    {ops::op_kind::max, not_enumerated},
    {ops::op_kind::min, not_enumerated},
}});
}  // namespace detail

inline bool has_modular_semantics(ops::op_kind kind) noexcept {
    return detail::modular_table[static_cast<std::size_t>(kind)].fn != nullptr;
}

inline std::vector<mod_tensor> evaluate_modular(ops::op_kind kind, const ops::attribute_map& attrs,
                                                std::span<const mod_tensor* const> in, const ops::output_types& out) {
    const detail::modular_fn fn = detail::modular_table[static_cast<std::size_t>(kind)].fn;
    if (fn == nullptr)
        throw error("fingerprint", concat("op ", ops::name(kind), " is not supported"), "one of TASO's operators");
    return fn(detail::modular_args{kind, attrs, in, out});
}

}  // namespace goopt::subst
