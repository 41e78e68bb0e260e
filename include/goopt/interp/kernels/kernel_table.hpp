#pragma once
/// @file
/// @brief The interpreter's kind table: the reference kernel of every op kind, one row per kind.
/// A kind without a row does not compile (ops/kind_table.hpp), so the interpreter has no run-time
/// "unknown kind" branch. One indirect call per op, never per element: the kernels' inner loops
/// are templates over their element functions.

#include <goopt/interp/kernels/common.hpp>
#include <goopt/interp/kernels/contraction.hpp>
#include <goopt/interp/kernels/conv_pool.hpp>
#include <goopt/interp/kernels/data_movement.hpp>
#include <goopt/interp/kernels/elementwise.hpp>
#include <goopt/interp/kernels/norm.hpp>
#include <goopt/interp/kernels/recurrent.hpp>
#include <goopt/ops/kind_table.hpp>
#include <goopt/ops/op_kind.hpp>

#include <concepts>
#include <vector>

namespace goopt::interp::detail {

/// A kernel: the outputs of one op from its kernel_args.
template <std::floating_point T> using kernel_fn = std::vector<value<T>> (*)(const kernel_args<T>&);

/// A single-output kernel as a kernel_fn.
template <std::floating_point T, value<T> (*Kernel)(const kernel_args<T>&)>
std::vector<value<T>> single(const kernel_args<T>& a) {
    return one(Kernel(a));
}

/// The kernel of every op kind, indexed by op_kind.
template <std::floating_point T>
inline constexpr std::array<ops::required_fn<kernel_fn<T>>, ops::num_op_kinds> kernel_table =
    ops::by_kind<ops::required_fn<kernel_fn<T>>>({{
        // sources
        {ops::op_kind::input, single<T, fed_source<T>>},
        {ops::op_kind::weight, single<T, fed_source<T>>},
        {ops::op_kind::const_pool, single<T, const_pool<T>>},
        {ops::op_kind::const_iconv, single<T, const_iconv<T>>},
        {ops::op_kind::const_imm, single<T, const_imm<T>>},
        {ops::op_kind::const_one, single<T, const_one<T>>},
        // TASO's compute operators
        {ops::op_kind::conv2d, single<T, conv2d<T>>},
        {ops::op_kind::matmul, single<T, matmul<T>>},
        {ops::op_kind::ewadd, single<T, ewadd<T>>},
        {ops::op_kind::ewmul, single<T, ewmul<T>>},
        {ops::op_kind::smul, single<T, smul<T>>},
        {ops::op_kind::relu, single<T, relu<T>>},
        {ops::op_kind::transpose, single<T, transpose<T>>},
        {ops::op_kind::enlarge, single<T, enlarge<T>>},
        {ops::op_kind::avgpool2d, single<T, pool2d<T, false>>},
        {ops::op_kind::maxpool2d, single<T, pool2d<T, true>>},
        {ops::op_kind::concat, single<T, concat<T>>},
        {ops::op_kind::split, split<T>},
        // arithmetic and activations
        {ops::op_kind::sub, single<T, sub<T>>},
        {ops::op_kind::div, single<T, div<T>>},
        {ops::op_kind::pow, single<T, pow<T>>},
        {ops::op_kind::sqrt, single<T, sqrt<T>>},
        {ops::op_kind::sigmoid, single<T, sigmoid<T>>},
        {ops::op_kind::tanh, single<T, tanh<T>>},
        {ops::op_kind::gelu, single<T, gelu<T>>},
        {ops::op_kind::erf, single<T, erf<T>>},
        {ops::op_kind::log, single<T, log<T>>},
        {ops::op_kind::clip, single<T, clip<T>>},
        {ops::op_kind::identity, single<T, same_elements<T>>},
        // data movement
        {ops::op_kind::reshape, single<T, same_elements<T>>},
        {ops::op_kind::flatten, single<T, same_elements<T>>},
        {ops::op_kind::pad, single<T, pad<T>>},
        {ops::op_kind::slice, single<T, slice<T>>},
        {ops::op_kind::gather, single<T, gather<T>>},
        {ops::op_kind::global_avgpool, single<T, global_avgpool<T>>},
        // normalization and reductions
        {ops::op_kind::batchnorm, single<T, batchnorm<T>>},
        {ops::op_kind::softmax, single<T, softmax<T>>},
        {ops::op_kind::layernorm, single<T, layernorm<T>>},
        {ops::op_kind::reduce_sum, single<T, reduce_sum<T>>},
        {ops::op_kind::reduce_mean, single<T, reduce_mean<T>>},
        {ops::op_kind::reduce_max, single<T, reduce_max<T>>},
        // recurrent cells
        {ops::op_kind::lstm_cell, lstm_cell<T>},
        {ops::op_kind::gru_cell, single<T, gru_cell<T>>},
        // fused kernels: the product's kernel applies the addend, then the activation
        {ops::op_kind::conv2d_bias, single<T, conv2d<T>>},
        {ops::op_kind::matmul_bias, single<T, matmul<T>>},
        // gradients and optimizer updates
        {ops::op_kind::const_fill, single<T, const_fill<T>>},
        {ops::op_kind::add_n, single<T, add_n<T>>},
        {ops::op_kind::conv2d_grad_input, single<T, conv2d_grad<T, true>>},
        {ops::op_kind::conv2d_grad_weight, single<T, conv2d_grad<T, false>>},
        {ops::op_kind::relu_grad, single<T, relu_grad<T>>},
        {ops::op_kind::sigmoid_grad, single<T, sigmoid_grad<T>>},
        {ops::op_kind::tanh_grad, single<T, tanh_grad<T>>},
        {ops::op_kind::gelu_grad, single<T, gelu_grad<T>>},
        {ops::op_kind::erf_grad, single<T, erf_grad<T>>},
        {ops::op_kind::avgpool2d_grad, single<T, pool2d_grad<T, false>>},
        {ops::op_kind::maxpool2d_grad, single<T, pool2d_grad<T, true>>},
        {ops::op_kind::softmax_grad, single<T, softmax_grad<T>>},
        {ops::op_kind::layernorm_grad, layernorm_grad<T>},
        {ops::op_kind::batchnorm_grad, batchnorm_grad<T>},
        {ops::op_kind::gather_grad, single<T, gather_grad<T>>},
        {ops::op_kind::reduce_max_grad, single<T, reduce_max_grad<T>>},
        {ops::op_kind::lstm_cell_grad, lstm_cell_grad<T>},
        {ops::op_kind::gru_cell_grad, gru_cell_grad<T>},
        {ops::op_kind::sgd_update, single<T, sgd_update<T>>},
        {ops::op_kind::adam_update, adam_update<T>},
        {ops::op_kind::constant, single<T, fed_source<T>>},
        {ops::op_kind::opaque, opaque<T>},
        {ops::op_kind::leaky_relu, single<T, leaky_relu<T>>},
        {ops::op_kind::hard_sigmoid, single<T, hard_sigmoid<T>>},
        {ops::op_kind::hard_swish, single<T, hard_swish<T>>},
        {ops::op_kind::exp, single<T, exp<T>>},
        {ops::op_kind::prelu, single<T, prelu<T>>},
        {ops::op_kind::softplus, single<T, softplus<T>>},
        {ops::op_kind::elu, single<T, elu<T>>},
        {ops::op_kind::abs, single<T, abs<T>>},
        {ops::op_kind::lrn, single<T, lrn<T>>},
        {ops::op_kind::lrn_grad, single<T, lrn_grad<T>>},
        {ops::op_kind::instance_norm, single<T, instance_norm<T>>},
        {ops::op_kind::softsign, single<T, softsign<T>>},
        {ops::op_kind::max, single<T, max<T>>},
        {ops::op_kind::min, single<T, min<T>>},
    }});

}  // namespace goopt::interp::detail
