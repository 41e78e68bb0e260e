#pragma once
/// @file
/// @brief The placement task: a device for every op, scored by the simulator (GO, NeurIPS'20 §3:
/// one softmax over devices per node, all nodes decided at once).

#include <goopt/baselines/baechi.hpp>
#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/cost/concepts.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/rl/concepts.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/decision_refused.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/anchored_decoding.hpp>
#include <goopt/tasks/concepts.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/ladder.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>
#include <goopt/tasks/placement_features.hpp>
#include <goopt/tasks/ranked_decoding.hpp>
#include <goopt/tasks/step_reward.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

namespace goopt::tasks {

/// How each device orders its ready ops under a sampled placement.
enum class ready_order : std::uint8_t {
    fifo,           ///< TensorFlow's executor (GO's placement task)
    critical_path,  ///< upward-rank priorities computed for the placement (baselines::critical_path_priorities)
    /// placement_task_config::priorities for every placement (e.g. the anchor heuristic's own, so that
    /// the anchor's decision is exactly the heuristic's)
    given,
};

/// How a placement is drawn from the policy's logits (one row per op, one column per device).
enum class placement_decoder : std::uint8_t {
    /// GO's: every op's device drawn independently from softmax(logits) (NeurIPS'20 §3).
    independent,
    /// m-ETF as the decoder (Baechi §4.2): ops are taken in m-ETF's order (the ready op that can
    /// start earliest) and each op's device is drawn from softmax(logits + bias) over the devices
    /// where it fits in memory, bias = -(start there - earliest start) / (temperature x the mean
    /// op time). Zero logits and greedy decoding give m-ETF's placement; every sample fits where
    /// m-ETF's estimate does; the policy learns where to depart from the heuristic (PPO-BiHyb,
    /// NeurIPS'21; Jeon et al., ICLR'23).
    guided,
};

/// The order in which the guided decoder reaches the ops.
enum class guided_walk : std::uint8_t {
    /// m-ETF's: next, the ready op that can start earliest (zero logits decoded greedily give m-ETF's
    /// placement). Its ready heap looks at every waiting op again after each placement: about a
    /// minute of CPU per sample on an 82,000-op GNMT training graph.
    earliest_start,
    /// HEFT's order, fixed per task: ops by decreasing upward rank, each scored by its finish on
    /// every device where it fits (tasks/ranked_decoding.hpp), O(ops x devices) per sample. The
    /// memory budgets are calibrated once per task on the simulator (as m-ETF's are checked).
    ranked,
    /// ranked on graphs of placement_task_config::ranked_from_ops ops or more, earliest_start below.
    automatic,
};

/// Knobs of the placement task.
struct placement_task_config {
    /// The schedule a placement is scored with; critical_path makes the decision a placement plus
    /// its list-scheduling priorities, as HEFT's is.
    ready_order schedule = ready_order::fifo;
    /// ready_order::given: one priority per op (larger runs first).
    std::vector<double> priorities = {};
    /// Decision the step times are measured against (the reward is -sqrt(step / reference step));
    /// empty: every op on device 0 (TensorFlow's default placement).
    sim::placement reference = {};
    /// Subtracted once from the reward of a decision that runs out of memory, on top of its share of
    /// overflow (see placement_task::reward). HDP counts an OOM as a 100 s step; a bounded penalty
    /// that grows with the overflow still tells the policy which OOM decisions are closer to fitting.
    double oom_penalty = 1.0;
    /// Reward of a decision refused (sim::decision_refused: a tensor routed between unconnected
    /// devices, an action naming no device). Any other error while evaluating is not a decision's
    /// fault and propagates out of evaluate().
    double invalid_reward = -10.0;
    placement_decoder decoder = placement_decoder::independent;
    /// guided: how far from the earliest start a device may be and still be drawn, in mean op times
    /// (0 < temperature; larger: samples depart more from m-ETF before any learning).
    double temperature = 1.0;
    /// guided: m-ETF's memory estimate and budget (baselines::baechi_config; verify_rounds: the
    /// ranked walk's budget calibration rounds, unused by m-ETF's walk).
    baselines::baechi_config guide = {};
    /// guided: the placement the decoder is anchored on (tasks/anchored_decoding.hpp; e.g. the best
    /// placement heuristic's): zero logits decoded greedily keep its device for every op, a sample
    /// departs from it at a score of -anchor_strength plus m-ETF's. Its sources (weights, inputs) stay
    /// where it puts them, with their colocation groups (a weight's update), instead of following
    /// their first reader as m-ETF's do, and each op's anchor device stays open where m-ETF's memory
    /// estimate would close it (the anchor is known to fit): on both walks. Empty: m-ETF's own.
    sim::placement anchor = {};
    double anchor_strength = 2.0;
    /// guided, with an anchor: each sample departs at one strength drawn uniformly from these (by the
    /// sample's own seed; the mode keeps anchor_strength), so one update holds near and far departures,
    /// as variable-neighbourhood search varies its radius. Why: no one strength suits every cluster. At
    /// zero logits a strength of 2 moves 3-7 % of the ops per sample on 2 devices and a fifth to a third on
    /// 8, where no sample beat the anchor; 5 moves 0.2-2.6 %, too few to learn from on some 2-device graphs
    /// (benchmarks/anchor_departures; docs/placement.md, "A ladder of anchor strengths"). The
    /// decoder stores each sample's bias with its strength, so PPO's ratio stays exact, and reports the
    /// strength as the sample's stratum (rl::guided_sample::stratum), so that PPO ranks each sample
    /// among those drawn at its own strength. Empty: every sample at anchor_strength.
    std::vector<double> anchor_strengths = {};
    /// The placement the devices' and pairs' reference columns describe (tasks::placement_features:
    /// the device it gives each op, where it puts the op's producers and consumers, the compute it
    /// puts on each device). Empty: the anchor where one is given; else, with the guided decoder, the
    /// decoder's own greedy plan at zero logits (m-ETF's placement, or the ranked walk's); else none.
    /// Without one, a pair head (nn::first_head::pair) scores every device of a cluster of equal
    /// devices the same for each op, so its logits cannot move any decision: train_placement and
    /// pretrain_placement_policy refuse a pair head there (tasks::tells_devices_apart).
    sim::placement feature_reference = {};
    /// guided: the order the decoder walks the ops in.
    guided_walk walk = guided_walk::automatic;
    /// guided_walk::automatic: the graph size (ops, sources included) from which the ranked walk is
    /// taken. GNMT-8 (59,990 ops) and gnmt8_long (82,370) are above, GNMT-4 (32,994) below.
    std::size_t ranked_from_ops = 50000;
};

/// @brief Placement as a tasks::Task and rl::Environment.
///
/// Actions: one device per op. Only some ops decide (active()): an op outside every colocation group,
/// and the first non-source op (in id order) of each group, whose device the whole group takes.
/// Source ops (inputs, weights, constants) outside a deciding group go with their first consumer,
/// as the baselines place them. With placement_decoder::guided the task is also an
/// rl::GuidedEnvironment: decode() draws every op's device through m-ETF, every computing op is
/// active (the first member of a group that the decoder reaches decides for it), and an action
/// vector is every op's device as it stands.
///
/// Reward: -sqrt(step / reference step) (GO and HDP use -sqrt(step time)); a decision that runs out
/// of memory gets, in addition, -oom_penalty x (1 + sum over devices of max(0, peak / capacity - 1));
/// a decision refused (sim::decision_refused, by decide() or the simulator) gets invalid_reward.
/// Nothing else is caught: a bug in a cost model, a task or the trainer stops the training.
/// @tparam D device type; @tparam Cost cost model.
template <device::DeviceModel D, cost::CostModel<D> Cost = cost::roofline_model> class placement_task {
public:
    /// The graph's node features with the devices' and the (op, device) pairs' (tasks::placement_features),
    /// so that a network with a pair head (nn::first_head::pair) places on any device count.
    using observation = nn::placement_features<float>;
    using outcome = step_outcome;

    /// @throws goopt::error for a cyclic graph, an empty cluster, or a reference of the wrong length;
    /// tasks::nothing_to_decide where the reference placement's step takes no time.
    placement_task(const graph::computation_graph& g, const device::cluster<D>& c, Cost cost = Cost{},
                   placement_task_config config = {})
        : g_(&g), c_(&c), cost_(std::move(cost)), config_(std::move(config)) {
        const std::size_t n = g.num_ops();
        sims_.push_back(std::make_unique<sim::simulator<D, Cost>>(g, c, cost_));
        deciding_.assign(n, graph::no_op);
        active_.assign(n, 0);
        std::unordered_map<std::int32_t, graph::op_id> anchor;
        for (graph::op_id o = 0; o < n; ++o) {
            if (is_source(o)) continue;
            const auto grp = g.get_op(o).colocation;
            deciding_[o] = grp < 0 ? o : anchor.try_emplace(grp, o).first->second;
            if (deciding_[o] == o) active_[o] = 1;
        }
        for (graph::op_id o = 0; o < n; ++o) {
            if (!is_source(o)) continue;
            const auto grp = g.get_op(o).colocation;
            if (grp >= 0)
                if (auto it = anchor.find(grp); it != anchor.end()) deciding_[o] = it->second;
        }
        // groups of sources only: every member follows the first member's first consumer
        std::unordered_map<std::int32_t, graph::op_id> source_group;
        for (graph::op_id o = 0; o < n; ++o) {
            if (deciding_[o] != graph::no_op) continue;
            graph::op_id follow = graph::no_op;
            for (graph::tensor_id t : g.get_op(o).outputs)
                for (const graph::use& u : g.get_tensor(t).uses)
                    if (follow == graph::no_op) follow = u.op;
            const auto grp = g.get_op(o).colocation;
            if (grp >= 0) follow = source_group.try_emplace(grp, follow).first->second;
            deciding_[o] = follow == graph::no_op ? graph::no_op : deciding_[follow];
        }
        if (config_.decoder == placement_decoder::guided) {
            if (!(config_.temperature > 0) || !std::isfinite(config_.temperature))
                throw error("tasks::placement_task", concat("temperature ", config_.temperature),
                            "a finite temperature > 0");
            // every computing op draws its device where the decoder reaches it first (a colocation
            // group's first member placed decides for the group, whichever it is)
            for (graph::op_id o = 0; o < n; ++o) active_[o] = is_source(o) ? 0 : 1;
            tau_ = mean_fastest_op_time(*sims_[0], config_.temperature);
            if (!(config_.anchor_strength > 0) || !std::isfinite(config_.anchor_strength))
                throw error("tasks::placement_task", concat("anchor_strength ", config_.anchor_strength),
                            "a finite number > 0");
            check_ladder("tasks::placement_task", "anchor_strengths", config_.anchor_strengths, false);
            if (!config_.anchor.empty()) sims_[0]->check_placement(config_.anchor);
            if (config_.walk == guided_walk::ranked ||
                (config_.walk == guided_walk::automatic && n >= config_.ranked_from_ops))
                ranked_ = ranked_order(*sims_[0]);
        } else if (!config_.anchor.empty()) {
            throw error("tasks::placement_task", "an anchor placement with the independent decoder",
                        "the guided decoder (placement_decoder::guided), or no anchor");
        }
        if (config_.schedule == ready_order::given &&
            (config_.priorities.size() != n || !std::all_of(config_.priorities.begin(), config_.priorities.end(),
                                                            [](double x) { return std::isfinite(x); })))
            throw error("tasks::placement_task", concat(config_.priorities.size(), " given priorities"),
                        concat("one finite priority per op (", n, ") with ready_order::given"));
        if (!config_.reference.empty() && config_.reference.size() != n)
            throw error("tasks::placement_task",
                        concat("the reference placement has ", config_.reference.size(), " entries"),
                        concat("one per op (", n, ")"));
        const sim::placement ref = config_.reference.empty() ? sim::placement(n, 0) : config_.reference;
        reference_ = sims_[0]->run(ref, {.record_trace = false});
        if (!ranked_.empty()) calibrate_budget();
        if (!(reference_.step_time > 0))
            throw nothing_to_decide("tasks::placement_task",
                                    "the reference placement's step takes no time (nothing to improve)",
                                    "a reference step time > 0");
        // the features, once: relative to the reference placement where there is one
        if (!config_.feature_reference.empty()) {
            features_ = placement_features(*sims_[0], config_.feature_reference);
        } else if (!config_.anchor.empty()) {
            features_ = placement_features(*sims_[0], config_.anchor);
        } else if (guided()) {
            // the decoder reads only the logits, so an empty observation serves for its own plan
            const rl::guided_sample plan = decode(
                observation{},
                nn::matrix<double>::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(c.num_devices())), 0,
                true, 0);
            features_ = placement_features(*sims_[0], sim::placement(plan.actions.begin(), plan.actions.end()));
        } else {
            features_ = placement_features(*sims_[0]);
        }
    }

    // ---- rl::Environment
    template <std::uniform_random_bit_generator Rng> const observation& observe(Rng&) const { return features_; }
    /// The observation observe() gives, which does not depend on the draw.
    const observation& features() const noexcept { return features_; }
    std::size_t num_choices() const { return c_->num_devices(); }
    std::span<const std::uint8_t> active() const { return active_; }
    void set_workers(std::size_t k) {
        while (sims_.size() < k) sims_.push_back(std::make_unique<sim::simulator<D, Cost>>(*g_, *c_, cost_));
    }
    /// @throws goopt::error (not a refusal) for an action count other than num_nodes() or a worker
    /// beyond set_workers(): a caller's mistake, never a reward.
    outcome evaluate(const observation&, std::span<const int> actions, std::size_t worker) {
        outcome out;
        try {
            out = outcome_of(score(decide(actions), worker));
        } catch (const sim::decision_refused&) {
            out = {.reward = config_.invalid_reward, .step_time = 0, .oom = false, .valid = false};
        }
        return out;
    }

    // ---- rl::GuidedEnvironment
    bool guided() const noexcept { return config_.decoder == placement_decoder::guided; }
    /// guided: whether the decoder walks the ops in HEFT's order (guided_walk::ranked, or chosen by
    /// guided_walk::automatic) rather than m-ETF's.
    bool ranked_walk() const noexcept { return !ranked_.empty(); }
    /// @brief The guided decoder (placement_decoder::guided): m-ETF's list scheduler (or, with the
    /// ranked walk, HEFT's order: tasks/ranked_decoding.hpp), each op's device drawn from softmax(logits + bias) over
    /// the devices where it fits, with a generator seeded by `seed` (greedy: the most likely device). Actions: every
    /// op's device (sources as m-ETF places them). A row whose device was forced (a colocation group placed before, or
    /// no device with room) has bias 0 at that device and -inf elsewhere: it carries no choice.
    rl::guided_sample decode(const observation&, const nn::matrix<double>& logits, std::uint64_t seed, bool greedy,
                             std::size_t worker) {
        const std::size_t n = g_->num_ops(), k = c_->num_devices();
        if (worker >= sims_.size())
            throw error("tasks::placement_task", concat("worker ", worker),
                        concat("below ", sims_.size(), " (set_workers)"));
        if (static_cast<std::size_t>(logits.rows()) != n || static_cast<std::size_t>(logits.cols()) != k)
            throw error("tasks::placement_task", concat(logits.rows(), " x ", logits.cols(), " logits"),
                        concat(n, " x ", k, " (ops x devices)"));
        constexpr float never = -std::numeric_limits<float>::infinity();
        rl::guided_sample out = unopened_sample(n, k);
        std::vector<std::uint8_t> drawn(n, 0);
        std::mt19937_64 rng(seed);
        const auto& ladder = config_.anchor_strengths;
        double strength = config_.anchor_strength;
        if (!greedy && !ladder.empty() && !config_.anchor.empty()) {
            const std::size_t rung = draw_rung(ladder.size(), rng);
            strength = ladder[rung];
            out.stratum = static_cast<std::uint32_t>(rung);
        }
        std::vector<double> total(k), anchored(k);
        auto draw = [&](graph::op_id o, std::span<const double> m_etf_score, sim::device_id best) {
            std::span<const double> score = m_etf_score;
            if (!config_.anchor.empty()) {
                std::copy(m_etf_score.begin(), m_etf_score.end(), anchored.begin());
                anchor_scores(anchored, config_.anchor[o], best, strength);
                score = anchored;
            }
            const auto oo = static_cast<Eigen::Index>(o);
            for (sim::device_id q = 0; q < k; ++q) {
                out.bias(oo, static_cast<Eigen::Index>(q)) = static_cast<float>(score[q]);
                total[q] = logits(oo, static_cast<Eigen::Index>(q)) + score[q];
            }
            drawn[o] = 1;
            return static_cast<sim::device_id>(draw_from_scores(total, greedy, rng));
        };
        const sim::decision d =
            ranked_walk()
                ? guided_ranked_list(*sims_[worker], config_.guide, ranked_, tau_, draw, budget_, config_.anchor)
                : guided_earliest_task_first(*sims_[worker], config_.guide, tau_, draw, config_.anchor);
        for (graph::op_id o = 0; o < n; ++o) {
            out.actions[o] = static_cast<int>(d.placement[o]);
            if (!drawn[o]) {
                const auto oo = static_cast<Eigen::Index>(o);
                out.bias.row(oo).setConstant(never);
                out.bias(oo, static_cast<Eigen::Index>(d.placement[o])) = 0;
            }
        }
        return out;
    }

    // ---- tasks::Task
    std::size_t num_nodes() const { return g_->num_ops(); }
    /// @throws goopt::error (not a refusal) for an action count other than num_nodes() (the caller's mistake);
    /// sim::decision_refused for an action that names no device of the cluster.
    /// Independent decoder: each op takes its deciding op's action (see the class comment); guided:
    /// the actions are every op's device as the decoder placed it.
    sim::decision decide(std::span<const int> actions) const {
        const std::size_t n = g_->num_ops();
        if (actions.size() != n)
            throw error("tasks::placement_task", concat(actions.size(), " actions"), concat("one per op (", n, ")"));
        sim::decision d;
        d.placement.resize(n);
        for (graph::op_id o = 0; o < n; ++o) {
            const graph::op_id k = guided() ? o : deciding_[o];
            const int a = k == graph::no_op ? 0 : actions[k];
            if (a < 0 || static_cast<std::size_t>(a) >= c_->num_devices())
                throw sim::decision_refused("tasks::placement_task", concat("action ", a, " of op ", g_->describe(k)),
                                            concat("a device of the cluster (0..", c_->num_devices() - 1, ")"));
            d.placement[o] = static_cast<sim::device_id>(a);
        }
        return decision_of(std::move(d.placement));
    }
    /// The decision this task makes of placement `p`: `p` with the priorities of the configured
    /// ready order (none for FIFO).
    sim::decision decision_of(sim::placement p) const {
        sim::decision d{.placement = std::move(p), .priorities = {}, .fusion = {}};
        if (config_.schedule == ready_order::critical_path)
            d.priorities = baselines::critical_path_priorities(*sims_[0], d.placement);
        else if (config_.schedule == ready_order::given) d.priorities = config_.priorities;
        return d;
    }
    sim::simulation_result score(const sim::decision& d, std::size_t worker) {
        if (worker >= sims_.size())
            throw error("tasks::placement_task", concat("worker ", worker),
                        concat("below ", sims_.size(), " (set_workers)"));
        return sim::run(*sims_[worker], d);
    }
    double reward(const sim::simulation_result& r) const {
        return step_reward(r, reference_.step_time, *c_, config_.oom_penalty);
    }

    /// The outcome (reward, step time, memory) of a simulated decision.
    outcome outcome_of(const sim::simulation_result& r) const {
        return {.reward = reward(r), .step_time = r.step_time, .oom = r.oom, .valid = true};
    }

    /// The actions that give `p` (each deciding op's device): the warm start's imitation target.
    std::vector<int> actions_of(std::span<const sim::device_id> p) const {
        if (p.size() != g_->num_ops())
            throw error("tasks::placement_task::actions_of", concat("placement of ", p.size(), " entries"),
                        concat("one per op (", g_->num_ops(), ")"));
        return std::vector<int>(p.begin(), p.end());
    }
    const sim::simulation_result& reference() const noexcept { return reference_; }
    sim::simulator<D, Cost>& simulator() { return *sims_[0]; }
    const graph::computation_graph& graph() const noexcept { return *g_; }

private:
    bool is_source(graph::op_id o) const { return g_->get_op(o).spec().has(ops::source); }
    /// The ranked walk's memory budgets, once per task: m-ETF's estimate misses what the simulator
    /// holds on a training graph of GNMT's size (its plans overflow by 1.4-2.3x on GNMT-8), and m-ETF
    /// itself is checked and re-planned (baselines::detail::verified). The walk's greedy plan is
    /// simulated under the task's schedule and each device that overflows gets its budget shrunk by
    /// capacity / peak, guide.verify_rounds times at most; the budgets of the best plan (within
    /// memory first, then the shorter step) are kept for every sample.
    void calibrate_budget() {
        auto greedy = [](graph::op_id, std::span<const double>, sim::device_id best) { return best; };
        budget_ = baselines::detail::shrink_until_fits(
                      *c_, config_.guide.verify_rounds,
                      [&](std::span<const double> scale) {
                          return guided_ranked_list(*sims_[0], config_.guide, ranked_, tau_, greedy, scale);
                      },
                      [&](const sim::decision& plan) { return sim::run(*sims_[0], decision_of(plan.placement)); })
                      .second;
    }

    const graph::computation_graph* g_;
    const device::cluster<D>* c_;
    Cost cost_;
    placement_task_config config_;
    observation features_;
    std::vector<std::unique_ptr<sim::simulator<D, Cost>>> sims_;
    std::vector<graph::op_id> deciding_;  // the op whose action each op takes (no_op: device 0)
    std::vector<std::uint8_t> active_;
    sim::simulation_result reference_;
    double tau_ = 1;                    // guided: the bias's time unit (seconds)
    std::vector<graph::op_id> ranked_;  // guided, ranked walk: the computing ops in HEFT's order
    std::vector<double> budget_;        // guided, ranked walk: per-device budget multipliers (calibrate_budget)
};

static_assert(Task<placement_task<device::device_spec>>);
static_assert(rl::GuidedEnvironment<placement_task<device::device_spec>>);

}  // namespace goopt::tasks
