#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Folding: nodes whose inputs are all known at import time (shape subgraphs such as
/// Shape -> Gather -> Concat -> Reshape, Constant, masks, weight arithmetic) are evaluated while
/// importing, because the graph IR has static shapes.

#include <goopt/io/onnx/importer.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

namespace goopt::io::detail {

/// How an elementwise ONNX op computes on constants: `real` on doubles; `integer` on int64s, giving
/// what went wrong ("overflows 64 bits") or an empty view. `compare` ops give booleans; `Where`
/// (arity 3) takes its type from its second operand; a `variadic` op (Max, Min) takes any number of
/// inputs, folded from the left with its binary function.
struct onnx_elementwise {
    int arity = 2;
    bool compare = false;
    bool variadic = false;
    double (*real)(double, double, double) = nullptr;
    std::string_view (*integer)(std::int64_t, std::int64_t, std::int64_t, std::int64_t&) = nullptr;
};

namespace elementwise {
inline constexpr std::string_view overflow = "overflows 64 bits";
inline constexpr onnx_elementwise add{
    .real = [](double a, double b, double) { return a + b; },
    .integer = [](std::int64_t a, std::int64_t b, std::int64_t,
                  std::int64_t& r) { return __builtin_add_overflow(a, b, &r) ? overflow : std::string_view{}; }};
inline constexpr onnx_elementwise sub{
    .real = [](double a, double b, double) { return a - b; },
    .integer = [](std::int64_t a, std::int64_t b, std::int64_t,
                  std::int64_t& r) { return __builtin_sub_overflow(a, b, &r) ? overflow : std::string_view{}; }};
inline constexpr onnx_elementwise mul{
    .real = [](double a, double b, double) { return a * b; },
    .integer = [](std::int64_t a, std::int64_t b, std::int64_t,
                  std::int64_t& r) { return __builtin_mul_overflow(a, b, &r) ? overflow : std::string_view{}; }};
inline constexpr onnx_elementwise div{.real = [](double a, double b, double) { return a / b; },
                                      .integer =
                                          [](std::int64_t a, std::int64_t b, std::int64_t, std::int64_t& r) {
                                              if (b == 0) return std::string_view{"divides by zero"};
                                              if (a == std::numeric_limits<std::int64_t>::min() && b == -1)
                                                  return overflow;
                                              r = a / b;
                                              return std::string_view{};
                                          }};
inline constexpr onnx_elementwise pow{
    .real = [](double a, double b, double) { return std::pow(a, b); },
    .integer =
        [](std::int64_t a, std::int64_t b, std::int64_t, std::int64_t& r) {
            r = onnx_const::to_int(std::pow(static_cast<double>(a), static_cast<double>(b)));
            return std::string_view{};
        }};
/// Max and Min as the interpreter's kernels compute them: NaN in either operand gives NaN.
inline constexpr onnx_elementwise max{
    .variadic = true,
    .real = [](double a, double b, double) { return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b); },
    .integer = [](std::int64_t a, std::int64_t b, std::int64_t,
                  std::int64_t& r) { return r = std::max(a, b), std::string_view{}; }};
inline constexpr onnx_elementwise min{
    .variadic = true,
    .real = [](double a, double b, double) { return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b); },
    .integer = [](std::int64_t a, std::int64_t b, std::int64_t,
                  std::int64_t& r) { return r = std::min(a, b), std::string_view{}; }};
inline constexpr onnx_elementwise sqrt{.arity = 1, .real = [](double a, double, double) { return std::sqrt(a); }};
inline constexpr onnx_elementwise abs{.arity = 1, .real = [](double a, double, double) { return std::abs(a); }};
inline constexpr onnx_elementwise exp{.arity = 1, .real = [](double a, double, double) { return std::exp(a); }};
inline constexpr onnx_elementwise reciprocal{.arity = 1, .real = [](double a, double, double) { return 1 / a; }};
inline constexpr onnx_elementwise neg{.arity = 1,
                                      .real = [](double a, double, double) { return -a; },
                                      .integer =
                                          [](std::int64_t a, std::int64_t, std::int64_t, std::int64_t& r) {
                                              if (a == std::numeric_limits<std::int64_t>::min()) return overflow;
                                              r = -a;
                                              return std::string_view{};
                                          }};
// rounding and the sign, for the shape arithmetic exporters write (an output size floor(h * scale));
// Round is ONNX's: halves to the even neighbour (nearbyint in the default rounding mode)
inline constexpr onnx_elementwise floor{.arity = 1, .real = [](double a, double, double) { return std::floor(a); }};
inline constexpr onnx_elementwise ceil{.arity = 1, .real = [](double a, double, double) { return std::ceil(a); }};
inline constexpr onnx_elementwise round{.arity = 1, .real = [](double a, double, double) { return std::nearbyint(a); }};
inline constexpr onnx_elementwise sign{.arity = 1,
                                       .real = [](double a, double, double) { return double((a > 0) - (a < 0)); },
                                       .integer =
                                           [](std::int64_t a, std::int64_t, std::int64_t, std::int64_t& r) {
                                               r = (a > 0) - (a < 0);
                                               return std::string_view{};
                                           }};
/// Mod with fmod = 0 (integers): the remainder takes the divisor's sign, as Python's %.
inline constexpr onnx_elementwise mod{.real =
                                          [](double a, double b, double) {
                                              const double r = std::fmod(a, b);
                                              return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
                                          },
                                      .integer =
                                          [](std::int64_t a, std::int64_t b, std::int64_t, std::int64_t& r) {
                                              if (b == 0) return std::string_view{"divides by zero"};
                                              if (b == -1) return r = 0, std::string_view{};  // INT64_MIN % -1
                                              r = a % b;
                                              if (r != 0 && ((r < 0) != (b < 0))) r += b;
                                              return std::string_view{};
                                          }};
/// Mod with fmod = 1: the remainder takes the dividend's sign, as C's fmod.
inline constexpr onnx_elementwise fmod{.real = [](double a, double b, double) { return std::fmod(a, b); },
                                       .integer =
                                           [](std::int64_t a, std::int64_t b, std::int64_t, std::int64_t& r) {
                                               if (b == 0) return std::string_view{"divides by zero"};
                                               r = b == -1 ? 0 : a % b;
                                               return std::string_view{};
                                           }};
inline constexpr onnx_elementwise logical_not{
    .arity = 1, .compare = true, .real = [](double a, double, double) { return double(a == 0); }};
inline constexpr onnx_elementwise logical_and{
    .compare = true, .real = [](double a, double b, double) { return double(a != 0 && b != 0); }};
inline constexpr onnx_elementwise logical_or{
    .compare = true, .real = [](double a, double b, double) { return double(a != 0 || b != 0); }};
inline constexpr onnx_elementwise logical_xor{
    .compare = true, .real = [](double a, double b, double) { return double((a != 0) != (b != 0)); }};
inline constexpr onnx_elementwise equal{.compare = true,
                                        .real = [](double a, double b, double) { return double(a == b); }};
inline constexpr onnx_elementwise greater{.compare = true,
                                          .real = [](double a, double b, double) { return double(a > b); }};
inline constexpr onnx_elementwise less{.compare = true,
                                       .real = [](double a, double b, double) { return double(a < b); }};
inline constexpr onnx_elementwise where{.arity = 3,
                                        .real = [](double c, double a, double b) { return c != 0 ? a : b; },
                                        .integer =
                                            [](std::int64_t c, std::int64_t a, std::int64_t b, std::int64_t& r) {
                                                r = c != 0 ? a : b;
                                                return std::string_view{};
                                            }};
}  // namespace elementwise

// ---- implementation ----

inline std::optional<onnx_const> onnx_importer::fold_constant(const node_t& n, const onnx_handler&) {
    if (const auto* a = attr(n, "value")) return decode(a->t(), concat("node ", describe(n)));
    onnx_const c;
    if (const auto* a = attr(n, "value_float")) {
        c = onnx_const::make(ops::dtype::f32, {});
        c.f[0] = a->f();
    } else if (const auto* a = attr(n, "value_int")) {
        c = onnx_const::make(ops::dtype::i64, {});
        c.i[0] = a->i();
    } else if (const auto* a = attr(n, "value_ints")) {
        c = onnx_const::make(ops::dtype::i64, {a->ints_size()});
        for (int k = 0; k < a->ints_size(); ++k) c.i[static_cast<std::size_t>(k)] = a->ints(k);
    } else if (const auto* a = attr(n, "value_floats")) {
        c = onnx_const::make(ops::dtype::f32, {a->floats_size()});
        for (int k = 0; k < a->floats_size(); ++k) c.f[static_cast<std::size_t>(k)] = a->floats(k);
    } else {
        fail(n, "has no value attribute it can import", "value, value_float(s) or value_int(s)");
    }
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_shape(const node_t& n, const onnx_handler&) {
    const ops::shape& s = dims_in(n, 0);
    const auto r = static_cast<std::int64_t>(s.rank());
    auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + r : v, 0, r); };
    const std::int64_t b = clamp(attr_int(n, "start", 0)), e = clamp(attr_int(n, "end", r));
    onnx_const c = onnx_const::make(ops::dtype::i64, {std::max<std::int64_t>(e - b, 0)});
    for (std::int64_t k = b; k < e; ++k) c.i[static_cast<std::size_t>(k - b)] = s[static_cast<std::size_t>(k)];
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_constant_of_shape(const node_t& n, const onnx_handler&) {
    ops::shape s;
    for (auto d : const_in(n, 0, "shape").ints()) s.push_back(d);
    onnx_const fill = onnx_const::make(ops::dtype::f32, {1});
    if (const auto* a = attr(n, "value")) fill = decode(a->t(), concat("node ", describe(n)));
    if (fill.size() != 1) fail(n, concat("the value attribute holds ", fill.size(), " values"), "1");
    onnx_const c = onnx_const::make(fill.type, s, fold_budget_);
    for (std::size_t k = 0; k < c.size(); ++k) c.set(k, fill.at(0));
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_identity(const node_t& n, const onnx_handler&) {
    return *entry(n, 0).value;
}

inline std::optional<onnx_const> onnx_importer::fold_cast(const node_t& n, const onnx_handler&) {
    const auto to = onnx_dtype(static_cast<int>(attr_int(n, "to", 0)));
    if (!to) return std::nullopt;
    const onnx_const& x = *entry(n, 0).value;
    onnx_const c = onnx_const::make(*to, x.dims);
    for (std::size_t k = 0; k < x.size(); ++k) {
        if (x.integral()) c.set_int(k, x.i[k]);
        else c.set(k, ops::is_floating(*to) ? x.f[k] : std::trunc(x.f[k]));
    }
    return c;
}

// Reshape, Flatten, Unsqueeze, Squeeze: the same elements in the shape the graph op would give.

inline std::optional<onnx_const> onnx_importer::fold_reshape(const node_t& n, const onnx_handler&) {
    onnx_const c = *entry(n, 0).value;
    const auto target = reshape_target(n, c.dims);
    c.dims = ops::shape_rules::reshape(std::array{ops::tensor_type{c.dims, c.type}}, {{ops::attr_id::shape, target}})[0]
                 .dims;
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_flatten(const node_t& n, const onnx_handler&) {
    onnx_const c = *entry(n, 0).value;
    const auto ax = attr_int(n, "axis", 1);
    const auto r = static_cast<std::int64_t>(c.dims.rank());
    if (ax < -r || ax > r) fail(n, concat("axis ", ax, " is outside [", -r, ", ", r, "]"), "an axis within the rank");
    std::int64_t a = 1, b = 1;
    for (std::int64_t k = 0; k < r; ++k) (k < (ax < 0 ? ax + r : ax) ? a : b) *= c.dims[static_cast<std::size_t>(k)];
    c.dims = {a, b};
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_unsqueeze(const node_t& n, const onnx_handler&) {
    onnx_const c = *entry(n, 0).value;
    c.dims = unsqueezed(n, c.dims);
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_squeeze(const node_t& n, const onnx_handler&) {
    onnx_const c = *entry(n, 0).value;
    c.dims = squeezed(n, c.dims);
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_gather(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    const onnx_const& idx = *entry(n, 1).value;
    const std::size_t ax = x.dims.axis(attr_int(n, "axis", 0));
    ops::shape s;
    std::size_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < ax; ++k) s.push_back(x.dims[k]), outer *= static_cast<std::size_t>(x.dims[k]);
    for (auto d : idx.dims) s.push_back(d);
    for (std::size_t k = ax + 1; k < x.dims.rank(); ++k)
        s.push_back(x.dims[k]), inner *= static_cast<std::size_t>(x.dims[k]);
    onnx_const c = onnx_const::make(x.type, s, fold_budget_);
    const std::int64_t ext = x.dims[ax];
    std::size_t out = 0;
    for (std::size_t p = 0; p < outer; ++p)
        for (std::size_t j = 0; j < idx.size(); ++j) {
            std::int64_t v = idx.int_at(j);
            if (v < -ext || v >= ext) fail(n, concat("index ", v), concat("an index in [", -ext, ", ", ext, ")"));
            if (v < 0) v += ext;
            for (std::size_t q = 0; q < inner; ++q, ++out) {
                const std::size_t src = (p * static_cast<std::size_t>(ext) + static_cast<std::size_t>(v)) * inner + q;
                if (c.integral()) c.i[out] = x.i[src];
                else c.f[out] = x.f[src];
            }
        }
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_concat(const node_t& n, const onnx_handler&) {
    const onnx_const& first = *entry(n, 0).value;
    std::vector<ops::tensor_type> types;
    for (int k = 0; k < n.input_size(); ++k) types.push_back({dims_in(n, k), type_in(n, k).type});
    const auto out = ops::shape_rules::concat(types, {{ops::attr_id::axis, attr_int(n, "axis", 0)}});
    onnx_const c = onnx_const::make(first.type, out[0].dims);
    const std::size_t ax = out[0].dims.axis(attr_int(n, "axis", 0));
    std::size_t outer = 1;
    for (std::size_t k = 0; k < ax; ++k) outer *= static_cast<std::size_t>(out[0].dims[k]);
    std::size_t pos = 0;
    for (std::size_t p = 0; p < outer; ++p)
        for (int k = 0; k < n.input_size(); ++k) {
            const onnx_const& x = *entry(n, k).value;
            const std::size_t chunk = x.size() / std::max<std::size_t>(outer, 1);
            for (std::size_t q = 0; q < chunk; ++q) c.set(pos++, x.at(p * chunk + q));
        }
    return c;
}

/// Slices of 1-D constants (shape vectors); others become a slice op.
inline std::optional<onnx_const> onnx_importer::fold_slice(const node_t& n, const onnx_handler&) {
    if (!has_input(n, 1)) return std::nullopt;
    const onnx_const& x = *entry(n, 0).value;
    if (x.dims.rank() != 1) return std::nullopt;
    const auto starts = const_in(n, 1, "starts").ints(), ends = const_in(n, 2, "ends").ints();
    const auto steps = has_input(n, 4) ? const_in(n, 4, "steps").ints() : std::vector<std::int64_t>{1};
    if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 || steps[0] != 1) return std::nullopt;
    const std::int64_t d = x.dims[0];
    auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + d : v, 0, d); };
    const std::int64_t b = clamp(starts[0]), e = clamp(ends[0]);
    onnx_const c = onnx_const::make(x.type, {std::max<std::int64_t>(e - b, 0)});
    for (std::int64_t k = b; k < e; ++k) c.set(static_cast<std::size_t>(k - b), x.at(static_cast<std::size_t>(k)));
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_range(const node_t& n, const onnx_handler&) {
    const double start = scalar_in(n, 0, "start"), limit = scalar_in(n, 1, "limit"), delta = scalar_in(n, 2, "delta");
    if (delta == 0) fail(n, "delta is 0", "a nonzero delta");
    const double count = std::max(std::ceil((limit - start) / delta), 0.0);
    if (count > static_cast<double>(fold_budget_))
        fail(n, concat("the range has ", count, " elements, more than folding may still compute"),
             concat("at most ", fold_budget_));
    onnx_const c = onnx_const::make(entry(n, 0).value->type, {static_cast<std::int64_t>(count)});
    for (std::size_t k = 0; k < c.size(); ++k) c.set(k, start + static_cast<double>(k) * delta);
    return c;
}

/// Expand broadcasts its input to a shape.
inline std::optional<onnx_const> onnx_importer::fold_expand(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    ops::shape target;
    for (auto d : const_in(n, 1, "shape").ints()) target.push_back(d);
    onnx_const c = onnx_const::make(x.type, ops::shape_rules::broadcast(x.dims, target), fold_budget_);
    const auto offs = onnx_broadcast_offsets(c.dims, x.dims);
    for (std::size_t e = 0; e < c.size(); ++e) {
        if (c.integral()) c.i[e] = x.int_at(offs[e]);
        else c.f[e] = x.at(offs[e]);
    }
    return c;
}

/// Mod's fmod attribute picks whose sign the remainder takes.
inline std::optional<onnx_const> onnx_importer::fold_mod(const node_t& n, const onnx_handler& h) {
    onnx_handler with = h;
    with.math = attr_int(n, "fmod", 0) != 0 ? &elementwise::fmod : &elementwise::mod;
    return fold_elementwise(n, with);
}

/// Trilu keeps a matrix's upper (or lower) triangle from diagonal k, over the last two axes: a
/// causal mask built in the graph from a constant.
inline std::optional<onnx_const> onnx_importer::fold_trilu(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    if (x.dims.rank() < 2) fail(n, concat("input of shape ", x.dims.to_string()), "rank >= 2");
    const std::int64_t k = has_input(n, 1) ? const_in(n, 1, "k").int_at(0) : 0;
    const bool upper = attr_int(n, "upper", 1) != 0;
    const std::int64_t rows = x.dims[x.dims.rank() - 2], cols = x.dims.back();
    onnx_const c = x;
    for (std::size_t e = 0; e < c.size(); ++e) {
        const auto at = static_cast<std::int64_t>(e) % (rows * cols), i = at / cols, j = at % cols;
        if (upper ? j - i >= k : j - i <= k) continue;
        if (c.integral()) c.i[e] = 0;
        else c.f[e] = 0;
    }
    return c;
}

/// Elementwise ops on broadcast operands, as the row's `math` computes them.
inline std::optional<onnx_const> onnx_importer::fold_elementwise(const node_t& n, const onnx_handler& h) {
    const onnx_elementwise& m = *h.math;
    const int count = m.variadic ? n.input_size() : m.arity;
    if (count == 0) fail(n, "has no inputs", "at least one");
    std::vector<const onnx_const*> in;
    for (int k = 0; k < count; ++k) in.push_back(entry(n, k).value.get());
    ops::shape out = in[0]->dims;
    for (std::size_t k = 1; k < in.size(); ++k) out = ops::shape_rules::broadcast(out, in[k]->dims);
    const ops::dtype type = m.compare ? ops::dtype::boolean : m.arity == 3 ? in[1]->type : in[0]->type;
    onnx_const c = onnx_const::make(type, out, fold_budget_);
    std::vector<std::vector<std::size_t>> offs;
    for (const auto* x : in) offs.push_back(onnx_broadcast_offsets(out, x->dims));
    const bool int_math = !m.compare && c.integral() && m.integer;
    std::array<double, 3> v{};
    std::array<std::int64_t, 3> iv{};
    for (std::size_t e = 0; e < c.size(); ++e) {
        if (m.variadic && int_math) {
            std::int64_t r = in[0]->int_at(offs[0][e]);
            for (std::size_t k = 1; k < in.size(); ++k) (void)m.integer(r, in[k]->int_at(offs[k][e]), 0, r);
            c.i[e] = r;
        } else if (m.variadic) {
            double r = in[0]->at(offs[0][e]);
            for (std::size_t k = 1; k < in.size(); ++k) r = m.real(r, in[k]->at(offs[k][e]), 0);
            c.set(e, r);
        } else if (int_math) {
            for (std::size_t k = 0; k < in.size(); ++k) iv[k] = in[k]->int_at(offs[k][e]);
            std::int64_t r = 0;
            if (const auto problem = m.integer(iv[0], iv[1], iv[2], r); !problem.empty())
                fail(n, concat("integer ", n.op_type(), " ", problem), "a result within 64-bit integers");
            c.i[e] = r;
        } else {
            for (std::size_t k = 0; k < in.size(); ++k) v[k] = in[k]->at(offs[k][e]);
            c.set(e, m.real(v[0], v[1], v[2]));
        }
    }
    return c;
}

}  // namespace goopt::io::detail
