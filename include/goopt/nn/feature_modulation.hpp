#pragma once
/// @file
/// @brief Feature modulation: node rows gated by a function of the graph's summary. GO (NeurIPS'20) §3.3.

#include <goopt/nn/types.hpp>

#include <random>
#include <string>

namespace goopt::nn {

/// @brief y_v = x_v .* g with g = 2 sigmoid(mean_v(x_v) W + b): one gate vector per graph, the same
/// for all its nodes, so one network specializes itself to a graph family at the cost of a single
/// (dim x dim) matrix. W starts at zero, so g starts at 1 (identity) and training moves it.
template <std::floating_point S> class feature_modulation {
public:
    using scalar = S;
    feature_modulation() = default;
    template <std::uniform_random_bit_generator Rng>
    feature_modulation(std::size_t dim, Rng& rng, const std::string& name = "modulation") {
        w_ = make_parameter<S>(name + ".w", dim, dim, rng, true);
        b_ = make_parameter<S>(name + ".b", 1, dim, rng, true);
    }

    /// y, valid until the next forward pass (a buffer of the layer: see linear::run).
    const matrix<S>& forward(const matrix<S>& x) {
        x_ = x;
        summary_ = x.colwise().mean();
        const Eigen::Matrix<S, 1, Eigen::Dynamic> z = summary_ * w_.value + b_.value;
        sig_ = (S(1) + (-z.array()).exp()).inverse().matrix();
        y_ = x.array().rowwise() * (S(2) * sig_.array());
        return y_;
    }
    /// (dx is valid until the next backward pass.)
    const matrix<S>& backward(const matrix<S>& dy) {
        const auto n = static_cast<S>(dy.rows());
        const Eigen::Matrix<S, 1, Eigen::Dynamic> dgate = (dy.array() * x_.array()).colwise().sum();
        const Eigen::Matrix<S, 1, Eigen::Dynamic> dz =
            (dgate.array() * S(2) * sig_.array() * (S(1) - sig_.array())).matrix();
        w_.grad.noalias() += summary_.transpose() * dz;
        b_.grad += dz;
        const Eigen::Matrix<S, 1, Eigen::Dynamic> dsummary = dz * w_.value.transpose();
        dx_ = dy.array().rowwise() * (S(2) * sig_.array());
        dx_.rowwise() += dsummary / n;
        return dx_;
    }
    void collect(parameter_list<S>& ps) {
        ps.push_back(&w_);
        ps.push_back(&b_);
    }

private:
    parameter<S> w_, b_;
    matrix<S> x_, y_, dx_;  // y_, dx_: kept between calls (see linear::run)
    Eigen::Matrix<S, 1, Eigen::Dynamic> summary_, sig_;
};

}  // namespace goopt::nn
