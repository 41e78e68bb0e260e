#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief The importer's op table: one row per ONNX op type (default domain), naming how the op
/// folds when its inputs are known at import time and how it converts into graph ops otherwise.
/// Supporting a new ONNX op is one row here plus its handler.

#include <goopt/io/onnx/convert.hpp>
#include <goopt/io/onnx/convolution.hpp>
#include <goopt/io/onnx/einsum.hpp>
#include <goopt/io/onnx/fold.hpp>
#include <goopt/io/onnx/importer.hpp>
#include <goopt/io/onnx/recurrent.hpp>
#include <goopt/io/onnx/resize.hpp>
#include <goopt/io/onnx/tile.hpp>

#include <algorithm>
#include <array>
#include <string_view>

namespace goopt::io::detail {

namespace handle {
using i = onnx_importer;
using k = ops::op_kind;
namespace e = elementwise;
}  // namespace handle

/// Sorted by op type (checked below), so that a lookup is a binary search and the list of supported
/// ops is the table itself.
inline constexpr std::array onnx_handlers = [] {
    using namespace handle;
    return std::array{
        onnx_handler{
            .op = "Abs", .fold = &i::fold_elementwise, .convert = &i::convert_unary, .kind = k::abs, .math = &e::abs},
        onnx_handler{.op = "Acos", .fold = &i::fold_elementwise, .math = &e::acos},
        onnx_handler{.op = "Acosh", .fold = &i::fold_elementwise, .math = &e::acosh},
        onnx_handler{.op = "Add",
                     .fold = &i::fold_elementwise,
                     .convert = &i::convert_binary,
                     .kind = k::ewadd,
                     .math = &e::add},
        onnx_handler{.op = "And", .fold = &i::fold_elementwise, .math = &e::logical_and},
        onnx_handler{.op = "Asin", .fold = &i::fold_elementwise, .math = &e::asin},
        onnx_handler{.op = "Asinh", .fold = &i::fold_elementwise, .math = &e::asinh},
        onnx_handler{.op = "Atan", .fold = &i::fold_elementwise, .math = &e::atan},
        onnx_handler{.op = "Atanh", .fold = &i::fold_elementwise, .math = &e::atanh},
        onnx_handler{.op = "AveragePool", .convert = &i::convert_average_pool},
        onnx_handler{.op = "BatchNormalization", .convert = &i::convert_batchnorm},
        onnx_handler{.op = "Cast", .fold = &i::fold_cast, .convert = &i::convert_cast},
        onnx_handler{.op = "CastLike",
                     .fold = &i::fold_cast_like,
                     .convert = &i::convert_cast_like,
                     .folds_without_values = true},
        onnx_handler{.op = "Ceil", .fold = &i::fold_elementwise, .math = &e::ceil},
        onnx_handler{.op = "Celu", .convert = &i::convert_celu},
        onnx_handler{.op = "Clip", .convert = &i::convert_clip},
        onnx_handler{.op = "Concat", .fold = &i::fold_concat, .convert = &i::convert_concat},
        onnx_handler{.op = "Constant", .fold = &i::fold_constant, .folds_without_values = true, .file_data = true},
        onnx_handler{.op = "ConstantOfShape", .fold = &i::fold_constant_of_shape},
        onnx_handler{.op = "Conv", .convert = &i::convert_conv},
        onnx_handler{.op = "ConvTranspose", .convert = &i::convert_conv_transpose},
        onnx_handler{.op = "Cos", .fold = &i::fold_elementwise, .math = &e::cos},
        onnx_handler{.op = "Cosh", .fold = &i::fold_elementwise, .math = &e::cosh},
        onnx_handler{.op = "CumSum", .fold = &i::fold_cumsum},
        onnx_handler{.op = "DequantizeLinear", .fold = &i::fold_dequantize},
        onnx_handler{
            .op = "Div", .fold = &i::fold_elementwise, .convert = &i::convert_binary, .kind = k::div, .math = &e::div},
        onnx_handler{.op = "Dropout", .fold = &i::fold_identity, .convert = &i::convert_dropout},
        onnx_handler{.op = "Einsum", .convert = &i::convert_einsum},
        onnx_handler{.op = "Elu", .convert = &i::convert_unary, .kind = k::elu},
        onnx_handler{.op = "Equal", .fold = &i::fold_elementwise, .math = &e::equal},
        onnx_handler{.op = "Erf", .convert = &i::convert_unary, .kind = k::erf},
        onnx_handler{
            .op = "Exp", .fold = &i::fold_elementwise, .convert = &i::convert_unary, .kind = k::exp, .math = &e::exp},
        onnx_handler{.op = "Expand", .fold = &i::fold_expand, .convert = &i::convert_expand},
        onnx_handler{.op = "Flatten", .fold = &i::fold_flatten, .convert = &i::convert_flatten},
        onnx_handler{.op = "Floor", .fold = &i::fold_elementwise, .math = &e::floor},
        onnx_handler{.op = "GRU", .convert = &i::convert_gru},
        onnx_handler{.op = "Gather", .fold = &i::fold_gather, .convert = &i::convert_gather},
        onnx_handler{.op = "Gelu", .convert = &i::convert_gelu},
        onnx_handler{.op = "Gemm", .convert = &i::convert_gemm},
        onnx_handler{.op = "GlobalAveragePool", .convert = &i::convert_unary, .kind = k::global_avgpool},
        onnx_handler{.op = "GlobalLpPool", .convert = &i::convert_lp},
        onnx_handler{.op = "GlobalMaxPool", .convert = &i::convert_global_max_pool},
        onnx_handler{.op = "Greater", .fold = &i::fold_elementwise, .math = &e::greater},
        onnx_handler{.op = "GreaterOrEqual", .fold = &i::fold_elementwise, .math = &e::greater_or_equal},
        onnx_handler{.op = "GroupNormalization", .convert = &i::convert_group_norm},
        onnx_handler{.op = "HardSigmoid", .convert = &i::convert_unary, .kind = k::hard_sigmoid},
        onnx_handler{.op = "HardSwish", .convert = &i::convert_unary, .kind = k::hard_swish},
        onnx_handler{.op = "Identity", .fold = &i::fold_identity, .convert = &i::convert_identity},
        onnx_handler{.op = "If", .convert = &i::convert_if},
        onnx_handler{.op = "InstanceNormalization", .convert = &i::convert_instance_norm},
        onnx_handler{.op = "IsInf", .fold = &i::fold_is_inf},
        onnx_handler{.op = "IsNaN", .fold = &i::fold_elementwise, .math = &e::is_nan},
        onnx_handler{.op = "LRN", .convert = &i::convert_unary, .kind = k::lrn},
        onnx_handler{.op = "LSTM", .convert = &i::convert_lstm},
        onnx_handler{.op = "LayerNormalization", .convert = &i::convert_layernorm},
        onnx_handler{.op = "LeakyRelu", .convert = &i::convert_unary, .kind = k::leaky_relu},
        onnx_handler{.op = "Less", .fold = &i::fold_elementwise, .math = &e::less},
        onnx_handler{.op = "LessOrEqual", .fold = &i::fold_elementwise, .math = &e::less_or_equal},
        onnx_handler{.op = "Log", .convert = &i::convert_unary, .kind = k::log},
        onnx_handler{.op = "LogSoftmax", .convert = &i::convert_softmax},
        onnx_handler{.op = "LpNormalization", .convert = &i::convert_lp},
        onnx_handler{.op = "MatMul", .convert = &i::convert_matmul},
        onnx_handler{
            .op = "Max", .fold = &i::fold_elementwise, .convert = &i::convert_chain, .kind = k::max, .math = &e::max},
        onnx_handler{.op = "MaxPool", .convert = &i::convert_max_pool},
        onnx_handler{.op = "Mean", .convert = &i::convert_sum},
        onnx_handler{
            .op = "Min", .fold = &i::fold_elementwise, .convert = &i::convert_chain, .kind = k::min, .math = &e::min},
        onnx_handler{.op = "Mish", .convert = &i::convert_mish},
        onnx_handler{.op = "Mod", .fold = &i::fold_mod},
        onnx_handler{.op = "Mul",
                     .fold = &i::fold_elementwise,
                     .convert = &i::convert_binary,
                     .kind = k::ewmul,
                     .math = &e::mul},
        onnx_handler{.op = "Neg", .fold = &i::fold_elementwise, .convert = &i::convert_neg, .math = &e::neg},
        onnx_handler{.op = "Not", .fold = &i::fold_elementwise, .math = &e::logical_not},
        onnx_handler{.op = "Or", .fold = &i::fold_elementwise, .math = &e::logical_or},
        onnx_handler{.op = "PRelu", .convert = &i::convert_prelu},
        onnx_handler{.op = "Pad", .convert = &i::convert_pad},
        onnx_handler{
            .op = "Pow", .fold = &i::fold_elementwise, .convert = &i::convert_binary, .kind = k::pow, .math = &e::pow},
        onnx_handler{.op = "QuantizeLinear", .fold = &i::fold_quantize},
        onnx_handler{.op = "Range", .fold = &i::fold_range},
        onnx_handler{.op = "Reciprocal",
                     .fold = &i::fold_elementwise,
                     .convert = &i::convert_reciprocal,
                     .math = &e::reciprocal},
        onnx_handler{.op = "ReduceL1", .convert = &i::convert_reduce_lowered},
        onnx_handler{.op = "ReduceL2", .convert = &i::convert_reduce_lowered},
        onnx_handler{.op = "ReduceLogSumExp", .convert = &i::convert_reduce_lowered},
        onnx_handler{.op = "ReduceMax", .fold = &i::fold_reduce, .convert = &i::convert_reduce, .kind = k::reduce_max},
        onnx_handler{
            .op = "ReduceMean", .fold = &i::fold_reduce, .convert = &i::convert_reduce, .kind = k::reduce_mean},
        onnx_handler{.op = "ReduceMin", .fold = &i::fold_reduce, .convert = &i::convert_reduce_lowered},
        onnx_handler{.op = "ReduceProd", .fold = &i::fold_reduce},
        onnx_handler{.op = "ReduceSum", .fold = &i::fold_reduce, .convert = &i::convert_reduce, .kind = k::reduce_sum},
        onnx_handler{.op = "ReduceSumSquare", .convert = &i::convert_reduce_lowered},
        onnx_handler{.op = "Relu", .convert = &i::convert_unary, .kind = k::relu},
        onnx_handler{.op = "Reshape", .fold = &i::fold_reshape, .convert = &i::convert_reshape},
        onnx_handler{.op = "Resize", .convert = &i::convert_resize},
        onnx_handler{.op = "Round", .fold = &i::fold_elementwise, .math = &e::round},
        onnx_handler{.op = "Selu", .convert = &i::convert_selu},
        onnx_handler{.op = "Shape", .fold = &i::fold_shape, .folds_without_values = true},
        onnx_handler{.op = "Shrink", .fold = &i::fold_shrink, .convert = &i::convert_shrink},
        onnx_handler{.op = "Sigmoid", .convert = &i::convert_unary, .kind = k::sigmoid},
        onnx_handler{.op = "Sign", .fold = &i::fold_elementwise, .math = &e::sign},
        onnx_handler{.op = "Sin", .fold = &i::fold_elementwise, .math = &e::sin},
        onnx_handler{.op = "Sinh", .fold = &i::fold_elementwise, .math = &e::sinh},
        onnx_handler{.op = "Size", .fold = &i::fold_size, .folds_without_values = true},
        onnx_handler{.op = "Slice", .fold = &i::fold_slice, .convert = &i::convert_slice},
        onnx_handler{.op = "Softmax", .convert = &i::convert_softmax},
        onnx_handler{.op = "Softplus", .convert = &i::convert_unary, .kind = k::softplus},
        onnx_handler{.op = "Softsign", .convert = &i::convert_unary, .kind = k::softsign},
        onnx_handler{.op = "Split", .convert = &i::convert_split},
        onnx_handler{.op = "Sqrt",
                     .fold = &i::fold_elementwise,
                     .convert = &i::convert_unary,
                     .kind = k::sqrt,
                     .math = &e::sqrt},
        onnx_handler{.op = "Squeeze", .fold = &i::fold_squeeze, .convert = &i::convert_squeeze},
        onnx_handler{
            .op = "Sub", .fold = &i::fold_elementwise, .convert = &i::convert_binary, .kind = k::sub, .math = &e::sub},
        onnx_handler{.op = "Sum", .convert = &i::convert_sum},
        onnx_handler{.op = "Tan", .fold = &i::fold_elementwise, .math = &e::tan},
        onnx_handler{.op = "Tanh", .convert = &i::convert_unary, .kind = k::tanh},
        onnx_handler{.op = "Tile", .convert = &i::convert_tile},
        onnx_handler{.op = "Transpose", .convert = &i::convert_transpose},
        onnx_handler{.op = "Trilu", .fold = &i::fold_trilu},
        onnx_handler{.op = "Unsqueeze", .fold = &i::fold_unsqueeze, .convert = &i::convert_unsqueeze},
        onnx_handler{.op = "Upsample", .convert = &i::convert_resize},
        onnx_handler{.op = "Where", .fold = &i::fold_elementwise, .convert = &i::convert_where, .math = &e::where},
        onnx_handler{.op = "Xor", .fold = &i::fold_elementwise, .math = &e::logical_xor},
    };
}();

static_assert(std::is_sorted(onnx_handlers.begin(), onnx_handlers.end(),
                             [](const onnx_handler& a, const onnx_handler& b) { return a.op < b.op; }),
              "onnx_handlers must be sorted by op type");

/// The row of a default-domain op type, or null.
inline const onnx_handler* find_handler(std::string_view op) {
    const auto it = std::lower_bound(onnx_handlers.begin(), onnx_handlers.end(), op,
                                     [](const onnx_handler& h, std::string_view o) { return h.op < o; });
    return it != onnx_handlers.end() && it->op == op ? &*it : nullptr;
}

}  // namespace goopt::io::detail
