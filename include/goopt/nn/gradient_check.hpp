#pragma once
/// @file
/// @brief Central finite differences, to check hand-written backward passes (in double).

#include <goopt/nn/types.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

namespace goopt::nn {

/// @brief Largest relative error max|a - n| / max(1, |a|, |n|) between an analytic gradient `analytic`
/// of a scalar function of `x` and central differences with step `h`. `loss` must recompute the
/// function from the current contents of `x` (which this perturbs one entry at a time and restores).
template <std::floating_point S>
double gradient_error(matrix<S>& x, const matrix<S>& analytic, const std::function<double()>& loss, double h = 1e-6) {
    double worst = 0;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        const S keep = x.data()[i];
        x.data()[i] = static_cast<S>(keep + h);
        const double up = loss();
        x.data()[i] = static_cast<S>(keep - h);
        const double down = loss();
        x.data()[i] = keep;
        const double numeric = (up - down) / (2 * h);
        const double a = static_cast<double>(analytic.data()[i]);
        worst = std::max(worst, std::abs(a - numeric) / std::max({1.0, std::abs(a), std::abs(numeric)}));
    }
    return worst;
}

}  // namespace goopt::nn
