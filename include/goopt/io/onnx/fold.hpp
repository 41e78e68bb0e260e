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
inline constexpr onnx_elementwise is_nan{
    .arity = 1, .compare = true, .real = [](double a, double, double) { return double(std::isnan(a)); }};
inline constexpr onnx_elementwise greater_or_equal{.compare = true,
                                                   .real = [](double a, double b, double) { return double(a >= b); }};
inline constexpr onnx_elementwise less_or_equal{.compare = true,
                                                .real = [](double a, double b, double) { return double(a <= b); }};
// The trigonometric and hyperbolic functions (ONNX defines them on floats only): sinusoidal position
// tables and rotary embeddings computed in the graph from constant positions.
inline constexpr onnx_elementwise sin{.arity = 1, .real = [](double a, double, double) { return std::sin(a); }};
inline constexpr onnx_elementwise cos{.arity = 1, .real = [](double a, double, double) { return std::cos(a); }};
inline constexpr onnx_elementwise tan{.arity = 1, .real = [](double a, double, double) { return std::tan(a); }};
inline constexpr onnx_elementwise asin{.arity = 1, .real = [](double a, double, double) { return std::asin(a); }};
inline constexpr onnx_elementwise acos{.arity = 1, .real = [](double a, double, double) { return std::acos(a); }};
inline constexpr onnx_elementwise atan{.arity = 1, .real = [](double a, double, double) { return std::atan(a); }};
inline constexpr onnx_elementwise sinh{.arity = 1, .real = [](double a, double, double) { return std::sinh(a); }};
inline constexpr onnx_elementwise cosh{.arity = 1, .real = [](double a, double, double) { return std::cosh(a); }};
inline constexpr onnx_elementwise asinh{.arity = 1, .real = [](double a, double, double) { return std::asinh(a); }};
inline constexpr onnx_elementwise acosh{.arity = 1, .real = [](double a, double, double) { return std::acosh(a); }};
inline constexpr onnx_elementwise atanh{.arity = 1, .real = [](double a, double, double) { return std::atanh(a); }};
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

/// `x` in element type `to`: floats to integers truncated toward zero.
inline onnx_const onnx_cast(const onnx_const& x, ops::dtype to) {
    onnx_const c = onnx_const::make(to, x.dims);
    for (std::size_t k = 0; k < std::min(x.size(), c.size()); ++k) {
        if (x.integral()) c.set_int(k, x.i[k]);
        else c.set(k, ops::is_floating(to) ? x.f[k] : std::trunc(x.f[k]));
    }
    return c;
}

inline std::optional<onnx_const> onnx_importer::fold_cast(const node_t& n, const onnx_handler&) {
    const auto to = onnx_dtype(static_cast<int>(attr_int(n, "to", 0)));
    if (!to) return std::nullopt;
    return onnx_cast(*entry(n, 0).value, *to);
}

/// CastLike of a constant: only its first input needs a value (the row folds without values, so
/// that a constant cast like a computed tensor folds too).
inline std::optional<onnx_const> onnx_importer::fold_cast_like(const node_t& n, const onnx_handler&) {
    if (!has_input(n, 0) || !entry(n, 0).value) return std::nullopt;
    return onnx_cast(*entry(n, 0).value, type_in(n, 1).type);
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
    if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
        fail(n, concat("start ", start, ", limit ", limit, ", delta ", delta), "finite start, limit and delta");
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

/// Size: the element count of its input, from the shape alone.
inline std::optional<onnx_const> onnx_importer::fold_size(const node_t& n, const onnx_handler&) {
    onnx_const c = onnx_const::make(ops::dtype::i64, {});
    c.i[0] = dims_in(n, 0).num_elements();
    return c;
}

/// ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd of a constant (an element count from a
/// shape, a constant mask's extent). Integers are summed and multiplied exactly; ReduceMean of
/// integers is left to the graph op.
inline std::optional<onnx_const> onnx_importer::fold_reduce(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    const std::string& op = n.op_type();
    if (op == "ReduceMean" && x.integral()) return std::nullopt;
    const auto axes = axes_of(n, 1, "axes", false);
    if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0) != 0) return x;
    const ops::attribute_map a{{ops::attr_id::axes, axes}, {ops::attr_id::keepdims, attr_int(n, "keepdims", 1)}};
    const ops::tensor_type t{x.dims, x.type};
    const ops::shape out = ops::shape_rules::reduce(std::span(&t, 1), a)[0].dims;
    std::vector<bool> reduced(x.dims.rank(), false);
    for (const std::size_t k : ops::shape_rules::detail::reduced_axes(x.dims, a)) reduced[k] = true;
    // the output offset of every input element: its coordinates with the reduced axes dropped
    const std::size_t r = x.dims.rank();
    std::vector<std::size_t> stride(r, 0);
    for (std::size_t k = r, s = 1; k-- > 0;)
        if (!reduced[k]) stride[k] = s, s *= static_cast<std::size_t>(x.dims[k]);
    onnx_const c = onnx_const::make(x.type, out);
    const bool extreme = op == "ReduceMax" || op == "ReduceMin";
    std::vector<std::uint8_t> seen(c.size(), 0);
    std::vector<double> acc(c.size(), op == "ReduceProd" ? 1.0 : 0.0);
    std::vector<std::int64_t> iacc(c.size(), op == "ReduceProd" ? 1 : 0);
    std::vector<std::int64_t> idx(r, 0);
    for (std::size_t e = 0; e < x.size(); ++e) {
        std::size_t o = 0;
        for (std::size_t k = 0; k < r; ++k) o += static_cast<std::size_t>(idx[k]) * stride[k];
        if (x.integral()) {
            const std::int64_t v = x.i[e];
            std::int64_t& s = iacc[o];
            bool overflow = false;
            if (extreme) s = !seen[o] ? v : op == "ReduceMax" ? std::max(s, v) : std::min(s, v);
            else if (op == "ReduceProd") overflow = __builtin_mul_overflow(s, v, &s);
            else overflow = __builtin_add_overflow(s, v, &s);
            if (overflow)
                fail(n, concat("integer ", op, " ", elementwise::overflow), "a result within 64-bit integers");
        } else {
            const double v = x.f[e];
            double& s = acc[o];
            // NaN propagates through the extremes too, as through the graph's reduce_max
            if (extreme)
                s = !seen[o] || std::isnan(v) ? v
                    : std::isnan(s)           ? s
                    : op == "ReduceMax"       ? std::max(s, v)
                                              : std::min(s, v);
            else if (op == "ReduceProd") s *= v;
            else s += v;
        }
        seen[o] = 1;
        for (std::size_t k = r; k-- > 0;) {
            if (++idx[k] < x.dims[k]) break;
            idx[k] = 0;
        }
    }
    const double count = x.size() > 0 && c.size() > 0 ? static_cast<double>(x.size() / c.size()) : 0.0;
    for (std::size_t o = 0; o < c.size(); ++o) {
        if (extreme && !seen[o])
            fail(n, concat(op, " over an empty axis of a constant of shape ", x.dims.to_string()),
                 "a nonempty reduced extent");
        if (x.integral()) c.i[o] = iacc[o];
        else c.f[o] = op == "ReduceMean" ? acc[o] / count : acc[o];
    }
    return c;
}

/// CumSum of a constant along the axis its second input names: inclusive or exclusive, forward or
/// reversed (position ids counted from a constant mask).
inline std::optional<onnx_const> onnx_importer::fold_cumsum(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    if (x.dims.rank() == 0) fail(n, "input of rank 0", "a tensor of rank >= 1");
    const std::size_t ax = x.dims.axis(const_in(n, 1, "axis").int_at(0));
    const bool exclusive = attr_int(n, "exclusive", 0) != 0, reverse = attr_int(n, "reverse", 0) != 0;
    std::size_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < ax; ++k) outer *= static_cast<std::size_t>(x.dims[k]);
    for (std::size_t k = ax + 1; k < x.dims.rank(); ++k) inner *= static_cast<std::size_t>(x.dims[k]);
    const auto len = static_cast<std::size_t>(x.dims[ax]);
    onnx_const c = onnx_const::make(x.type, x.dims);
    for (std::size_t p = 0; p < outer; ++p)
        for (std::size_t q = 0; q < inner; ++q) {
            double s = 0;
            std::int64_t is = 0;
            for (std::size_t j = 0; j < len; ++j) {
                const std::size_t e = (p * len + (reverse ? len - 1 - j : j)) * inner + q;
                if (x.integral()) {  // int_at and at: a file may hold fewer values than its dims say
                    const std::int64_t before = is;
                    if (__builtin_add_overflow(is, x.int_at(e), &is))
                        fail(n, concat("integer CumSum ", elementwise::overflow), "sums within 64-bit integers");
                    c.i[e] = exclusive ? before : is;
                } else {
                    const double before = s;
                    s += x.at(e);
                    c.f[e] = exclusive ? before : s;
                }
            }
        }
    return c;
}

/// The scale (or zero point) index of every element of x for QuantizeLinear and DequantizeLinear:
/// one for the tensor (a scalar or one-element scale), one per index of `axis` (a 1-D scale), or
/// one per block of `block_size` along `axis` (operator set 21: a scale of x's rank).
inline std::vector<std::size_t> onnx_importer::quantization_index(const node_t& n, const ops::shape& x,
                                                                  const ops::shape& scale) {
    const std::size_t size = static_cast<std::size_t>(x.num_elements());
    if (scale.num_elements() == 1 && scale.rank() <= 1) return std::vector<std::size_t>(size, 0);
    if (x.rank() == 0) fail(n, concat("a scale of shape ", scale.to_string(), " for a scalar"), "one scale");
    const std::size_t ax = x.axis(attr_int(n, "axis", 1));
    const std::int64_t block = attr_int(n, "block_size", 0);
    std::size_t inner = 1;
    for (std::size_t k = ax + 1; k < x.rank(); ++k) inner *= static_cast<std::size_t>(x[k]);
    std::vector<std::size_t> index(size);
    if (block <= 0) {
        if (scale.rank() != 1 || scale[0] != x[ax])
            fail(n, concat("a scale of shape ", scale.to_string(), " for an input of shape ", x.to_string()),
                 concat("one scale, or one per index of axis ", ax, " ([", x[ax], "])"));
        for (std::size_t e = 0; e < size; ++e) index[e] = e / inner % static_cast<std::size_t>(x[ax]);
        return index;
    }
    ops::shape want = x;
    want[ax] = (x[ax] - 1) / block + 1;
    if (scale != want)
        fail(n,
             concat("a scale of shape ", scale.to_string(), " for blocks of ", block, " of an input of shape ",
                    x.to_string()),
             concat("a scale of shape ", want.to_string()));
    std::vector<std::int64_t> idx(x.rank(), 0);
    for (std::size_t e = 0; e < size; ++e) {
        std::size_t o = 0;
        for (std::size_t k = 0; k < x.rank(); ++k)
            o = o * static_cast<std::size_t>(want[k]) + static_cast<std::size_t>(k == ax ? idx[k] / block : idx[k]);
        index[e] = o;
        for (std::size_t k = x.rank(); k-- > 0;) {
            if (++idx[k] < x[k]) break;
            idx[k] = 0;
        }
    }
    return index;
}

/// A zero point has its scale's shape; one value each, of rank 0 or 1, is one for the tensor.
inline void onnx_importer::check_zero_point(const node_t& n, const onnx_const& scale, const onnx_const* zero) const {
    if (!zero || zero->dims == scale.dims ||
        (zero->size() == 1 && scale.size() == 1 && zero->dims.rank() <= 1 && scale.dims.rank() <= 1))
        return;
    fail(n,
         concat("a zero point of shape ", zero->dims.to_string(), " beside a scale of shape ", scale.dims.to_string()),
         "the scale's shape");
}

/// DequantizeLinear of a constant, (x - zero point) x scale in the scale's type: a weight-only
/// quantized model (QDQ) keeps each weight as 8-bit integers and a DequantizeLinear, which folds to
/// the float weight that the graph then holds.
inline std::optional<onnx_const> onnx_importer::fold_dequantize(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    const onnx_const& scale = const_in(n, 1, "x_scale");
    if (!ops::is_floating(scale.type)) fail(n, "an integer x_scale", "a floating-point scale");
    const onnx_const* zero = has_input(n, 2) ? &const_in(n, 2, "x_zero_point") : nullptr;
    check_zero_point(n, scale, zero);
    const auto index = quantization_index(n, x.dims, scale.dims);
    onnx_const c = onnx_const::make(scale.type, x.dims);
    for (std::size_t e = 0; e < c.size(); ++e)
        c.f[e] = (x.at(e) - (zero ? zero->at(index[e]) : 0.0)) * scale.at(index[e]);
    return c;
}

/// QuantizeLinear of a constant: round(x / scale) to even, plus the zero point, saturated to the
/// zero point's type (without one: output_dtype's, operator set 21, else uint8); a weight quantized
/// in the graph before its DequantizeLinear.
inline std::optional<onnx_const> onnx_importer::fold_quantize(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    const onnx_const& scale = const_in(n, 1, "y_scale");
    const onnx_const* zero = has_input(n, 2) ? &const_in(n, 2, "y_zero_point") : nullptr;
    const auto given = onnx_dtype(static_cast<int>(attr_int(n, "output_dtype", 0)));
    const ops::dtype type = zero ? zero->type : given ? *given : ops::dtype::u8;
    double lo = 0, hi = 255;
    if (type == ops::dtype::i8) lo = -128, hi = 127;
    else if (type == ops::dtype::i32) lo = -2147483648.0, hi = 2147483647.0;
    else if (type != ops::dtype::u8) return std::nullopt;  // 16-bit, 4-bit and float 8 types: not held
    check_zero_point(n, scale, zero);
    const auto index = quantization_index(n, x.dims, scale.dims);
    onnx_const c = onnx_const::make(type, x.dims);
    for (std::size_t e = 0; e < c.size(); ++e) {
        const double q = std::nearbyint(x.at(e) / scale.at(index[e])) + (zero ? zero->at(index[e]) : 0.0);
        if (std::isnan(q)) fail(n, concat("x / scale is NaN at element ", e), "finite values and a nonzero scale");
        c.i[e] = static_cast<std::int64_t>(std::clamp(q, lo, hi));
    }
    return c;
}

/// Shrink of a constant: x + bias below -lambd, x - bias above lambd, 0 between.
inline std::optional<onnx_const> onnx_importer::fold_shrink(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    const double lambd = attr_float(n, "lambd", 0.5), bias = attr_float(n, "bias", 0.0);
    onnx_const c = onnx_const::make(x.type, x.dims);
    for (std::size_t e = 0; e < c.size(); ++e) {
        const double v = x.at(e);
        c.set(e, v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
    return c;
}

/// IsInf of a constant: true at +inf (detect_positive, default 1) and at -inf (detect_negative).
inline std::optional<onnx_const> onnx_importer::fold_is_inf(const node_t& n, const onnx_handler&) {
    const onnx_const& x = *entry(n, 0).value;
    const bool positive = attr_int(n, "detect_positive", 1) != 0, negative = attr_int(n, "detect_negative", 1) != 0;
    onnx_const c = onnx_const::make(ops::dtype::boolean, x.dims);
    for (std::size_t e = 0; e < c.size(); ++e) {
        const double v = x.integral() ? 0.0 : x.at(e);
        c.i[e] = std::isinf(v) && (v > 0 ? positive : negative);
    }
    return c;
}

}  // namespace goopt::io::detail
