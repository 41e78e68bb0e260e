#pragma once
/// @file
/// @brief One GraphSAGE layer, mean or max-pool aggregator. Hamilton, Ying, Leskovec (NeurIPS'17) §3.

#include <goopt/error.hpp>
#include <goopt/nn/adjacency.hpp>
#include <goopt/nn/linear.hpp>

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
    template <class Rng>
    graph_sage(std::size_t in, std::size_t out, aggregator agg, Rng& rng, const std::string& name = "sage")
        : agg_(agg), self_(in, out, rng, name + ".self"),
          w_neigh_(make_parameter<S>(name + ".neigh_w", in, out, rng)) {
        if (agg == aggregator::max_pool) pool_ = linear<S>(in, in, rng, name + ".pool");
    }

    /// @param x one row per node; @param adj its neighbours (x.rows() nodes), kept by reference
    /// until backward.
    matrix<S> forward(const matrix<S>& x, const adjacency& adj) {
        if (static_cast<std::size_t>(x.rows()) != adj.num_nodes())
            throw error("nn::graph_sage: " + std::to_string(x.rows()) + " feature rows but the adjacency has " +
                        std::to_string(adj.num_nodes()) + " nodes");
        adj_ = &adj;
        const Eigen::Index n = x.rows(), d = x.cols();
        if (agg_ == aggregator::max_pool) {
            pooled_ = pool_.forward(x).cwiseMax(S(0));
        }
        const matrix<S>& m = agg_ == aggregator::max_pool ? pooled_ : x;
        a_.setZero(n, d);
        if (agg_ == aggregator::max_pool) argmax_.setConstant(n, d, -1);
        for (Eigen::Index v = 0; v < n; ++v) {
            const auto b = adj.offsets[v], e = adj.offsets[v + 1];
            if (b == e) continue;
            if (agg_ == aggregator::mean) {
                for (auto i = b; i < e; ++i) a_.row(v) += m.row(adj.indices[i]);
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
        matrix<S> z = self_.forward(x);
        z.noalias() += a_ * w_neigh_.value;
        y_ = z.cwiseMax(S(0));
        return y_;
    }

    matrix<S> backward(const matrix<S>& dy) {
        const matrix<S> dz = (y_.array() > S(0)).select(dy, S(0));
        matrix<S> dx = self_.backward(dz);
        w_neigh_.grad.noalias() += a_.transpose() * dz;
        matrix<S> da(dz.rows(), a_.cols());
        da.noalias() = dz * w_neigh_.value.transpose();
        const adjacency& adj = *adj_;
        const Eigen::Index n = dz.rows(), d = a_.cols();
        matrix<S> dm = matrix<S>::Zero(n, d);
        for (Eigen::Index v = 0; v < n; ++v) {
            const auto b = adj.offsets[v], e = adj.offsets[v + 1];
            if (b == e) continue;
            if (agg_ == aggregator::mean) {
                const S inv = S(1) / static_cast<S>(e - b);
                for (auto i = b; i < e; ++i) dm.row(adj.indices[i]) += inv * da.row(v);
            } else {
                for (Eigen::Index j = 0; j < d; ++j) dm(argmax_(v, j), j) += da(v, j);
            }
        }
        if (agg_ == aggregator::max_pool) dx += pool_.backward((pooled_.array() > S(0)).select(dm, S(0)));
        else dx += dm;
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
    Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> argmax_;
};

}  // namespace goopt::nn
