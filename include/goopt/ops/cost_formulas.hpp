#pragma once
/// @file
/// @brief FLOP and memory-traffic formulas of the operator table (multiply-add = 2 FLOPs).

#include <goopt/ops/attributes.hpp>
#include <goopt/ops/shape.hpp>

#include <span>

namespace goopt::ops::cost_formulas {

namespace detail {
inline double elements(const tensor_type& t) { return static_cast<double>(t.num_elements()); }
inline double bytes(std::span<const tensor_type> ts) {
    double b = 0;
    for (const auto& t : ts) b += static_cast<double>(t.bytes());
    return b;
}
}  // namespace detail

/// No arithmetic (sources, data movement).
inline double zero(std::span<const tensor_type>, std::span<const tensor_type>, const attribute_map&) { return 0; }

/// Elementwise ops: FLOPs per output element, as a template so each table entry names its cost.
template <int PerElement>
double per_output(std::span<const tensor_type>, std::span<const tensor_type> out, const attribute_map&) {
    double n = 0;
    for (const auto& t : out) n += detail::elements(t);
    return PerElement * n;
}

/// Reductions and pooling-like ops: FLOPs per input element.
template <int PerElement>
double per_input(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    return PerElement * detail::elements(in[0]);
}

/// conv2d: 2 * N * O * OH * OW * (C / groups) * kh * kw, plus one op per output for the activation.
inline double conv2d(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map& a) {
    const shape& w = in[1].dims;
    const double act = a.get_int(attr_id::activation) != 0 ? 1.0 : 0.0;
    return detail::elements(out[0]) * (2.0 * static_cast<double>(w[1] * w[2] * w[3]) + act);
}

/// matmul: 2 * batch * M * N * K.
inline double matmul(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map& a) {
    const double k = static_cast<double>(in[0].dims.back());
    const double act = a.get_int(attr_id::activation) != 0 ? 1.0 : 0.0;
    return detail::elements(out[0]) * (2.0 * k + act);
}

/// conv2d_bias, matmul_bias: the product's FLOPs plus one add per output for the addend.
inline double conv2d_bias(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map& a) {
    return conv2d(in, out, a) + detail::elements(out[0]);
}
inline double matmul_bias(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map& a) {
    return matmul(in, out, a) + detail::elements(out[0]);
}

/// Pooling: one op per window element per output.
inline double pool2d(std::span<const tensor_type>, std::span<const tensor_type> out, const attribute_map& a) {
    const auto& k = a.get_ints(attr_id::kernel);
    return detail::elements(out[0]) * static_cast<double>(k[0] * k[1]);
}

/// LSTM cell: the two gate matmuls plus about 10 elementwise ops per hidden unit.
inline double lstm_cell(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    const double B = static_cast<double>(in[0].dims[0]), I = static_cast<double>(in[0].dims[1]),
                 H = static_cast<double>(in[1].dims[1]);
    return 2.0 * B * (I + H) * 4.0 * H + 10.0 * B * H;
}

/// GRU cell: the two gate matmuls plus about 9 elementwise ops per hidden unit.
inline double gru_cell(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    const double B = static_cast<double>(in[0].dims[0]), I = static_cast<double>(in[0].dims[1]),
                 H = static_cast<double>(in[1].dims[1]);
    return 2.0 * B * (I + H) * 3.0 * H + 9.0 * B * H;
}

/// Default memory traffic: every input read once, every output written once.
inline double io_bytes(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map&) {
    return detail::bytes(in) + detail::bytes(out);
}

/// Graph inputs and weights are not produced by a kernel: no traffic of their own.
inline double no_bytes(std::span<const tensor_type>, std::span<const tensor_type>, const attribute_map&) { return 0; }

/// Constants are materialized: their output is written once.
inline double output_bytes(std::span<const tensor_type>, std::span<const tensor_type> out, const attribute_map&) {
    return detail::bytes(out);
}

/// gather reads the indices and only the selected rows, not the whole table.
inline double gather_bytes(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map&) {
    return static_cast<double>(in[1].bytes()) + 2.0 * static_cast<double>(out[0].bytes());
}

// ---- gradients and optimizer updates (training graphs)

/// Either conv2d gradient: the forward's multiply-adds once more, 2 * |dy| * (C / groups) * kh * kw;
/// the weight's shape is input 1 of conv2d_grad_input and the output of conv2d_grad_weight.
inline double conv2d_grad_input(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    const shape& w = in[1].dims;
    return detail::elements(in[0]) * 2.0 * static_cast<double>(w[1] * w[2] * w[3]);
}
inline double conv2d_grad_weight(std::span<const tensor_type> in, std::span<const tensor_type> out,
                                 const attribute_map&) {
    const shape& w = out[0].dims;
    return detail::elements(in[1]) * 2.0 * static_cast<double>(w[1] * w[2] * w[3]);
}

/// Pooling gradients: one op per window element per incoming gradient element (dy is the last input).
inline double pool2d_grad(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map& a) {
    const auto& k = a.get_ints(attr_id::kernel);
    return detail::elements(in.back()) * static_cast<double>(k[0] * k[1]);
}

/// add_n: one addition per output element per addend after the first.
inline double add_n(std::span<const tensor_type> in, std::span<const tensor_type> out, const attribute_map&) {
    return detail::elements(out[0]) * static_cast<double>(in.size() - 1);
}

/// Gradient kernels that walk the incoming gradient (the last input) a fixed number of times.
template <int PerElement>
double per_last_input(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    return PerElement * detail::elements(in.back());
}

/// Recurrent cell gradients: the forward's gate matmuls are recomputed, and the gate gradients are
/// multiplied by x, h (weight gradients) and by w, u (input gradients): three times the matmuls.
inline double lstm_cell_grad(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    const double B = static_cast<double>(in[0].dims[0]), I = static_cast<double>(in[0].dims[1]),
                 H = static_cast<double>(in[1].dims[1]);
    return 3.0 * 2.0 * B * (I + H) * 4.0 * H + 30.0 * B * H;
}
inline double gru_cell_grad(std::span<const tensor_type> in, std::span<const tensor_type>, const attribute_map&) {
    const double B = static_cast<double>(in[0].dims[0]), I = static_cast<double>(in[0].dims[1]),
                 H = static_cast<double>(in[1].dims[1]);
    return 3.0 * 2.0 * B * (I + H) * 3.0 * H + 25.0 * B * H;
}

}  // namespace goopt::ops::cost_formulas
