#pragma once
/// @file
/// @brief What a trainer needs of the optimizer that updates its parameters (rl::ppo's third template
/// argument), and the gradient clipping every goopt optimizer applies before its step.
///
/// Why a concept rather than Adam alone: a user prototyping a task may want plain or momentum SGD
/// (nn::sgd), or an optimizer of their own, without copying the trainer. What a trainer asks is small:
/// a step, a step count, a learning rate it can change (the warm start runs at its own rate), and the
/// state a checkpoint must hold to resume bit for bit, as `state_slots` matrices per parameter.

#include <goopt/error.hpp>
#include <goopt/nn/types.hpp>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::nn {

/// The settings a trainer owns and hands to whichever optimizer it runs (rl::ppo_config's
/// learning_rate and max_grad_norm); an optimizer's other knobs keep their defaults.
struct optimizer_settings {
    double learning_rate;
    double clip_norm;  ///< the gradients' joint L2 norm is clipped to this before a step; <= 0: never
    /// Not an aggregate, so that a braced list with designators (`{.learning_rate = 0.1}`) passed to
    /// an optimizer's constructor always means that optimizer's own config (nn::adam_config), never this.
    constexpr optimizer_settings(double rate, double clip) noexcept : learning_rate(rate), clip_norm(clip) {}
};

/// @brief An optimizer over a fixed parameter list (models: nn::adam, nn::sgd).
/// @code
///   O(ps, settings)                // ps: parameter_list<S>, settings: optimizer_settings
///   o.step()           -> double   // clips, then updates every parameter from its grad; the norm before clipping
///   o.steps()          -> size_t   // steps taken; o.set_steps(t) restores it
///   o.learning_rate()  -> double   // o.set_learning_rate(r) changes it from the next step on
///   O::name                        // string_view written into checkpoints ("adam")
///   O::state_slots                 // matrices of state per parameter (Adam: 2 moments; SGD: 1 velocity)
///   o.state(k)         -> std::vector<matrix<S>>&  // slot k, one matrix per parameter, the parameters' shapes
///   O::nonnegative_state(k) -> bool                // slot k can never hold a negative number (Adam's second moment)
///   O::state_name(k)   -> string_view              // slot k in messages ("second moments")
/// @endcode
/// A copy holds the whole state (nn::training_guard copies it to roll a bad step back).
template <class O, class S>
concept Optimizer = std::floating_point<S> && std::copyable<O> &&
    std::constructible_from<O, parameter_list<S>, optimizer_settings> &&
    requires(O& o, const O& c, std::size_t k, double r) {
    { O::name } -> std::convertible_to<std::string_view>;
    { O::state_slots } -> std::convertible_to<std::size_t>;
    { o.step() } -> std::convertible_to<double>;
    { c.steps() } -> std::convertible_to<std::size_t>;
    o.set_steps(k);
    { c.learning_rate() } -> std::convertible_to<double>;
    o.set_learning_rate(r);
    { o.state(k) } -> std::same_as<std::vector<matrix<S>>&>;
    { O::nonnegative_state(k) } -> std::convertible_to<bool>;
    { O::state_name(k) } -> std::convertible_to<std::string_view>;
};

/// @brief Refuses a step where any gradient's shape differs from its parameter's, before anything
/// changes: an optimizer that checked as it went would leave the earlier parameters stepped.
/// @throws goopt::error naming `who` and the first such parameter.
template <std::floating_point S> void check_gradient_shapes(const parameter_list<S>& ps, std::string_view who) {
    for (const parameter<S>* p : ps)
        if (p->grad.rows() != p->value.rows() || p->grad.cols() != p->value.cols())
            throw error(std::string(who), concat("gradient of '", p->name, "' has the wrong shape"),
                        "the parameter's shape (zero_grad before backward?)");
}

/// @brief Scales all gradients so that their joint L2 norm is at most `max_norm` (<= 0: no clipping).
/// @return the norm before clipping.
template <std::floating_point S> double clip_gradient_norm(const parameter_list<S>& ps, double max_norm) {
    double sq = 0;
    for (const parameter<S>* p : ps) sq += static_cast<double>(p->grad.squaredNorm());
    const double norm = std::sqrt(sq);
    if (max_norm > 0 && norm > max_norm)
        for (parameter<S>* p : ps) p->grad *= static_cast<S>(max_norm / norm);
    return norm;
}

}  // namespace goopt::nn
