#pragma once
/// @file
/// @brief A decision task from the three things that make it one: its action space, how actions
/// become a sim::decision, and the reward of a simulated step. simulated_task supplies the rest of
/// tasks::Task and rl::Environment (the graph's node features, a simulator per worker, evaluation,
/// refusals), so that a researcher's new task is a small struct on tasks::train.

#include <goopt/cost/concepts.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/decision_refused.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/concepts.hpp>

#include <concepts>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace goopt::tasks {

/// @brief What a user writes for a new task on a graph: the choices per op, the decision a vector of
/// actions (one per op) stands for, and the reward of its simulation (larger is better). An optional
/// `d.active()` marks the ops whose action matters (default: all); an optional
/// `d.extra_features()` (an op x k row-major matrix of doubles, e.g. what the decider knows of its
/// base decision) is appended to the graph's node features as k more columns, so the policy's input
/// is num_features() wide (no columns: none).
/// Models: examples/07_custom_task.cpp's pipeline_stages.
/// @code
///   d.num_choices()    -> std::size_t
///   d.decide(actions)  -> sim::decision          // actions: std::span<const int>, one per op
///   d.reward(result)   -> double                 // result: const sim::simulation_result&
/// @endcode
template <class D>
concept Decider = requires(const D& d, std::span<const int> actions, const sim::simulation_result& r) {
    { d.num_choices() } -> std::convertible_to<std::size_t>;
    { d.decide(actions) } -> std::same_as<sim::decision>;
    { d.reward(r) } -> std::convertible_to<double>;
};

/// @brief A tasks::Task (and rl::Environment, and tasks::TrainableTask) made of a Decider on graph
/// `g` and cluster `c`: observations are `g`'s node features, each worker has its own simulator, a
/// decision the simulator refuses (sim::decision_refused) gets `invalid_reward` and counts as
/// invalid; any other error propagates.
template <Decider Dec, device::DeviceModel D = device::device_spec, cost::CostModel<D> Cost = cost::roofline_model>
class simulated_task {
public:
    using observation = nn::graph_features<float>;
    using outcome = step_outcome;

    simulated_task(const graph::computation_graph& g, const device::cluster<D>& c, Dec decider, Cost cost = Cost{},
                   double invalid_reward = -10.0)
        : g_(&g),
          c_(&c),
          decider_(std::move(decider)),
          cost_(std::move(cost)),
          invalid_reward_(invalid_reward),
          features_(nn::node_features<float>(g)),
          all_(g.num_ops(), 1) {
        if constexpr (requires { decider_.extra_features(); }) {
            const auto& extra = decider_.extra_features();
            if (extra.cols() > 0 && static_cast<std::size_t>(extra.rows()) != g.num_ops())
                throw error("tasks::simulated_task", concat(extra.rows(), " rows of extra features"),
                            concat("one per op (", g.num_ops(), ")"));
            if (extra.cols() > 0) {  // no columns: an empty matrix of any row count, nothing to append
                const auto base = features_.x.cols();
                features_.x.conservativeResize(Eigen::NoChange, base + extra.cols());
                features_.x.rightCols(extra.cols()) = extra.template cast<float>();
            }
        }
        set_workers(1);
    }
    /// The task keeps references to its graph and cluster (as sim::simulator does): temporaries are refused.
    simulated_task(graph::computation_graph&&, const device::cluster<D>&, Dec, Cost = Cost{}, double = 0) = delete;
    simulated_task(const graph::computation_graph&, device::cluster<D>&&, Dec, Cost = Cost{}, double = 0) = delete;

    // ---- rl::Environment
    template <std::uniform_random_bit_generator Rng> const observation& observe(Rng&) const { return features_; }
    std::size_t num_choices() const { return decider_.num_choices(); }
    /// Columns of an observation's node features (nn::policy_config::features).
    std::size_t num_features() const { return static_cast<std::size_t>(features_.x.cols()); }
    std::span<const std::uint8_t> active() const {
        if constexpr (requires { decider_.active(); }) return decider_.active();
        else return all_;
    }
    void set_workers(std::size_t k) {
        while (sims_.size() < k) sims_.push_back(std::make_unique<sim::simulator<D, Cost>>(*g_, *c_, cost_));
    }
    outcome evaluate(const observation&, std::span<const int> actions, std::size_t worker) {
        try {
            return outcome_of(score(decide(actions), worker));
        } catch (const sim::decision_refused&) {
            return {.reward = invalid_reward_, .step_time = 0, .oom = false, .valid = false};
        }
    }

    // ---- tasks::Task
    std::size_t num_nodes() const { return g_->num_ops(); }
    sim::decision decide(std::span<const int> actions) const { return decider_.decide(actions); }
    sim::simulation_result score(const sim::decision& d, std::size_t worker) {
        if (worker >= sims_.size())
            throw error("tasks::simulated_task", concat("worker ", worker),
                        concat("< ", sims_.size(), " (set_workers)"));
        return sim::run(*sims_[worker], d);
    }
    double reward(const sim::simulation_result& r) const { return decider_.reward(r); }
    outcome outcome_of(const sim::simulation_result& r) const {
        return {.reward = reward(r), .step_time = r.step_time, .oom = r.oom, .valid = true};
    }

    const Dec& decider() const noexcept { return decider_; }
    const graph::computation_graph& graph() const noexcept { return *g_; }
    /// The first worker's simulator (for baselines and checks beside training).
    sim::simulator<D, Cost>& simulator() { return *sims_[0]; }

private:
    const graph::computation_graph* g_;
    const device::cluster<D>* c_;
    Dec decider_;
    Cost cost_;
    double invalid_reward_;
    observation features_;
    std::vector<std::uint8_t> all_;
    std::vector<std::unique_ptr<sim::simulator<D, Cost>>> sims_;
};

}  // namespace goopt::tasks
