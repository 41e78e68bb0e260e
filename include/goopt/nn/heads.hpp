#pragma once
/// @file
/// @brief Output heads: one categorical distribution per node (devices or priority levels) and a
/// graph-level value, plus the softmax helpers that training needs.

#include <goopt/error.hpp>
#include <goopt/nn/linear.hpp>

#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::nn {

/// @brief Logits of one categorical distribution per node: a linear map from the width to the
/// number of choices (devices, or priority levels).
template <std::floating_point S> class categorical_head {
public:
    using scalar = S;
    categorical_head() = default;
    template <std::uniform_random_bit_generator Rng>
    categorical_head(std::size_t dim, std::size_t choices, Rng& rng, const std::string& name = "head")
        : fc_(dim, choices, rng, name) {
        if (choices == 0) throw error(concat("nn::categorical_head '", name, "'"), "0 choices", "at least one choice");
    }
    /// The logits, valid until the next forward pass (a buffer of the layer: see linear::run).
    const matrix<S>& forward(const matrix<S>& x) { return fc_.forward(x); }
    const matrix<S>& backward(const matrix<S>& dlogits) { return fc_.backward(dlogits); }
    void collect(parameter_list<S>& ps) { fc_.collect(ps); }
    std::size_t choices() const { return fc_.out_features(); }

private:
    linear<S> fc_;
};

/// @brief State value of the whole graph: v = mean_v(x_v) w + b (PPO's baseline).
template <std::floating_point S> class value_head {
public:
    using scalar = S;
    value_head() = default;
    template <std::uniform_random_bit_generator Rng>
    value_head(std::size_t dim, Rng& rng, const std::string& name = "value") : fc_(dim, 1, rng, name) {}
    S forward(const matrix<S>& x) {
        rows_ = x.rows();
        const matrix<S> mean = x.colwise().mean();
        return fc_.forward(mean)(0, 0);
    }
    /// dL/dx for dL/dv = dv (every row gets the same share), valid until the next backward pass.
    const matrix<S>& backward(S dv) {
        const matrix<S> d = fc_.backward(matrix<S>::Constant(1, 1, dv));
        dx_ = d.replicate(rows_, 1) / static_cast<S>(rows_);
        return dx_;
    }
    void collect(parameter_list<S>& ps) { fc_.collect(ps); }

private:
    linear<S> fc_;
    Eigen::Index rows_ = 0;
    matrix<S> dx_;  // kept between calls (see linear::run)
};

/// Row-wise log-softmax, shifted by the row maximum so large logits do not overflow.
template <std::floating_point S> matrix<S> log_softmax(const matrix<S>& logits) {
    matrix<S> r = logits.colwise() - logits.rowwise().maxCoeff();
    const Eigen::Matrix<S, Eigen::Dynamic, 1> lse = r.array().exp().rowwise().sum().log();
    r.colwise() -= lse;
    return r;
}

/// @brief One sample per row from softmax(logits), with `rng`.
template <std::floating_point S, std::uniform_random_bit_generator Rng>
std::vector<int> sample_rows(const matrix<S>& logits, Rng& rng) {
    const matrix<S> lp = log_softmax(logits);
    std::vector<int> out(static_cast<std::size_t>(lp.rows()));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (Eigen::Index i = 0; i < lp.rows(); ++i) {
        double r = u(rng), acc = 0;
        int pick = static_cast<int>(lp.cols()) - 1;
        for (Eigen::Index j = 0; j < lp.cols(); ++j) {
            acc += std::exp(static_cast<double>(lp(i, j)));
            if (r < acc) {
                pick = static_cast<int>(j);
                break;
            }
        }
        out[static_cast<std::size_t>(i)] = pick;
    }
    return out;
}

/// Row-wise most likely choice.
template <std::floating_point S> std::vector<int> argmax_rows(const matrix<S>& logits) {
    std::vector<int> out(static_cast<std::size_t>(logits.rows()));
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
        Eigen::Index j;
        logits.row(i).maxCoeff(&j);
        out[static_cast<std::size_t>(i)] = static_cast<int>(j);
    }
    return out;
}

/// @brief Mean cross-entropy of `labels` under softmax(logits), and its gradient dL/dlogits
/// (softmax - onehot) / rows. Throws goopt::error for a label outside [0, cols).
template <std::floating_point S>
S cross_entropy(const matrix<S>& logits, std::span<const int> labels, matrix<S>& dlogits) {
    if (labels.size() != static_cast<std::size_t>(logits.rows()))
        throw error("nn::cross_entropy", concat(labels.size(), " labels for ", logits.rows(), " rows"),
                    "one label per row");
    const matrix<S> lp = log_softmax(logits);
    dlogits = lp.array().exp() / static_cast<S>(lp.rows());
    S loss = 0;
    for (Eigen::Index i = 0; i < lp.rows(); ++i) {
        const int y = labels[static_cast<std::size_t>(i)];
        if (y < 0 || y >= lp.cols())
            throw error("nn::cross_entropy", concat("label ", y, " of row ", i),
                        concat("a label in [0, ", lp.cols(), ")"));
        loss -= lp(i, y);
        dlogits(i, y) -= S(1) / static_cast<S>(lp.rows());
    }
    return loss / static_cast<S>(lp.rows());
}

}  // namespace goopt::nn
