#pragma once
/// @file
/// @brief What a dense nn layer provides, so users can compose their own layers with goopt's.

#include <goopt/nn/types.hpp>

#include <concepts>

namespace goopt::nn {

/// A layer mapping a (nodes x features) matrix to another, with an explicit backward pass.
/// Models: nn::linear, nn::relu, nn::tanh_activation, nn::layer_norm, nn::residual_block,
/// nn::segment_attention, nn::feature_modulation, nn::categorical_head.
/// @code
///   l.forward(x)    -> matrix<S>   // caches what backward needs
///   l.backward(dy)  -> matrix<S>   // dL/dx; adds dL/dparam into each parameter's grad
///   l.collect(ps)                  // appends its parameters (parameter<S>*) to ps
/// @endcode
template <class L>
concept Layer = requires(L& l, const matrix<typename L::scalar>& x, parameter_list<typename L::scalar>& ps) {
    typename L::scalar;
    { l.forward(x) } -> std::convertible_to<matrix<typename L::scalar>>;
    { l.backward(x) } -> std::convertible_to<matrix<typename L::scalar>>;
    l.collect(ps);
};

}  // namespace goopt::nn
