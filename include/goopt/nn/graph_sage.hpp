#pragma once
/// @file
/// @brief One GraphSAGE layer, mean or max-pool aggregator. Hamilton, Ying, Leskovec (NeurIPS'17) §3.

#include <goopt/error.hpp>
#include <goopt/nn/adjacency.hpp>
#include <goopt/nn/linear.hpp>

#include <algorithm>
#include <random>
#include <string>

namespace goopt::nn {

/// How a node combines its neighbours' rows.
enum class aggregator { mean, max_pool };

/// @brief h'_v = relu(h_v W_self + agg_{u in N(v)} m_u W_neigh + b), with m_u = h_u (mean) or
/// m_u = relu(h_u W_pool + b_pool) (max-pool, elementwise max). A node without neighbours aggregates
/// zeros. Weights do not depend on the graph, so one layer runs on any graph (inductive).
template <std::floating_point S> class graph_sage {
public:
    using scalar = S;
    graph_sage() = default;
    template <std::uniform_random_bit_generator Rng>
    graph_sage(std::size_t in, std::size_t out, aggregator agg, Rng& rng, const std::string& name = "sage")
        : agg_(agg), self_(in, out, rng, name + ".self"), w_neigh_(make_parameter<S>(name + ".neigh_w", in, out, rng)) {
        if (agg == aggregator::max_pool) pool_ = linear<S>(in, in, rng, name + ".pool");
    }

    /// @param x one row per node; @param adj its neighbours (x.rows() nodes), kept by reference
    /// until backward. @return h', valid until the next forward pass (a buffer of the layer: see
    /// linear::run).
    const matrix<S>& forward(const matrix<S>& x, const adjacency& adj) {
        if (static_cast<std::size_t>(x.rows()) != adj.num_nodes())
            throw error("nn::graph_sage", concat(x.rows(), " feature rows"),
                        concat("one per node of the adjacency (", adj.num_nodes(), ")"));
        adj_ = &adj;
        const Eigen::Index n = x.rows(), d = x.cols();
        if (agg_ == aggregator::max_pool) {
            const matrix<S>& p = pool_.forward(x);
            pooled_.resize(n, d);
            for_row_chunks(n, [&](Eigen::Index r0, Eigen::Index len) {
                pooled_.middleRows(r0, len) = p.middleRows(r0, len).cwiseMax(S(0));
            });
        }
        const matrix<S>& m = agg_ == aggregator::max_pool ? pooled_ : x;
        a_.resize(n, d);
        if (agg_ == aggregator::max_pool) argmax_.resize(n, d);
            // each node writes only its own rows of a_ and argmax_, reading its neighbours in CSR order,
            // so the rows run in parallel with the same result on any number of threads
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 256)
#endif
        for (Eigen::Index v = 0; v < n; ++v) {
            const auto b = adj.offsets[v], e = adj.offsets[v + 1];
            if (b == e) {
                a_.row(v).setZero();
                if (agg_ == aggregator::max_pool) argmax_.row(v).setConstant(-1);
                continue;
            }
            if (agg_ == aggregator::mean) {
                a_.row(v) = m.row(adj.indices[b]);
                for (auto i = b + 1; i < e; ++i) a_.row(v) += m.row(adj.indices[i]);
                a_.row(v) /= static_cast<S>(e - b);
            } else {
                a_.row(v) = m.row(adj.indices[b]);
                argmax_.row(v).setConstant(static_cast<int>(adj.indices[b]));
                for (auto i = b + 1; i < e; ++i) {
                    const auto u = adj.indices[i];
                    for (Eigen::Index j = 0; j < d; ++j)
                        if (m(u, j) > a_(v, j)) {
                            a_(v, j) = m(u, j);
                            argmax_(v, j) = static_cast<int>(u);
                        }
                }
            }
        }
        copy_rows(y_, self_.forward(x));
        multiply_rows(y_, a_, w_neigh_.value, true);
        for_row_chunks(n, [&](Eigen::Index r0, Eigen::Index len) {
            y_.middleRows(r0, len) = y_.middleRows(r0, len).cwiseMax(S(0));
        });
        return y_;
    }

    /// (dx is valid until the next backward pass.)
    const matrix<S>& backward(const matrix<S>& dy) {
        dz_.resize(dy.rows(), dy.cols());  // member buffers keep their storage between calls
        for_row_chunks(dy.rows(), [&](Eigen::Index r0, Eigen::Index len) {
            dz_.middleRows(r0, len) = (y_.middleRows(r0, len).array() > S(0)).select(dy.middleRows(r0, len), S(0));
        });
        matrix<S>& dx = dx_;
        copy_rows(dx, self_.backward(dz_));
        add_transposed_product(w_neigh_.grad, a_, dz_);
        multiply_rows(da_, dz_, w_neigh_.value.transpose());
        const adjacency& adj = *adj_;
        const Eigen::Index n = dz_.rows(), d = a_.cols();
        dm_.setZero(n, d);
        // Scattering into neighbours' rows would race across nodes, so threads split the columns
        // instead (blocks of 16, a 64-byte line of floats): every column still adds its terms in node
        // order, so the sums are bit-identical on any number of threads.
        constexpr Eigen::Index block = 16;
        const Eigen::Index blocks = (d + block - 1) / block;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
        for (Eigen::Index cb = 0; cb < blocks; ++cb) {
            const Eigen::Index j0 = cb * block, j1 = std::min(d, j0 + block);
            for (Eigen::Index v = 0; v < n; ++v) {
                const auto b = adj.offsets[v], e = adj.offsets[v + 1];
                if (b == e) continue;
                if (agg_ == aggregator::mean) {
                    const S inv = S(1) / static_cast<S>(e - b);
                    for (auto i = b; i < e; ++i)
                        for (Eigen::Index j = j0; j < j1; ++j) dm_(adj.indices[i], j) += inv * da_(v, j);
                } else {
                    for (Eigen::Index j = j0; j < j1; ++j) dm_(argmax_(v, j), j) += da_(v, j);
                }
            }
        }
        if (agg_ == aggregator::max_pool) {
            for_row_chunks(n, [&](Eigen::Index r0, Eigen::Index len) {
                dm_.middleRows(r0, len) =
                    (pooled_.middleRows(r0, len).array() > S(0)).select(dm_.middleRows(r0, len), S(0));
            });
            const matrix<S>& dp = pool_.backward(dm_);
            for_row_chunks(
                n, [&](Eigen::Index r0, Eigen::Index len) { dx.middleRows(r0, len) += dp.middleRows(r0, len); });
        } else {
            for_row_chunks(
                n, [&](Eigen::Index r0, Eigen::Index len) { dx.middleRows(r0, len) += dm_.middleRows(r0, len); });
        }
        return dx;
    }

    void collect(parameter_list<S>& ps) {
        self_.collect(ps);
        ps.push_back(&w_neigh_);
        if (agg_ == aggregator::max_pool) pool_.collect(ps);
    }

private:
    aggregator agg_ = aggregator::mean;
    linear<S> self_, pool_;  // self_ carries the bias b
    parameter<S> w_neigh_;
    const adjacency* adj_ = nullptr;
    matrix<S> pooled_, a_, y_;
    matrix<S> dz_, da_, dm_, dx_;  // backward's buffers, kept between calls
    Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> argmax_;
};

}  // namespace goopt::nn
