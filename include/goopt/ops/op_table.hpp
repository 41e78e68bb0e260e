#pragma once
/// @file
/// @brief The constexpr operator table: one entry per op_kind, the single place an operator is
/// described (arity, attributes, shape rule, FLOPs, traffic, algebraic facts). TASO (SOSP'19) §3
/// lists the operator set and the algebraic facts that the substitution generator relies on.

#include <goopt/ops/cost_formulas.hpp>
#include <goopt/ops/kind_table.hpp>
#include <goopt/ops/op_spec.hpp>
#include <goopt/ops/shape_rules.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace goopt::ops {

namespace detail {
inline constexpr std::array<std::int64_t, 2> ones2{1, 1};
using T = attr_type;
using A = attr_id;

inline constexpr std::array source_attrs{attr_spec{A::shape, T::ints, true},
                                         attr_spec{A::dtype, T::integer, false, static_cast<std::int64_t>(dtype::f32)}};
inline constexpr std::array conv_attrs{attr_spec{A::stride, T::ints, false, 0, 0.0, ones2},
                                       attr_spec{A::padding, T::integer}, attr_spec{A::activation, T::integer},
                                       attr_spec{A::dilation, T::ints, false, 0, 0.0, ones2}};
inline constexpr std::array matmul_attrs{attr_spec{A::activation, T::integer}};
inline constexpr std::array pool_attrs{attr_spec{A::kernel, T::ints, true},
                                       attr_spec{A::stride, T::ints, false, 0, 0.0, ones2},
                                       attr_spec{A::padding, T::integer}, attr_spec{A::activation, T::integer}};
inline constexpr std::array perm_attrs{attr_spec{A::perm, T::ints}};
inline constexpr std::array kernel_attrs{attr_spec{A::kernel, T::ints, true}};
inline constexpr std::array concat_attrs{attr_spec{A::axis, T::integer, true}};
inline constexpr std::array split_attrs{attr_spec{A::axis, T::integer, true}, attr_spec{A::sizes, T::ints, true}};
inline constexpr std::array clip_attrs{attr_spec{A::min, T::real, true}, attr_spec{A::max, T::real, true}};
inline constexpr std::array reshape_attrs{attr_spec{A::shape, T::ints, true}};
inline constexpr std::array flatten_attrs{attr_spec{A::axis, T::integer, false, 1}};
inline constexpr std::array pad_attrs{attr_spec{A::pads, T::ints, true}, attr_spec{A::value, T::real}};
inline constexpr std::array slice_attrs{attr_spec{A::begin, T::ints, true}, attr_spec{A::end, T::ints, true}};
inline constexpr std::array gather_attrs{attr_spec{A::axis, T::integer}};
inline constexpr std::array batchnorm_attrs{attr_spec{A::epsilon, T::real, false, 0, 1e-5}};
inline constexpr std::array softmax_attrs{attr_spec{A::axis, T::integer, false, -1}};
inline constexpr std::array layernorm_attrs{attr_spec{A::axis, T::integer, false, -1},
                                            attr_spec{A::epsilon, T::real, false, 0, 1e-5}};
inline constexpr std::array reduce_attrs{attr_spec{A::axes, T::ints}, attr_spec{A::keepdims, T::integer, false, 1}};
// gradients and optimizer updates (training graphs): `shape` records the forward input a gradient
// has the shape of, where the incoming gradient alone does not determine it
inline constexpr std::array fill_attrs{attr_spec{A::shape, T::ints, true},
                                       attr_spec{A::dtype, T::integer, false, static_cast<std::int64_t>(dtype::f32)},
                                       attr_spec{A::value, T::real}};
inline constexpr std::array conv_grad_attrs{
    attr_spec{A::stride, T::ints, false, 0, 0.0, ones2}, attr_spec{A::padding, T::integer},
    attr_spec{A::dilation, T::ints, false, 0, 0.0, ones2}, attr_spec{A::shape, T::ints, true}};
inline constexpr std::array avgpool_grad_attrs{attr_spec{A::kernel, T::ints, true},
                                               attr_spec{A::stride, T::ints, false, 0, 0.0, ones2},
                                               attr_spec{A::padding, T::integer}, attr_spec{A::shape, T::ints, true}};
inline constexpr std::array maxpool_grad_attrs{attr_spec{A::kernel, T::ints, true},
                                               attr_spec{A::stride, T::ints, false, 0, 0.0, ones2},
                                               attr_spec{A::padding, T::integer}};
inline constexpr std::array gather_grad_attrs{attr_spec{A::axis, T::integer}, attr_spec{A::shape, T::ints, true}};
inline constexpr std::array adam_attrs{attr_spec{A::epsilon, T::real, false, 0, 1e-8}};
inline constexpr std::array leaky_relu_attrs{attr_spec{A::alpha, T::real, false, 0, 0.01}};
inline constexpr std::array elu_attrs{attr_spec{A::alpha, T::real, false, 0, 1.0}};
// ONNX's LRN: size required, the rest with ONNX's defaults
inline constexpr std::array lrn_attrs{
    attr_spec{A::size, T::integer, true}, attr_spec{A::alpha, T::real, false, 0, 1e-4},
    attr_spec{A::beta, T::real, false, 0, 0.75}, attr_spec{A::bias, T::real, false, 0, 1.0}};
inline constexpr std::array hard_sigmoid_attrs{attr_spec{A::alpha, T::real, false, 0, 0.2},
                                               attr_spec{A::beta, T::real, false, 0, 0.5}};
inline constexpr std::array opaque_attrs{attr_spec{A::node, T::integer, true}, attr_spec{A::shapes, T::ints, true},
                                         attr_spec{A::dtypes, T::ints, true}};

namespace cf = cost_formulas;
namespace sr = shape_rules;

static_assert(!std::is_default_constructible_v<required_fn<infer_fn>> &&
              !std::is_constructible_v<required_fn<infer_fn>, std::nullptr_t> &&
              !std::is_constructible_v<required_fn<cost_fn>, cost_fn>);

/// One table row as written below: an op_spec whose shape rule and cost formulas must be given.
struct table_row {
    op_kind kind;
    std::string_view name;
    std::uint16_t min_inputs;
    std::uint16_t max_inputs;
    std::uint16_t num_outputs;
    std::span<const attr_spec> attrs;
    required_fn<infer_fn> infer;
    required_fn<cost_fn> flops;
    required_fn<cost_fn> bytes;
    property props = none_property;
    std::uint8_t linear_in = 0;
    std::string_view semantics = {};
};

template <std::size_t N> consteval std::array<op_spec, N> to_specs(const std::array<table_row, N>& rows) {
    std::array<op_spec, N> specs{};
    for (std::size_t i = 0; i < N; ++i) {
        const table_row& r = rows[i];
        specs[i] = op_spec{r.kind,     r.name,     r.min_inputs, r.max_inputs, r.num_outputs, r.attrs,
                           r.infer.fn, r.flops.fn, r.bytes.fn,   r.props,      r.linear_in,   r.semantics};
    }
    return specs;
}
}  // namespace detail

/// The operator table, indexed by op_kind.
inline constexpr std::array<op_spec, num_op_kinds> op_table =
    detail::to_specs(std::array<detail::table_row, num_op_kinds>{{
        // ---- sources
        {op_kind::input, "input", 0, 0, 1, detail::source_attrs, detail::sr::source, detail::cf::zero,
         detail::cf::no_bytes, source, 0, "a graph input fed at run time"},
        {op_kind::weight, "weight", 0, 0, 1, detail::source_attrs, detail::sr::source, detail::cf::zero,
         detail::cf::no_bytes, source, 0, "a trained parameter: persistent memory"},
        {op_kind::const_pool, "const_pool", 0, 0, 1, detail::source_attrs, detail::sr::const_pool, detail::cf::zero,
         detail::cf::output_bytes, source | constant, 0,
         "depthwise kernel [C,1,kh,kw] of 1/(kh*kw): conv with it (groups = C) is average pooling"},
        {op_kind::const_iconv, "const_iconv", 0, 0, 1, detail::source_attrs, detail::sr::const_iconv, detail::cf::zero,
         detail::cf::output_bytes, source | constant, 0, "identity conv kernel [C,C,kh,kw]: 1 at the center of (c,c)"},
        {op_kind::const_imm, "const_imm", 0, 0, 1, detail::source_attrs, detail::sr::const_imm, detail::cf::zero,
         detail::cf::output_bytes, source | constant, 0, "identity matrix [n,n]"},
        {op_kind::const_one, "const_one", 0, 0, 1, detail::source_attrs, detail::sr::source, detail::cf::zero,
         detail::cf::output_bytes, source | constant, 0, "all-ones tensor"},
        // ---- TASO's compute operators
        {op_kind::conv2d, "conv2d", 2, 2, 1, detail::conv_attrs, detail::sr::conv2d, detail::cf::conv2d,
         detail::cf::io_bytes, linear | fused_activation | contraction, 0b11,
         "grouped, strided, dilated 2-D convolution, NCHW, SAME/VALID padding, fused activation"},
        {op_kind::matmul, "matmul", 2, 2, 1, detail::matmul_attrs, detail::sr::matmul, detail::cf::matmul,
         detail::cf::io_bytes, fused_activation | contraction, 0b11,
         "batched matrix product, batch dimensions broadcast"},
        {op_kind::ewadd,
         "ewadd",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise | commutative | associative | broadcasts | linear,
         0,
         "elementwise sum"},
        {op_kind::ewmul,
         "ewmul",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise | commutative | associative | broadcasts,
         0b11,
         "elementwise product"},
        {op_kind::smul,
         "smul",
         2,
         2,
         1,
         {},
         detail::sr::smul,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise,
         0b11,
         "product with a scalar tensor"},
        {op_kind::relu,
         "relu",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "max(x, 0)"},
        {op_kind::transpose, "transpose", 1, 1, 1, detail::perm_attrs, detail::sr::transpose, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear, 0b1, "permutes axes (empty perm: reverses them)"},
        {op_kind::enlarge, "enlarge", 1, 1, 1, detail::kernel_attrs, detail::sr::enlarge, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear, 0b1, "centers a conv kernel in a larger kernel of zeros"},
        {op_kind::avgpool2d, "avgpool2d", 1, 1, 1, detail::pool_attrs, detail::sr::pool2d, detail::cf::pool2d,
         detail::cf::io_bytes, linear | fused_activation | reduction, 0b1,
         "average pooling, padding excluded from the count"},
        {op_kind::maxpool2d, "maxpool2d", 1, 1, 1, detail::pool_attrs, detail::sr::pool2d, detail::cf::pool2d,
         detail::cf::io_bytes, fused_activation | reduction, 0, "max pooling"},
        {op_kind::concat, "concat", 1, variadic, 1, detail::concat_attrs, detail::sr::concat, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear, 0, "concatenation along axis"},
        {op_kind::split, "split", 1, 1, 0, detail::split_attrs, detail::sr::split, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear | multi_output, 0b1,
         "splits along axis into pieces of the given sizes"},
        // ---- arithmetic and activations
        {op_kind::sub,
         "sub",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise | broadcasts | linear,
         0,
         "elementwise difference"},
        {op_kind::div,
         "div",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise | broadcasts,
         0b1,
         "elementwise quotient"},
        {op_kind::pow,
         "pow",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise | broadcasts,
         0,
         "elementwise power"},
        {op_kind::sqrt,
         "sqrt",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<4>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "square root"},
        {op_kind::sigmoid,
         "sigmoid",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<4>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "1 / (1 + exp(-x))"},
        {op_kind::tanh,
         "tanh",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<4>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "hyperbolic tangent"},
        {op_kind::gelu,
         "gelu",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "x * Phi(x), exact (erf) form"},
        {op_kind::erf,
         "erf",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "error function"},
        {op_kind::log,
         "log",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "natural logarithm"},
        {op_kind::clip, "clip", 1, 1, 1, detail::clip_attrs, detail::sr::clip, detail::cf::per_output<2>,
         detail::cf::io_bytes, elementwise, 0, "min(max(x, min), max)"},
        {op_kind::identity,
         "identity",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::zero,
         detail::cf::io_bytes,
         elementwise | data_movement | linear,
         0b1,
         "copy"},
        // ---- data movement
        {op_kind::reshape, "reshape", 1, 1, 1, detail::reshape_attrs, detail::sr::reshape, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear, 0b1, "same elements in row-major order, new shape"},
        {op_kind::flatten, "flatten", 1, 1, 1, detail::flatten_attrs, detail::sr::flatten, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear, 0b1, "reshape to [prod(d[:axis]), prod(d[axis:])]"},
        {op_kind::pad, "pad", 1, 1, 1, detail::pad_attrs, detail::sr::pad, detail::cf::zero, detail::cf::io_bytes,
         data_movement, 0, "constant padding"},
        {op_kind::slice, "slice", 1, 1, 1, detail::slice_attrs, detail::sr::slice, detail::cf::zero,
         detail::cf::io_bytes, data_movement | linear, 0b1, "the box [begin, end) of every axis"},
        {op_kind::gather, "gather", 2, 2, 1, detail::gather_attrs, detail::sr::gather, detail::cf::zero,
         detail::cf::gather_bytes, data_movement, 0b1,
         "slices of data selected by integer indices in [-n, n) along axis (embedding lookup)"},
        {op_kind::global_avgpool,
         "global_avgpool",
         1,
         1,
         1,
         {},
         detail::sr::global_avgpool,
         detail::cf::per_input<1>,
         detail::cf::io_bytes,
         linear | reduction,
         0b1,
         "mean over the spatial axes"},
        // ---- normalization and reductions
        {op_kind::batchnorm, "batchnorm", 5, 5, 1, detail::batchnorm_attrs, detail::sr::batchnorm,
         detail::cf::per_output<2>, detail::cf::io_bytes, pointwise, 0,
         "inference batch norm, inputs (x, scale, bias, mean, var) as ONNX: (x - mean) / sqrt(var + eps) * scale + "
         "bias, channel axis 1"},
        {op_kind::softmax, "softmax", 1, 1, 1, detail::softmax_attrs, detail::sr::softmax, detail::cf::per_output<5>,
         detail::cf::io_bytes, reduction, 0, "softmax along axis"},
        {op_kind::layernorm, "layernorm", 3, 3, 1, detail::layernorm_attrs, detail::sr::layernorm,
         detail::cf::per_output<8>, detail::cf::io_bytes, reduction, 0,
         "normalizes over axes [axis, rank), then * gamma + beta"},
        {op_kind::reduce_sum, "reduce_sum", 1, 1, 1, detail::reduce_attrs, detail::sr::reduce, detail::cf::per_input<1>,
         detail::cf::io_bytes, linear | reduction, 0b1, "sum over axes"},
        {op_kind::reduce_mean, "reduce_mean", 1, 1, 1, detail::reduce_attrs, detail::sr::reduce,
         detail::cf::per_input<1>, detail::cf::io_bytes, linear | reduction, 0b1, "mean over axes"},
        {op_kind::reduce_max, "reduce_max", 1, 1, 1, detail::reduce_attrs, detail::sr::reduce, detail::cf::per_input<1>,
         detail::cf::io_bytes, reduction, 0, "max over axes"},
        // ---- recurrent cells
        {op_kind::lstm_cell,
         "lstm_cell",
         6,
         6,
         2,
         {},
         detail::sr::lstm_cell,
         detail::cf::lstm_cell,
         detail::cf::io_bytes,
         multi_output | contraction,
         0,
         "LSTM step (x, h, c, w, u, b) -> (h', c'), gates i, f, g, o"},
        {op_kind::gru_cell,
         "gru_cell",
         5,
         5,
         1,
         {},
         detail::sr::gru_cell,
         detail::cf::gru_cell,
         detail::cf::io_bytes,
         contraction,
         0,
         "GRU step (x, h, w, u, b) -> h', gates r, z, n"},
        // ---- fused kernels (substitution search makes them; cuDNN's conv-bias-activation, cuBLASLt's
        // bias epilogue and GEMM's beta * C)
        {op_kind::conv2d_bias, "conv2d_bias", 3, 3, 1, detail::conv_attrs, detail::sr::conv2d_bias,
         detail::cf::conv2d_bias, detail::cf::io_bytes, fused_activation | contraction, 0,
         "act(conv2d(x, w) + c), c broadcast to the output: a per-channel bias or a residual"},
        {op_kind::matmul_bias, "matmul_bias", 3, 3, 1, detail::matmul_attrs, detail::sr::matmul_bias,
         detail::cf::matmul_bias, detail::cf::io_bytes, fused_activation | contraction, 0,
         "act(matmul(x, w) + c), c broadcast to the output: a bias row or a residual"},
        // ---- gradients and optimizer updates (training graphs)
        {op_kind::const_fill, "const_fill", 0, 0, 1, detail::fill_attrs, detail::sr::source, detail::cf::zero,
         detail::cf::output_bytes, source | constant, 0,
         "tensor with every element equal to `value` (loss seeds, zeros, hyperparameters)"},
        {op_kind::add_n,
         "add_n",
         1,
         variadic,
         1,
         {},
         detail::sr::add_n,
         detail::cf::add_n,
         detail::cf::io_bytes,
         elementwise | linear,
         0,
         "sum of same-shaped tensors: accumulation of partial gradients"},
        {op_kind::conv2d_grad_input, "conv2d_grad_input", 2, 2, 1, detail::conv_grad_attrs,
         detail::sr::conv2d_grad_input, detail::cf::conv2d_grad_input, detail::cf::io_bytes, contraction, 0,
         "(dy, w) -> dx of conv2d(x, w), x's shape in `shape` (a transposed convolution)"},
        {op_kind::conv2d_grad_weight, "conv2d_grad_weight", 2, 2, 1, detail::conv_grad_attrs,
         detail::sr::conv2d_grad_weight, detail::cf::conv2d_grad_weight, detail::cf::io_bytes, contraction, 0,
         "(x, dy) -> dw of conv2d(x, w), w's shape in `shape`"},
        {op_kind::relu_grad,
         "relu_grad",
         2,
         2,
         1,
         {},
         detail::sr::pointwise_grad,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "(y, dy) -> dy where y > 0, else 0 (y = relu's output)"},
        {op_kind::sigmoid_grad,
         "sigmoid_grad",
         2,
         2,
         1,
         {},
         detail::sr::pointwise_grad,
         detail::cf::per_output<3>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "(y, dy) -> dy * y * (1 - y) (y = sigmoid's output)"},
        {op_kind::tanh_grad,
         "tanh_grad",
         2,
         2,
         1,
         {},
         detail::sr::pointwise_grad,
         detail::cf::per_output<3>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "(y, dy) -> dy * (1 - y^2) (y = tanh's output)"},
        {op_kind::gelu_grad,
         "gelu_grad",
         2,
         2,
         1,
         {},
         detail::sr::pointwise_grad,
         detail::cf::per_output<12>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "(x, dy) -> dy * (Phi(x) + x * phi(x)) (x = gelu's input)"},
        {op_kind::erf_grad,
         "erf_grad",
         2,
         2,
         1,
         {},
         detail::sr::pointwise_grad,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "(x, dy) -> dy * 2 / sqrt(pi) * exp(-x^2) (x = erf's input)"},
        {op_kind::avgpool2d_grad, "avgpool2d_grad", 1, 1, 1, detail::avgpool_grad_attrs, detail::sr::avgpool2d_grad,
         detail::cf::pool2d_grad, detail::cf::io_bytes, reduction, 0,
         "dy -> dx of avgpool2d, each window's gradient spread evenly over its cells, x's shape in `shape`"},
        {op_kind::maxpool2d_grad, "maxpool2d_grad", 2, 2, 1, detail::maxpool_grad_attrs, detail::sr::maxpool2d_grad,
         detail::cf::pool2d_grad, detail::cf::io_bytes, reduction, 0,
         "(x, dy) -> dx of maxpool2d: each window's gradient to its first maximum"},
        {op_kind::softmax_grad, "softmax_grad", 2, 2, 1, detail::softmax_attrs, detail::sr::softmax_grad,
         detail::cf::per_output<4>, detail::cf::io_bytes, reduction, 0, "(y, dy) -> y * (dy - sum(dy * y)) along axis"},
        {op_kind::layernorm_grad, "layernorm_grad", 3, 3, 3, detail::layernorm_attrs, detail::sr::layernorm_grad,
         detail::cf::per_last_input<12>, detail::cf::io_bytes, multi_output | reduction, 0,
         "(x, gamma, dy) -> dx, dgamma, dbeta"},
        {op_kind::batchnorm_grad, "batchnorm_grad", 5, 5, 5, detail::batchnorm_attrs, detail::sr::batchnorm_grad,
         detail::cf::per_last_input<10>, detail::cf::io_bytes, multi_output | reduction, 0,
         "(x, scale, mean, var, dy) -> dx, dscale, dbias, dmean, dvar of the inference-form batchnorm"},
        {op_kind::gather_grad, "gather_grad", 2, 2, 1, detail::gather_grad_attrs, detail::sr::gather_grad,
         detail::cf::per_last_input<1>, detail::cf::io_bytes, reduction, 0,
         "(indices, dy) -> scatter-add of dy into zeros shaped as the gathered data (`shape`)"},
        {op_kind::reduce_max_grad, "reduce_max_grad", 2, 2, 1, detail::reduce_attrs, detail::sr::reduce_max_grad,
         detail::cf::per_input<2>, detail::cf::io_bytes, reduction, 0,
         "(x, dy) -> dx of reduce_max: each output's gradient to the first element attaining its maximum"},
        {op_kind::lstm_cell_grad,
         "lstm_cell_grad",
         8,
         8,
         6,
         {},
         detail::sr::lstm_cell_grad,
         detail::cf::lstm_cell_grad,
         detail::cf::io_bytes,
         multi_output | contraction,
         0,
         "(x, h, c, w, u, b, dh', dc') -> dx, dh, dc, dw, du, db"},
        {op_kind::gru_cell_grad,
         "gru_cell_grad",
         6,
         6,
         5,
         {},
         detail::sr::gru_cell_grad,
         detail::cf::gru_cell_grad,
         detail::cf::io_bytes,
         multi_output | contraction,
         0,
         "(x, h, w, u, b, dh') -> dx, dh, dw, du, db"},
        {op_kind::sgd_update,
         "sgd_update",
         3,
         3,
         1,
         {},
         detail::sr::sgd_update,
         detail::cf::per_output<2>,
         detail::cf::io_bytes,
         pointwise,
         0,
         "(w, g, lr) -> w - lr * g"},
        {op_kind::adam_update, "adam_update", 7, 7, 3, detail::adam_attrs, detail::sr::adam_update,
         detail::cf::per_output<4>, detail::cf::io_bytes, multi_output | pointwise, 0,
         "(w, g, m, v, lr, beta1, beta2) -> w', m', v': m' = b1 m + (1-b1) g, v' = b2 v + (1-b2) g^2, "
         "w' = w - lr m' / (sqrt(v') + epsilon)"},
        // ---- imported constants
        {op_kind::constant, "constant", 0, 0, 1, detail::source_attrs, detail::sr::source, detail::cf::zero,
         detail::cf::no_bytes, source, 0, "a value the model file holds that is not trained (fed like a weight)"},
        // ---- operators of imported models that goopt has no kind for: memory-bound by assumption
        // (inputs read and outputs written once, one FLOP per output element, plus a launch)
        {op_kind::opaque, "opaque", 0, variadic, 0, detail::opaque_attrs, detail::sr::opaque, detail::cf::per_output<1>,
         detail::cf::io_bytes, multi_output, 0,
         "an imported operator goopt has no kind for: output types from `shapes` and `dtypes`, semantics unknown"},
        {op_kind::leaky_relu, "leaky_relu", 1, 1, 1, detail::leaky_relu_attrs, detail::sr::unary,
         detail::cf::per_output<2>, detail::cf::io_bytes, elementwise, 0, "x if x >= 0, else alpha x"},
        {op_kind::hard_sigmoid, "hard_sigmoid", 1, 1, 1, detail::hard_sigmoid_attrs, detail::sr::unary,
         detail::cf::per_output<4>, detail::cf::io_bytes, elementwise, 0, "min(max(alpha x + beta, 0), 1)"},
        {op_kind::hard_swish,
         "hard_swish",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<5>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "x min(max(x / 6 + 1/2, 0), 1)"},
        {op_kind::exp,
         "exp",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "e^x"},
        {op_kind::prelu,
         "prelu",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<2>,
         detail::cf::io_bytes,
         elementwise | broadcasts,
         0,
         "x if x >= 0, else slope x (the slope broadcast to x: one per channel, or one)"},
        {op_kind::softplus,
         "softplus",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<8>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "log(1 + e^x)"},
        {op_kind::elu, "elu", 1, 1, 1, detail::elu_attrs, detail::sr::unary, detail::cf::per_output<8>,
         detail::cf::io_bytes, elementwise, 0, "x if x > 0, else alpha (e^x - 1)"},
        {op_kind::abs,
         "abs",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "absolute value"},
        {op_kind::lrn, "lrn", 1, 1, 1, detail::lrn_attrs, detail::sr::lrn, detail::cf::per_output<12>,
         detail::cf::io_bytes, reduction, 0, "x / (bias + alpha / size * the sum of x^2 over size channels)^beta"},
        {op_kind::lrn_grad, "lrn_grad", 2, 2, 1, detail::lrn_attrs, detail::sr::lrn_grad, detail::cf::per_output<24>,
         detail::cf::io_bytes, reduction, 0, "(x, dy) -> dx of lrn"},
        {op_kind::instance_norm, "instance_norm", 3, 3, 1, detail::batchnorm_attrs, detail::sr::instance_norm,
         detail::cf::per_output<8>, detail::cf::io_bytes, reduction, 0,
         "normalizes each sample's channel over its other axes, then * scale + bias (per channel)"},
        {op_kind::softsign,
         "softsign",
         1,
         1,
         1,
         {},
         detail::sr::unary,
         detail::cf::per_output<3>,
         detail::cf::io_bytes,
         elementwise,
         0,
         "x / (1 + |x|)"},
        {op_kind::max,
         "max",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise | broadcasts,
         0,
         "the larger of the two, elementwise (broadcast)"},
        {op_kind::min,
         "min",
         2,
         2,
         1,
         {},
         detail::sr::binary,
         detail::cf::per_output<1>,
         detail::cf::io_bytes,
         elementwise | broadcasts,
         0,
         "the smaller of the two, elementwise (broadcast)"},
    }});

/// The spec of an operator kind.
constexpr const op_spec& spec(op_kind k) noexcept { return op_table[static_cast<std::size_t>(k)]; }
constexpr std::string_view name(op_kind k) noexcept { return spec(k).name; }

/// The kind with this name; nullopt for an unknown op.
constexpr std::optional<op_kind> parse_op_kind(std::string_view s) noexcept {
    for (const auto& e : op_table)
        if (e.name == s) return e.kind;
    return std::nullopt;
}

namespace detail {
/// Consistency of the table, checked at compile time.
consteval bool table_is_consistent() {
    for (std::size_t i = 0; i < op_table.size(); ++i) {
        const op_spec& s = op_table[i];
        if (static_cast<std::size_t>(s.kind) != i) return false;  // entry order = enum order
        if (s.name.empty()) return false;  // infer, flops, bytes: never null (detail::required_fn)
        for (std::size_t j = 0; j < i; ++j)
            if (op_table[j].name == s.name) return false;  // names unique
        if (s.min_inputs > s.max_inputs) return false;
        if (s.has(source) != (s.max_inputs == 0)) return false;  // sources and only sources take no input
        if (s.has(constant) && !s.has(source)) return false;
        if ((s.has(commutative) || s.has(associative)) && !(s.min_inputs == 2 && s.max_inputs == 2)) return false;
        if (s.has(multi_output) != (s.num_outputs != 1)) return false;
        if (s.max_inputs != variadic && s.linear_in >> s.max_inputs) return false;  // linear in an input it has
        if (s.has(fused_activation) != s.takes(attr_id::activation)) return false;
        // one fusion role per computing op, none for sources and for an opaque operator, which runs
        // alone (sim/fusion_legality.hpp)
        const int roles = int{s.has(contraction)} + int{s.has(reduction)} +
                          int{s.has(elementwise) || s.has(pointwise) || s.has(data_movement)};
        if (roles != (s.has(source) || s.kind == op_kind::opaque ? 0 : 1)) return false;
        for (std::size_t a = 0; a < s.attrs.size(); ++a) {
            for (std::size_t b = 0; b < a; ++b)
                if (s.attrs[a].id == s.attrs[b].id) return false;  // attributes declared once
            if (s.attrs[a].required && (s.attrs[a].int_default != 0 || !s.attrs[a].ints_default.empty()))
                return false;  // a required attribute has no default
        }
    }
    return true;
}
static_assert(table_is_consistent(), "ops::op_table is inconsistent");
static_assert(parse_op_kind("conv2d") == op_kind::conv2d && !parse_op_kind("conv"));
}  // namespace detail

}  // namespace goopt::ops
