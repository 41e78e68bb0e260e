#pragma once
/// @file
/// @brief The training transform's kind table: the reverse-mode gradient rule of every op kind, or
/// an explicit "none" (sources, and the gradient and update kinds themselves). A kind without a row
/// does not compile (ops/kind_table.hpp). Each rule appends the ops that compute its inputs'
/// gradients from its outputs' gradients, with existing kinds where they express it exactly.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/kind_table.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace goopt::models::detail {

using graph::op_id;
using graph::tensor_id;
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;
inline constexpr tensor_id no_tensor = static_cast<tensor_id>(-1);

/// The training graph under construction and the helpers gradient rules build it with. Reads the
/// forward graph's ops and types from `fwd` (never from `g`, whose vectors move as ops are added).
class gradient_builder {
public:
    gradient_builder(const graph::computation_graph& fwd) : fwd(fwd), g(fwd) {}

    const graph::computation_graph& fwd;
    graph::computation_graph g;
    std::vector<boost::container::small_vector<tensor_id, 2>> contrib;  ///< partial gradients per forward tensor
    std::string prefix;         ///< name prefix of the ops added next: `grad/<op>`
    std::uint32_t counter = 0;  ///< number of the next op under `prefix`
    std::int32_t layer = -1;    ///< layer of the ops added next

    /// Adds a gradient op named `<prefix>/<k>` in the current layer.
    graph::output_ids add(op_kind kind, std::span<const tensor_id> in, ops::attribute_map attrs = {}) {
        auto out = g.add(kind, in, std::move(attrs), prefix + "/" + std::to_string(counter++));
        g.set_layer(g.producer(out[0]), layer);
        return out;
    }
    tensor_id add1(op_kind kind, std::initializer_list<tensor_id> in, ops::attribute_map attrs = {}) {
        return add(kind, std::span<const tensor_id>(in.begin(), in.size()), std::move(attrs))[0];
    }

    const ops::shape& dims(tensor_id t) const { return g.type_of(t).dims; }
    ops::dtype dtype_of(tensor_id t) const { return g.type_of(t).type; }
    static ints to_ints(const ops::shape& s) { return ints(s.begin(), s.end()); }

    tensor_id fill(const ops::shape& s, double value, ops::dtype t) {
        return add1(op_kind::const_fill, {},
                    {{attr_id::shape, to_ints(s)}, {attr_id::dtype, std::int64_t(t)}, {attr_id::value, value}});
    }

    /// A shared scalar constant (few distinct values: a linear scan is the fast lookup).
    tensor_id scalar(double value, ops::dtype t, std::string_view name) {
        for (const auto& [v, ty, id] : scalars_)
            if (v == value && ty == t) return id;
        std::string n = t == ops::dtype::f32 ? std::string(name) : concat(name, ".", ops::name(t));
        const tensor_id id = g.add1(
            op_kind::const_fill, {},
            {{attr_id::shape, ints{}}, {attr_id::dtype, std::int64_t(t)}, {attr_id::value, value}}, std::move(n));
        scalars_.emplace_back(value, t, id);
        return id;
    }

    void contribute(tensor_id forward_tensor, tensor_id grad) { contrib[forward_tensor].push_back(grad); }

    /// Gradient through a fused activation, from the op's output y.
    tensor_id through_activation(tensor_id y, tensor_id dy, std::int64_t act) {
        switch (static_cast<ops::activation>(act)) {
            case ops::activation::none:
                return dy;
            case ops::activation::relu:
                return add1(op_kind::relu_grad, {y, dy});
            case ops::activation::sigmoid:
                return add1(op_kind::sigmoid_grad, {y, dy});
            case ops::activation::tanh:
                return add1(op_kind::tanh_grad, {y, dy});
            case ops::activation::gelu:
                break;  // needs the pre-activation: see fused_gradient
        }
        return dy;
    }

    /// Sums a gradient of a broadcast result back to the operand's shape (numpy broadcasting).
    tensor_id unbroadcast(tensor_id d, const ops::shape& target) {
        const ops::shape& s = dims(d);
        if (s == target) return d;
        const std::size_t lead = s.rank() - target.rank();
        ints axes;
        for (std::size_t i = 0; i < s.rank(); ++i)
            if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(static_cast<std::int64_t>(i));
        tensor_id r = d;
        if (!axes.empty())
            r = add1(op_kind::reduce_sum, {d}, {{attr_id::axes, axes}, {attr_id::keepdims, std::int64_t(1)}});
        if (!(dims(r) == target)) r = add1(op_kind::reshape, {r}, {{attr_id::shape, to_ints(target)}});
        return r;
    }

    /// `t` reshaped to `s` where its shape differs (a reduction's result with its axes kept).
    tensor_id reshaped(tensor_id t, const ops::shape& s) {
        return dims(t) == s ? t : add1(op_kind::reshape, {t}, {{attr_id::shape, to_ints(s)}});
    }

    /// transpose perm that swaps the last two axes of a rank-r tensor.
    static ints swap_last_two(std::size_t r) {
        ints p(r);
        std::iota(p.begin(), p.end(), std::int64_t(0));
        std::swap(p[r - 1], p[r - 2]);
        return p;
    }

private:
    std::vector<std::tuple<double, ops::dtype, tensor_id>> scalars_;
};

/// What a gradient rule sees of one forward op: its inputs and attributes, the gradients of its
/// outputs (no_tensor where none flows back) and which inputs need a gradient.
struct grad_site {
    gradient_builder& b;
    const graph::op& op;
    boost::container::small_vector<tensor_id, 2> dy;
    boost::container::small_vector<bool, 6> need;

    tensor_id in(std::size_t i) const { return op.inputs[i]; }
    const ops::attribute_map& attrs() const { return op.attrs; }
    const ops::shape& in_dims(std::size_t i) const { return b.fwd.type_of(op.inputs[i]).dims; }
    tensor_id y() const { return op.outputs[0]; }  ///< the first output
    tensor_id g() const { return dy[0]; }          ///< the first output's gradient
    ops::dtype dtype() const { return b.dtype_of(dy[0]); }
    /// Records `grad` as a partial gradient of input i, if input i needs one.
    void give(std::size_t i, tensor_id grad) {
        if (need[i]) b.contribute(op.inputs[i], grad);
    }
    /// The gradient of output k, zeros where none flows back (multi-output ops).
    tensor_id dy_or_zeros(std::size_t k) {
        if (dy[k] != no_tensor) return dy[k];
        const ops::tensor_type& t = b.fwd.type_of(op.outputs[k]);
        return b.fill(t.dims, 0.0, t.type);
    }
    tensor_id minus_one() { return b.scalar(-1.0, dtype(), "grad/const/minus_one"); }
    /// Input i broadcast to the first output's shape (plus zeros where it is smaller): a relu_grad
    /// mask on an input needs the gradient's shape.
    tensor_id in_at_output_shape(std::size_t i) {
        const ops::tensor_type& out = b.fwd.type_of(y());
        if (in_dims(i) == out.dims) return in(i);
        return b.add1(op_kind::ewadd, {in(i), b.fill(out.dims, 0.0, out.type)});
    }
};

/// A gradient rule: appends the gradient ops of one forward op.
using gradient_fn = void (*)(grad_site&);

/// Tag of the kinds that have no gradient rule, written out in their row.
struct no_gradient_t {};
inline constexpr no_gradient_t no_gradient{};

/// A row's entry: the rule, or none; and the input slots that carry no gradient (integer indices).
struct gradient_rule {
    gradient_fn fn = nullptr;
    std::uint8_t constant_slots = 0;  ///< bit k: input k carries no gradient

    constexpr gradient_rule(void (&f)(grad_site&), std::uint8_t constant = 0) noexcept
        : fn(&f), constant_slots(constant) {}
    constexpr gradient_rule(no_gradient_t) noexcept {}
};

// ---- the rules, in op_kind order

/// The gradient at the input of a fused activation of op `s` (conv2d, matmul or their _bias forms).
/// relu, sigmoid and tanh have theirs from the output; gelu's needs the pre-activation, which the
/// fused op does not keep, so the product is computed once more without the activation.
inline tensor_id fused_gradient(grad_site& s) {
    const auto act = s.attrs().get_int(attr_id::activation);
    if (static_cast<ops::activation>(act) != ops::activation::gelu) return s.b.through_activation(s.y(), s.g(), act);
    auto plain = s.attrs();
    plain.set(attr_id::activation, std::int64_t{0});
    const tensor_id pre = s.op.inputs.size() == 3 ? s.b.add1(s.op.kind, {s.in(0), s.in(1), s.in(2)}, plain)
                                                  : s.b.add1(s.op.kind, {s.in(0), s.in(1)}, plain);
    return s.b.add1(op_kind::gelu_grad, {pre, s.g()});
}

/// The addend's gradient of conv2d_bias / matmul_bias: dz summed back to its broadcast shape.
inline void addend_gradient(grad_site& s, tensor_id dz) {
    if (s.need.size() > 2 && s.need[2]) s.give(2, s.b.unbroadcast(dz, s.in_dims(2)));
}

inline void conv2d_rule(grad_site& s) {
    const auto& a = s.attrs();
    const tensor_id dz = fused_gradient(s);
    addend_gradient(s, dz);
    const auto attrs_for = [&](std::size_t i) {
        return ops::attribute_map{{attr_id::stride, a.get(attr_id::stride)},
                                  {attr_id::padding, a.get(attr_id::padding)},
                                  {attr_id::dilation, a.get(attr_id::dilation)},
                                  {attr_id::shape, gradient_builder::to_ints(s.in_dims(i))}};
    };
    if (s.need[0]) s.give(0, s.b.add1(op_kind::conv2d_grad_input, {dz, s.in(1)}, attrs_for(0)));
    if (s.need[1]) s.give(1, s.b.add1(op_kind::conv2d_grad_weight, {s.in(0), dz}, attrs_for(1)));
}

inline void matmul_rule(grad_site& s) {
    auto& b = s.b;
    const tensor_id dz = fused_gradient(s);
    addend_gradient(s, dz);
    for (std::size_t i = 0; i < 2; ++i) {
        if (!s.need[i]) continue;
        // dx = dz w^T, dw = x^T dz
        const tensor_id other = b.add1(op_kind::transpose, {s.in(1 - i)},
                                       {{attr_id::perm, gradient_builder::swap_last_two(s.in_dims(1 - i).rank())}});
        const tensor_id d = i == 0 ? b.add1(op_kind::matmul, {dz, other}) : b.add1(op_kind::matmul, {other, dz});
        s.give(i, b.unbroadcast(d, s.in_dims(i)));
    }
}

inline void ewadd_rule(grad_site& s) {
    for (std::size_t i = 0; i < 2; ++i)
        if (s.need[i]) s.give(i, s.b.unbroadcast(s.g(), s.in_dims(i)));
}

inline void ewmul_rule(grad_site& s) {
    for (std::size_t i = 0; i < 2; ++i)
        if (s.need[i]) s.give(i, s.b.unbroadcast(s.b.add1(op_kind::ewmul, {s.g(), s.in(1 - i)}), s.in_dims(i)));
}

inline void smul_rule(grad_site& s) {
    auto& b = s.b;
    if (s.need[0]) s.give(0, b.add1(op_kind::smul, {s.g(), s.in(1)}));
    if (s.need[1]) {
        const tensor_id sum = b.add1(op_kind::reduce_sum, {b.add1(op_kind::ewmul, {s.g(), s.in(0)})},
                                     {{attr_id::keepdims, std::int64_t(0)}});
        s.give(1, b.reshaped(sum, s.in_dims(1)));
    }
}

inline void relu_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::relu_grad, {s.y(), s.g()})); }

inline void transpose_rule(grad_site& s) {
    ints perm = s.attrs().get_ints(attr_id::perm);
    if (!perm.empty()) {
        ints inv(perm.size());
        for (std::size_t i = 0; i < perm.size(); ++i)
            inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
        perm = std::move(inv);
    }
    s.give(0, s.b.add1(op_kind::transpose, {s.g()}, {{attr_id::perm, perm}}));
}

inline void enlarge_rule(grad_site& s) {
    const ops::shape& w = s.in_dims(0);
    const ops::shape& out = s.b.fwd.type_of(s.y()).dims;
    ints begin{0, 0, (out[2] - w[2]) / 2, (out[3] - w[3]) / 2}, end(4);
    for (std::size_t i = 0; i < 4; ++i) end[i] = begin[i] + w[i];
    s.give(0, s.b.add1(op_kind::slice, {s.g()}, {{attr_id::begin, begin}, {attr_id::end, end}}));
}

inline void pool2d_rule(grad_site& s) {
    const auto& a = s.attrs();
    const tensor_id dz = s.b.through_activation(s.y(), s.g(), a.get_int(attr_id::activation));
    ops::attribute_map pa{{attr_id::kernel, a.get(attr_id::kernel)},
                          {attr_id::stride, a.get(attr_id::stride)},
                          {attr_id::padding, a.get(attr_id::padding)}};
    if (s.op.kind == op_kind::maxpool2d) {
        s.give(0, s.b.add1(op_kind::maxpool2d_grad, {s.in(0), dz}, std::move(pa)));
    } else {
        pa.set(attr_id::shape, gradient_builder::to_ints(s.in_dims(0)));
        s.give(0, s.b.add1(op_kind::avgpool2d_grad, {dz}, std::move(pa)));
    }
}

inline void concat_rule(grad_site& s) {
    const std::size_t n = s.op.inputs.size();
    if (n == 1) return s.give(0, s.g());
    ints sizes;
    const std::size_t ax = s.b.fwd.type_of(s.y()).dims.axis(s.attrs().get_int(attr_id::axis));
    for (std::size_t i = 0; i < n; ++i) sizes.push_back(s.in_dims(i)[ax]);
    const tensor_id one[] = {s.g()};
    const auto parts =
        s.b.add(op_kind::split, one, {{attr_id::axis, static_cast<std::int64_t>(ax)}, {attr_id::sizes, sizes}});
    for (std::size_t i = 0; i < n; ++i) s.give(i, parts[i]);
}

inline void split_rule(grad_site& s) {
    if (s.op.outputs.size() == 1) return s.give(0, s.g());
    std::vector<tensor_id> parts;
    for (std::size_t k = 0; k < s.op.outputs.size(); ++k) parts.push_back(s.dy_or_zeros(k));
    s.give(0, s.b.add(op_kind::concat, parts, {{attr_id::axis, s.attrs().get_int(attr_id::axis)}})[0]);
}

inline void sub_rule(grad_site& s) {
    auto& b = s.b;
    if (s.need[0]) s.give(0, b.unbroadcast(s.g(), s.in_dims(0)));
    if (s.need[1]) s.give(1, b.unbroadcast(b.add1(op_kind::smul, {s.g(), s.minus_one()}), s.in_dims(1)));
}

inline void div_rule(grad_site& s) {
    auto& b = s.b;
    if (s.need[0]) s.give(0, b.unbroadcast(b.add1(op_kind::div, {s.g(), s.in(1)}), s.in_dims(0)));
    if (s.need[1]) {
        // d(x / w)/dw = -(x / w) / w
        const tensor_id q = b.add1(op_kind::ewmul, {s.g(), b.add1(op_kind::div, {s.y(), s.in(1)})});
        s.give(1, b.unbroadcast(b.add1(op_kind::smul, {q, s.minus_one()}), s.in_dims(1)));
    }
}

/// y = x^e: dx = dy * e * x^(e - 1), de = dy * y * log(x) where x > 0 and 0 elsewhere: x^e of a
/// negative x exists only for integer e, where it has no derivative in e (and an ONNX import holds
/// LayerNorm's exponent 2 as a weight, whose update must not turn NaN). log reads max(x, tiny), so
/// no infinity reaches the mask.
inline void pow_rule(grad_site& s) {
    auto& b = s.b;
    if (s.need[0]) {
        const tensor_id e_minus_one = b.add1(op_kind::sub, {s.in(1), b.scalar(1.0, s.dtype(), "grad/const/one")});
        const tensor_id slope = b.add1(op_kind::ewmul, {s.in(1), b.add1(op_kind::pow, {s.in(0), e_minus_one})});
        s.give(0, b.unbroadcast(b.add1(op_kind::ewmul, {s.g(), slope}), s.in_dims(0)));
    }
    if (s.need[1]) {
        const tensor_id positive = b.add1(op_kind::clip, {s.in(0)},
                                          {{attr_id::min, double(std::numeric_limits<float>::min())},
                                           {attr_id::max, std::numeric_limits<double>::max()}});
        const tensor_id ylog = b.add1(op_kind::ewmul, {s.y(), b.add1(op_kind::log, {positive})});
        const tensor_id masked =
            b.add1(op_kind::relu_grad, {s.in_at_output_shape(0), b.add1(op_kind::ewmul, {s.g(), ylog})});
        s.give(1, b.unbroadcast(masked, s.in_dims(1)));
    }
}

/// y = sqrt(x): dx = dy * 0.5 / y.
inline void sqrt_rule(grad_site& s) {
    auto& b = s.b;
    s.give(0,
           b.add1(op_kind::div, {b.add1(op_kind::smul, {s.g(), b.scalar(0.5, s.dtype(), "grad/const/half")}), s.y()}));
}

inline void sigmoid_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::sigmoid_grad, {s.y(), s.g()})); }
inline void tanh_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::tanh_grad, {s.y(), s.g()})); }
inline void gelu_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::gelu_grad, {s.in(0), s.g()})); }
inline void erf_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::erf_grad, {s.in(0), s.g()})); }
inline void log_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::div, {s.g(), s.in(0)})); }

/// dy where both gaps are positive, else 0: two relu_grad masks. The gradient of every clipped
/// line (clip, hard_sigmoid, hard_swish's slope) is its slope inside the interval and 0 outside, and
/// the gaps are the distances to the interval's ends (x - low, high - x).
inline tensor_id inside_mask(gradient_builder& b, tensor_id gap_to_low, tensor_id gap_to_high, tensor_id dy) {
    return b.add1(op_kind::relu_grad, {gap_to_high, b.add1(op_kind::relu_grad, {gap_to_low, dy})});
}

/// dy where min < x < max, else 0.
inline void clip_rule(grad_site& s) {
    auto& b = s.b;
    const ops::dtype t = s.dtype();
    const double lo = s.attrs().get_real(attr_id::min), hi = s.attrs().get_real(attr_id::max);
    const tensor_id above = b.add1(op_kind::sub, {s.in(0), b.scalar(lo, t, "grad/const/clip_min")});
    const tensor_id below = b.add1(op_kind::sub, {b.scalar(hi, t, "grad/const/clip_max"), s.in(0)});
    s.give(0, inside_mask(b, above, below, s.g()));
}

/// alpha dy + (1 - alpha) dy [x > 0].
inline void leaky_relu_rule(grad_site& s) {
    auto& b = s.b;
    const ops::dtype t = s.dtype();
    const double alpha = s.attrs().get_real(attr_id::alpha);
    const tensor_id below = b.add1(op_kind::ewmul, {s.g(), b.scalar(alpha, t, "grad/const/leaky_alpha")});
    const tensor_id above = b.add1(op_kind::ewmul, {b.add1(op_kind::relu_grad, {s.in(0), s.g()}),
                                                    b.scalar(1 - alpha, t, "grad/const/leaky_rest")});
    s.give(0, b.add1(op_kind::ewadd, {below, above}));
}

/// alpha dy where 0 < alpha x + beta < 1: the line before it is clipped, masked as clip's.
inline void hard_sigmoid_rule(grad_site& s) {
    auto& b = s.b;
    const ops::dtype t = s.dtype();
    const double alpha = s.attrs().get_real(attr_id::alpha), beta = s.attrs().get_real(attr_id::beta);
    const tensor_id scale = b.scalar(alpha, t, "grad/const/hard_sigmoid_alpha");
    const tensor_id line = b.add1(
        op_kind::ewadd, {b.add1(op_kind::ewmul, {s.in(0), scale}), b.scalar(beta, t, "grad/const/hard_sigmoid_beta")});
    const tensor_id room = b.add1(op_kind::sub, {b.scalar(1.0, t, "grad/const/one"), line});
    s.give(0, b.add1(op_kind::ewmul, {inside_mask(b, line, room, s.g()), scale}));
}

/// dy hard_sigmoid(x) + dy x / 6 where -3 < x < 3 (the product rule on x hard_sigmoid(x)). The gate
/// is computed again: the forward op keeps only the product, and dividing it by x fails at 0.
inline void hard_swish_rule(grad_site& s) {
    auto& b = s.b;
    const ops::dtype t = s.dtype();
    const tensor_id x = s.in(0);
    const tensor_id gate = b.add1(op_kind::hard_sigmoid, {x}, {{attr_id::alpha, 1.0 / 6}, {attr_id::beta, 0.5}});
    const tensor_id slope =
        b.add1(op_kind::ewmul, {b.add1(op_kind::ewmul, {s.g(), x}), b.scalar(1.0 / 6, t, "grad/const/sixth")});
    const tensor_id three = b.scalar(3.0, t, "grad/const/three");
    const tensor_id above = b.add1(op_kind::ewadd, {x, three}), below = b.add1(op_kind::sub, {three, x});
    s.give(0, b.add1(op_kind::ewadd, {b.add1(op_kind::ewmul, {s.g(), gate}), inside_mask(b, above, below, slope)}));
}

/// dy e^x = dy y.
inline void exp_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::ewmul, {s.g(), s.y()})); }

/// dx = dy where x > 0, slope dy elsewhere; dslope = dy min(x, 0) = dy (x - relu(x)), summed over
/// what the slope was broadcast to.
inline void prelu_rule(grad_site& s) {
    auto& b = s.b;
    const tensor_id x = s.in_at_output_shape(0);
    if (s.need[0]) {
        const tensor_id above = b.add1(op_kind::relu_grad, {x, s.g()});
        const tensor_id below = b.add1(op_kind::ewmul, {b.add1(op_kind::sub, {s.g(), above}), s.in(1)});
        s.give(0, b.unbroadcast(b.add1(op_kind::ewadd, {above, below}), s.in_dims(0)));
    }
    if (s.need[1]) {
        const tensor_id negative_part = b.add1(op_kind::sub, {x, b.add1(op_kind::relu, {x})});
        s.give(1, b.unbroadcast(b.add1(op_kind::ewmul, {s.g(), negative_part}), s.in_dims(1)));
    }
}

/// dy sigmoid(x).
inline void softplus_rule(grad_site& s) {
    s.give(0, s.b.add1(op_kind::ewmul, {s.g(), s.b.add1(op_kind::sigmoid, {s.in(0)})}));
}

/// dy where x > 0, dy (y + alpha) elsewhere (alpha e^x = y + alpha there).
inline void elu_rule(grad_site& s) {
    auto& b = s.b;
    const double alpha = s.attrs().get_real(attr_id::alpha);
    const tensor_id above = b.add1(op_kind::relu_grad, {s.in(0), s.g()});
    const tensor_id slope_below = b.add1(op_kind::ewadd, {s.y(), b.scalar(alpha, s.dtype(), "grad/const/elu_alpha")});
    const tensor_id below = b.add1(op_kind::ewmul, {b.add1(op_kind::sub, {s.g(), above}), slope_below});
    s.give(0, b.add1(op_kind::ewadd, {above, below}));
}

/// dy sign(x): the mask of x > 0 minus the mask of -x > 0 (0 at x = 0).
inline void abs_rule(grad_site& s) {
    auto& b = s.b;
    const tensor_id negated = b.add1(op_kind::smul, {s.in(0), s.minus_one()});
    s.give(0, b.add1(op_kind::sub,
                     {b.add1(op_kind::relu_grad, {s.in(0), s.g()}), b.add1(op_kind::relu_grad, {negated, s.g()})}));
}

/// lrn's window sum has no other kind: its gradient is lrn_grad(x, dy), with lrn's attributes.
inline void lrn_rule(grad_site& s) { s.give(0, s.b.add1(op_kind::lrn_grad, {s.in(0), s.g()}, s.attrs())); }

/// Instance normalization is layer normalization over the axes after the channels with the per-channel
/// scale and bias applied after: dx is layernorm_grad's dx for dy * scale (gamma 1), dscale the sum of
/// dy * xhat and dbias the sum of dy over every axis but the channels.
inline void instance_norm_rule(grad_site& s) {
    auto& b = s.b;
    const ops::shape& x = s.in_dims(0);
    const ops::dtype t = s.dtype();
    const ops::shape plane{std::span<const std::int64_t>(x.begin() + 2, x.rank() - 2)};
    ops::shape per_channel{x[1]};  // [C, 1, ...]: scale and bias broadcast over x
    while (per_channel.rank() + 1 < x.rank()) per_channel.push_back(1);
    ints not_channels{0};
    for (std::size_t i = 2; i < x.rank(); ++i) not_channels.push_back(static_cast<std::int64_t>(i));
    const ops::attribute_map norm{{attr_id::axis, std::int64_t{2}},
                                  {attr_id::epsilon, s.attrs().get(attr_id::epsilon)}};
    const tensor_id ones = b.fill(plane, 1.0, t);
    if (s.need[0]) {
        const tensor_id scaled = b.add1(op_kind::ewmul, {s.g(), b.reshaped(s.in(1), per_channel)});
        const tensor_id args[] = {s.in(0), ones, scaled};
        s.give(0, b.add(op_kind::layernorm_grad, args, norm)[0]);
    }
    const ops::attribute_map sum{{attr_id::axes, not_channels}, {attr_id::keepdims, std::int64_t{0}}};
    if (s.need[1]) {
        const tensor_id xhat = b.add1(op_kind::layernorm, {s.in(0), ones, b.fill(plane, 0.0, t)}, norm);
        s.give(1, b.add1(op_kind::reduce_sum, {b.add1(op_kind::ewmul, {s.g(), xhat})}, sum));
    }
    if (s.need[2]) s.give(2, b.add1(op_kind::reduce_sum, {s.g()}, sum));
}

/// dy / (1 + |x|)^2 = dy (1 - |y|)^2.
inline void softsign_rule(grad_site& s) {
    auto& b = s.b;
    const tensor_id rest =
        b.add1(op_kind::sub, {b.scalar(1.0, s.dtype(), "grad/const/one"), b.add1(op_kind::abs, {s.y()})});
    s.give(0, b.add1(op_kind::ewmul, {s.g(), b.add1(op_kind::ewmul, {rest, rest})}));
}

/// max and min: dy to the operand that is strictly larger (smaller), ties to the second; each summed
/// back to its broadcast shape.
inline void max_min_rule(grad_site& s) {
    auto& b = s.b;
    const tensor_id x = s.in_at_output_shape(0), w = s.in_at_output_shape(1);
    const tensor_id gap = s.op.kind == op_kind::max ? b.add1(op_kind::sub, {x, w}) : b.add1(op_kind::sub, {w, x});
    const tensor_id first = b.add1(op_kind::relu_grad, {gap, s.g()});
    if (s.need[0]) s.give(0, b.unbroadcast(first, s.in_dims(0)));
    if (s.need[1]) s.give(1, b.unbroadcast(b.add1(op_kind::sub, {s.g(), first}), s.in_dims(1)));
}

inline void identity_rule(grad_site& s) { s.give(0, s.g()); }

/// reshape and flatten: the gradient reshaped back.
inline void reshape_rule(grad_site& s) {
    s.give(0, s.b.add1(op_kind::reshape, {s.g()}, {{attr_id::shape, gradient_builder::to_ints(s.in_dims(0))}}));
}

inline void pad_rule(grad_site& s) {
    const auto& p = s.attrs().get_ints(attr_id::pads);
    const ops::shape& x = s.in_dims(0);
    ints begin(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(x.rank())), end(x.rank());
    for (std::size_t i = 0; i < x.rank(); ++i) end[i] = begin[i] + x[i];
    s.give(0, s.b.add1(op_kind::slice, {s.g()}, {{attr_id::begin, begin}, {attr_id::end, end}}));
}

inline void slice_rule(grad_site& s) {
    const auto& begin = s.attrs().get_ints(attr_id::begin);
    const auto& end = s.attrs().get_ints(attr_id::end);
    const ops::shape& x = s.in_dims(0);
    ints p(2 * x.rank());
    for (std::size_t i = 0; i < x.rank(); ++i) {
        p[i] = begin[i];
        p[x.rank() + i] = x[i] - end[i];
    }
    s.give(0, s.b.add1(op_kind::pad, {s.g()}, {{attr_id::pads, p}}));
}

inline void gather_rule(grad_site& s) {
    s.give(0, s.b.add1(op_kind::gather_grad, {s.in(1), s.g()},
                       {{attr_id::axis, s.attrs().get_int(attr_id::axis)},
                        {attr_id::shape, gradient_builder::to_ints(s.in_dims(0))}}));
}

inline void global_avgpool_rule(grad_site& s) {
    const ops::shape& x = s.in_dims(0);
    const double n = static_cast<double>(x.num_elements() / s.b.fwd.type_of(s.y()).dims.num_elements());
    s.give(0, s.b.add1(op_kind::ewmul, {s.g(), s.b.fill(x, 1.0 / n, s.dtype())}));
}

inline void batchnorm_rule(grad_site& s) {
    const tensor_id args[] = {s.in(0), s.in(1), s.in(3), s.in(4), s.g()};
    const auto r = s.b.add(op_kind::batchnorm_grad, args, {{attr_id::epsilon, s.attrs().get(attr_id::epsilon)}});
    for (std::size_t i = 0; i < 5; ++i) s.give(i, r[i]);
}

inline void softmax_rule(grad_site& s) {
    s.give(0, s.b.add1(op_kind::softmax_grad, {s.y(), s.g()}, {{attr_id::axis, s.attrs().get(attr_id::axis)}}));
}

inline void layernorm_rule(grad_site& s) {
    const tensor_id args[] = {s.in(0), s.in(1), s.g()};
    const auto r =
        s.b.add(op_kind::layernorm_grad, args,
                {{attr_id::axis, s.attrs().get(attr_id::axis)}, {attr_id::epsilon, s.attrs().get(attr_id::epsilon)}});
    for (std::size_t i = 0; i < 3; ++i) s.give(i, r[i]);
}

/// reduce_sum and reduce_mean: the gradient broadcast back over the reduced axes (times 1/count).
inline void reduce_rule(grad_site& s) {
    const ops::shape& x = s.in_dims(0);
    ops::shape kept = x;
    const auto& axes = s.attrs().get_ints(attr_id::axes);
    std::int64_t count = 1;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        bool r = axes.empty();
        for (const auto ax : axes) r |= x.axis(ax) == i;
        if (r) {
            count *= x[i];
            kept[i] = 1;
        }
    }
    const double scale = s.op.kind == op_kind::reduce_mean ? 1.0 / static_cast<double>(count) : 1.0;
    s.give(0, s.b.add1(op_kind::ewmul, {s.b.reshaped(s.g(), kept), s.b.fill(x, scale, s.dtype())}));
}

inline void reduce_max_rule(grad_site& s) {
    s.give(0, s.b.add1(op_kind::reduce_max_grad, {s.in(0), s.g()},
                       {{attr_id::axes, s.attrs().get(attr_id::axes)},
                        {attr_id::keepdims, s.attrs().get(attr_id::keepdims)}}));
}

inline void lstm_cell_rule(grad_site& s) {
    const tensor_id dh = s.dy_or_zeros(0), dc = s.dy_or_zeros(1);
    const tensor_id args[] = {s.in(0), s.in(1), s.in(2), s.in(3), s.in(4), s.in(5), dh, dc};
    const auto r = s.b.add(op_kind::lstm_cell_grad, args);
    for (std::size_t i = 0; i < 6; ++i) s.give(i, r[i]);
}

inline void gru_cell_rule(grad_site& s) {
    const tensor_id args[] = {s.in(0), s.in(1), s.in(2), s.in(3), s.in(4), s.g()};
    const auto r = s.b.add(op_kind::gru_cell_grad, args);
    for (std::size_t i = 0; i < 5; ++i) s.give(i, r[i]);
}

/// add_n: every input receives the gradient as it is.
inline void add_n_rule(grad_site& s) {
    for (std::size_t i = 0; i < s.op.inputs.size(); ++i) s.give(i, s.g());
}

/// The gradient rule of every op kind, indexed by op_kind. Sources are never differentiated (a
/// weight's gradient is its output's); the gradient and update kinds have none: a training graph
/// is not differentiated again.
inline constexpr std::array<gradient_rule, ops::num_op_kinds> gradient_table = ops::by_kind<gradient_rule>({{
    // sources
    {op_kind::input, no_gradient},
    {op_kind::weight, no_gradient},
    {op_kind::const_pool, no_gradient},
    {op_kind::const_iconv, no_gradient},
    {op_kind::const_imm, no_gradient},
    {op_kind::const_one, no_gradient},
    // TASO's compute operators
    {op_kind::conv2d, conv2d_rule},
    {op_kind::matmul, matmul_rule},
    {op_kind::ewadd, ewadd_rule},
    {op_kind::ewmul, ewmul_rule},
    {op_kind::smul, smul_rule},
    {op_kind::relu, relu_rule},
    {op_kind::transpose, transpose_rule},
    {op_kind::enlarge, enlarge_rule},
    {op_kind::avgpool2d, pool2d_rule},
    {op_kind::maxpool2d, pool2d_rule},
    {op_kind::concat, concat_rule},
    {op_kind::split, split_rule},
    // arithmetic and activations
    {op_kind::sub, sub_rule},
    {op_kind::div, div_rule},
    {op_kind::pow, pow_rule},
    {op_kind::sqrt, sqrt_rule},
    {op_kind::sigmoid, sigmoid_rule},
    {op_kind::tanh, tanh_rule},
    {op_kind::gelu, gelu_rule},
    {op_kind::erf, erf_rule},
    {op_kind::log, log_rule},
    {op_kind::clip, clip_rule},
    {op_kind::identity, identity_rule},
    // data movement
    {op_kind::reshape, reshape_rule},
    {op_kind::flatten, reshape_rule},
    {op_kind::pad, pad_rule},
    {op_kind::slice, slice_rule},
    {op_kind::gather, {gather_rule, 0b10}},  // the indices carry no gradient
    {op_kind::global_avgpool, global_avgpool_rule},
    // normalization and reductions
    {op_kind::batchnorm, batchnorm_rule},
    {op_kind::softmax, softmax_rule},
    {op_kind::layernorm, layernorm_rule},
    {op_kind::reduce_sum, reduce_rule},
    {op_kind::reduce_mean, reduce_rule},
    {op_kind::reduce_max, reduce_max_rule},
    // recurrent cells
    {op_kind::lstm_cell, lstm_cell_rule},
    {op_kind::gru_cell, gru_cell_rule},
    {op_kind::conv2d_bias, conv2d_rule},
    {op_kind::matmul_bias, matmul_rule},
    // gradients and optimizer updates
    {op_kind::const_fill, no_gradient},
    {op_kind::add_n, add_n_rule},
    {op_kind::conv2d_grad_input, no_gradient},
    {op_kind::conv2d_grad_weight, no_gradient},
    {op_kind::relu_grad, no_gradient},
    {op_kind::sigmoid_grad, no_gradient},
    {op_kind::tanh_grad, no_gradient},
    {op_kind::gelu_grad, no_gradient},
    {op_kind::erf_grad, no_gradient},
    {op_kind::avgpool2d_grad, no_gradient},
    {op_kind::maxpool2d_grad, no_gradient},
    {op_kind::softmax_grad, no_gradient},
    {op_kind::layernorm_grad, no_gradient},
    {op_kind::batchnorm_grad, no_gradient},
    {op_kind::gather_grad, no_gradient},
    {op_kind::reduce_max_grad, no_gradient},
    {op_kind::lstm_cell_grad, no_gradient},
    {op_kind::gru_cell_grad, no_gradient},
    {op_kind::sgd_update, no_gradient},
    {op_kind::adam_update, no_gradient},
    {op_kind::constant, no_gradient},
    {op_kind::opaque, no_gradient},  // its semantics are unknown
    {op_kind::leaky_relu, leaky_relu_rule},
    {op_kind::hard_sigmoid, hard_sigmoid_rule},
    {op_kind::hard_swish, hard_swish_rule},
    {op_kind::exp, exp_rule},
    {op_kind::prelu, prelu_rule},
    {op_kind::softplus, softplus_rule},
    {op_kind::elu, elu_rule},
    {op_kind::abs, abs_rule},
    {op_kind::lrn, lrn_rule},
    {op_kind::lrn_grad, no_gradient},
    {op_kind::instance_norm, instance_norm_rule},
    {op_kind::softsign, softsign_rule},
    {op_kind::max, max_min_rule},
    {op_kind::min, max_min_rule},
}});

/// Whether input `slot` of an op of kind k carries a gradient at all.
constexpr bool differentiable_slot(op_kind k, std::size_t slot) noexcept {
    return slot >= 8 || !((gradient_table[static_cast<std::size_t>(k)].constant_slots >> slot) & 1u);
}

/// Whether kind k has a gradient rule.
constexpr bool has_gradient_rule(op_kind k) noexcept {
    return gradient_table[static_cast<std::size_t>(k)].fn != nullptr;
}

}  // namespace goopt::models::detail
