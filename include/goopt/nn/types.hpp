#pragma once
/// @file
/// @brief Matrices and trainable parameters shared by every nn layer.
///
/// Gradients: every layer has an explicit `backward` that takes dL/d(output) and returns dL/d(input),
/// adding into its parameters' `grad`. Chosen over a reverse-mode tape because the layers are few and
/// fixed, so hand-written backward passes stay short, allocate nothing per scalar op, let Eigen see
/// whole matrix products (GEMMs) in both directions, and make memory use explicit (the attention
/// layer recomputes its softmax in backward instead of storing it).
///
/// Layout: row-major, one row per node. GraphSAGE gathers and scatters whole neighbour rows, which
/// are then contiguous; Eigen's GEMM is as fast on row-major operands as on column-major ones.

#include <Eigen/Core>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace goopt::nn {

/// Dynamic row-major matrix: rows are nodes, columns are features.
template <std::floating_point S> using matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A trainable tensor with its accumulated gradient (same shape). Names identify it in saved files.
template <std::floating_point S> struct parameter {
    std::string name;
    matrix<S> value;
    matrix<S> grad;

    void zero_grad() { grad.setZero(value.rows(), value.cols()); }
};

/// Parameters of a network in a fixed order (the order of save/load and of the optimizer's state).
template <std::floating_point S> using parameter_list = std::vector<parameter<S>*>;

/// @brief A parameter of the given shape, uniform in +-sqrt(6 / (fan_in + fan_out)) (Glorot), or zero.
/// Randomness only from `rng`, so a seed reproduces every weight.
template <std::floating_point S, std::uniform_random_bit_generator Rng>
parameter<S> make_parameter(std::string name, std::size_t rows, std::size_t cols, Rng& rng, bool zero = false) {
    parameter<S> p{std::move(name), matrix<S>::Zero(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols)),
                   matrix<S>::Zero(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols))};
    if (!zero) {
        const double a = std::sqrt(6.0 / static_cast<double>(rows + cols));
        std::uniform_real_distribution<double> u(-a, a);
        for (Eigen::Index i = 0; i < p.value.size(); ++i) p.value.data()[i] = static_cast<S>(u(rng));
    }
    return p;
}

/// Sets every gradient of a network to zero (before a new backward pass).
template <std::floating_point S> void zero_grad(const parameter_list<S>& ps) {
    for (parameter<S>* p : ps) p->zero_grad();
}

/// Total number of scalars in a network.
template <std::floating_point S> std::size_t num_scalars(const parameter_list<S>& ps) {
    std::size_t n = 0;
    for (const parameter<S>* p : ps) n += static_cast<std::size_t>(p->value.size());
    return n;
}

}  // namespace goopt::nn
