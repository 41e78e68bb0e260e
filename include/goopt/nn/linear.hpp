#pragma once
/// @file
/// @brief Fully connected layer y = x W + b.

#include <goopt/nn/tall_products.hpp>
#include <goopt/nn/types.hpp>

#include <random>
#include <string>

namespace goopt::nn {

/// @brief y = x W + b with W of shape (in x out): one GEMM forward, two backward.
/// @tparam S float or double.
template <std::floating_point S> class linear {
public:
    using scalar = S;
    linear() = default;
    template <std::uniform_random_bit_generator Rng>
    linear(std::size_t in, std::size_t out, Rng& rng, const std::string& name = "linear")
        : linear(in, out, rng, name + ".w", name + ".b") {}
    /// With the parameters' names given (a layer that holds a linear keeps its saved names).
    template <std::uniform_random_bit_generator Rng>
    linear(std::size_t in, std::size_t out, Rng& rng, const std::string& weight_name, const std::string& bias_name)
        : w_(make_parameter<S>(weight_name, in, out, rng)), b_(make_parameter<S>(bias_name, 1, out, rng, true)) {}

    /// y for input x, which backward() will need (a copy is kept). The result lives in the layer
    /// until its next forward pass (see run()).
    const matrix<S>& forward(const matrix<S>& x) {
        copy_rows(x_, x);
        return run(x);
    }
    const matrix<S>& backward(const matrix<S>& dy) { return backward(dy, x_); }

    /// y for input x, keeping nothing: for a layer that keeps x itself and passes it to backward.
    matrix<S> apply(const matrix<S>& x) const {
        matrix<S> y;
        multiply_rows(y, x, w_.value);
        y.rowwise() += b_.value.row(0);
        return y;
    }
    /// apply() into a buffer of the layer, valid until its next forward pass: the buffer keeps its
    /// storage, since a fresh n x out matrix over glibc's 32 MiB mmap ceiling (an 80,000-node
    /// graph at width 128) is page-faulted in again on every pass.
    const matrix<S>& run(const matrix<S>& x) {
        multiply_rows(y_, x, w_.value);
        for_row_chunks(y_.rows(),
                       [&](Eigen::Index r0, Eigen::Index len) { y_.middleRows(r0, len).rowwise() += b_.value.row(0); });
        return y_;
    }
    /// Accumulates the parameter gradients of output gradient dy at input x; returns dx (a buffer
    /// of the layer, valid until its next backward pass).
    const matrix<S>& backward(const matrix<S>& dy, const matrix<S>& x) {
        add_transposed_product(w_.grad, x, dy);
        b_.grad.row(0) += dy.colwise().sum();
        multiply_rows(dx_, dy, w_.value.transpose());
        return dx_;
    }
    void collect(parameter_list<S>& ps) {
        ps.push_back(&w_);
        ps.push_back(&b_);
    }
    std::size_t in_features() const { return static_cast<std::size_t>(w_.value.rows()); }
    std::size_t out_features() const { return static_cast<std::size_t>(w_.value.cols()); }
    const parameter<S>& weight() const { return w_; }

private:
    parameter<S> w_, b_;
    matrix<S> x_, y_, dx_;
};

}  // namespace goopt::nn
