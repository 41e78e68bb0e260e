#pragma once
/// @file
/// @brief Matrix products: matmul (batched, broadcasting) and the three gemm loops it and the
/// recurrent cells use.

#include <goopt/interp/kernels/common.hpp>

#include <concepts>
#include <cstddef>

namespace goopt::interp::detail {

/// c[M,N] += a[M,K] b[K,N], row-major, k in the middle loop so the inner loop runs along rows.
template <std::floating_point T> void gemm_acc(const T* x, const T* y, T* c, index M, index K, index N) {
    for (index m = 0; m < M; ++m)
        for (index k = 0; k < K; ++k) {
            const T v = x[m * K + k];
            const T* yr = y + k * N;
            T* cr = c + m * N;
            for (index n = 0; n < N; ++n) cr[n] += v * yr[n];
        }
}

template <std::floating_point T> value<T> matmul(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const auto& yd = a.in_dims(1);
    const auto& od = a.out_dims();
    const index M = xd[xd.rank() - 2], K = xd.back(), N = yd.back();
    const ops::shape batch = prefix(od, od.rank() - 2);
    const auto xo = broadcast_offsets(batch, prefix(xd, xd.rank() - 2));
    const auto yo = broadcast_offsets(batch, prefix(yd, yd.rank() - 2));
    value<T> r = filled(od, T(0));
    for (std::size_t b = 0; b < xo.size(); ++b)
        gemm_acc(a.data(0) + xo[b] * M * K, a.data(1) + yo[b] * K * N, r.data() + static_cast<index>(b) * M * N, M, K,
                 N);
    epilogue(r, a, 2);
    return r;
}

/// c[M,N] += a^T b for a [K,M], b [K,N] (weight gradients: x^T times the gate gradients).
template <std::floating_point T> void gemm_tn_acc(const T* x, const T* y, T* c, index M, index K, index N) {
    for (index k = 0; k < K; ++k)
        for (index m = 0; m < M; ++m) {
            const T v = x[k * M + m];
            for (index n = 0; n < N; ++n) c[m * N + n] += v * y[k * N + n];
        }
}
/// c[M,N] += a b^T for a [M,K], b [N,K] (input gradients: gate gradients times w^T).
template <std::floating_point T> void gemm_nt_acc(const T* x, const T* y, T* c, index M, index K, index N) {
    for (index m = 0; m < M; ++m)
        for (index n = 0; n < N; ++n) {
            T acc = 0;
            for (index k = 0; k < K; ++k) acc += x[m * K + k] * y[n * K + k];
            c[m * N + n] += acc;
        }
}

}  // namespace goopt::interp::detail
