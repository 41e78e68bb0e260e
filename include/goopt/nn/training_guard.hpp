#pragma once
/// @file
/// @brief Stops a training run at the first NaN or Inf and rolls it back to the last good checkpoint.
///
/// One NaN in a loss or a gradient reaches every weight within a step (Adam divides by its second
/// moment, and NaN > max_norm is false, so clipping lets it through), and from then on training only
/// produces NaN. Checking after each step costs one pass over the parameters and their gradients,
/// far less than the forward and backward passes that produced them, and catches the step that went
/// wrong while the last good weights are still at hand.

#include <goopt/error.hpp>
#include <goopt/nn/serialization.hpp>
#include <goopt/nn/types.hpp>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace goopt::nn {

/// Knobs of a training_guard.
struct training_guard_config {
    /// Good steps between checkpoints. 1 (after every good step) loses the least on a rollback;
    /// larger values save copying (and, with a path, writing) the parameters every step.
    std::size_t checkpoint_every = 1;
    /// Where each checkpoint's parameters are also saved (nn::save_parameters, atomically); empty:
    /// checkpoints are kept in memory only.
    std::filesystem::path path = {};
};

/// @brief Guards a training loop against non-finite values: after the backward pass of each step,
/// `step(loss)` checks the loss and every gradient, runs the optimizer's step, then checks every
/// parameter. On the first NaN or Inf it restores the parameters and the optimizer's state (moments
/// and step count) of the last good checkpoint, leaves the checkpoint file as it was, and throws
/// goopt::error naming the step and what was not finite: the loss, or the gradient or value of a
/// named parameter tensor, with the element's position.
///
/// Steps are numbered from 1 (the first update is step 1, as Adam counts them); after a rollback the
/// count returns to the checkpoint's step, so a caller may resume (for example with a smaller
/// learning rate) from there. The checkpoint file holds the parameters only (nn::save_parameters'
/// format has no optimizer state); the optimizer's state is restored from memory.
/// @code
///   nn::adam<float> opt(ps);
///   nn::training_guard guard(ps, opt, {.checkpoint_every = 10, .path = "policy.bin"});
///   for (...) { nn::zero_grad(ps); loss = forward...; backward...; guard.step(loss); }  // not opt.step()
/// @endcode
/// Do not compile with -ffinite-math-only (part of -ffast-math): it lets the compiler assume that
/// NaN and Inf never occur and remove the checks.
/// @tparam S the parameters' scalar type.
/// @tparam Optimizer updates the parameters in `step()`; copied to checkpoint its state, so a copy
///         must hold all of it (nn::adam does: its moments, step count and configuration).
template <std::floating_point S, class Optimizer>
requires std::copyable<Optimizer> && requires(Optimizer& o) { o.step(); }
class training_guard {
public:
    /// @brief Takes the first checkpoint (step 0) of the current parameters and optimizer state, and
    /// saves it to `config.path` if one is given.
    /// @param ps the parameters `opt` updates, in the same order (kept by pointer: they must outlive the guard).
    /// @param opt the optimizer (kept by reference).
    /// @throws goopt::error when a parameter is already not finite, or when checkpoint_every is 0.
    training_guard(parameter_list<S> ps, Optimizer& opt, training_guard_config config = {})
        : ps_(std::move(ps)), opt_(&opt), c_(std::move(config)), saved_opt_(opt) {
        if (c_.checkpoint_every == 0) throw error("nn::training_guard", "checkpoint_every is 0", "at least 1");
        for (const parameter<S>* p : ps_)
            if (const std::string where = first_non_finite(p->value); !where.empty())
                throw error("nn::training_guard",
                            concat("step 0: parameter '", p->name, "' is not finite before training (", where, ")"));
        checkpoint();
    }

    /// @brief One guarded update, called after the backward pass instead of the optimizer's step().
    /// @param loss the step's loss (only checked for being finite).
    /// @throws goopt::error after restoring the last checkpoint when the loss, a gradient or an
    ///         updated parameter is not finite; an exception from the optimizer also restores it first.
    void step(double loss) {
        const std::size_t k = step_ + 1;
        if (!std::isfinite(loss)) fail(k, concat("the loss is ", loss));
        for (const parameter<S>* p : ps_)
            if (const std::string where = first_non_finite(p->grad); !where.empty())
                fail(k, concat("the gradient of parameter '", p->name, "' is not finite (", where, ")"));
        try {
            opt_->step();
        } catch (...) {
            restore();
            throw;
        }
        for (const parameter<S>* p : ps_)
            if (const std::string where = first_non_finite(p->value); !where.empty())
                fail(k, concat("parameter '", p->name, "' is not finite after the update (", where, ")"));
        step_ = k;
        if (step_ - saved_step_ >= c_.checkpoint_every) checkpoint();
    }

    /// @brief Makes the current parameters and optimizer state the last good checkpoint, saving the
    /// parameters to the configured path first (if that throws, the previous checkpoint stays, in
    /// memory and on disk).
    void checkpoint() {
        if (!c_.path.empty()) save_parameters(ps_, c_.path);
        saved_.resize(ps_.size());
        for (std::size_t i = 0; i < ps_.size(); ++i) saved_[i] = ps_[i]->value;
        saved_opt_ = *opt_;
        saved_step_ = step_;
    }

    /// @brief Puts back the last checkpoint's parameters and optimizer state, sets every gradient to
    /// zero (a non-finite one must not reach a later update) and the step count to the checkpoint's.
    void restore() {
        for (std::size_t i = 0; i < ps_.size(); ++i) {
            ps_[i]->value = saved_[i];
            ps_[i]->zero_grad();
        }
        *opt_ = saved_opt_;
        step_ = saved_step_;
    }

    /// Good steps so far: the number of the last step that passed.
    std::size_t steps() const noexcept { return step_; }
    /// The step of the last good checkpoint (0: the parameters the guard started with).
    std::size_t checkpoint_step() const noexcept { return saved_step_; }
    const training_guard_config& config() const noexcept { return c_; }

private:
    /// "" when every element is finite, else where the first one (row-major) is and what it is.
    static std::string first_non_finite(const matrix<S>& m) {
        if (m.allFinite()) return {};
        for (Eigen::Index r = 0; r < m.rows(); ++r)
            for (Eigen::Index c = 0; c < m.cols(); ++c)
                if (!std::isfinite(m(r, c)))
                    return concat("element (", r, ", ", c, ") is ",
                                  std::isnan(m(r, c)) ? "nan" : (m(r, c) > 0 ? "inf" : "-inf"));
        return "a non-finite element";  // allFinite disagreed with isfinite: unreachable without -ffast-math
    }

    [[noreturn]] void fail(std::size_t k, const std::string& what) {
        restore();
        throw error("nn::training_guard",
                    concat("step ", k, ": ", what, "; restored the parameters and optimizer state of step ",
                           saved_step_, c_.path.empty() ? "" : ", saved in '", c_.path.empty() ? "" : c_.path.string(),
                           c_.path.empty() ? "" : "'"));
    }

    parameter_list<S> ps_;
    Optimizer* opt_;
    training_guard_config c_;
    std::vector<matrix<S>> saved_;
    Optimizer saved_opt_;
    std::size_t step_ = 0, saved_step_ = 0;
};

}  // namespace goopt::nn
