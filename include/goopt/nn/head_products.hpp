#pragma once
/// @file
/// @brief The matrix products of one attention head, where one operand is only d_h = dim / heads
/// wide (16 in GO's shape) and the other is a segment's scores (len x klen, 256 x 512).
///
/// Why not Eigen's GEMM: it packs both operands into panels before its kernel runs. With a depth or
/// an output width of 16 that packing is as much work as the product itself (the score matrix is
/// copied once per product to feed 16 multiply-adds per element), and a depth of 16 leaves its
/// kernel loading and storing its output tile every 16 steps; measured in segment_attention on
/// 82,000 nodes: ~35 % of a PPO update in packing and ~45 GFLOP/s per core. Here each product reads
/// its operands where they lie: an output tile of up to 8 rows by one 64-byte vector stays in
/// registers for the whole depth, each step loading one vector of b and broadcasting a scalar of a
/// per row.
/// Sums run over the depth in order, one per output element: results are those of any other
/// summation order up to floating-point reassociation, and do not depend on the thread count.

#include <goopt/nn/types.hpp>

#include <algorithm>
#include <cassert>
#include <type_traits>

namespace goopt::nn {

namespace detail {

/// Output rows held in registers at once: as many 64-byte rows as fit in the vector register file
/// beside one row of b and one broadcast scalar, at most 8. With AVX-512 (32 registers, a row is one
/// register) that is 8; with AVX2 (16 registers, a row is two) 6: 8 rows there spilled accumulators
/// to the stack on every depth step (measured on 256 x 512 x 16: 57 GFLOP/s at 8 rows, 91-95 at 6,
/// one core of an AMD EPYC Milan). The sums, and so the results, do not depend on the row count.
template <class S> constexpr int head_tile_rows() {
    constexpr int lanes = Eigen::internal::packet_traits<S>::size;  // scalars per vector register
    // where Eigen does not vectorize, the compiler decides how the rows are held
    if constexpr (lanes == 1) return 8;
    constexpr int per_row = std::max(1, static_cast<int>(64 / sizeof(S)) / lanes);
    constexpr int registers = static_cast<int>(EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS);
    return std::clamp((registers - per_row - 1) / per_row, 1, 8);
}

/// c[i0.., c0..c0+P) for R rows, full depth k, one fixed-size vector of P scalars per row.
template <bool TransA, int R, int P, class S>
inline void head_tile(S* c, Eigen::Index ldc, const S* a, Eigen::Index lda, const S* b, Eigen::Index ldb,
                      Eigen::Index i0, Eigen::Index c0, Eigen::Index k, S alpha, bool accumulate) {
    using vec = Eigen::Array<S, P, 1>;
    vec acc[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r].setZero();
    for (Eigen::Index j = 0; j < k; ++j) {
        const vec bj = Eigen::Map<const vec>(b + j * ldb + c0);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r] += (TransA ? a[j * lda + i0 + r] : a[(i0 + r) * lda + j]) * bj;
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        Eigen::Map<vec> cr(c + (i0 + r) * ldc + c0);
        if (accumulate) cr += alpha * acc[r];
        else cr = alpha * acc[r];
    }
}

/// The columns [c0, c0 + w) left over when the width is not a multiple of the vector (small test
/// shapes): the same sums, one scalar at a time.
template <bool TransA, class S>
void head_columns(S* c, Eigen::Index ldc, const S* a, Eigen::Index lda, const S* b, Eigen::Index ldb, Eigen::Index m,
                  Eigen::Index k, Eigen::Index c0, Eigen::Index w, S alpha, bool accumulate) {
    for (Eigen::Index i = 0; i < m; ++i)
        for (Eigen::Index q = c0; q < c0 + w; ++q) {
            S s = 0;
            for (Eigen::Index j = 0; j < k; ++j) s += (TransA ? a[j * lda + i] : a[i * lda + j]) * b[j * ldb + q];
            S& r = c[i * ldc + q];
            r = accumulate ? r + alpha * s : alpha * s;
        }
}

template <bool TransA, class S>
void head_product(S* c, Eigen::Index ldc, const S* a, Eigen::Index lda, const S* b, Eigen::Index ldb, Eigen::Index m,
                  Eigen::Index k, Eigen::Index w, S alpha, bool accumulate) {
    constexpr int P = static_cast<int>(64 / sizeof(S)), R = head_tile_rows<S>();
    Eigen::Index c0 = 0;
    for (; c0 + P <= w; c0 += P) {
        Eigen::Index i = 0;
        for (; i + R <= m; i += R) head_tile<TransA, R, P>(c, ldc, a, lda, b, ldb, i, c0, k, alpha, accumulate);
        for (; i < m; ++i) head_tile<TransA, 1, P>(c, ldc, a, lda, b, ldb, i, c0, k, alpha, accumulate);
    }
    if (c0 < w) head_columns<TransA>(c, ldc, a, lda, b, ldb, m, k, c0, w - c0, alpha, accumulate);
}

}  // namespace detail

/// @brief c = alpha op(a) b, or c += alpha op(a) b when `accumulate`, for row-major blocks (of
/// nn::matrix or of a buffer such as a segment's scores): op(a) = a, or a^T when `trans_a` (then `a`
/// is the stored k x m block). c is m x w and b is k x w; c must not overlap a or b.
template <class C, class A, class B>
void head_product(C&& c, const A& a, bool trans_a, const B& b, typename std::decay_t<C>::Scalar alpha = 1,
                  bool accumulate = false) {
    static_assert(std::decay_t<C>::IsRowMajor && A::IsRowMajor && B::IsRowMajor, "row-major blocks");
    const Eigen::Index m = trans_a ? a.cols() : a.rows(), k = trans_a ? a.rows() : a.cols();
    assert(c.rows() == m && b.rows() == k && c.cols() == b.cols());
    (void)m;
    if (trans_a)
        detail::head_product<true>(c.data(), c.outerStride(), a.data(), a.outerStride(), b.data(), b.outerStride(),
                                   c.rows(), k, c.cols(), alpha, accumulate);
    else
        detail::head_product<false>(c.data(), c.outerStride(), a.data(), a.outerStride(), b.data(), b.outerStride(),
                                    c.rows(), k, c.cols(), alpha, accumulate);
}

}  // namespace goopt::nn
