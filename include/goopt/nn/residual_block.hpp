#pragma once
/// @file
/// @brief Pre-norm residual block y = x + W2 relu(W1 layer_norm(x)), without dropout.

#include <goopt/nn/activations.hpp>
#include <goopt/nn/layer_norm.hpp>
#include <goopt/nn/linear.hpp>

#include <random>
#include <string>

namespace goopt::nn {

/// @brief y = x + W2 relu(W1 LN(x) + b1) + b2. Pre-norm (normalization inside the branch) keeps the
/// identity path clean, so stacks of blocks train without warm-up.
template <std::floating_point S> class residual_block {
public:
    using scalar = S;
    residual_block() = default;
    template <std::uniform_random_bit_generator Rng>
    residual_block(std::size_t dim, std::size_t hidden, Rng& rng, const std::string& name = "residual")
        : norm_(dim, rng, name + ".norm"),
          fc1_(dim, hidden, rng, name + ".fc1"),
          fc2_(hidden, dim, rng, name + ".fc2") {}

    matrix<S> forward(const matrix<S>& x) { return x + fc2_.forward(act_.forward(fc1_.forward(norm_.forward(x)))); }
    matrix<S> backward(const matrix<S>& dy) {
        return dy + norm_.backward(fc1_.backward(act_.backward(fc2_.backward(dy))));
    }
    void collect(parameter_list<S>& ps) {
        norm_.collect(ps);
        fc1_.collect(ps);
        fc2_.collect(ps);
    }

private:
    layer_norm<S> norm_;
    linear<S> fc1_;
    relu<S> act_;
    linear<S> fc2_;
};

}  // namespace goopt::nn
