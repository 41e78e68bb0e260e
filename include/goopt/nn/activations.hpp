#pragma once
/// @file
/// @brief Elementwise activations (relu, tanh) as parameter-free layers.
/// Both live in one header: each is a few lines and they are always used together.

#include <goopt/nn/types.hpp>

namespace goopt::nn {

/// relu(x) = max(x, 0); the subgradient at 0 is 0.
template <std::floating_point S> class relu {
public:
    using scalar = S;
    matrix<S> forward(const matrix<S>& x) {
        y_ = x.cwiseMax(S(0));
        return y_;
    }
    matrix<S> backward(const matrix<S>& dy) const { return (y_.array() > S(0)).select(dy, S(0)); }
    void collect(parameter_list<S>&) {}

private:
    matrix<S> y_;
};

/// tanh, whose derivative 1 - y^2 needs only the cached output.
template <std::floating_point S> class tanh_activation {
public:
    using scalar = S;
    matrix<S> forward(const matrix<S>& x) {
        y_ = x.array().tanh();
        return y_;
    }
    matrix<S> backward(const matrix<S>& dy) const { return (dy.array() * (S(1) - y_.array().square())).matrix(); }
    void collect(parameter_list<S>&) {}

private:
    matrix<S> y_;
};

}  // namespace goopt::nn
