#pragma once
/// @file
/// @brief What rl::ppo needs of an environment and of a network (mlpack's QLearning shape: the
/// trainer is generic in both, and anything modelling these concepts plugs in).

#include <goopt/nn/go_policy.hpp>
#include <goopt/nn/types.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace goopt::rl {

/// @brief A one-step environment in which an agent picks one of `num_choices()` actions for each of
/// the observation's nodes at once (GO's decision: a device or priority per op), and gets a reward.
/// Models: tasks::placement_task; the contextual bandit of tests/rl/ppo_test.cpp.
/// @code
///   typename E::observation;                 // what the network reads (nn::graph_features<float> for graphs)
///   typename E::outcome;                     // what one evaluation gives; o.reward -> double
///   e.observe(rng)           -> const observation&   // the next episode's observation (may draw from rng)
///   e.num_choices()          -> std::size_t          // actions per node
///   e.active()               -> std::span<const std::uint8_t>  // per node: 1 when its action matters
///   e.set_workers(k)                                  // prepares k independent evaluators
///   e.evaluate(obs, actions, w) -> outcome            // safe to call concurrently for distinct w < k
/// @endcode
/// `evaluate` must be a function of (observation, actions) alone, so that results do not depend on
/// which worker ran them: rl::ppo relies on it for the same results on any number of threads.
/// An exception from `evaluate` (on any worker thread) stops training and leaves rl::ppo::update as
/// it was thrown: a decision the environment wants penalized is an outcome, not an exception.
template <class E>
concept Environment = requires(E& e, const E& ce, std::mt19937_64& rng, const typename E::observation& obs,
                               std::span<const int> actions, std::size_t worker, const typename E::outcome& out) {
    { e.observe(rng) } -> std::convertible_to<const typename E::observation&>;
    { ce.num_choices() } -> std::convertible_to<std::size_t>;
    { ce.active() } -> std::convertible_to<std::span<const std::uint8_t>>;
    e.set_workers(worker);
    { e.evaluate(obs, actions, worker) } -> std::same_as<typename E::outcome>;
    { out.reward } -> std::convertible_to<double>;
};

/// @brief One decision drawn by an environment's own decoder from the network's logits: the actions
/// and, per node, the bias the decoder added to that node's logits when it drew its action (-inf for
/// an action it could not take), so that the probability of the action under other logits is
/// softmax(logits + bias) again, exactly, without running the decoder twice.
struct guided_sample {
    std::vector<int> actions;
    nn::matrix<float> bias;  ///< nodes x choices
    /// The decoder setting the sample was drawn under (e.g. which anchor strength: tasks::placement_task's
    /// anchor_strengths). Where an update holds several, rl::ppo measures each sample's advantage against the
    /// samples of its own stratum only, so that far departures are ranked among far ones and near among near
    /// ones, not all against the near ones' better mean (the baseline is then each stratum's own mean, whatever
    /// rl::ppo_config::baseline says). Ignored where samples are shared among ranks (rl::sample_sharding).
    std::uint32_t stratum = 0;
};

/// @brief An rl::Environment that decodes decisions itself (a heuristic as the decoder, the network's
/// logits as learned residuals on its scores: PPO-BiHyb, NeurIPS'21; Jeon et al., ICLR'23) instead of
/// rl::ppo drawing each node's action independently. rl::ppo uses the decoder when `e.guided()`.
/// Models: tasks::placement_task (placement_decoder::guided).
/// @code
///   e.guided()                                        -> bool
///   e.decode(obs, logits, seed, greedy, worker)       -> rl::guided_sample
///   // logits: const nn::matrix<double>& (nodes x choices); seed: std::uint64_t, the sample's own
///   // random stream; greedy: the most likely action at every step (the policy's mode)
/// @endcode
/// `decode` must be a function of its arguments alone and safe to call concurrently for distinct
/// workers, as `evaluate` is: samples are decoded on the worker threads.
template <class E>
concept GuidedEnvironment = Environment<E> &&
    requires(E& e, const E& ce, const typename E::observation& obs, const nn::matrix<double>& logits,
             std::uint64_t seed, bool greedy, std::size_t worker) {
    { ce.guided() } -> std::convertible_to<bool>;
    { e.decode(obs, logits, seed, greedy, worker) } -> std::same_as<guided_sample>;
};

/// @brief An actor-critic network over observations of type Obs: per node logits of one categorical
/// distribution (task 0 of nn::policy_output) and a value, with an explicit backward pass.
/// Models: nn::go_policy<float> and nn::go_policy<double> over nn::graph_features.
/// @code
///   typename N::scalar;
///   n.evaluate(obs, {})        -> nn::policy_output<scalar>   // logits[0]: nodes x choices
///   n.backward(dlogits, dvalue)                               // adds into the parameters' grads
///   n.parameters()             -> nn::parameter_list<scalar>  // fixed order
/// @endcode
template <class N, class Obs>
concept ActorCritic = requires(N& n, const Obs& obs, const std::vector<std::vector<int>>& actions,
                               const std::vector<nn::matrix<typename N::scalar>>& dlogits, typename N::scalar dv) {
    typename N::scalar;
    { n.evaluate(obs, actions) } -> std::same_as<nn::policy_output<typename N::scalar>>;
    n.backward(dlogits, dv);
    { n.parameters() } -> std::same_as<nn::parameter_list<typename N::scalar>>;
};

static_assert(ActorCritic<nn::go_policy<float>, nn::graph_features<float>>);

}  // namespace goopt::rl
