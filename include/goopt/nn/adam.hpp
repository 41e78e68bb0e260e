#pragma once
/// @file
/// @brief Adam (Kingma & Ba, ICLR'15, Algorithm 1) with global gradient-norm clipping.

#include <goopt/error.hpp>
#include <goopt/nn/types.hpp>

#include <cmath>
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

/// @brief Scales all gradients so that their joint L2 norm is at most `max_norm`.
/// @return the norm before clipping.
template <std::floating_point S> double clip_gradient_norm(const parameter_list<S>& ps, double max_norm) {
    double sq = 0;
    for (const parameter<S>* p : ps) sq += static_cast<double>(p->grad.squaredNorm());
    const double norm = std::sqrt(sq);
    if (max_norm > 0 && norm > max_norm)
        for (parameter<S>* p : ps) p->grad *= static_cast<S>(max_norm / norm);
    return norm;
}

/// @brief Adam over a fixed parameter list (the list's order must not change between steps).
template <std::floating_point S> class adam {
public:
    adam(parameter_list<S> ps, adam_config c = {}) : ps_(std::move(ps)), c_(c) {
        for (const parameter<S>* p : ps_) {
            m_.push_back(matrix<S>::Zero(p->value.rows(), p->value.cols()));
            v_.push_back(matrix<S>::Zero(p->value.rows(), p->value.cols()));
        }
    }

    /// Clips the gradients (if configured), then updates every parameter. @return the gradient norm.
    double step() {
        const double norm = clip_gradient_norm(ps_, c_.clip_norm);
        ++t_;
        const double c1 = 1 - std::pow(c_.beta1, static_cast<double>(t_)),
                     c2 = 1 - std::pow(c_.beta2, static_cast<double>(t_));
        const auto b1 = static_cast<S>(c_.beta1), b2 = static_cast<S>(c_.beta2);
        const auto lr = static_cast<S>(c_.learning_rate * std::sqrt(c2) / c1),
                   eps = static_cast<S>(c_.epsilon * std::sqrt(c2));
        for (std::size_t i = 0; i < ps_.size(); ++i) {
            parameter<S>& p = *ps_[i];
            if (p.grad.rows() != p.value.rows() || p.grad.cols() != p.value.cols())
                throw error("nn::adam", concat("gradient of '", p.name, "' has the wrong shape"),
                            "the parameter's shape (zero_grad before backward?)");
            m_[i] = b1 * m_[i] + (S(1) - b1) * p.grad;
            v_[i] = b2 * v_[i] + (S(1) - b2) * p.grad.cwiseAbs2();
            p.value.array() -= lr * m_[i].array() / (v_[i].array().sqrt() + eps);
        }
        return norm;
    }
    std::size_t steps() const { return t_; }
    /// First and second moment estimates, one per parameter in the list's order, and the step count:
    /// what a training checkpoint saves and restores (rl::ppo) for a bit-identical resume.
    std::vector<matrix<S>>& first_moments() { return m_; }
    std::vector<matrix<S>>& second_moments() { return v_; }
    void set_steps(std::size_t t) { t_ = t; }
    adam_config& config() { return c_; }

private:
    parameter_list<S> ps_;
    adam_config c_;
    std::vector<matrix<S>> m_, v_;
    std::size_t t_ = 0;
};

}  // namespace goopt::nn
