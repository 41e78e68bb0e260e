#pragma once
/// @file
/// @brief LSTM and GRU cell reference kernels and their gradients (gate order i, f, g, o and r, z, n).

#include <goopt/interp/kernels/common.hpp>
#include <goopt/interp/kernels/contraction.hpp>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <vector>

namespace goopt::interp::detail {

// ---- recurrent cells

/// x [B,I] times w [I,G] into a new [B,G] buffer: the gate pre-activations of a recurrent cell.
template <std::floating_point T> std::vector<T> affine(const T* x, const T* w, index B, index I, index G) {
    std::vector<T> r(static_cast<std::size_t>(B * G), T(0));
    gemm_acc(x, w, r.data(), B, I, G);
    return r;
}

template <std::floating_point T> std::vector<value<T>> lstm_cell(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    std::vector<T> gates = affine(a.data(0), a.data(3), B, I, 4 * H);
    gemm_acc(a.data(1), a.data(4), gates.data(), B, H, 4 * H);
    value<T> h = filled(a.out_dims(0), T(0)), c = filled(a.out_dims(1), T(0));
    const T* bias = a.data(5);
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const T* gt = gates.data() + n * 4 * H;
            const T i = sigmoid_of(gt[j] + bias[j]);
            const T f = sigmoid_of(gt[H + j] + bias[H + j]);
            const T g = std::tanh(gt[2 * H + j] + bias[2 * H + j]);
            const T o = sigmoid_of(gt[3 * H + j] + bias[3 * H + j]);
            const T cn = f * a.data(2)[n * H + j] + i * g;
            c.data()[n * H + j] = cn;
            h.data()[n * H + j] = o * std::tanh(cn);
        }
    std::vector<value<T>> out;
    out.push_back(std::move(h));
    out.push_back(std::move(c));
    return out;
}

template <std::floating_point T> value<T> gru_cell(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    const std::vector<T> xw = affine(a.data(0), a.data(2), B, I, 3 * H);
    const std::vector<T> hu = affine(a.data(1), a.data(3), B, H, 3 * H);
    const T* bias = a.data(4);
    value<T> r = filled(a.out_dims(), T(0));
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const index at = n * 3 * H;
            const T rg = sigmoid_of(xw[at + j] + hu[at + j] + bias[j]);
            const T z = sigmoid_of(xw[at + H + j] + hu[at + H + j] + bias[H + j]);
            const T nn = std::tanh(xw[at + 2 * H + j] + rg * hu[at + 2 * H + j] + bias[2 * H + j]);
            r.data()[n * H + j] = (T(1) - z) * nn + z * a.data(1)[n * H + j];
        }
    return r;
}

/// Recomputes the gates, then back through c' = f c + i g, h' = o tanh(c').
template <std::floating_point T> std::vector<value<T>> lstm_cell_grad(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    std::vector<T> gates = affine(a.data(0), a.data(3), B, I, 4 * H);
    gemm_acc(a.data(1), a.data(4), gates.data(), B, H, 4 * H);
    const T *bias = a.data(5), *c = a.data(2), *dhn = a.data(6), *dcn = a.data(7);
    std::vector<value<T>> out;
    for (std::size_t k = 0; k < 6; ++k) out.push_back(filled(a.out_dims(k), T(0)));
    std::vector<T> dgates(gates.size());
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const T* gt = gates.data() + n * 4 * H;
            T* dg = dgates.data() + n * 4 * H;
            const index at = n * H + j;
            const T i = sigmoid_of(gt[j] + bias[j]);
            const T f = sigmoid_of(gt[H + j] + bias[H + j]);
            const T g = std::tanh(gt[2 * H + j] + bias[2 * H + j]);
            const T o = sigmoid_of(gt[3 * H + j] + bias[3 * H + j]);
            const T tc = std::tanh(f * c[at] + i * g);
            const T dct = dcn[at] + dhn[at] * o * (T(1) - tc * tc);
            dg[j] = dct * g * i * (T(1) - i);
            dg[H + j] = dct * c[at] * f * (T(1) - f);
            dg[2 * H + j] = dct * i * (T(1) - g * g);
            dg[3 * H + j] = dhn[at] * tc * o * (T(1) - o);
            out[2].data()[at] = dct * f;
        }
    gemm_nt_acc(dgates.data(), a.data(3), out[0].data(), B, 4 * H, I);
    gemm_nt_acc(dgates.data(), a.data(4), out[1].data(), B, 4 * H, H);
    gemm_tn_acc(a.data(0), dgates.data(), out[3].data(), I, B, 4 * H);
    gemm_tn_acc(a.data(1), dgates.data(), out[4].data(), H, B, 4 * H);
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < 4 * H; ++j) out[5].data()[j] += dgates[static_cast<std::size_t>(n * 4 * H + j)];
    return out;
}

/// Recomputes the gates, then back through h' = (1 - z) n + z h, n = tanh(xw_n + r * hu_n + b_n).
template <std::floating_point T> std::vector<value<T>> gru_cell_grad(const kernel_args<T>& a) {
    const index B = a.in_dims(0)[0], I = a.in_dims(0)[1], H = a.in_dims(1)[1];
    const std::vector<T> xw = affine(a.data(0), a.data(2), B, I, 3 * H);
    const std::vector<T> hu = affine(a.data(1), a.data(3), B, H, 3 * H);
    const T *bias = a.data(4), *h = a.data(1), *dhn = a.data(5);
    std::vector<value<T>> out;
    for (std::size_t k = 0; k < 5; ++k) out.push_back(filled(a.out_dims(k), T(0)));
    std::vector<T> dxw(xw.size()), dhu(hu.size());
    for (index n = 0; n < B; ++n)
        for (index j = 0; j < H; ++j) {
            const index at = n * 3 * H;
            const T rg = sigmoid_of(xw[at + j] + hu[at + j] + bias[j]);
            const T z = sigmoid_of(xw[at + H + j] + hu[at + H + j] + bias[H + j]);
            const T nn = std::tanh(xw[at + 2 * H + j] + rg * hu[at + 2 * H + j] + bias[2 * H + j]);
            const T d = dhn[n * H + j];
            const T dan = d * (T(1) - z) * (T(1) - nn * nn);
            const T daz = d * (h[n * H + j] - nn) * z * (T(1) - z);
            const T dar = dan * hu[at + 2 * H + j] * rg * (T(1) - rg);
            dxw[at + j] = dhu[at + j] = dar;
            dxw[at + H + j] = dhu[at + H + j] = daz;
            dxw[at + 2 * H + j] = dan;
            dhu[at + 2 * H + j] = dan * rg;
            out[1].data()[n * H + j] = d * z;
            out[4].data()[j] += dar;
            out[4].data()[H + j] += daz;
            out[4].data()[2 * H + j] += dan;
        }
    gemm_nt_acc(dxw.data(), a.data(2), out[0].data(), B, 3 * H, I);
    gemm_nt_acc(dhu.data(), a.data(3), out[1].data(), B, 3 * H, H);
    gemm_tn_acc(a.data(0), dxw.data(), out[2].data(), I, B, 3 * H);
    gemm_tn_acc(a.data(1), dhu.data(), out[3].data(), H, B, 3 * H);
    return out;
}

}  // namespace goopt::interp::detail
