#pragma once
/// @file
/// @brief The closed set of operator kinds. The order is the order of ops::op_table.

#include <cstddef>
#include <cstdint>

namespace goopt::ops {

/// Operator kinds: TASO's operator set (conv2d ... const_one) and what real models need.
/// Adding an operator: a value here, then its row in each kind table (ops::op_table,
/// interp::detail::kernel_table, models::detail::gradient_table, subst::detail::modular_table); a
/// missing row does not compile (ops/kind_table.hpp). README.md, "Adding an op kind".
enum class op_kind : std::uint8_t {
    // sources: no inputs, the value comes from outside or from the attributes
    input,
    weight,
    const_pool,
    const_iconv,
    const_imm,
    const_one,
    // TASO's compute operators
    conv2d,
    matmul,
    ewadd,
    ewmul,
    smul,
    relu,
    transpose,
    enlarge,
    avgpool2d,
    maxpool2d,
    concat,
    split,
    // arithmetic and activations of real models
    sub,
    div,
    pow,
    sqrt,
    sigmoid,
    tanh,
    gelu,
    erf,
    log,
    clip,
    identity,
    // data movement
    reshape,
    flatten,
    pad,
    slice,
    gather,
    global_avgpool,
    // normalization and reductions
    batchnorm,
    softmax,
    layernorm,
    reduce_sum,
    reduce_mean,
    reduce_max,
    // recurrent cells as composites (gate order i, f, g, o for LSTM; r, z, n for GRU)
    lstm_cell,
    gru_cell,
    // fused kernels that substitution search makes (conv / matmul with a bias or residual epilogue)
    conv2d_bias,
    matmul_bias,
    // gradients and optimizer updates (training graphs)
    const_fill,
    add_n,
    conv2d_grad_input,
    conv2d_grad_weight,
    relu_grad,
    sigmoid_grad,
    tanh_grad,
    gelu_grad,
    erf_grad,
    avgpool2d_grad,
    maxpool2d_grad,
    softmax_grad,
    layernorm_grad,
    batchnorm_grad,
    gather_grad,
    reduce_max_grad,
    lstm_cell_grad,
    gru_cell_grad,
    sgd_update,
    adam_update,
    // a value a model file holds that is not trained (an exponent, an epsilon, a shape, indices):
    // fed like a weight, never a parameter (appended, so that kind numbers in stored files stay)
    constant,
    // an operator of an imported model that goopt has no kind for, kept with its output types: no
    // rule matches it, the interpreter cannot run it, the ONNX export writes the original node
    opaque,
    // activations of real models (YOLO's leaky relu, MobileNetV3's hard sigmoid and hard swish, exp),
    // appended after the others for the same reason
    leaky_relu,
    hard_sigmoid,
    hard_swish,
    exp,
    // more activations of real models (PReLU of face and super-resolution networks, softplus of
    // YOLOv4's mish, ELU, absolute value), appended for the same reason
    prelu,
    softplus,
    elu,
    abs,
    // operators of classic and style-transfer models (AlexNet's and GoogLeNet's local response
    // normalization, instance normalization, softsign, elementwise max and min), appended for the same
    // reason; lrn_grad is lrn's gradient (its window sum has no other kind)
    lrn,
    lrn_grad,
    instance_norm,
    softsign,
    max,
    min,
};

inline constexpr std::size_t num_op_kinds = static_cast<std::size_t>(op_kind::min) + 1;

}  // namespace goopt::ops
