#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Conversion of ONNX nodes onto existing op kinds, exactly: one-to-one maps (Relu -> relu)
/// and small exact rewrites (Gemm -> transpose + matmul + smul + ewadd, Unsqueeze -> reshape, Neg ->
/// ewmul by -1, Expand -> ewmul by ones). Windows are in convolution.hpp, recurrent layers in
/// recurrent.hpp, Resize in resize.hpp.

#include <goopt/io/onnx/importer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <numbers>
#include <span>

namespace goopt::io::detail {

/// The kind's real attributes (LeakyRelu's and Elu's alpha, HardSigmoid's alpha and beta) are read
/// from the node's float attributes of the same names; the op table's defaults are ONNX's.
inline void onnx_importer::convert_unary(const node_t& n, const onnx_handler& h) {
    ops::attribute_map a;
    for (const ops::attr_spec& s : ops::spec(h.kind).attrs) {
        const std::string_view name = ops::name(s.id);
        if (s.type == ops::attr_type::real) a.set(s.id, attr_float(n, name, s.real_default));
        if (s.type != ops::attr_type::integer) continue;
        if (s.required && !attr(n, name))
            fail(n, concat("has no attribute '", name, "'"), "the attribute ONNX requires");
        a.set(s.id, attr_int(n, name, s.int_default));
    }
    bind(n, 0, add1(h.kind, {tensor_in(n, 0)}, std::move(a), node_name(n)));
}

inline void onnx_importer::convert_binary(const node_t& n, const onnx_handler& h) {
    bind(n, 0, add1(h.kind, {tensor_in(n, 0), tensor_in(n, 1)}, {}, node_name(n)));
}

inline void onnx_importer::convert_identity(const node_t& n, const onnx_handler&) { alias(n, 0, 0); }

inline void onnx_importer::convert_dropout(const node_t& n, const onnx_handler&) {
    if (has_input(n, 2) && entry(n, 2).value && entry(n, 2).value->int_at(0) != 0)
        no_kind("training_mode = true", "an inference graph (training_mode = false)");
    if (wants_output(n, 1)) no_kind("the mask output is used", "no mask output (inference graphs)");
    alias(n, 0, 0);
}

inline void onnx_importer::convert_neg(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const auto t = type_in(n, 0).type;
    bind(n, 0, add1(ops::op_kind::ewmul, {tensor_in(n, 0), scalar(name + "/minus_one", -1.0, t)}, {}, name));
}

/// A computed tensor cast to `to`: itself where the type is its own; otherwise (an attention mask's
/// integers to floats) no kind holds it.
inline void onnx_importer::cast_computed(const node_t& n, std::optional<ops::dtype> to) {
    if (to && *to == type_in(n, 0).type) return alias(n, 0, 0);
    no_kind("a cast between element types of a computed tensor",
            "a cast of a constant, or to the tensor's own element type");
}

inline void onnx_importer::convert_cast(const node_t& n, const onnx_handler&) {
    cast_computed(n, onnx_dtype(static_cast<int>(attr_int(n, "to", 0))));
}

/// CastLike (operator set 15) casts its first input to the element type of its second, whose values
/// do not matter: PyTorch's dynamo exporter writes one for nearly every scalar operand.
inline void onnx_importer::convert_cast_like(const node_t& n, const onnx_handler&) {
    cast_computed(n, type_in(n, 1).type);
}

inline void onnx_importer::convert_global_max_pool(const node_t& n, const onnx_handler&) {
    const auto r = static_cast<std::int64_t>(dims_in(n, 0).rank());
    ints axes;
    for (std::int64_t a = 2; a < r; ++a) axes.push_back(a);
    bind(n, 0,
         add1(ops::op_kind::reduce_max, {tensor_in(n, 0)}, {{ops::attr_id::axes, axes}, {ops::attr_id::keepdims, 1}},
              node_name(n)));
}

inline void onnx_importer::convert_clip(const node_t& n, const onnx_handler&) {
    double lo = attr_float(n, "min", std::numeric_limits<float>::lowest());
    double hi = attr_float(n, "max", std::numeric_limits<float>::max());
    if (has_input(n, 1)) lo = scalar_in(n, 1, "min");
    if (has_input(n, 2)) hi = scalar_in(n, 2, "max");
    bind(n, 0,
         add1(ops::op_kind::clip, {tensor_in(n, 0)}, {{ops::attr_id::min, lo}, {ops::attr_id::max, hi}}, node_name(n)));
}

inline void onnx_importer::convert_instance_norm(const node_t& n, const onnx_handler&) {
    bind(n, 0,
         add1(ops::op_kind::instance_norm, {tensor_in(n, 0), tensor_in(n, 1), tensor_in(n, 2)},
              {{ops::attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}}, node_name(n)));
}

/// GroupNormalization is the instance normalization of x viewed as [N, groups, the rest]: each
/// sample's group normalized over its channels and positions, then scaled and shifted per group
/// (operator set 18) or, from operator set 21, per channel (x's axis 1, as PyTorch's GroupNorm).
inline void onnx_importer::convert_group_norm(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const ops::shape& x = dims_in(n, 0);
    const std::int64_t groups = attr_int(n, "num_groups", 0);
    if (!attr(n, "num_groups")) fail(n, "has no attribute 'num_groups'", "the attribute ONNX requires");
    if (x.rank() < 2 || groups < 1 || x[1] % groups != 0)
        fail(n, concat("num_groups ", groups, " for input ", x.to_string()),
             "an input of rank >= 2 whose channels (axis 1) num_groups >= 1 divides");
    const ops::shape grouped{x[0], groups, x.num_elements() / (x[0] * groups)};
    if (opset_ >= 21) {
        const auto type = type_in(n, 0).type;
        onnx_const ones = onnx_const::make(type, ops::shape{groups});
        for (auto& v : ones.f) v = 1.0;
        const graph::tensor_id normalized =
            add1(ops::op_kind::instance_norm,
                 {reshape(tensor_in(n, 0), grouped, name + "/grouped"), constant(name + "/ones", ones),
                  constant(name + "/zeros", onnx_const::make(type, ops::shape{groups}))},
                 {{ops::attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}}, name + "/normalized");
        ops::shape per_channel{x[1]};  // [C, 1, ...]: broadcast over the positions
        for (std::size_t a = 2; a < x.rank(); ++a) per_channel.push_back(1);
        const graph::tensor_id scaled =
            add1(ops::op_kind::ewmul, {reshape(normalized, x, name + "/ungrouped"), tensor_as(n, 1, per_channel)}, {},
                 name + "/scaled");
        return bind(n, 0, add1(ops::op_kind::ewadd, {scaled, tensor_as(n, 2, per_channel)}, {}, name));
    }
    const graph::tensor_id y = add1(ops::op_kind::instance_norm,
                                    {reshape(tensor_in(n, 0), grouped, name + "/grouped"),
                                     tensor_as(n, 1, ops::shape{groups}), tensor_as(n, 2, ops::shape{groups})},
                                    {{ops::attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}}, name);
    bind(n, 0, reshape(y, x, name + "/ungrouped"));
}

inline void onnx_importer::convert_batchnorm(const node_t& n, const onnx_handler&) {
    if (attr_int(n, "training_mode", 0) != 0) no_kind("training_mode = 1", "an inference graph (training_mode = 0)");
    if (wants_output(n, 1) || wants_output(n, 2)) no_kind("running mean / variance outputs (training)", "one output");
    bind(n, 0,
         add1(ops::op_kind::batchnorm,
              {tensor_in(n, 0), tensor_in(n, 1), tensor_in(n, 2), tensor_in(n, 3), tensor_in(n, 4)},
              {{ops::attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}}, node_name(n)));
}

inline void onnx_importer::convert_layernorm(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    if (wants_output(n, 1) || wants_output(n, 2)) no_kind("mean / inverse std outputs are used", "one output");
    const ops::shape& x = dims_in(n, 0);
    const std::size_t ax = x.axis(attr_int(n, "axis", -1));
    const ops::shape norm{std::span<const std::int64_t>(x.begin() + ax, x.rank() - ax)};
    const graph::tensor_id gamma = tensor_as(n, 1, norm);
    const graph::tensor_id beta = has_input(n, 2)
                                      ? tensor_as(n, 2, norm)
                                      : constant(name + "/zero_bias", onnx_const::make(type_in(n, 0).type, norm));
    bind(n, 0,
         add1(ops::op_kind::layernorm, {tensor_in(n, 0), gamma, beta},
              {{ops::attr_id::axis, static_cast<std::int64_t>(ax)},
               {ops::attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}},
              name));
}

inline void onnx_importer::convert_matmul(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const ops::shape a = dims_in(n, 0), b = dims_in(n, 1);
    if (a.rank() == 0 || b.rank() == 0) fail(n, "MatMul of a scalar", "operands of rank >= 1");
    graph::tensor_id x = tensor_in(n, 0), y = tensor_in(n, 1);
    // 1-D operands as ONNX (numpy) defines them: [K] is [1,K] on the left, [K,1] on the right
    if (a.rank() == 1) x = reshape(x, {1, a[0]}, name + "/row");
    if (b.rank() == 1) y = reshape(y, {b[0], 1}, name + "/column");
    graph::tensor_id r = add1(ops::op_kind::matmul, {x, y}, {}, name);
    if (a.rank() == 1 || b.rank() == 1) {
        ops::shape s = g_.type_of(r).dims, t;
        for (std::size_t k = 0; k < s.rank(); ++k) {
            const bool drop = (a.rank() == 1 && k == s.rank() - 2) || (b.rank() == 1 && k == s.rank() - 1);
            if (!drop) t.push_back(s[k]);
        }
        r = reshape(r, t, name + "/squeeze");
    }
    bind(n, 0, r);
}

inline void onnx_importer::convert_gemm(const node_t& n, const onnx_handler&) {
    using ops::op_kind;
    const std::string name = node_name(n);
    graph::tensor_id a = tensor_in(n, 0), b = tensor_in(n, 1);
    if (attr_int(n, "transA", 0))
        a = add1(op_kind::transpose, {a}, {{ops::attr_id::perm, ints{1, 0}}}, name + "/transpose_a");
    if (attr_int(n, "transB", 0))
        b = add1(op_kind::transpose, {b}, {{ops::attr_id::perm, ints{1, 0}}}, name + "/transpose_b");
    graph::tensor_id y = add1(op_kind::matmul, {a, b}, {}, name);
    const auto t = g_.type_of(y).type;
    const double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
    if (alpha != 1.0) y = add1(op_kind::smul, {y, scalar(name + "/alpha", alpha, t)}, {}, name + "/scale");
    if (has_input(n, 2) && beta != 0.0) {
        graph::tensor_id c = tensor_in(n, 2);
        if (beta != 1.0) c = add1(op_kind::smul, {c, scalar(name + "/beta", beta, t)}, {}, name + "/scale_c");
        y = add1(op_kind::ewadd, {y, c}, {}, name + "/bias");
    }
    bind(n, 0, y);
}

inline void onnx_importer::convert_flatten(const node_t& n, const onnx_handler&) {
    const auto r = static_cast<std::int64_t>(dims_in(n, 0).rank());
    std::int64_t ax = attr_int(n, "axis", 1);
    if (ax < 0) ax += r;
    bind(n, 0, add1(ops::op_kind::flatten, {tensor_in(n, 0)}, {{ops::attr_id::axis, ax}}, node_name(n)));
}

inline void onnx_importer::convert_reshape(const node_t& n, const onnx_handler&) {
    const auto target = reshape_target(n, dims_in(n, 0));
    bind(n, 0, add1(ops::op_kind::reshape, {tensor_in(n, 0)}, {{ops::attr_id::shape, target}}, node_name(n)));
}

inline void onnx_importer::convert_unsqueeze(const node_t& n, const onnx_handler&) {
    const ops::shape s = unsqueezed(n, dims_in(n, 0));
    bind(n, 0,
         add1(ops::op_kind::reshape, {tensor_in(n, 0)}, {{ops::attr_id::shape, ints(s.begin(), s.end())}},
              node_name(n)));
}

inline void onnx_importer::convert_squeeze(const node_t& n, const onnx_handler&) {
    const ops::shape s = squeezed(n, dims_in(n, 0));
    bind(n, 0,
         add1(ops::op_kind::reshape, {tensor_in(n, 0)}, {{ops::attr_id::shape, ints(s.begin(), s.end())}},
              node_name(n)));
}

inline void onnx_importer::convert_transpose(const node_t& n, const onnx_handler&) {
    const ints perm = attr_ints(n, "perm").value_or(ints{});
    bind(n, 0, add1(ops::op_kind::transpose, {tensor_in(n, 0)}, {{ops::attr_id::perm, perm}}, node_name(n)));
}

/// log(sum(exp(x))) over `axes` as max + log(sum(exp(x - max))), the max subtracted first so that
/// no exp overflows; the parts kept as extents of 1, for LogSoftmax and ReduceLogSumExp to finish.
inline onnx_importer::shifted_log_sum onnx_importer::log_sum_exp(graph::tensor_id x, const ints& axes,
                                                                 const std::string& name) {
    using ops::op_kind;
    const ops::attribute_map over{{ops::attr_id::axes, axes}, {ops::attr_id::keepdims, std::int64_t{1}}};
    const graph::tensor_id max = add1(op_kind::reduce_max, {x}, over, name + "/max");
    const graph::tensor_id shifted = add1(op_kind::sub, {x, max}, {}, name + "/shifted");
    const graph::tensor_id sum =
        add1(op_kind::reduce_sum, {add1(op_kind::exp, {shifted}, {}, name + "/exp")}, over, name + "/sum");
    return {shifted, max, add1(op_kind::log, {sum}, {}, name + "/log")};
}

/// Softmax, and LogSoftmax as (x - max) - log(sum(exp(x - max))): the max subtracted first, so that
/// no exp overflows, and a log-probability far below zero stays finite where log(softmax(x)) would
/// round it to -inf. Before operator set 13 both flatten the input to 2-D at `axis` and normalize
/// the whole trailing block.
inline void onnx_importer::convert_softmax(const node_t& n, const onnx_handler&) {
    using ops::attr_id;
    using ops::op_kind;
    const std::string name = node_name(n);
    const ops::shape& x = dims_in(n, 0);
    const auto ax = static_cast<std::int64_t>(x.axis(attr_int(n, "axis", opset_ >= 13 ? -1 : 1)));
    const bool flat = opset_ < 13 && ax + 1 != static_cast<std::int64_t>(x.rank());
    graph::tensor_id in = tensor_in(n, 0);
    if (flat) in = add1(op_kind::flatten, {in}, {{attr_id::axis, ax}}, name + "/flatten");
    const std::int64_t axis = flat ? 1 : ax;
    graph::tensor_id y;
    if (n.op_type() != "LogSoftmax") {
        y = add1(op_kind::softmax, {in}, {{attr_id::axis, axis}}, name);
    } else {
        const shifted_log_sum l = log_sum_exp(in, ints{axis}, name);
        y = add1(op_kind::sub, {l.shifted, l.log_sum}, {}, name);
    }
    bind(n, 0, flat ? reshape(y, x, name + "/unflatten") : y);
}

/// Selu as gamma * elu(x; alpha), Mish as x * tanh(softplus(x)): their definitions, on the kinds
/// that have them.
inline void onnx_importer::convert_selu(const node_t& n, const onnx_handler&) {
    using ops::attr_id;
    using ops::op_kind;
    const std::string name = node_name(n);
    const graph::tensor_id elu =
        add1(op_kind::elu, {tensor_in(n, 0)}, {{attr_id::alpha, attr_float(n, "alpha", 1.67326319217681884765625)}},
             name + "/elu");
    bind(n, 0,
         add1(op_kind::smul,
              {elu, scalar(name + "/gamma", attr_float(n, "gamma", 1.05070102214813232421875), type_in(n, 0).type)}, {},
              name));
}

/// Celu as alpha * elu(x / alpha; 1): max(0, x) + min(0, alpha (e^(x / alpha) - 1)) by definition.
inline void onnx_importer::convert_celu(const node_t& n, const onnx_handler&) {
    using ops::op_kind;
    const std::string name = node_name(n);
    const double alpha = attr_float(n, "alpha", 1.0);
    if (!(std::isfinite(alpha) && alpha != 0)) fail(n, concat("alpha ", alpha), "a finite nonzero alpha");
    const auto type = type_in(n, 0).type;
    const graph::tensor_id scaled =
        add1(op_kind::smul, {tensor_in(n, 0), scalar(name + "/inverse_alpha", 1 / alpha, type)}, {}, name + "/scaled");
    const graph::tensor_id elu = add1(op_kind::elu, {scaled}, {{ops::attr_id::alpha, 1.0}}, name + "/elu");
    bind(n, 0, add1(op_kind::smul, {elu, scalar(name + "/alpha", alpha, type)}, {}, name));
}

inline void onnx_importer::convert_mish(const node_t& n, const onnx_handler&) {
    using ops::op_kind;
    const std::string name = node_name(n);
    const graph::tensor_id x = tensor_in(n, 0);
    const graph::tensor_id t =
        add1(op_kind::tanh, {add1(op_kind::softplus, {x}, {}, name + "/softplus")}, {}, name + "/tanh");
    bind(n, 0, add1(op_kind::ewmul, {x, t}, {}, name));
}

/// Gelu (operator set 20): the erf form is goopt's gelu kind; approximate = "tanh" is
/// 0.5 x (1 + tanh(sqrt(2 / pi) x (1 + 0.044715 x^2))), its definition, on the kinds that have it.
inline void onnx_importer::convert_gelu(const node_t& n, const onnx_handler&) {
    using ops::op_kind;
    const std::string name = node_name(n), approximate = attr_string(n, "approximate", "none");
    const graph::tensor_id x = tensor_in(n, 0);
    if (approximate == "none") return bind(n, 0, add1(op_kind::gelu, {x}, {}, name));
    if (approximate != "tanh") fail(n, concat("approximate '", approximate, "'"), "'none' or 'tanh'");
    const auto type = type_in(n, 0).type;
    const graph::tensor_id one = scalar(name + "/one", 1.0, type);
    const graph::tensor_id square = add1(op_kind::ewmul, {x, x}, {}, name + "/square");
    const graph::tensor_id cubic = add1(
        op_kind::ewadd, {add1(op_kind::smul, {square, scalar(name + "/c", 0.044715, type)}, {}, name + "/cx2"), one},
        {}, name + "/poly");
    const graph::tensor_id inner = add1(op_kind::smul,
                                        {add1(op_kind::ewmul, {x, cubic}, {}, name + "/xpoly"),
                                         scalar(name + "/k", std::sqrt(2.0 / std::numbers::pi), type)},
                                        {}, name + "/inner");
    const graph::tensor_id t = add1(op_kind::tanh, {inner}, {}, name + "/tanh");
    const graph::tensor_id half = add1(op_kind::smul, {x, scalar(name + "/half", 0.5, type)}, {}, name + "/half_x");
    bind(n, 0, add1(op_kind::ewmul, {half, add1(op_kind::ewadd, {t, one}, {}, name + "/one_plus")}, {}, name));
}

/// Shrink with bias = lambd >= 0 (soft shrinkage) is relu(x - lambd) - relu(-lambd - x); any other
/// bias steps at +-lambd (hard shrinkage), which no kind expresses.
inline void onnx_importer::convert_shrink(const node_t& n, const onnx_handler&) {
    using ops::op_kind;
    const double lambd = attr_float(n, "lambd", 0.5), bias = attr_float(n, "bias", 0.0);
    const auto type = type_in(n, 0).type;
    if (!ops::is_floating(type)) no_kind("Shrink of integers", "a floating-point input");
    if (!(lambd >= 0 && std::isfinite(lambd) && bias == lambd))
        no_kind(concat("lambd ", lambd, " and bias ", bias, " (a step at +-lambd)"),
                "bias equal to a finite lambd >= 0 (soft shrinkage)");
    const std::string name = node_name(n);
    const graph::tensor_id x = tensor_in(n, 0), l = scalar(name + "/lambd", lambd, type);
    const graph::tensor_id above =
        add1(op_kind::relu, {add1(op_kind::sub, {x, l}, {}, name + "/sub")}, {}, name + "/above");
    const graph::tensor_id below =
        add1(op_kind::relu, {add1(op_kind::sub, {scalar(name + "/minus_lambd", -lambd, type), x}, {}, name + "/rsub")},
             {}, name + "/below");
    bind(n, 0, add1(op_kind::sub, {above, below}, {}, name));
}

inline void onnx_importer::convert_reduce(const node_t& n, const onnx_handler& h) {
    const auto axes = axes_of(n, 1, "axes", false);
    const auto keep = attr_int(n, "keepdims", 1);
    if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0) != 0) return alias(n, 0, 0);
    bind(n, 0,
         add1(h.kind, {tensor_in(n, 0)}, {{ops::attr_id::axes, axes}, {ops::attr_id::keepdims, keep}}, node_name(n)));
}

/// The p-norm of x over `axes`, (sum |x|^p)^(1/p): sum |x| for p = 1, sqrt(sum x^2) for p = 2,
/// through pow otherwise. The last op is named `name`.
inline graph::tensor_id onnx_importer::lp_norm(graph::tensor_id x, const ints& axes, double p, std::int64_t keepdims,
                                               const std::string& name) {
    using ops::attr_id;
    using ops::op_kind;
    const ops::attribute_map over{{attr_id::axes, axes}, {attr_id::keepdims, keepdims}};
    const auto type = g_.type_of(x).type;
    if (p == 1) return add1(op_kind::reduce_sum, {add1(op_kind::abs, {x}, {}, name + "/abs")}, over, name);
    if (p == 2)
        return add1(
            op_kind::sqrt,
            {add1(op_kind::reduce_sum, {add1(op_kind::ewmul, {x, x}, {}, name + "/square")}, over, name + "/sum")}, {},
            name);
    const graph::tensor_id powered = add1(
        op_kind::pow, {add1(op_kind::abs, {x}, {}, name + "/abs"), scalar(name + "/p", p, type)}, {}, name + "/pow");
    return add1(op_kind::pow,
                {add1(op_kind::reduce_sum, {powered}, over, name + "/sum"), scalar(name + "/inverse_p", 1 / p, type)},
                {}, name);
}

/// LpNormalization: x divided by its p-norm along `axis` (p 1 or 2, as ONNX allows; no epsilon, as
/// ONNX has none). GlobalLpPool: the p-norm over the spatial axes, kept as extents of 1.
inline void onnx_importer::convert_lp(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const ops::shape& x = dims_in(n, 0);
    const std::int64_t p = attr_int(n, "p", 2);
    if (n.op_type() == "LpNormalization") {
        if (p != 1 && p != 2) fail(n, concat("p ", p), "1 or 2");
        const auto axis = static_cast<std::int64_t>(x.axis(attr_int(n, "axis", -1)));
        const graph::tensor_id norm = lp_norm(tensor_in(n, 0), ints{axis}, static_cast<double>(p), 1, name + "/norm");
        return bind(n, 0, add1(ops::op_kind::div, {tensor_in(n, 0), norm}, {}, name));
    }
    if (p < 1) fail(n, concat("p ", p), "p >= 1");
    if (x.rank() < 3) fail(n, concat("input of shape ", x.to_string()), "[N, C, spatial...] (rank >= 3)");
    ints spatial;
    for (std::size_t a = 2; a < x.rank(); ++a) spatial.push_back(static_cast<std::int64_t>(a));
    bind(n, 0, lp_norm(tensor_in(n, 0), spatial, static_cast<double>(p), 1, name));
}

/// The reductions with no kind of their own, on their definitions: ReduceL1 = sum |x|, ReduceL2 =
/// sqrt(sum x^2) (a normalization layer's norm), ReduceSumSquare = sum x^2, ReduceMin = -max(-x),
/// ReduceLogSumExp = max + log(sum(exp(x - max))), the max subtracted first as in LogSoftmax. Empty
/// axes with noop_with_empty_axes (an input "not reduced", where onnxruntime still applies the
/// square or the absolute value) has no such definition: kept opaque.
inline void onnx_importer::convert_reduce_lowered(const node_t& n, const onnx_handler&) {
    using ops::attr_id;
    using ops::op_kind;
    const std::string name = node_name(n), op = n.op_type();
    const auto axes = axes_of(n, 1, "axes", false);
    const std::int64_t keep = attr_int(n, "keepdims", 1);
    if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0) != 0)
        no_kind("empty axes with noop_with_empty_axes = 1", "axes to reduce, or noop_with_empty_axes = 0");
    const graph::tensor_id x = tensor_in(n, 0);
    const auto type = type_in(n, 0).type;
    auto reduce = [&](op_kind k, graph::tensor_id t, std::int64_t keepdims, const std::string& part) {
        return add1(k, {t}, {{attr_id::axes, axes}, {attr_id::keepdims, keepdims}}, name + part);
    };
    graph::tensor_id y;
    if (op == "ReduceL1" || op == "ReduceL2") {
        y = lp_norm(x, axes, op == "ReduceL1" ? 1 : 2, keep, name);
    } else if (op == "ReduceSumSquare") {
        y = reduce(op_kind::reduce_sum, add1(op_kind::ewmul, {x, x}, {}, name + "/square"), keep, "");
    } else if (op == "ReduceMin") {
        const graph::tensor_id minus_one = scalar(name + "/minus_one", -1.0, type);
        const graph::tensor_id negated = add1(op_kind::ewmul, {x, minus_one}, {}, name + "/negate");
        y = add1(op_kind::ewmul, {reduce(op_kind::reduce_max, negated, keep, "/max"), minus_one}, {}, name);
    } else {  // ReduceLogSumExp
        const shifted_log_sum l = log_sum_exp(x, axes, name);
        y = add1(op_kind::ewadd, {l.log_sum, l.max}, {}, keep ? name : name + "/kept");
        if (!keep) {  // the kept extents of 1 dropped, as the reduction without keepdims would
            const ops::tensor_type& t = g_.type_of(x);
            y = reshape(y,
                        ops::shape_rules::reduce(std::span(&t, 1),
                                                 {{attr_id::axes, axes}, {attr_id::keepdims, std::int64_t{0}}})[0]
                            .dims,
                        name);
        }
    }
    bind(n, 0, y);
}

inline void onnx_importer::convert_concat(const node_t& n, const onnx_handler&) {
    std::vector<graph::tensor_id> in;
    for (int k = 0; k < n.input_size(); ++k) in.push_back(tensor_in(n, k));
    bind(n, 0,
         g_.add(ops::op_kind::concat, in, {{ops::attr_id::axis, attr_int(n, "axis", 0)}}, unique(node_name(n)))[0]);
}

inline void onnx_importer::convert_split(const node_t& n, const onnx_handler&) {
    const ops::shape& x = dims_in(n, 0);
    const std::size_t a = x.axis(attr_int(n, "axis", 0));
    ints sizes;
    if (auto s = attr_ints(n, "split")) sizes = *s;
    else if (has_input(n, 1)) sizes = const_in(n, 1, "split").ints();
    else if (const auto* k = attr(n, "num_outputs")) {
        // operator set 18: chunks of ceil(extent / num_outputs), the last one smaller where they do
        // not divide the extent
        const std::int64_t parts = k->i();
        if (parts < 1 || parts != n.output_size())
            fail(n, concat("num_outputs ", parts, " for ", n.output_size(), " outputs"),
                 "one output per chunk, at least one");
        const std::int64_t chunk = (x[a] + parts - 1) / parts, last = x[a] - chunk * (parts - 1);
        if (last < 1)
            fail(n, concat("axis extent ", x[a], " in ", parts, " chunks of ", chunk, " leaves the last one empty"),
                 "an extent that num_outputs - 1 chunks of ceil(extent / num_outputs) do not cover");
        sizes.assign(static_cast<std::size_t>(parts - 1), chunk);
        sizes.push_back(last);
    } else {
        const auto parts = static_cast<std::int64_t>(n.output_size());
        if (x[a] % parts != 0)
            fail(n, concat("axis extent ", x[a], " does not split into ", parts, " equal parts"),
                 "an extent divisible by the number of outputs, split sizes, or num_outputs (operator set 18)");
        sizes.assign(static_cast<std::size_t>(parts), x[a] / parts);
    }
    if (sizes.size() != static_cast<std::size_t>(n.output_size()))
        fail(n, concat("split sizes ", ints_string(sizes), " for ", n.output_size(), " outputs"),
             "one size per output");
    const auto out = g_.add(ops::op_kind::split, {tensor_in(n, 0)},
                            {{ops::attr_id::axis, static_cast<std::int64_t>(a)}, {ops::attr_id::sizes, sizes}},
                            unique(node_name(n)));
    for (int k = 0; k < n.output_size(); ++k) bind(n, k, out[static_cast<std::size_t>(k)]);
}

inline void onnx_importer::convert_slice(const node_t& n, const onnx_handler&) {
    const ops::shape& x = dims_in(n, 0);
    ints starts, ends, axes, steps;
    if (has_input(n, 1)) {
        starts = const_in(n, 1, "starts").ints();
        ends = const_in(n, 2, "ends").ints();
        if (has_input(n, 3)) axes = const_in(n, 3, "axes").ints();
        if (has_input(n, 4)) steps = const_in(n, 4, "steps").ints();
    } else {
        starts = attr_ints(n, "starts").value_or(ints{});
        ends = attr_ints(n, "ends").value_or(ints{});
        axes = attr_ints(n, "axes").value_or(ints{});
    }
    if (axes.empty())
        for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    if (starts.size() != ends.size() || axes.size() != starts.size() ||
        (!steps.empty() && steps.size() != starts.size()))
        fail(n, "starts, ends, axes and steps differ in length", "one of each per sliced axis");
    // step 1: a slice op; other steps: the cells picked along the axis, a gather after the slice
    ints begin(x.rank(), 0), end(x.begin(), x.end());
    std::map<std::size_t, ints> picked;
    std::vector<bool> sliced(x.rank(), false);
    for (std::size_t k = 0; k < axes.size(); ++k) {
        const std::int64_t step = steps.empty() ? 1 : steps[k];
        if (step == 0) fail(n, "step 0", "nonzero steps");
        const std::size_t a = x.axis(axes[k]);
        if (sliced[a]) fail(n, concat("axis ", a, " is sliced twice (axes ", ints_string(axes), ")"), "each axis once");
        sliced[a] = true;
        const std::int64_t d = x[a];
        if (step == 1) {
            auto clamp = [&](std::int64_t v) {
                return std::clamp<std::int64_t>(v < 0 ? std::max(v, -d) + d : v, 0, d);
            };
            begin[a] = clamp(starts[k]);
            end[a] = clamp(ends[k]);
            continue;
        }
        // ONNX: negative values count from the end; a positive step clamps both to [0, d], a
        // negative one the start to [0, d - 1] and the end to [-1, d - 1]
        auto from_end = [&](std::int64_t v) { return v < 0 ? std::max(v, -d - 1) + d : v; };
        const std::int64_t first = step > 0 ? std::clamp<std::int64_t>(from_end(starts[k]), 0, d)
                                            : std::clamp<std::int64_t>(from_end(starts[k]), 0, d - 1);
        const std::int64_t last = step > 0 ? std::clamp<std::int64_t>(from_end(ends[k]), 0, d)
                                           : std::clamp<std::int64_t>(from_end(ends[k]), -1, d - 1);
        // cells first + step * m for m < count, counted before the table is built and charged
        const std::int64_t span = step > 0 ? last - first : first - last;
        const std::int64_t stride = step > 0                                           ? step
                                    : step == std::numeric_limits<std::int64_t>::min() ? span + 1
                                                                                       : -step;
        const std::int64_t count = span <= 0 ? 0 : (span - 1) / stride + 1;
        if (count == 0)
            fail(n, concat("axis ", a, " sliced from ", starts[k], " to ", ends[k], " by ", step, " keeps no cell"),
                 "at least one cell");
        charge_tables(n, count, concat("slicing axis ", a, " to ", count, " cells"));
        ints& cells = picked[a];
        for (std::int64_t m = 0; m < count; ++m) cells.push_back(first + m * step);
    }
    const std::string name = node_name(n);
    graph::tensor_id y = tensor_in(n, 0);
    if (picked.empty() || begin != ints(x.rank(), 0) || end != ints(x.begin(), x.end()))
        y = add1(ops::op_kind::slice, {y}, {{ops::attr_id::begin, begin}, {ops::attr_id::end, end}},
                 picked.empty() ? name : name + "/contiguous");
    for (const auto& [a, cells] : picked) y = gather_along(y, a, cells, concat(name, "/axis", a));
    bind(n, 0, y);
}

/// Pad: mode constant onto the pad op (negative pads, which crop, onto a slice before it); modes
/// edge and reflect, cropping or not, onto a gather per padded axis whose index maps each output
/// cell to the input cell the mode copies (as ONNX defines it: pad by the positive pads, then crop
/// by the negative ones). Mode wrap (operator set 19) copies the cell a period away, onto the same
/// gathers, where no pad is negative.
inline void onnx_importer::convert_pad(const node_t& n, const onnx_handler&) {
    const ops::shape& x = dims_in(n, 0);
    const std::size_t r = x.rank();
    const std::string mode = attr_string(n, "mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
        no_kind(concat("mode '", mode, "'"), "constant, edge, reflect or wrap");
    ints pads = has_input(n, 1) ? const_in(n, 1, "pads").ints() : attr_ints(n, "pads").value_or(ints{});
    double value = attr_float(n, "value", 0.0);
    if (has_input(n, 2)) value = scalar_in(n, 2, "constant_value");
    if (has_input(n, 3)) {
        const auto axes = const_in(n, 3, "axes").ints();
        if (pads.size() != 2 * axes.size())
            fail(n, concat(pads.size(), " pads for ", axes.size(), " axes"), "two pads per axis");
        ints full(2 * r, 0);
        for (std::size_t k = 0; k < axes.size(); ++k) {
            const std::size_t a = x.axis(axes[k]);
            full[a] = pads[k];
            full[a + r] = pads[k + axes.size()];
        }
        pads = full;
    }
    if (pads.size() != 2 * r) fail(n, concat(pads.size(), " pads for rank ", r), concat(2 * r, " pads"));
    constexpr std::int64_t big = std::int64_t{1} << 30;
    for (std::size_t a = 0; a < r; ++a) {
        if (std::abs(pads[a]) > big || std::abs(pads[a + r]) > big)
            fail(n, concat("pads ", ints_string(pads)), "values in [-2^30, 2^30]");
        if (x[a] + pads[a] + pads[a + r] < 1)
            fail(n, concat("pads ", pads[a], " and ", pads[a + r], " leave axis ", a, " of ", x[a], " cells empty"),
                 "at least one cell");
    }
    const std::string name = node_name(n);
    graph::tensor_id y = tensor_in(n, 0);
    if (mode == "constant") {
        ints begin(r, 0), end(x.begin(), x.end()), grow(2 * r, 0);
        for (std::size_t a = 0; a < r; ++a) {
            begin[a] = std::max<std::int64_t>(-pads[a], 0);
            end[a] = x[a] - std::max<std::int64_t>(-pads[a + r], 0);
            grow[a] = std::max<std::int64_t>(pads[a], 0);
            grow[a + r] = std::max<std::int64_t>(pads[a + r], 0);
        }
        const bool crops = begin != ints(r, 0) || end != ints(x.begin(), x.end());
        if (crops)
            y = add1(ops::op_kind::slice, {y}, {{ops::attr_id::begin, begin}, {ops::attr_id::end, end}},
                     name + "/crop");
        if (!crops || grow != ints(2 * r, 0))
            y = add1(ops::op_kind::pad, {y}, {{ops::attr_id::pads, grow}, {ops::attr_id::value, value}}, name);
        bind(n, 0, y);
        return;
    }
    const bool edge = mode == "edge", wrap = mode == "wrap";
    if (wrap && std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p < 0; }))
        no_kind(concat("mode 'wrap' with negative pads ", ints_string(pads)), "pads >= 0 for mode wrap");
    for (std::size_t a = 0; a < r; ++a) {
        const std::int64_t e = x[a], before = pads[a], out = e + pads[a] + pads[a + r];
        if (before == 0 && out == e) continue;
        charge_tables(n, out, concat("padding axis ", a, " from ", e, " to ", out, " cells"));
        ints index(static_cast<std::size_t>(out));
        for (std::int64_t j = 0; j < out; ++j) {
            const std::int64_t i = j - before;  // the cell's place along the input axis
            std::int64_t at = i;
            if (edge) {
                at = std::clamp<std::int64_t>(i, 0, e - 1);
            } else if (wrap) {
                at = (i % e + e) % e;
            } else if (e == 1) {  // reflect: mirrored at the first and the last cell, repeatedly
                at = 0;
            } else {
                const std::int64_t period = 2 * (e - 1), m = (i % period + period) % period;
                at = m < e ? m : period - m;
            }
            index[static_cast<std::size_t>(j)] = at;
        }
        y = gather_along(y, a, index, concat(name, "/axis", a));
    }
    bind(n, 0, y);
}

inline void onnx_importer::convert_gather(const node_t& n, const onnx_handler&) {
    bind(n, 0,
         add1(ops::op_kind::gather, {tensor_in(n, 0), tensor_in(n, 1)}, {{ops::attr_id::axis, attr_int(n, "axis", 0)}},
              node_name(n)));
}

inline void onnx_importer::convert_expand(const node_t& n, const onnx_handler&) {
    using ops::attr_id;
    const std::string name = node_name(n);
    ops::shape target;
    for (auto d : const_in(n, 1, "shape").ints()) target.push_back(d);
    const ops::shape out = ops::shape_rules::broadcast(dims_in(n, 0), target);
    if (out == dims_in(n, 0)) return alias(n, 0, 0);
    // broadcasting against ones of the result's shape is exactly Expand
    const graph::tensor_id ones = add1(ops::op_kind::const_one, {},
                                       {{attr_id::shape, ints(out.begin(), out.end())},
                                        {attr_id::dtype, static_cast<std::int64_t>(type_in(n, 0).type)}},
                                       name + "/ones");
    bind(n, 0, add1(ops::op_kind::ewmul, {tensor_in(n, 0), ones}, {}, name));
}

/// Where with a constant condition that picks one operand everywhere; goopt has no select op.
inline void onnx_importer::convert_where(const node_t& n, const onnx_handler&) {
    const onnx_entry& c = entry(n, 0);
    if (c.value) {
        bool all = true, none = true;
        for (std::size_t k = 0; k < c.value->size(); ++k) (c.value->at(k) != 0 ? none : all) = false;
        const ops::shape out =
            ops::shape_rules::broadcast(ops::shape_rules::broadcast(c.type.dims, dims_in(n, 1)), dims_in(n, 2));
        const int pick = all ? 1 : none ? 2 : 0;
        if (pick != 0 && dims_in(n, pick) == out) return alias(n, 0, pick);
    }
    // a select: a causal mask, a masked fill
    no_kind("a computed or mixed condition (goopt has no select op)",
            "a constant condition that picks one operand everywhere");
}

/// The slope broadcasts to x and never widens it (ONNX's unidirectional broadcasting).
inline void onnx_importer::convert_prelu(const node_t& n, const onnx_handler&) {
    const ops::shape x = dims_in(n, 0), slope = dims_in(n, 1);
    bool fits = slope.rank() <= x.rank();
    for (std::size_t k = 0; fits && k < slope.rank(); ++k) {
        const std::int64_t s = slope[slope.rank() - 1 - k];
        fits = s == 1 || s == x[x.rank() - 1 - k];
    }
    if (!fits)
        fail(n, concat("a slope of shape ", slope.to_string(), " for an input of shape ", x.to_string()),
             "a slope that broadcasts to the input's shape (one per channel, or one)");
    bind(n, 0, add1(ops::op_kind::prelu, {tensor_in(n, 0), tensor_in(n, 1)}, {}, node_name(n)));
}

/// 1 / x, as a division of a scalar one.
inline void onnx_importer::convert_reciprocal(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    bind(n, 0, add1(ops::op_kind::div, {scalar(name + "/one", 1.0, type_in(n, 0).type), tensor_in(n, 0)}, {}, name));
}

/// Sum and Mean of any number of inputs (numpy broadcasting): a chain of additions, in input
/// order; Mean then scales by 1 / inputs.
/// Sum, Mean, Max and Min of any number of inputs: refused with none; with one, the node's output is
/// its input (and nothing is returned); else `kind` applied from the left, numpy broadcasting at each
/// step, the intermediate results named `<node><part><k>` and the last `last`.
inline std::optional<graph::tensor_id> onnx_importer::chain_inputs(const node_t& n, ops::op_kind kind,
                                                                   std::string_view part, const std::string& last) {
    if (n.input_size() == 0) fail(n, "has no inputs", "at least one");
    if (n.input_size() == 1) {
        alias(n, 0, 0);
        return std::nullopt;
    }
    const std::string name = node_name(n);
    graph::tensor_id s = tensor_in(n, 0);
    for (int k = 1; k < n.input_size(); ++k)
        s = add1(kind, {s, tensor_in(n, k)}, {}, k + 1 == n.input_size() ? last : concat(name, part, k));
    return s;
}

inline void onnx_importer::convert_sum(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const bool mean = n.op_type() == "Mean";
    const auto s = chain_inputs(n, ops::op_kind::ewadd, "/sum", mean ? concat(name, "/sum", n.input_size() - 1) : name);
    if (!s) return;
    if (!mean) return bind(n, 0, *s);
    bind(n, 0,
         add1(ops::op_kind::ewmul, {*s, scalar(name + "/inverse_count", 1.0 / n.input_size(), g_.type_of(*s).type)}, {},
              name));
}

/// Max and Min: their binary kind applied from the left.
inline void onnx_importer::convert_chain(const node_t& n, const onnx_handler& h) {
    if (const auto s = chain_inputs(n, h.kind, "/", node_name(n))) bind(n, 0, *s);
}

}  // namespace goopt::io::detail
