#pragma once
/// @file
/// @brief Every knob of rl::ppo in one aggregate, with GO's settings as defaults.

#include <cstddef>
#include <cstdint>

namespace goopt::rl {

struct sample_sharding;  // rl/sample_sharding.hpp

/// What the advantage of a sample is measured against.
enum class baseline_kind : std::uint8_t {
    value_head,      ///< the network's value output, trained on the rewards (GO)
    moving_average,  ///< an exponential moving average of the mean reward (HDP, decay 0.9)
};

/// @brief PPO settings (Schulman et al., arXiv 1707.06347). Defaults are the "usable PPO settings"
/// recorded for GO (NeurIPS'20; not from the paper itself): clip 0.2, Adam 1e-4, gradient clip 0.5,
/// 4 epochs, 16 sampled decisions per update, value coefficient 0.5, entropy 0.01; the moving
/// average's 0.9 is HDP's (ICLR'18).
struct ppo_config {
    std::size_t updates = 100;            ///< PPO updates to run (a resumed run counts those done)
    std::size_t samples_per_update = 16;  ///< decisions sampled (and simulated) per update
    std::size_t minibatch = 16;           ///< samples per gradient step (one forward pass serves them all)
    std::size_t epochs = 4;               ///< passes over an update's samples
    /// Samples per block of a minibatch's loss gradient: each block's gradient with respect to the
    /// logits is summed in sample order, the blocks in block order, so the sum is the same on any
    /// number of ranks (with sharding, each rank computes whole blocks). A minibatch of at most one
    /// block sums exactly as one loop over its samples: 64 keeps every minibatch of up to 64 samples
    /// as it was before blocks existed.
    std::size_t gradient_block = 64;
    double clip = 0.2;            ///< surrogate ratio kept in [1 - clip, 1 + clip]
    double learning_rate = 1e-4;  ///< Adam
    double max_grad_norm = 0.5;   ///< global gradient-norm clip (nn::clip_gradient_norm)
    double value_coef = 0.5;      ///< weight of the value loss (value_head baseline)
    double entropy_coef = 0.01;   ///< weight of the mean per-node entropy bonus
    baseline_kind baseline = baseline_kind::value_head;
    double baseline_decay = 0.9;            ///< moving_average: weight of the old average
    bool normalize_advantages = true;       ///< divide advantages by the update's reward spread
    std::size_t threads = 1;                ///< worker threads that evaluate the samples
    std::size_t imitation_steps = 0;        ///< warm start: cross-entropy steps towards a given decision
    double imitation_learning_rate = 1e-3;  ///< Adam's rate during the warm start
    /// Keep imitating after imitation_steps, 10 steps at a time, until this share of the active
    /// nodes' most likely action is the imitated one, or imitation_max_steps (0: imitation_steps
    /// exactly). A warm start that reproduces its target makes the policy's mode that decision.
    double imitation_min_agreement = 0;
    std::size_t imitation_max_steps = 1000;  ///< cap of the warm start with imitation_min_agreement
    /// With imitation_min_agreement, and an outcome with a step_time: once the agreement is reached,
    /// also keep imitating (10 steps at a time, up to imitation_max_steps) while the policy's mode
    /// (its greedy decoding, the guided decoder's where the environment has one) simulates more than
    /// this fraction slower than the imitated decision: agreeing on most ops can still leave a mode
    /// far slower than its target when the few others sit on the critical path (issue #25).
    double imitation_max_mode_gap = 0.02;
    /// Also evaluate the policy's mode (the most likely action of every node) once per update, beside
    /// the samples: it is a decision the policy makes, which a sample drawing every node's action
    /// independently almost never reproduces (not always a better one: README "Learned placement").
    /// It goes to the visitor's optional on_mode, takes no part in the loss and draws nothing from
    /// the generator.
    bool evaluate_mode = true;
    /// Processes that share each update's samples (synchronous data-parallel PPO, e.g.
    /// mpi::sample_sharding under mpirun): each evaluates its share, all run the same update, and
    /// only rank 0 writes checkpoints. Null: this process evaluates every sample. Not owned.
    sample_sharding* sharding = nullptr;
};

}  // namespace goopt::rl
