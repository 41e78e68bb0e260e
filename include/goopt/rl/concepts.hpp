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
