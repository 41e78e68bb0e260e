#pragma once
/// @file
/// @brief Matrix products with one tall operand (one row per node), split into fixed row chunks
/// that run in parallel under OpenMP.
///
/// Why not Eigen's own multi-threaded GEMM: it splits one product across threads that wait for each
/// other by spinning at every depth block; with a depth of n (weight gradients x^T dy) that is
/// n/256 rendezvous per product, and on a loaded machine a descheduled thread stalls the other
/// (measured 10x slower on 2 shared cores). Here each chunk is one single-threaded Eigen product
/// (Eigen runs serially inside an OpenMP region, which is opened even for a single chunk, since
/// Eigen's blocking, and so its rounding, depends on its thread count) and threads meet once per
/// call. The chunks do not depend on the thread count, and partial sums are added in chunk order,
/// so results are bit-identical on any number of threads.

#include <goopt/nn/types.hpp>

#include <algorithm>
#include <vector>

namespace goopt::nn {

/// Rows per chunk: large enough that each chunk is an efficient GEMM, small enough that a 1k-node
/// graph still gives every core a share.
inline constexpr Eigen::Index tall_chunk_rows = 256;

/// @brief dst = a * b (accumulate: dst += a * b) for a tall `a` (n x k) and a small `b` (k x m, any
/// Eigen expression such as w.transpose()). dst is resized to n x m when not accumulating.
template <std::floating_point S, class A, class B>
void multiply_rows(matrix<S>& dst, const A& a, const B& b, bool accumulate = false) {
    const Eigen::Index n = a.rows();
    if (!accumulate) dst.resize(n, b.cols());
    const Eigen::Index chunks = (n + tall_chunk_rows - 1) / tall_chunk_rows;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)  // also for one chunk: inside a region Eigen stays serial
#endif
    for (Eigen::Index c = 0; c < chunks; ++c) {
        const Eigen::Index r0 = c * tall_chunk_rows, len = std::min(tall_chunk_rows, n - r0);
        if (accumulate) dst.middleRows(r0, len).noalias() += a.middleRows(r0, len) * b;
        else dst.middleRows(r0, len).noalias() = a.middleRows(r0, len) * b;
    }
}

/// @brief f(r0, len) for each chunk of tall_chunk_rows rows of an n-row matrix, in parallel under
/// OpenMP: for elementwise passes over n x width matrices (a copy, a sum, a bias), which a serial
/// loop runs on one core while the other waits. Each row is computed as alone, so the results do not
/// depend on the thread count.
template <class F> void for_row_chunks(Eigen::Index n, F&& f) {
    const Eigen::Index chunks = (n + tall_chunk_rows - 1) / tall_chunk_rows;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (Eigen::Index c = 0; c < chunks; ++c) {
        const Eigen::Index r0 = c * tall_chunk_rows;
        f(r0, std::min(tall_chunk_rows, n - r0));
    }
}

/// dst = src for an n x width matrix, rows copied in parallel (see for_row_chunks).
template <std::floating_point S> void copy_rows(matrix<S>& dst, const matrix<S>& src) {
    dst.resize(src.rows(), src.cols());
    for_row_chunks(src.rows(),
                   [&](Eigen::Index r0, Eigen::Index len) { dst.middleRows(r0, len) = src.middleRows(r0, len); });
}

/// @brief dst += a^T * b for tall `a` (n x p) and `b` (n x q): the gradient of a weight whose
/// input rows are `a` and output gradient rows `b`. One partial product per chunk of
/// 4 * tall_chunk_rows rows, summed in chunk order; each partial is the sum of products of depth
/// tall_chunk_rows. Why not one product of depth 1,024 per chunk: Eigen's blocking heuristic, fed
/// the cache sizes a virtual machine reports, chose panels for a 128 x 1,024 by 1,024 x 128 product
/// that ran at 27 GFLOP/s on one core of the development machine, against 125 GFLOP/s at depth
/// 256 (and 17 at depth 512); at depth 256 every shape measured ran at full speed. Every linear
/// layer and attention projection has one of these per backward pass.
template <std::floating_point S, class A, class B> void add_transposed_product(matrix<S>& dst, const A& a, const B& b) {
    const Eigen::Index n = a.rows(), rows = 4 * tall_chunk_rows;
    const Eigen::Index chunks = (n + rows - 1) / rows;
    std::vector<matrix<S>> partial(static_cast<std::size_t>(chunks));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (Eigen::Index c = 0; c < chunks; ++c) {
        const Eigen::Index r0 = c * rows, len = std::min(rows, n - r0);
        matrix<S>& p = partial[static_cast<std::size_t>(c)];
        p.setZero(a.cols(), b.cols());
        for (Eigen::Index s = 0; s < len; s += tall_chunk_rows) {
            const Eigen::Index sub = std::min(tall_chunk_rows, len - s);
            p.noalias() += a.middleRows(r0 + s, sub).transpose() * b.middleRows(r0 + s, sub);
        }
    }
    for (const matrix<S>& p : partial) dst += p;  // fixed order, whatever thread made each part
}

}  // namespace goopt::nn
