#pragma once
/// @file
/// @brief The Task concept: what a researcher writes, in one header, to put a new per-op decision
/// (placement, scheduling, fusion...) under the simulator and the PPO trainer.

#include <goopt/rl/concepts.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <concepts>
#include <cstddef>
#include <span>

namespace goopt::tasks {

/// One decision of a task, scored by the simulator: what the trainer ranks (fits in memory first,
/// then the shorter step) and learns from (the reward). The outcome of the shipped tasks.
struct step_outcome {
    double reward = 0;
    double step_time = 0;  ///< seconds; 0 for a decision the simulator refused
    bool oom = false;
    bool valid = false;  ///< false: the simulator refused the decision (sim::decision_refused)
};

/// @brief A decision problem over the ops of one graph: a per-op action space, a map from sampled
/// actions to the shared decision type, a simulator that scores a decision, and the reward. A Task
/// is also an rl::Environment (evaluate = reward(score(decide(actions)))), so rl::ppo trains it.
/// evaluate may turn a sim::decision_refused from decide or score into a penalty outcome; any other
/// exception is a bug or bad input and must leave evaluate.
/// Models: tasks::placement_task.
/// @code
///   // what the trainer sees (rl::Environment):
///   typename T::observation; typename T::outcome;   t.observe(rng); t.num_choices(); t.active();
///   t.set_workers(k); t.evaluate(obs, actions, worker) -> outcome
///   // what makes it a decision task:
///   t.num_nodes()               -> std::size_t            // one action per op
///   t.decide(actions)           -> sim::decision          // sampled actions -> decision
///   t.score(decision, worker)   -> sim::simulation_result // the simulator's verdict
///   t.reward(result)            -> double                 // larger is better
///
///   static_assert(tasks::Task<tasks::placement_task<device::device_spec>>);
///   struct no_reward { /* everything above but reward() */ };
///   static_assert(!tasks::Task<no_reward>);
/// @endcode
/// Both static_asserts are compiled: the first in tasks/placement.hpp, the second in
/// tests/tasks/placement_test.cpp.
template <class T>
concept Task = rl::Environment<T> && requires(T& t, const T& ct, std::span<const int> actions, const sim::decision& d,
                                              const sim::simulation_result& r, std::size_t worker) {
    { ct.num_nodes() } -> std::convertible_to<std::size_t>;
    { ct.decide(actions) } -> std::same_as<sim::decision>;
    { t.score(d, worker) } -> std::same_as<sim::simulation_result>;
    { ct.reward(r) } -> std::convertible_to<double>;
};

}  // namespace goopt::tasks
