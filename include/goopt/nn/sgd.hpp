#pragma once
/// @file
/// @brief Stochastic gradient descent with heavy-ball momentum (Polyak 1964; the form PyTorch's SGD
/// uses: v = momentum v + g, p -= rate v), with global gradient-norm clipping; an nn::Optimizer.
///
/// Why beside Adam: Adam's per-coordinate scaling makes every step about `rate` long whatever the
/// gradient's size; SGD's steps follow the gradient's size. That is the other common choice for a
/// policy, and a second model of nn::Optimizer shows what a user's own optimizer must provide.

#include <goopt/error.hpp>
#include <goopt/nn/optimizer.hpp>
#include <goopt/nn/types.hpp>

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

namespace goopt::nn {

/// SGD's knobs; `momentum` 0 is plain gradient descent; `clip_norm` <= 0 disables clipping.
struct sgd_config {
    double learning_rate = 1e-2;
    double momentum = 0.9;
    double clip_norm = 1.0;
};

/// @brief SGD with momentum over a fixed parameter list (the list's order must not change between
/// steps).
template <std::floating_point S> class sgd {
public:
    static constexpr std::string_view name = "sgd";
    static constexpr std::size_t state_slots = 1;  ///< the velocity

    /// @throws goopt::error for a learning rate or momentum that is not finite, a negative rate or a
    /// momentum outside [0, 1).
    sgd(parameter_list<S> ps, sgd_config c = {}) : ps_(std::move(ps)), c_(c) {
        if (!(c.learning_rate >= 0) || !std::isfinite(c.learning_rate))
            throw error("nn::sgd", concat("learning rate ", c.learning_rate), "a finite rate >= 0");
        if (!(c.momentum >= 0 && c.momentum < 1))
            throw error("nn::sgd", concat("momentum ", c.momentum), "a momentum in [0, 1)");
        for (const parameter<S>* p : ps_) v_.push_back(matrix<S>::Zero(p->value.rows(), p->value.cols()));
    }
    /// A trainer's settings (nn::Optimizer); the momentum keeps its default.
    sgd(parameter_list<S> ps, optimizer_settings s)
        : sgd(std::move(ps), sgd_config{.learning_rate = s.learning_rate, .clip_norm = s.clip_norm}) {}

    /// Clips the gradients (if configured), then updates every parameter. @return the gradient norm.
    double step() {
        check_gradient_shapes(ps_, "nn::sgd");
        const double norm = clip_gradient_norm(ps_, c_.clip_norm);
        ++t_;
        const auto mu = static_cast<S>(c_.momentum), lr = static_cast<S>(c_.learning_rate);
        for (std::size_t i = 0; i < ps_.size(); ++i) {
            parameter<S>& p = *ps_[i];
            v_[i] = mu * v_[i] + p.grad;
            p.value -= lr * v_[i];
        }
        return norm;
    }
    std::size_t steps() const { return t_; }
    void set_steps(std::size_t t) { t_ = t; }
    double learning_rate() const { return c_.learning_rate; }
    void set_learning_rate(double r) { c_.learning_rate = r; }
    /// Slot 0: the velocity, one per parameter in the list's order.
    std::vector<matrix<S>>& state(std::size_t) { return v_; }
    static constexpr bool nonnegative_state(std::size_t) { return false; }
    static constexpr std::string_view state_name(std::size_t) { return "velocity"; }
    sgd_config& config() { return c_; }

private:
    parameter_list<S> ps_;
    sgd_config c_;
    std::vector<matrix<S>> v_;
    std::size_t t_ = 0;
};

static_assert(Optimizer<sgd<float>, float> && Optimizer<sgd<double>, double>);

}  // namespace goopt::nn
