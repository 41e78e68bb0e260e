#pragma once
/// @file
/// @brief Adam (Kingma & Ba, ICLR'15, Algorithm 1) with global gradient-norm clipping.

#include <goopt/error.hpp>
#include <goopt/nn/optimizer.hpp>
#include <goopt/nn/types.hpp>

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

namespace goopt::nn {

/// Adam's knobs; `clip_norm` <= 0 disables clipping.
struct adam_config {
    double learning_rate = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-8;
    double clip_norm = 1.0;
};

/// @brief Adam over a fixed parameter list (the list's order must not change between steps); an
/// nn::Optimizer.
template <std::floating_point S> class adam {
public:
    static constexpr std::string_view name = "adam";
    static constexpr std::size_t state_slots = 2;  ///< the first and the second moment estimates

    adam(parameter_list<S> ps, adam_config c = {}) : ps_(std::move(ps)), c_(c) {
        for (const parameter<S>* p : ps_) {
            m_.push_back(matrix<S>::Zero(p->value.rows(), p->value.cols()));
            v_.push_back(matrix<S>::Zero(p->value.rows(), p->value.cols()));
        }
    }
    /// A trainer's settings (nn::Optimizer); beta1, beta2 and epsilon keep their defaults.
    adam(parameter_list<S> ps, optimizer_settings s)
        : adam(std::move(ps), adam_config{.learning_rate = s.learning_rate, .clip_norm = s.clip_norm}) {}

    /// Clips the gradients (if configured), then updates every parameter. @return the gradient norm.
    double step() {
        check_gradient_shapes(ps_, "nn::adam");
        const double norm = clip_gradient_norm(ps_, c_.clip_norm);
        ++t_;
        const double c1 = 1 - std::pow(c_.beta1, static_cast<double>(t_)),
                     c2 = 1 - std::pow(c_.beta2, static_cast<double>(t_));
        const auto b1 = static_cast<S>(c_.beta1), b2 = static_cast<S>(c_.beta2);
        const auto lr = static_cast<S>(c_.learning_rate * std::sqrt(c2) / c1),
                   eps = static_cast<S>(c_.epsilon * std::sqrt(c2));
        for (std::size_t i = 0; i < ps_.size(); ++i) {
            parameter<S>& p = *ps_[i];
            m_[i] = b1 * m_[i] + (S(1) - b1) * p.grad;
            v_[i] = b2 * v_[i] + (S(1) - b2) * p.grad.cwiseAbs2();
            p.value.array() -= lr * m_[i].array() / (v_[i].array().sqrt() + eps);
        }
        return norm;
    }
    std::size_t steps() const { return t_; }
    void set_steps(std::size_t t) { t_ = t; }
    double learning_rate() const { return c_.learning_rate; }
    void set_learning_rate(double r) { c_.learning_rate = r; }
    /// Slot 0: the first moment estimates, slot 1: the second, one per parameter in the list's order:
    /// with the step count, what a training checkpoint saves and restores (rl::ppo) for a bit-identical resume.
    std::vector<matrix<S>>& state(std::size_t slot) { return slot == 0 ? m_ : v_; }
    /// The second moment is a mean of squares: a negative one would make the step NaN.
    static constexpr bool nonnegative_state(std::size_t slot) { return slot == 1; }
    static constexpr std::string_view state_name(std::size_t slot) {
        return slot == 0 ? "first moments" : "second moments";
    }
    adam_config& config() { return c_; }

private:
    parameter_list<S> ps_;
    adam_config c_;
    std::vector<matrix<S>> m_, v_;
    std::size_t t_ = 0;
};

static_assert(Optimizer<adam<float>, float> && Optimizer<adam<double>, double>);

}  // namespace goopt::nn
