#pragma once
/// @file
/// @brief Multi-head self-attention over nodes in topological order with segment-level recurrence.
/// Transformer-XL (Dai et al., ACL'19) §3.2, as used by GO (NeurIPS'20) §3.2.

#include <goopt/error.hpp>
#include <goopt/nn/head_products.hpp>
#include <goopt/nn/linear.hpp>
#include <goopt/nn/tall_products.hpp>
#include <goopt/nn/types.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace goopt::nn {

/// Shape of a segment_attention layer.
struct attention_config {
    std::size_t dim = 128;  ///< model width (divisible by heads)
    std::size_t heads = 8;
    std::size_t segment = 256;  ///< nodes per segment
    /// Transformer-XL stops the gradient into the cached keys/values of the previous segment; true
    /// lets it flow (the exact gradient of the same forward function), for tests and ablations.
    bool memory_gradient = false;
};

/// @brief y = concat_h(softmax(Q_h K_h^T / sqrt(d_h)) V_h) W_o + b_o, where the rows of segment s
/// (nodes [sL, (s+1)L)) attend to the keys/values of segment s and of segment s-1 (the memory).
/// Within a segment attention is bidirectional: GO samples every node's decision at once, so no node
/// has to be decided before its successors. Q, K, V are computed for all nodes with three large GEMMs;
/// the per-segment softmax is recomputed in backward instead of stored (n x 2L x heads scalars, 4 GiB
/// per three layers at 82,000 nodes): forward keeps each row's log-sum-exp (n x heads), so that
/// backward forms A = exp(S - lse) in one pass, and its softmax backward takes rowsum(dA .* A) as
/// dO_h . O_h (FlashAttention-2, Dao 2023, §3.1.2), one pass over dA instead of two.
template <std::floating_point S> class segment_attention {
public:
    using scalar = S;
    segment_attention() = default;
    template <std::uniform_random_bit_generator Rng>
    segment_attention(attention_config c, Rng& rng, const std::string& name = "attention") : c_(c) {
        if (c.heads == 0 || c.dim % c.heads != 0 || c.segment == 0)
            throw error(concat("nn::segment_attention '", name, "'"),
                        concat("dim ", c.dim, ", heads ", c.heads, ", segment ", c.segment),
                        "dim a positive multiple of heads, and segment > 0");
        wq_ = make_parameter<S>(name + ".wq", c.dim, c.dim, rng);
        wk_ = make_parameter<S>(name + ".wk", c.dim, c.dim, rng);
        wv_ = make_parameter<S>(name + ".wv", c.dim, c.dim, rng);
        out_ = linear<S>(c.dim, c.dim, rng, name + ".wo", name + ".bo");
    }

    /// @param x one row per node, nodes in topological order. @return y, valid until the next
    /// forward pass (a buffer of the layer: see linear::run).
    const matrix<S>& forward(const matrix<S>& x) {
        if (static_cast<std::size_t>(x.cols()) != c_.dim)
            throw error("nn::segment_attention", concat("input has ", x.cols(), " columns"), concat(c_.dim));
        // Buffers are members and keep their storage between calls: a fresh n x dim matrix costs a
        // page fault per 4 KiB on first touch, which measured ~30 % of a pass on a 10k-node graph.
        copy_rows(x_, x);
        multiply_rows(q_, x, wq_.value);
        multiply_rows(k_, x, wk_.value);
        multiply_rows(v_, x, wv_.value);
        o_.resize(x.rows(), x.cols());
        lse_.resize(x.rows(), static_cast<Eigen::Index>(c_.heads));
        const Eigen::Index dh = static_cast<Eigen::Index>(c_.dim / c_.heads);
        // Segments write disjoint rows of o_: with OpenMP they run in parallel (one parallel region
        // per layer, not one per small product; each thread keeps one score buffer for all its segments).
        const Eigen::Index segments = num_segments(x.rows());
#if defined(_OPENMP)
#pragma omp parallel
#endif
        {
            matrix<S> a, kt;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic)
#endif
            for (Eigen::Index s = 0; s < segments; ++s) {
                const auto [s0, len, m0, klen] = segment(s, x.rows());
                kt = k_.middleRows(m0, klen).transpose();  // the segment's keys, one row per feature
                for (Eigen::Index h = 0; h < static_cast<Eigen::Index>(c_.heads); ++h) {
                    scores(a, kt, s0, len, klen, h * dh, dh, h);
                    head_product(o_.block(s0, h * dh, len, dh), a, false, v_.block(m0, h * dh, klen, dh));
                }
            }
        }
        return out_.run(o_);
    }

    /// (dx is valid until the next backward pass.)
    const matrix<S>& backward(const matrix<S>& dy) {
        d_o_ = out_.backward(dy, o_);
        const Eigen::Index dh = static_cast<Eigen::Index>(c_.dim / c_.heads);
        const S scale = S(1) / std::sqrt(static_cast<S>(dh));
        // With the memory's gradient stopped, segment s alone writes rows [s0, s0+len) of dq, dk, dv,
        // so segments run in parallel and assign (no zeroing pass); a flowing memory gradient also
        // adds into the previous segment's rows, so it zeroes first, accumulates and stays serial.
        const bool serial = c_.memory_gradient;
        if (serial) {
            dq_.setZero(dy.rows(), dy.cols());
            dk_.setZero(dy.rows(), dy.cols());
            dv_.setZero(dy.rows(), dy.cols());
        } else {
            dq_.resize(dy.rows(), dy.cols());
            dk_.resize(dy.rows(), dy.cols());
            dv_.resize(dy.rows(), dy.cols());
        }
        const Eigen::Index segments = num_segments(dy.rows());
#if defined(_OPENMP)
#pragma omp parallel if (!serial)
#endif
        {
            matrix<S> a, da, kt, vt;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic)
#endif
            for (Eigen::Index s = 0; s < segments; ++s) {
                const auto [s0, len, m0, klen] = segment(s, dy.rows());
                // keys [m0, s0) are the memory: with a stopped gradient only [s0, s0+len) receive dK, dV,
                // and only those rows of A^T dO and dS^T Q are formed
                const Eigen::Index first = serial ? 0 : s0 - m0;
                kt = k_.middleRows(m0, klen).transpose();
                vt = v_.middleRows(m0, klen).transpose();
                for (Eigen::Index h = 0; h < static_cast<Eigen::Index>(c_.heads); ++h) {
                    const Eigen::Index c0 = h * dh;
                    probabilities(a, kt, s0, len, klen, c0, dh, h);
                    const auto doh = d_o_.block(s0, c0, len, dh);
                    head_product(dv_.block(m0 + first, c0, klen - first, dh), a.rightCols(klen - first), true, doh,
                                 S(1), serial);
                    da.resize(len, klen);
                    head_product(da, doh, false, vt.block(c0, 0, dh, klen));
                    // softmax backward, row-wise: dS = A .* (dA - rowsum(dA .* A)), then the 1/sqrt(d_h);
                    // rowsum(dA .* A) = dO_h . (A V_h) = dO_h . O_h, a dot product of d_h terms
                    const auto oh = o_.block(s0, c0, len, dh);
                    for (Eigen::Index i = 0; i < len; ++i) {
                        const S rowsum = doh.row(i).dot(oh.row(i));
                        auto d = da.row(i).array();
                        d = a.row(i).array() * (d - rowsum) * scale;
                    }
                    head_product(dk_.block(m0 + first, c0, klen - first, dh), da.rightCols(klen - first), true,
                                 q_.block(s0, c0, len, dh), S(1), serial);
                    head_product(dq_.block(s0, c0, len, dh), da, false, k_.block(m0, c0, klen, dh), S(1), serial);
                }
            }
        }
        add_transposed_product(wq_.grad, x_, dq_);
        add_transposed_product(wk_.grad, x_, dk_);
        add_transposed_product(wv_.grad, x_, dv_);
        multiply_rows(dx_, dq_, wq_.value.transpose());
        multiply_rows(dx_, dk_, wk_.value.transpose(), true);
        multiply_rows(dx_, dv_, wv_.value.transpose(), true);
        return dx_;
    }

    void collect(parameter_list<S>& ps) {
        for (auto* p : {&wq_, &wk_, &wv_}) ps.push_back(p);
        out_.collect(ps);
    }
    const attention_config& config() const { return c_; }
    void set_memory_gradient(bool on) { c_.memory_gradient = on; }

private:
    struct segment_rows {
        Eigen::Index s0, len, m0, klen;  // rows [s0, s0+len) attend to keys [m0, s0+len)
    };
    Eigen::Index num_segments(Eigen::Index n) const {
        const auto L = static_cast<Eigen::Index>(c_.segment);
        return (n + L - 1) / L;
    }
    segment_rows segment(Eigen::Index s, Eigen::Index n) const {
        const auto L = static_cast<Eigen::Index>(c_.segment);
        const Eigen::Index s0 = s * L, len = std::min(L, n - s0), m0 = std::max<Eigen::Index>(0, s0 - L);
        return {s0, len, m0, s0 + len - m0};
    }
    /// a = Q_h K_h^T / sqrt(d_h) for one segment and head (columns [c0, c0 + dh)); kt holds the
    /// segment's keys transposed (dim x klen), so that the product reads whole rows of K_h^T.
    void scaled_scores(matrix<S>& a, const matrix<S>& kt, Eigen::Index s0, Eigen::Index len, Eigen::Index klen,
                       Eigen::Index c0, Eigen::Index dh) const {
        a.resize(len, klen);
        head_product(a, q_.block(s0, c0, len, dh), false, kt.block(c0, 0, dh, klen),
                     S(1) / std::sqrt(static_cast<S>(dh)));
    }
    /// a = row-softmax of scaled_scores() for head h, each row's log-sum-exp kept in lse_.
    void scores(matrix<S>& a, const matrix<S>& kt, Eigen::Index s0, Eigen::Index len, Eigen::Index klen,
                Eigen::Index c0, Eigen::Index dh, Eigen::Index h) {
        scaled_scores(a, kt, s0, len, klen, c0, dh);
        // row by row: a row is contiguous, so Eigen vectorizes exp (a colwise broadcast over a
        // row-major matrix falls back to scalar expf, measured at ~20 % of the policy's time)
        for (Eigen::Index i = 0; i < len; ++i) {
            auto r = a.row(i).array();
            const S top = r.maxCoeff();
            r = (r - top).exp();
            const S sum = r.sum();
            r *= S(1) / sum;
            lse_(s0 + i, h) = top + std::log(sum);
        }
    }
    /// The same probabilities again in backward, from the log-sum-exp the forward pass kept: one
    /// pass of exp(s - lse) instead of a maximum, an exp, a sum and a scaling.
    void probabilities(matrix<S>& a, const matrix<S>& kt, Eigen::Index s0, Eigen::Index len, Eigen::Index klen,
                       Eigen::Index c0, Eigen::Index dh, Eigen::Index h) const {
        scaled_scores(a, kt, s0, len, klen, c0, dh);
        for (Eigen::Index i = 0; i < len; ++i) a.row(i).array() = (a.row(i).array() - lse_(s0 + i, h)).exp();
    }

    attention_config c_;
    parameter<S> wq_, wk_, wv_;
    linear<S> out_;  // the output projection
    matrix<S> x_, q_, k_, v_, o_;
    matrix<S> lse_;  // per node and head, the log-sum-exp of its scores row (forward's, for backward)
    matrix<S> d_o_, dq_, dk_, dv_, dx_;  // backward's buffers, kept between calls
};

}  // namespace goopt::nn
