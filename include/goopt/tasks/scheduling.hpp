#pragma once
/// @file
/// @brief The scheduling task: a priority per op on a given placement, decoded by the simulator's
/// list scheduler (each device runs its ready op of the largest priority). GO (NeurIPS'20 §3)
/// discretizes priorities into levels; here a level is a residual on the critical-path priority
/// (the op's upward rank under the placement), so that the middle level everywhere is exactly the
/// heuristic's order and the policy learns where to depart from it (the heuristic as the decoder:
/// PPO-BiHyb, NeurIPS'21; Jeon et al., ICLR'23).

#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace goopt::tasks {

/// How far apart the priority levels lie.
enum class level_spacing : std::uint8_t {
    linear,     ///< level middle +- j shifts the priority by +- j x step
    geometric,  ///< by +- step x 2^(j - 1): fine swaps of near ranks and long moves in one range
};

/// Knobs of the scheduling task.
struct scheduling_config {
    std::size_t levels = 21;  ///< priority levels per op (odd: the middle one is the heuristic's priority)
    /// A level's step, as a share of the largest upward rank: levels x step spans the rank's range
    /// twice over, so any op can be moved before or after any other.
    double step = 0.1;
    level_spacing spacing = level_spacing::linear;
    /// Decide only the ops at a choice point of the base schedule (ops_at_choice_points); the others
    /// keep the base priority. Where no device ever has two ops ready at once, every op is decided
    /// (no order changes anything there). Why: a priority matters only where a device falls idle with
    /// several ops ready, so levels sampled elsewhere add noise to the policy gradient and nothing to
    /// the step; rounds (tasks::train_scheduling) re-base, so the next round sees the choice points
    /// the new order makes. Measured on benchmarks/decisions' 8 scheduling rows: -2.07 % below the
    /// best heuristic order against -2.23 % without (it can miss an op a move makes relevant), so off.
    bool choice_points_only = false;
    /// Give the policy what the base schedule knows of each op (scheduling_decider::extra_features):
    /// its device, base priority, slack (start - ready) and start in the base schedule, and whether
    /// it was at a choice point. Why: graph features alone cannot tell which ops sit where a device
    /// falls idle with several ops ready, the only places where a priority matters. Measured on the
    /// same rows: -2.25 % against -2.23 % without (within the seeds' spread), so off.
    bool schedule_features = false;
    /// How the links order waiting tensors, in the base schedule and every decision: as produced
    /// (FIFO, as the placement tasks score) or by the same priorities as the devices, so that the
    /// learned levels also order the transfers (sim::transfer_order).
    sim::transfer_order transfers = sim::transfer_order::produced;
    /// How the devices follow the decided priorities. `ready` (list scheduling) never holds a device
    /// idle while an op is ready; `sequence` runs each device's ops in one global order and can wait
    /// for an op about to arrive (sim::dispatch_order), a schedule no priority list can give. With
    /// `sequence` the base priorities become the start positions, negated, in the better of the base
    /// priorities list-scheduled and run as a sequence, so that the middle level everywhere is exactly
    /// that schedule (the heuristic's own where the base is a heuristic's, the order a round learned
    /// where train_scheduling re-bases), and a level moves an op earlier or later in its device's order.
    sim::dispatch_order dispatch = sim::dispatch_order::ready;
};

/// @brief The ops whose priority the list scheduler consulted in a traced run `r` of `g`: for every
/// start on a device, the ops of that device ready by then (their inputs produced there, or copied
/// in) and not started before; where two or more are, the scheduler chose among them and each of
/// them is marked (sources never). An op elsewhere started the moment it was ready with nothing else waiting, so its
/// priority did not matter to this schedule.
inline std::vector<std::uint8_t> ops_at_choice_points(const graph::computation_graph& g,
                                                      const sim::simulation_result& r) {
    const std::size_t n = g.num_ops();
    std::vector<double> start(n, 0.0), end(n, 0.0), ready(n, 0.0);
    std::vector<std::uint32_t> device(n, 0);
    std::vector<std::uint8_t> traced(n, 0), marked(n, 0);
    std::size_t devices = 0;
    for (const auto& e : r.ops) {
        start[e.op] = e.start;
        end[e.op] = e.end;
        device[e.op] = e.device;
        traced[e.op] = 1;
        devices = std::max<std::size_t>(devices, e.device + 1);
    }
    std::unordered_map<std::uint64_t, double> arrival;  // (tensor, destination) -> end of its copy
    for (const auto& x : r.transfers) arrival[(std::uint64_t{x.tensor} << 32) | x.to] = x.end;
    for (graph::op_id o = 0; o < n; ++o) {
        if (!traced[o]) continue;
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id p = g.producer(t);
            if (!traced[p]) continue;
            const auto copy = arrival.find((std::uint64_t{t} << 32) | device[o]);
            ready[o] = std::max(ready[o], device[p] == device[o] || copy == arrival.end() ? end[p] : copy->second);
        }
    }
    std::vector<std::vector<graph::op_id>> order(devices);  // per device, in start order (the trace's)
    for (const auto& e : r.ops)  // sources (inputs, weights) take no time and carry no priority
        if (!g.get_op(e.op).spec().has(ops::source)) order[e.device].push_back(e.op);
    for (const auto& ops : order)
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const double at = start[ops[i]];
            std::size_t waiting = 0;
            for (std::size_t j = i; j < ops.size(); ++j) waiting += ready[ops[j]] <= at ? 1 : 0;
            if (waiting < 2) continue;
            for (std::size_t j = i; j < ops.size(); ++j)
                if (ready[ops[j]] <= at) marked[ops[j]] = 1;
        }
    return marked;
}

/// @brief Scheduling as a tasks::Decider (run it with tasks::simulated_task and tasks::train): one
/// priority level per computing op on `placement`; decision = the placement with priorities
/// base(op) + s(level - middle) x max |base|, s(j) = j x step (linear) or sign(j) x step x 2^(|j| - 1)
/// (geometric: scheduling_config::spacing), base the critical-path priorities (upward rank)
/// unless the caller gives another heuristic's (HEFT's rank, m-SCT's planned starts: the best of
/// them on this placement, so that learning starts from the best order there is). Reward:
/// -sqrt(step / the base schedule's step) (GO's shape), minus 1 for a decision out of memory.
class scheduling_decider {
public:
    /// @throws goopt::error for an even or zero level count, a step that is not positive, a
    /// placement the simulator refuses, or base priorities that are not one finite number per op;
    /// tasks::nothing_to_decide for a placement that leaves nothing to order (no device with two ops)
    /// or a base schedule that takes no time.
    template <device::DeviceModel D, cost::CostModel<D> Cost>
    scheduling_decider(sim::simulator<D, Cost>& s, sim::placement placement, scheduling_config c = {},
                       std::vector<double> base = {})
        : placement_(std::move(placement)), config_(c), base_(std::move(base)) {
        if (c.levels == 0 || c.levels % 2 == 0)
            throw error("tasks::scheduling_decider", concat(c.levels, " priority levels"), "an odd number >= 1");
        if (!(c.step > 0) || !std::isfinite(c.step))
            throw error("tasks::scheduling_decider", concat("step ", c.step), "a finite step > 0");
        const auto& g = s.graph();
        if (base_.empty()) base_ = baselines::critical_path_priorities(s, placement_);
        if (base_.size() != g.num_ops() ||
            !std::all_of(base_.begin(), base_.end(), [](double x) { return std::isfinite(x); }))
            throw error("tasks::scheduling_decider", concat(base_.size(), " base priorities"),
                        concat("one finite priority per op (", g.num_ops(), ")"));
        active_.assign(g.num_ops(), 0);
        for (graph::op_id o = 0; o < g.num_ops(); ++o) active_[o] = g.get_op(o).spec().has(ops::source) ? 0 : 1;
        // a priority orders the ready ops of one device: with at most one op per device nothing is decided
        std::vector<std::size_t> per_device(s.cluster().num_devices(), 0);
        bool orders = false;
        for (graph::op_id o = 0; o < g.num_ops(); ++o)
            if (active_[o]) orders = ++per_device.at(placement_[o]) > 1 || orders;
        if (!orders)
            throw nothing_to_decide("tasks::scheduling_decider", "no device has two ops to order under this placement",
                                    "a graph and placement with at least two computing ops on one device");
        if (c.dispatch == sim::dispatch_order::sequence) {
            // the start order of the better of the base list-scheduled (a heuristic's priorities) and
            // the base run as a sequence (the order a round before learned): that schedule again
            const auto listed =
                s.run(placement_, {.priorities = base_, .record_trace = true, .transfers = c.transfers});
            const auto ordered = s.run(placement_, {.priorities = base_,
                                                    .record_trace = true,
                                                    .transfers = c.transfers,
                                                    .dispatch = sim::dispatch_order::sequence});
            const auto& ops = (sim::better_result(ordered, listed) ? ordered : listed).ops;  // in start order
            for (std::size_t i = 0; i < ops.size(); ++i) base_[ops[i].op] = -static_cast<double>(i);
        }
        const auto [lo, hi] = std::minmax_element(base_.begin(), base_.end());
        scale_ = c.step * std::max({1e-12, *hi, -*lo});
        const bool trace = c.choice_points_only || c.schedule_features;
        const auto base_run = s.run(placement_, {.priorities = base_,
                                                 .fusion = {},
                                                 .record_trace = trace,
                                                 .transfers = c.transfers,
                                                 .dispatch = c.dispatch});
        reference_ = base_run.step_time;
        if (c.schedule_features) extra_ = base_features(g, s.cluster().num_devices(), base_run);
        if (c.choice_points_only) {
            auto chosen = ops_at_choice_points(g, base_run);
            for (graph::op_id o = 0; o < g.num_ops(); ++o) chosen[o] = chosen[o] && active_[o];
            if (std::find(chosen.begin(), chosen.end(), std::uint8_t{1}) != chosen.end()) active_ = std::move(chosen);
        }
        if (!(reference_ > 0))
            throw nothing_to_decide("tasks::scheduling_decider", "the base schedule's step takes no time",
                                    "a graph with work to schedule");
    }

    std::size_t num_choices() const { return config_.levels; }
    std::span<const std::uint8_t> active() const { return active_; }
    /// @throws goopt::error for an action count other than one per op or a level out of range.
    sim::decision decide(std::span<const int> actions) const {
        if (actions.size() != base_.size())
            throw error("tasks::scheduling_decider", concat(actions.size(), " actions"),
                        concat("one per op (", base_.size(), ")"));
        sim::decision d = heuristic_decision();
        const int middle = static_cast<int>(config_.levels / 2);
        for (std::size_t o = 0; o < actions.size(); ++o) {
            if (actions[o] < 0 || static_cast<std::size_t>(actions[o]) >= config_.levels)
                throw error("tasks::scheduling_decider", concat("level ", actions[o], " of op ", o),
                            concat("a level in [0, ", config_.levels, ")"));
            if (active_[o]) d.priorities[o] += shift(actions[o] - middle);
        }
        return d;
    }
    double reward(const sim::simulation_result& r) const {
        return -std::sqrt(r.step_time / reference_) - (r.oom ? 1.0 : 0.0);
    }

    /// The actions of the heuristic's own schedule (every op at the middle level).
    std::vector<int> heuristic_actions() const {
        return std::vector<int>(base_.size(), static_cast<int>(config_.levels / 2));
    }
    /// The base schedule of the placement (the decision of heuristic_actions()).
    sim::decision heuristic_decision() const {
        return {.placement = placement_,
                .priorities = base_,
                .fusion = {},
                .transfers = config_.transfers,
                .dispatch = config_.dispatch};
    }
    /// Its simulated step, the reward's reference (seconds).
    double reference_step() const noexcept { return reference_; }
    /// With scheduling_config::schedule_features, per op (z-scored over the ops like the graph's
    /// node features): device / (devices - 1), base priority, slack and start in the base schedule
    /// (start - ready, start; over the step), at a choice point (0/1). Without: no columns.
    /// tasks::simulated_task appends them to the policy's input.
    const Eigen::MatrixXd& extra_features() const noexcept { return extra_; }

private:
    Eigen::MatrixXd base_features(const graph::computation_graph& g, std::size_t devices,
                                  const sim::simulation_result& r) const {
        const std::size_t n = g.num_ops();
        Eigen::MatrixXd x = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), 5);
        const auto chosen = ops_at_choice_points(g, r);
        for (graph::op_id o = 0; o < n; ++o) {
            x(o, 0) = devices > 1 ? static_cast<double>(placement_[o]) / static_cast<double>(devices - 1) : 0.0;
            x(o, 1) = base_[o];
            x(o, 4) = chosen[o];
        }
        // slack: how long an op waited after its inputs were there (ops_at_choice_points' readiness)
        std::unordered_map<std::uint64_t, double> arrival;
        for (const auto& t : r.transfers) arrival[(std::uint64_t{t.tensor} << 32) | t.to] = t.end;
        std::vector<double> end(n, 0.0);
        std::vector<std::uint8_t> traced(n, 0);
        for (const auto& e : r.ops) {
            end[e.op] = e.end;
            traced[e.op] = 1;
        }
        const double step = std::max(r.step_time, 1e-30);
        for (const auto& e : r.ops) {
            double at = 0;
            for (graph::tensor_id t : g.get_op(e.op).inputs) {
                const graph::op_id p = g.producer(t);
                if (!traced[p]) continue;
                const auto copy = arrival.find((std::uint64_t{t} << 32) | e.device);
                at = std::max(at, placement_[p] == e.device || copy == arrival.end() ? end[p] : copy->second);
            }
            x(e.op, 2) = (e.start - at) / step;
            x(e.op, 3) = e.start / step;
        }
        for (Eigen::Index j = 0; j < x.cols(); ++j) {
            const double mean = x.col(j).mean();
            const double var = (x.col(j).array() - mean).square().mean();
            x.col(j) = (x.col(j).array() - mean) * (var > 1e-24 ? 1.0 / std::sqrt(var) : 0.0);
        }
        return x;
    }

    /// The priority shift of `j` levels above the middle (negative: below).
    double shift(int j) const {
        if (config_.spacing == level_spacing::linear || j == 0) return j * scale_;
        return (j > 0 ? 1 : -1) * std::ldexp(scale_, std::abs(j) - 1);
    }

    sim::placement placement_;
    scheduling_config config_;
    std::vector<double> base_;
    std::vector<std::uint8_t> active_;
    double scale_ = 1;
    double reference_ = 0;
    Eigen::MatrixXd extra_;  ///< extra_features(): empty without scheduling_config::schedule_features
};

}  // namespace goopt::tasks
