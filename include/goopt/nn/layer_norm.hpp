#pragma once
/// @file
/// @brief Layer normalization (Ba et al. 2016) over the features of each row.

#include <goopt/nn/types.hpp>

#include <random>
#include <string>

namespace goopt::nn {

/// @brief y = (x - mean) / sqrt(var + eps) * gamma + beta, per row; gamma starts at 1, beta at 0.
template <std::floating_point S> class layer_norm {
public:
    using scalar = S;
    layer_norm() = default;
    template <std::uniform_random_bit_generator Rng>
    layer_norm(std::size_t dim, Rng& rng, const std::string& name = "layer_norm") {
        gamma_ = make_parameter<S>(name + ".gamma", 1, dim, rng, true);
        gamma_.value.setOnes();
        beta_ = make_parameter<S>(name + ".beta", 1, dim, rng, true);
    }

    /// y, valid until the next forward pass (a buffer of the layer: see linear::run).
    const matrix<S>& forward(const matrix<S>& x) {
        const auto d = static_cast<S>(x.cols());
        xhat_.resize(x.rows(), x.cols());
        y_.resize(x.rows(), x.cols());
        inv_std_.resize(x.rows());
        const auto gamma = gamma_.value.row(0).array(), beta = beta_.value.row(0).array();
        // rows are independent: under OpenMP they split across threads, each row computed as alone
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 256)
#endif
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            const S mean = x.row(i).sum() / d;
            const S var = (x.row(i).array() - mean).square().sum() / d;
            inv_std_[i] = S(1) / std::sqrt(var + eps_);
            xhat_.row(i) = (x.row(i).array() - mean) * inv_std_[i];
            y_.row(i) = xhat_.row(i).array() * gamma + beta;
        }
        return y_;
    }

    /// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, per row.
    /// (dx is valid until the next backward pass.)
    const matrix<S>& backward(const matrix<S>& dy) {
        gamma_.grad.row(0) += (dy.array() * xhat_.array()).colwise().sum().matrix();
        beta_.grad.row(0) += dy.colwise().sum();
        const auto d = static_cast<S>(dy.cols());
        const auto gamma = gamma_.value.row(0).array();
        matrix<S>& dx = dx_;
        dx.resize(dy.rows(), dy.cols());
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 256)
#endif
        for (Eigen::Index i = 0; i < dy.rows(); ++i) {
            auto g = dx.row(i).array();  // g = dy * gamma, formed in place in dx's row
            g = dy.row(i).array() * gamma;
            const S mg = g.sum() / d;
            const S mgx = (g * xhat_.row(i).array()).sum() / d;
            g = inv_std_[i] * (g - mg - xhat_.row(i).array() * mgx);
        }
        return dx;
    }
    void collect(parameter_list<S>& ps) {
        ps.push_back(&gamma_);
        ps.push_back(&beta_);
    }

private:
    parameter<S> gamma_, beta_;
    matrix<S> xhat_, y_, dx_;  // kept between calls (see linear::run)
    Eigen::Matrix<S, Eigen::Dynamic, 1> inv_std_;
    S eps_ = S(1e-5);
};

}  // namespace goopt::nn
