#pragma once
// goopt: optional-edge (part of the ONNX exporter, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief The exporter's kind table: how every op kind is written as standard ONNX nodes (opset
/// 13-22). One-to-one where ONNX has the operator; otherwise exactly in ONNX's arithmetic:
/// - a fused activation is its own node after the product (Relu, Sigmoid, Tanh; GELU as
///   x * 0.5 * (1 + Erf(x / sqrt 2)), the pattern onnxruntime fuses back);
/// - conv2d_bias is Conv with a bias input when the addend is a per-channel bias, else Conv + Add;
///   matmul_bias is MatMul + Add (onnxruntime fuses both into Gemm or FusedMatMul itself);
/// - SAME padding becomes explicit pads, the odd cell at the end as goopt's windows put it;
///   average pooling leaves padded cells out (count_include_pad = 0) as goopt's does;
/// - enlarge is a Pad of the kernel; add_n a chain of Add; layernorm below opset 17 (and over
///   several axes) the ReduceMean / Sub / Pow / Sqrt / Div arithmetic; lstm_cell and gru_cell their MatMuls, Split
///   and gates; the constant sources (const_pool, const_iconv, ...) initializers with their values.
/// Gradients and optimizer updates (training graphs) have no lowering: exporting one is an error
/// naming the op and its kind.

#include <goopt/io/onnx/exporter.hpp>
#include <goopt/ops/kind_table.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

namespace goopt::io::detail {

/// Writes op o as ONNX nodes (its outputs under the names the exporter gave them).
using onnx_lowering = void (*)(onnx_exporter& e, graph::op_id o);

namespace lower {

using ints = std::vector<std::int64_t>;
using ops::attr_id;

inline void set(onnx::NodeProto& n, const char* name, std::int64_t v) {
    auto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto_AttributeType_INT);
    a.set_i(v);
}
inline void set(onnx::NodeProto& n, const char* name, const ints& v) {
    auto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto_AttributeType_INTS);
    for (auto x : v) a.add_ints(x);
}
inline void set_float(onnx::NodeProto& n, const char* name, double v) {
    auto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a.set_f(static_cast<float>(v));
}

inline ints all_axes(std::size_t rank) {
    ints r;
    for (std::size_t a = 0; a < rank; ++a) r.push_back(static_cast<std::int64_t>(a));
    return r;
}

/// x * 0.5 * (1 + erf(x / sqrt 2)) into y, in the order of goopt's kernel and PyTorch's export.
inline void gelu(onnx_exporter& e, graph::op_id o, const std::string& x, const std::string& y) {
    const auto t = e.out_type(o).type;
    const std::string d = e.temp(o, "gelu_div"), f = e.temp(o, "gelu_erf"), a = e.temp(o, "gelu_add"),
                      m = e.temp(o, "gelu_mul");
    e.node(o, "Div", {x, e.scalar(std::numbers::sqrt2, t)}, {d});
    e.node(o, "Erf", {d}, {f});
    e.node(o, "Add", {f, e.scalar(1.0, t)}, {a});
    e.node(o, "Mul", {x, a}, {m});
    e.node(o, "Mul", {m, e.scalar(0.5, t)}, {y});
}

inline void activation(onnx_exporter& e, graph::op_id o, ops::activation act, const std::string& x,
                       const std::string& y) {
    switch (act) {
        case ops::activation::none:
            e.node(o, "Identity", {x}, {y});
            return;
        case ops::activation::relu:
            e.node(o, "Relu", {x}, {y});
            return;
        case ops::activation::sigmoid:
            e.node(o, "Sigmoid", {x}, {y});
            return;
        case ops::activation::tanh:
            e.node(o, "Tanh", {x}, {y});
            return;
        case ops::activation::gelu:
            gelu(e, o, x, y);
            return;
    }
    e.refuse(o, concat("activation ", static_cast<std::int64_t>(act)), "none, relu, sigmoid, tanh or gelu");
}

inline ops::activation activation_of(onnx_exporter& e, graph::op_id o) {
    return static_cast<ops::activation>(e.op(o).attrs.get_int(attr_id::activation));
}

/// Where a product with a fused activation writes: its output, or a tensor the activation reads.
inline std::string product_out(onnx_exporter& e, graph::op_id o) {
    return activation_of(e, o) == ops::activation::none ? e.out(o) : e.temp(o, "pre_activation");
}
/// The fused activation from product_out's tensor into the op's output.
inline void finish(onnx_exporter& e, graph::op_id o, const std::string& pre) {
    if (const auto act = activation_of(e, o); act != ops::activation::none) activation(e, o, act, pre, e.out(o));
}

/// Explicit [top, left, bottom, right] pads of a 2-D window with goopt's SAME (the odd cell at the
/// end) or VALID geometry; `extent` is the window's span (a dilated kernel's included).
inline ints window_pads(onnx_exporter& e, graph::op_id o, const ints& extent, const ints& stride) {
    const auto& x = e.in_type(o, 0).dims;
    const auto& y = e.out_type(o).dims;
    if (static_cast<ops::padding_mode>(e.op(o).attrs.get_int(attr_id::padding)) == ops::padding_mode::valid)
        return {0, 0, 0, 0};
    ints p(4, 0);
    for (std::size_t a = 0; a < 2; ++a) {
        const std::int64_t total = std::max<std::int64_t>((y[2 + a] - 1) * stride[a] + extent[a] - x[2 + a], 0);
        p[a] = total / 2;
        p[a + 2] = total - total / 2;
    }
    return p;
}

inline void conv(onnx_exporter& e, graph::op_id o, const std::string& bias, const std::string& y) {
    const auto& a = e.op(o).attrs;
    const auto& x = e.in_type(o, 0).dims;
    const auto& w = e.in_type(o, 1).dims;
    const ints& stride = a.get_ints(attr_id::stride);
    const ints& dil = a.get_ints(attr_id::dilation);
    std::vector<std::string> in{e.in(o, 0), e.in(o, 1)};
    if (!bias.empty()) in.push_back(bias);
    auto& n = e.main(o, "Conv", in, {y});
    set(n, "kernel_shape", ints{w[2], w[3]});
    set(n, "strides", stride);
    set(n, "dilations", dil);
    set(n, "pads", window_pads(e, o, {(w[2] - 1) * dil[0] + 1, (w[3] - 1) * dil[1] + 1}, stride));
    set(n, "group", x[1] / w[1]);
}

// ---- the lowerings of the table, by family

inline void graph_input(onnx_exporter& e, graph::op_id o) { e.graph_input(e.out(o), e.out_type(o)); }

inline void weight(onnx_exporter& e, graph::op_id o) {
    if (const onnx_tensor* v = e.weight_value(o)) {
        // read only by enlarge ops, which write the enlarged values (enlarge below): not written itself
        const graph::tensor_id t = e.op(o).outputs[0];
        const auto& uses = e.graph().get_tensor(t).uses;
        const auto& outs = e.graph().outputs();
        if (!uses.empty() && std::find(outs.begin(), outs.end(), t) == outs.end() &&
            std::all_of(uses.begin(), uses.end(),
                        [&](const auto& u) { return e.op(u.op).kind == ops::op_kind::enlarge; }))
            return;
        e.initializer(e.out(o), e.out_type(o), v->values, concat("weight '", e.op(o).name, "'"));
    } else {
        e.graph_input(e.out(o), e.out_type(o));
        e.weight_as_input(o);
    }
}

/// An opaque op: the source file's node as it was (type, domain, attributes), over the tensors the
/// op reads and writes now; an input or output the node left empty stays empty.
inline void opaque(onnx_exporter& e, graph::op_id o) {
    const onnx::NodeProto src = e.opaque_node(o);
    std::vector<std::string> in, out;
    std::size_t k = 0, j = 0;
    for (const auto& i : src.input()) in.push_back(i.empty() ? std::string() : e.in(o, k++));
    for (const auto& x : src.output()) out.push_back(x.empty() ? std::string() : e.out(o, j++));
    if (k != e.op(o).inputs.size() || j != e.op(o).outputs.size())
        e.refuse(o, concat("reads ", e.op(o).inputs.size(), " tensors and writes ", e.op(o).outputs.size()),
                 concat(k, " and ", j, " as its source node '", src.name(), "' (", src.op_type(), ")"));
    auto& n = e.main(o, src.op_type(), in, out);
    n.set_domain(src.domain());
    *n.mutable_attribute() = src.attribute();
}

/// The constant sources: their values, computed from their attributes as goopt's kernels do.
template <ops::op_kind K> void constant(onnx_exporter& e, graph::op_id o) {
    const ops::tensor_type& t = e.out_type(o);
    const auto& d = t.dims;
    std::vector<double> v(static_cast<std::size_t>(t.num_elements()), 0.0);
    if constexpr (K == ops::op_kind::const_pool) {
        for (auto& x : v) x = 1.0 / static_cast<double>(d[2] * d[3]);
    } else if constexpr (K == ops::op_kind::const_iconv) {
        for (std::int64_t c = 0; c < d[0]; ++c)
            v[static_cast<std::size_t>(((c * d[0] + c) * d[2] + d[2] / 2) * d[3] + d[3] / 2)] = 1;
    } else if constexpr (K == ops::op_kind::const_imm) {
        for (std::int64_t i = 0; i < d[0]; ++i) v[static_cast<std::size_t>(i * d[0] + i)] = 1;
    } else if constexpr (K == ops::op_kind::const_one) {
        for (auto& x : v) x = 1;
    } else {
        static_assert(K == ops::op_kind::const_fill);
        for (auto& x : v) x = e.op(o).attrs.get_real(attr_id::value);
    }
    e.initializer(e.out(o), t, v, concat("op ", e.graph().describe(o)));
}

/// Kinds that are one ONNX operator with the same inputs and outputs.
template <ops::op_kind K> constexpr const char* same_operator() {
    switch (K) {
        case ops::op_kind::ewadd:
            return "Add";
        case ops::op_kind::ewmul:
            return "Mul";
        case ops::op_kind::sub:
            return "Sub";
        case ops::op_kind::div:
            return "Div";
        case ops::op_kind::pow:
            return "Pow";
        case ops::op_kind::relu:
            return "Relu";
        case ops::op_kind::sqrt:
            return "Sqrt";
        case ops::op_kind::sigmoid:
            return "Sigmoid";
        case ops::op_kind::tanh:
            return "Tanh";
        case ops::op_kind::erf:
            return "Erf";
        case ops::op_kind::log:
            return "Log";
        case ops::op_kind::exp:
            return "Exp";
        case ops::op_kind::softplus:
            return "Softplus";
        case ops::op_kind::abs:
            return "Abs";
        case ops::op_kind::softsign:
            return "Softsign";
        case ops::op_kind::max:
            return "Max";
        case ops::op_kind::min:
            return "Min";
        case ops::op_kind::identity:
            return "Identity";
        case ops::op_kind::global_avgpool:
            return "GlobalAveragePool";
        default:
            return nullptr;
    }
}
template <ops::op_kind K> void same(onnx_exporter& e, graph::op_id o) {
    static_assert(same_operator<K>() != nullptr);
    std::vector<std::string> in;
    for (std::size_t k = 0; k < e.op(o).inputs.size(); ++k) in.push_back(e.in(o, k));
    e.main(o, same_operator<K>(), in, {e.out(o)});
}

inline void conv2d(onnx_exporter& e, graph::op_id o) {
    const std::string pre = product_out(e, o);
    conv(e, o, "", pre);
    finish(e, o, pre);
}

/// A per-channel addend ([O,1,1], [1,O,1,1]) is Conv's bias; any other (a residual) an Add.
inline void conv2d_bias(onnx_exporter& e, graph::op_id o) {
    const auto& c = e.in_type(o, 2).dims;
    const std::int64_t channels = e.out_type(o).dims[1];
    const std::size_t r = c.rank();
    bool per_channel = r >= 3 && c[r - 3] == channels && c[r - 2] == 1 && c[r - 1] == 1;
    for (std::size_t i = 0; per_channel && i + 3 < r; ++i) per_channel = c[i] == 1;
    const std::string pre = product_out(e, o);
    if (per_channel) {
        const std::string b = e.temp(o, "bias");
        e.node(o, "Reshape", {e.in(o, 2), e.ints_constant(o, "bias_shape", {channels})}, {b});
        conv(e, o, b, pre);
    } else {
        const std::string y = e.temp(o, "conv");
        conv(e, o, "", y);
        e.node(o, "Add", {y, e.in(o, 2)}, {pre});
    }
    finish(e, o, pre);
}

inline void matmul(onnx_exporter& e, graph::op_id o) {
    const std::string pre = product_out(e, o);
    e.main(o, "MatMul", {e.in(o, 0), e.in(o, 1)}, {pre});
    finish(e, o, pre);
}

inline void matmul_bias(onnx_exporter& e, graph::op_id o) {
    const std::string pre = product_out(e, o), y = e.temp(o, "matmul");
    e.main(o, "MatMul", {e.in(o, 0), e.in(o, 1)}, {y});
    e.node(o, "Add", {y, e.in(o, 2)}, {pre});
    finish(e, o, pre);
}

/// x * s for a scalar s ([] or [1]); a [1] s is made [] when x is a scalar, so that the result stays one.
inline void smul(onnx_exporter& e, graph::op_id o) {
    std::string s = e.in(o, 1);
    if (e.in_type(o, 0).dims.rank() == 0 && e.in_type(o, 1).dims.rank() == 1) {
        const std::string r = e.temp(o, "scalar");
        e.node(o, "Reshape", {s, e.ints_constant(o, "scalar_shape", {})}, {r});
        s = r;
    }
    e.main(o, "Mul", {e.in(o, 0), s}, {e.out(o)});
}

inline void gelu_op(onnx_exporter& e, graph::op_id o) { gelu(e, o, e.in(o, 0), e.out(o)); }

inline void leaky_relu(onnx_exporter& e, graph::op_id o) {
    set_float(e.main(o, "LeakyRelu", {e.in(o, 0)}, {e.out(o)}), "alpha", e.op(o).attrs.get_real(attr_id::alpha));
}

inline void elu(onnx_exporter& e, graph::op_id o) {
    set_float(e.main(o, "Elu", {e.in(o, 0)}, {e.out(o)}), "alpha", e.op(o).attrs.get_real(attr_id::alpha));
}

/// ONNX's PRelu broadcasts only the slope to x; an x that the slope widens is expanded first.
inline void prelu(onnx_exporter& e, graph::op_id o) {
    std::string x = e.in(o, 0);
    const ops::shape& out = e.out_type(o).dims;
    if (!(e.in_type(o, 0).dims == out)) {
        const std::string wide = e.temp(o, "expanded");
        e.node(o, "Expand", {x, e.ints_constant(o, "shape", ints(out.begin(), out.end()))}, {wide});
        x = wide;
    }
    e.main(o, "PRelu", {x, e.in(o, 1)}, {e.out(o)});
}

inline void hard_sigmoid_node(onnx::NodeProto& n, double alpha, double beta) {
    set_float(n, "alpha", alpha);
    set_float(n, "beta", beta);
}
inline void hard_sigmoid(onnx_exporter& e, graph::op_id o) {
    hard_sigmoid_node(e.main(o, "HardSigmoid", {e.in(o, 0)}, {e.out(o)}), e.op(o).attrs.get_real(attr_id::alpha),
                      e.op(o).attrs.get_real(attr_id::beta));
}

/// HardSwish from operator set 14 on; before it, x * HardSigmoid(x) with alpha 1/6, as defined.
inline void hard_swish(onnx_exporter& e, graph::op_id o) {
    if (e.opset() >= 14) {
        e.main(o, "HardSwish", {e.in(o, 0)}, {e.out(o)});
        return;
    }
    const std::string gate = e.temp(o, "hard_sigmoid");
    hard_sigmoid_node(e.node(o, "HardSigmoid", {e.in(o, 0)}, {gate}), 1.0 / 6, 0.5);
    e.main(o, "Mul", {e.in(o, 0), gate}, {e.out(o)});
}

/// Clip with its bounds as scalar inputs; an infinite bound, or on an integer tensor one beyond the
/// type's range, is left out (Clip's bounds are optional). On an integer tensor the others are
/// rounded inwards, which leaves every result as it was.
inline void clip(onnx_exporter& e, graph::op_id o) {
    const auto t = e.out_type(o).type;
    double lo = e.op(o).attrs.get_real(attr_id::min), hi = e.op(o).attrs.get_real(attr_id::max);
    double bottom = -INFINITY, top = INFINITY;  // the bounds beyond which a bound changes nothing
    if (!ops::is_floating(t)) {
        lo = std::ceil(lo), hi = std::floor(hi);
        bottom = t == ops::dtype::i64 ? -0x1p63 : t == ops::dtype::i32 ? -0x1p31 : t == ops::dtype::i8 ? -128 : 0;
        top = t == ops::dtype::i64   ? 0x1p63 - 1  // (2^63 as a double: every i64 is below it)
              : t == ops::dtype::i32 ? 0x1p31 - 1
              : t == ops::dtype::i8  ? 127
              : t == ops::dtype::u8  ? 255
                                     : 1;
    }
    e.main(o, "Clip",
           {e.in(o, 0), lo > bottom ? e.scalar(lo, t) : std::string(), hi < top ? e.scalar(hi, t) : std::string()},
           {e.out(o)});
}

inline void transpose(onnx_exporter& e, graph::op_id o) {
    ints perm = e.op(o).attrs.get_ints(attr_id::perm);
    if (perm.empty())
        for (auto a = static_cast<std::int64_t>(e.in_type(o, 0).dims.rank()); a-- > 0;) perm.push_back(a);
    set(e.main(o, "Transpose", {e.in(o, 0)}, {e.out(o)}), "perm", perm);
}

/// The kernel centred in zeros: a Pad of its two spatial axes. onnxruntime (1.22, at every optimization
/// level above "disabled") folds a Pad into the Conv it feeds even where it pads the weights, and then
/// refuses the model: so a weight of known values is written enlarged, as an initializer, and a
/// kernel enlarged to its own size (a search may do that) as an Identity.
inline void enlarge(onnx_exporter& e, graph::op_id o) {
    const auto& w = e.in_type(o, 0).dims;
    const auto& k = e.out_type(o).dims;
    const std::int64_t ph = (k[2] - w[2]) / 2, pw = (k[3] - w[3]) / 2;
    const graph::op_id p = e.graph().get_tensor(e.op(o).inputs.at(0)).producer;
    if (e.op(p).kind == ops::op_kind::weight || e.op(p).kind == ops::op_kind::constant)
        if (const onnx_tensor* v = e.weight_value(p)) {
            std::vector<double> big(static_cast<std::size_t>(k.num_elements()), 0.0);
            for (std::int64_t a = 0; a < w[0] * w[1]; ++a)
                for (std::int64_t i = 0; i < w[2]; ++i)
                    for (std::int64_t j = 0; j < w[3]; ++j)
                        big[static_cast<std::size_t>((a * k[2] + i + ph) * k[3] + j + pw)] =
                            v->values[static_cast<std::size_t>((a * w[2] + i) * w[3] + j)];
            e.initializer(e.out(o), e.out_type(o), big, concat("op ", e.graph().describe(o)));
            return;
        }
    if (ph == 0 && pw == 0) {
        e.main(o, "Identity", {e.in(o, 0)}, {e.out(o)});
        return;
    }
    e.main(o, "Pad",
           {e.in(o, 0), e.ints_constant(o, "pads", {0, 0, ph, pw, 0, 0, ph, pw}), e.scalar(0.0, e.out_type(o).type)},
           {e.out(o)});
}

template <bool Max> void pool(onnx_exporter& e, graph::op_id o) {
    const auto& a = e.op(o).attrs;
    const ints& kernel = a.get_ints(attr_id::kernel);
    const ints& stride = a.get_ints(attr_id::stride);
    const std::string pre = product_out(e, o);
    auto& n = e.main(o, Max ? "MaxPool" : "AveragePool", {e.in(o, 0)}, {pre});
    set(n, "kernel_shape", kernel);
    set(n, "strides", stride);
    set(n, "pads", window_pads(e, o, kernel, stride));
    if (!Max) set(n, "count_include_pad", std::int64_t{0});
    finish(e, o, pre);
}

inline void concat_op(onnx_exporter& e, graph::op_id o) {
    std::vector<std::string> in;
    for (std::size_t k = 0; k < e.op(o).inputs.size(); ++k) in.push_back(e.in(o, k));
    set(e.main(o, "Concat", in, {e.out(o)}), "axis", e.op(o).attrs.get_int(attr_id::axis));
}

inline void split(onnx_exporter& e, graph::op_id o) {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < e.op(o).outputs.size(); ++k) out.push_back(e.out(o, k));
    auto& n =
        e.main(o, "Split", {e.in(o, 0), e.ints_constant(o, "sizes", e.op(o).attrs.get_ints(attr_id::sizes))}, out);
    set(n, "axis", e.op(o).attrs.get_int(attr_id::axis));
}

/// Reshape to the inferred shape. When the export names symbolic dimensions (size_free), the
/// target holds at other values of them where it can: an axis of the size the input has at the same
/// place is copied (0), and one other axis is inferred (-1): the only one left, else the first whose
/// size is a bound symbolic dimension's value (a batch folded back out of another axis), else the
/// first whose size is a multiple of one (a batch folded into it). The export tries the result at
/// other values (symbolic_dims.hpp): a wrong guess is written as the value, never silently.
inline ints reshape_target(const onnx_exporter& e, graph::op_id o) {
    const auto& x = e.in_type(o, 0).dims;
    const auto& d = e.out_type(o).dims;
    ints t(d.begin(), d.end());
    if (!e.size_free()) return t;
    std::vector<std::size_t> free;
    for (std::size_t a = 0; a < t.size(); ++a) {
        if (a < x.rank() && x[a] == d[a]) t[a] = 0;
        else free.push_back(a);
    }
    if (free.size() == 1) {
        t[free[0]] = -1;
        return t;
    }
    for (const auto a : free)
        if (e.is_symbolic_value(d[a])) {
            t[a] = -1;
            return t;
        }
    for (const auto a : free)
        if (e.has_symbolic_factor(d[a])) {
            t[a] = -1;
            return t;
        }
    return t;
}

inline void reshape(onnx_exporter& e, graph::op_id o) {
    e.main(o, "Reshape", {e.in(o, 0), e.ints_constant(o, "shape", reshape_target(e, o))}, {e.out(o)});
}

inline void flatten(onnx_exporter& e, graph::op_id o) {
    set(e.main(o, "Flatten", {e.in(o, 0)}, {e.out(o)}), "axis", e.op(o).attrs.get_int(attr_id::axis));
}

inline void pad(onnx_exporter& e, graph::op_id o) {
    const auto& a = e.op(o).attrs;
    const auto t = e.out_type(o).type;
    const double value = a.get_real(attr_id::value);
    if (!ops::is_floating(t) && value != std::trunc(value))
        e.refuse(o, concat("pad value ", value, " for a ", ops::name(t), " tensor"), "an integer value");
    e.main(o, "Pad", {e.in(o, 0), e.ints_constant(o, "pads", a.get_ints(attr_id::pads)), e.scalar(value, t)},
           {e.out(o)});
}

/// Slice; with size_free, an axis sliced to its end is sliced to "the end", which holds at other
/// sizes of that axis: 2^62, since ONNX clamps an end to the axis and the initializers go through a
/// double, which holds 2^62 exactly but not INT64_MAX.
inline void slice(onnx_exporter& e, graph::op_id o) {
    const auto& a = e.op(o).attrs;
    ints ends = a.get_ints(attr_id::end);
    const auto& x = e.in_type(o, 0).dims;
    if (e.size_free())
        for (std::size_t k = 0; k < ends.size() && k < x.rank(); ++k)
            if (ends[k] == x[k]) ends[k] = std::int64_t{1} << 62;
    e.main(o, "Slice",
           {e.in(o, 0), e.ints_constant(o, "starts", a.get_ints(attr_id::begin)), e.ints_constant(o, "ends", ends),
            e.ints_constant(o, "axes", all_axes(e.in_type(o, 0).dims.rank()))},
           {e.out(o)});
}

inline void gather(onnx_exporter& e, graph::op_id o) {
    set(e.main(o, "Gather", {e.in(o, 0), e.in(o, 1)}, {e.out(o)}), "axis", e.op(o).attrs.get_int(attr_id::axis));
}

inline void batchnorm(onnx_exporter& e, graph::op_id o) {
    std::vector<std::string> in;
    for (std::size_t k = 0; k < 5; ++k) in.push_back(e.in(o, k));
    set_float(e.main(o, "BatchNormalization", in, {e.out(o)}), "epsilon", e.op(o).attrs.get_real(attr_id::epsilon));
}

inline void instance_norm(onnx_exporter& e, graph::op_id o) {
    set_float(e.main(o, "InstanceNormalization", {e.in(o, 0), e.in(o, 1), e.in(o, 2)}, {e.out(o)}), "epsilon",
              e.op(o).attrs.get_real(attr_id::epsilon));
}

inline void lrn(onnx_exporter& e, graph::op_id o) {
    const auto& a = e.op(o).attrs;
    auto& n = e.main(o, "LRN", {e.in(o, 0)}, {e.out(o)});
    set(n, "size", a.get_int(attr_id::size));
    set_float(n, "alpha", a.get_real(attr_id::alpha));
    set_float(n, "beta", a.get_real(attr_id::beta));
    set_float(n, "bias", a.get_real(attr_id::bias));
}

inline void softmax(onnx_exporter& e, graph::op_id o) {
    set(e.main(o, "Softmax", {e.in(o, 0)}, {e.out(o)}), "axis", e.op(o).attrs.get_int(attr_id::axis));
}

/// A reduction `type` of x into y over `axes` (none: all), the op's own node where `main`: the axes
/// are an input of ReduceSum from opset 13 and of the others from opset 18, an attribute before.
inline onnx::NodeProto& reduce_node(onnx_exporter& e, graph::op_id o, std::string_view type, const std::string& x,
                                    const std::string& y, const ints& axes, bool main = false) {
    const bool as_input = type == "ReduceSum" || e.opset() >= 18;
    std::vector<std::string> in{x};
    if (as_input && !axes.empty()) in.push_back(e.ints_constant(o, "axes", axes));
    auto& n = main ? e.main(o, type, in, {y}) : e.node(o, type, in, {y});
    if (!as_input && !axes.empty()) set(n, "axes", axes);
    return n;
}

/// LayerNormalization from opset 17 over the last axis; otherwise the arithmetic that PyTorch
/// exports (and onnxruntime fuses back): (x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma + beta.
/// Over several axes it stays arithmetic at 17 too: onnxruntime 1.22 at optimization level
/// "extended" or "all" fuses an Add before a LayerNormalization into SkipLayerNormalization, which
/// then fails on a gamma of rank 2 ("gamma is expected to have 1 dimension"), a valid model.
inline void layernorm(onnx_exporter& e, graph::op_id o) {
    const auto& a = e.op(o).attrs;
    const auto& xd = e.in_type(o, 0).dims;
    const auto axis = static_cast<std::int64_t>(xd.axis(a.get_int(attr_id::axis)));
    const double eps = a.get_real(attr_id::epsilon);
    if (e.opset() >= 17 && axis + 1 == static_cast<std::int64_t>(xd.rank())) {
        auto& n = e.main(o, "LayerNormalization", {e.in(o, 0), e.in(o, 1), e.in(o, 2)}, {e.out(o)});
        set(n, "axis", axis);
        set_float(n, "epsilon", eps);
        return;
    }
    const auto t = e.out_type(o).type;
    ints axes;
    for (auto k = axis; k < static_cast<std::int64_t>(xd.rank()); ++k) axes.push_back(k);
    const std::string mean = e.temp(o, "mean"), d = e.temp(o, "centered"), sq = e.temp(o, "squared"),
                      var = e.temp(o, "variance"), ve = e.temp(o, "variance_eps"), sd = e.temp(o, "std"),
                      nx = e.temp(o, "normalized"), sc = e.temp(o, "scaled");
    reduce_node(e, o, "ReduceMean", e.in(o, 0), mean, axes);
    e.node(o, "Sub", {e.in(o, 0), mean}, {d});
    e.node(o, "Pow", {d, e.scalar(2.0, t)}, {sq});
    reduce_node(e, o, "ReduceMean", sq, var, axes);
    e.node(o, "Add", {var, e.scalar(eps, t)}, {ve});
    e.node(o, "Sqrt", {ve}, {sd});
    e.node(o, "Div", {d, sd}, {nx});
    e.node(o, "Mul", {nx, e.in(o, 1)}, {sc});
    e.node(o, "Add", {sc, e.in(o, 2)}, {e.out(o)});
}

/// reduce_sum, reduce_mean and reduce_max as the reductions of their names; goopt's empty axes (all
/// of them) are written out.
template <ops::op_kind K> void reduce(onnx_exporter& e, graph::op_id o) {
    const auto& a = e.op(o).attrs;
    ints axes = a.get_ints(attr_id::axes);
    if (axes.empty()) axes = all_axes(e.in_type(o, 0).dims.rank());
    const char* type = K == ops::op_kind::reduce_sum    ? "ReduceSum"
                       : K == ops::op_kind::reduce_mean ? "ReduceMean"
                                                        : "ReduceMax";
    set(reduce_node(e, o, type, e.in(o, 0), e.out(o), axes, true), "keepdims",
        std::int64_t{a.get_int(attr_id::keepdims) != 0 ? 1 : 0});
}

/// The gates of x w + h u + b, split along axis 1 into `gates` equal parts.
inline std::vector<std::string> split_gates(onnx_exporter& e, graph::op_id o, const std::string& t, std::int64_t hidden,
                                            std::size_t gates, std::int64_t axis, std::string_view what) {
    std::vector<std::string> parts;
    for (std::size_t k = 0; k < gates; ++k) parts.push_back(e.temp(o, concat(what, "_", k)));
    auto& n = e.node(o, "Split", {t, e.ints_constant(o, concat(what, "_sizes"), ints(gates, hidden))}, parts);
    set(n, "axis", axis);
    return parts;
}

/// h' = o * tanh(c'), c' = f * c + i * g over the gates i, f, g, o of x w + h u + b.
inline void lstm_cell(onnx_exporter& e, graph::op_id o) {
    const std::int64_t hidden = e.in_type(o, 1).dims[1];
    const std::string xw = e.temp(o, "xw"), hu = e.temp(o, "hu"), s = e.temp(o, "xw_hu"), g = e.temp(o, "gates");
    e.node(o, "MatMul", {e.in(o, 0), e.in(o, 3)}, {xw});
    e.node(o, "MatMul", {e.in(o, 1), e.in(o, 4)}, {hu});
    e.node(o, "Add", {xw, hu}, {s});
    e.node(o, "Add", {s, e.in(o, 5)}, {g});
    const auto parts = split_gates(e, o, g, hidden, 4, 1, "gate");
    const std::string i = e.temp(o, "i"), f = e.temp(o, "f"), gg = e.temp(o, "g"), og = e.temp(o, "o"),
                      fc = e.temp(o, "f_c"), ig = e.temp(o, "i_g"), tc = e.temp(o, "tanh_c");
    e.node(o, "Sigmoid", {parts[0]}, {i});
    e.node(o, "Sigmoid", {parts[1]}, {f});
    e.node(o, "Tanh", {parts[2]}, {gg});
    e.node(o, "Sigmoid", {parts[3]}, {og});
    e.node(o, "Mul", {f, e.in(o, 2)}, {fc});
    e.node(o, "Mul", {i, gg}, {ig});
    e.node(o, "Add", {fc, ig}, {e.out(o, 1)});
    e.node(o, "Tanh", {e.out(o, 1)}, {tc});
    e.node(o, "Mul", {og, tc}, {e.out(o, 0)});
}

/// h' = (1 - z) * n + z * h, r and z = sigmoid(xw + hu + b), n = tanh(xw_n + r * hu_n + b_n).
inline void gru_cell(onnx_exporter& e, graph::op_id o) {
    const std::int64_t hidden = e.in_type(o, 1).dims[1];
    const auto t = e.out_type(o).type;
    const std::string xw = e.temp(o, "xw"), hu = e.temp(o, "hu");
    e.node(o, "MatMul", {e.in(o, 0), e.in(o, 2)}, {xw});
    e.node(o, "MatMul", {e.in(o, 1), e.in(o, 3)}, {hu});
    const auto x = split_gates(e, o, xw, hidden, 3, 1, "xw");
    const auto h = split_gates(e, o, hu, hidden, 3, 1, "hu");
    const auto b = split_gates(e, o, e.in(o, 4), hidden, 3, 0, "b");
    std::string gate[2];
    for (std::size_t k = 0; k < 2; ++k) {
        const std::string s = e.temp(o, concat("sum_", k)), sb = e.temp(o, concat("sum_b_", k));
        gate[k] = e.temp(o, k == 0 ? "r" : "z");
        e.node(o, "Add", {x[k], h[k]}, {s});
        e.node(o, "Add", {s, b[k]}, {sb});
        e.node(o, "Sigmoid", {sb}, {gate[k]});
    }
    const std::string rh = e.temp(o, "r_hu"), s = e.temp(o, "sum_2"), sb = e.temp(o, "sum_b_2"), n = e.temp(o, "n"),
                      omz = e.temp(o, "one_minus_z"), a = e.temp(o, "new_part"), c = e.temp(o, "kept_part");
    e.node(o, "Mul", {gate[0], h[2]}, {rh});
    e.node(o, "Add", {x[2], rh}, {s});
    e.node(o, "Add", {s, b[2]}, {sb});
    e.node(o, "Tanh", {sb}, {n});
    e.node(o, "Sub", {e.scalar(1.0, t), gate[1]}, {omz});
    e.node(o, "Mul", {omz, n}, {a});
    e.node(o, "Mul", {gate[1], e.in(o, 1)}, {c});
    e.node(o, "Add", {a, c}, {e.out(o)});
}

/// ((x0 + x1) + x2) + ..., in the order goopt's kernel sums.
inline void add_n(onnx_exporter& e, graph::op_id o) {
    const std::size_t n = e.op(o).inputs.size();
    if (n == 1) {
        e.node(o, "Identity", {e.in(o, 0)}, {e.out(o)});
        return;
    }
    std::string acc = e.in(o, 0);
    for (std::size_t k = 1; k < n; ++k) {
        const std::string next = k + 1 == n ? e.out(o) : e.temp(o, concat("sum_", k));
        e.node(o, "Add", {acc, e.in(o, k)}, {next});
        acc = next;
    }
}

inline void training_op(onnx_exporter& e, graph::op_id o) {
    e.refuse(o, "a gradient or optimizer update (training graphs) has no ONNX lowering",
             "an inference graph (the forward ops only)");
}

}  // namespace lower

/// The lowering of every op kind, indexed by op_kind; a kind without a row does not compile.
inline constexpr std::array<ops::required_fn<onnx_lowering>, ops::num_op_kinds> onnx_lowerings =
    ops::by_kind<ops::required_fn<onnx_lowering>>({{
        // sources
        {ops::op_kind::input, lower::graph_input},
        {ops::op_kind::weight, lower::weight},
        {ops::op_kind::const_pool, lower::constant<ops::op_kind::const_pool>},
        {ops::op_kind::const_iconv, lower::constant<ops::op_kind::const_iconv>},
        {ops::op_kind::const_imm, lower::constant<ops::op_kind::const_imm>},
        {ops::op_kind::const_one, lower::constant<ops::op_kind::const_one>},
        // TASO's compute operators
        {ops::op_kind::conv2d, lower::conv2d},
        {ops::op_kind::matmul, lower::matmul},
        {ops::op_kind::ewadd, lower::same<ops::op_kind::ewadd>},
        {ops::op_kind::ewmul, lower::same<ops::op_kind::ewmul>},
        {ops::op_kind::smul, lower::smul},
        {ops::op_kind::relu, lower::same<ops::op_kind::relu>},
        {ops::op_kind::transpose, lower::transpose},
        {ops::op_kind::enlarge, lower::enlarge},
        {ops::op_kind::avgpool2d, lower::pool<false>},
        {ops::op_kind::maxpool2d, lower::pool<true>},
        {ops::op_kind::concat, lower::concat_op},
        {ops::op_kind::split, lower::split},
        // arithmetic and activations
        {ops::op_kind::sub, lower::same<ops::op_kind::sub>},
        {ops::op_kind::div, lower::same<ops::op_kind::div>},
        {ops::op_kind::pow, lower::same<ops::op_kind::pow>},
        {ops::op_kind::sqrt, lower::same<ops::op_kind::sqrt>},
        {ops::op_kind::sigmoid, lower::same<ops::op_kind::sigmoid>},
        {ops::op_kind::tanh, lower::same<ops::op_kind::tanh>},
        {ops::op_kind::gelu, lower::gelu_op},
        {ops::op_kind::erf, lower::same<ops::op_kind::erf>},
        {ops::op_kind::log, lower::same<ops::op_kind::log>},
        {ops::op_kind::clip, lower::clip},
        {ops::op_kind::identity, lower::same<ops::op_kind::identity>},
        // data movement
        {ops::op_kind::reshape, lower::reshape},
        {ops::op_kind::flatten, lower::flatten},
        {ops::op_kind::pad, lower::pad},
        {ops::op_kind::slice, lower::slice},
        {ops::op_kind::gather, lower::gather},
        {ops::op_kind::global_avgpool, lower::same<ops::op_kind::global_avgpool>},
        // normalization and reductions
        {ops::op_kind::batchnorm, lower::batchnorm},
        {ops::op_kind::softmax, lower::softmax},
        {ops::op_kind::layernorm, lower::layernorm},
        {ops::op_kind::reduce_sum, lower::reduce<ops::op_kind::reduce_sum>},
        {ops::op_kind::reduce_mean, lower::reduce<ops::op_kind::reduce_mean>},
        {ops::op_kind::reduce_max, lower::reduce<ops::op_kind::reduce_max>},
        // recurrent cells
        {ops::op_kind::lstm_cell, lower::lstm_cell},
        {ops::op_kind::gru_cell, lower::gru_cell},
        // fused kernels
        {ops::op_kind::conv2d_bias, lower::conv2d_bias},
        {ops::op_kind::matmul_bias, lower::matmul_bias},
        // gradients and optimizer updates: const_fill and add_n appear in inference graphs too
        // (a folded batchnorm's epsilon, a sum of branches)
        {ops::op_kind::const_fill, lower::constant<ops::op_kind::const_fill>},
        {ops::op_kind::add_n, lower::add_n},
        {ops::op_kind::conv2d_grad_input, lower::training_op},
        {ops::op_kind::conv2d_grad_weight, lower::training_op},
        {ops::op_kind::relu_grad, lower::training_op},
        {ops::op_kind::sigmoid_grad, lower::training_op},
        {ops::op_kind::tanh_grad, lower::training_op},
        {ops::op_kind::gelu_grad, lower::training_op},
        {ops::op_kind::erf_grad, lower::training_op},
        {ops::op_kind::avgpool2d_grad, lower::training_op},
        {ops::op_kind::maxpool2d_grad, lower::training_op},
        {ops::op_kind::softmax_grad, lower::training_op},
        {ops::op_kind::layernorm_grad, lower::training_op},
        {ops::op_kind::batchnorm_grad, lower::training_op},
        {ops::op_kind::gather_grad, lower::training_op},
        {ops::op_kind::reduce_max_grad, lower::training_op},
        {ops::op_kind::lstm_cell_grad, lower::training_op},
        {ops::op_kind::gru_cell_grad, lower::training_op},
        {ops::op_kind::sgd_update, lower::training_op},
        {ops::op_kind::adam_update, lower::training_op},
        {ops::op_kind::constant, lower::weight},
        {ops::op_kind::opaque, lower::opaque},
        {ops::op_kind::leaky_relu, lower::leaky_relu},
        {ops::op_kind::hard_sigmoid, lower::hard_sigmoid},
        {ops::op_kind::hard_swish, lower::hard_swish},
        {ops::op_kind::exp, lower::same<ops::op_kind::exp>},
        {ops::op_kind::prelu, lower::prelu},
        {ops::op_kind::softplus, lower::same<ops::op_kind::softplus>},
        {ops::op_kind::elu, lower::elu},
        {ops::op_kind::abs, lower::same<ops::op_kind::abs>},
        {ops::op_kind::lrn, lower::lrn},
        {ops::op_kind::lrn_grad, lower::training_op},
        {ops::op_kind::instance_norm, lower::instance_norm},
        {ops::op_kind::softsign, lower::same<ops::op_kind::softsign>},
        {ops::op_kind::max, lower::same<ops::op_kind::max>},
        {ops::op_kind::min, lower::same<ops::op_kind::min>},
    }});

}  // namespace goopt::io::detail
