#pragma once
/// @file
/// @brief Placement, scheduling and fusion decided together by one policy (GO, NeurIPS'20 §3: the
/// three tasks of one graph optimized jointly), or any pair of them with the third at its default.
///
/// Each op's action is one choice of the product (device, scheduling level, fusion level): one
/// softmax over the product per op, so that rl::ppo's one categorical per node and its exact guided
/// ratio serve the joint task unchanged (GO chains three heads instead; a product of one head is the
/// same distribution family with fewer parameters to share, and its size, devices x 5 x 5 by
/// default, is small). Decoding is the heuristic pipeline with learned residuals: m-ETF places the
/// ops (each op's product row drawn from softmax(logits + m-ETF's start-time score of its device +
/// a prior that prefers the middle levels), as the guided placement decoder does), the placement's
/// critical-path priorities shifted by the scheduling level (as tasks/scheduling.hpp), priority
/// fusion with per-op biases from the fusion level (as tasks/fusion.hpp). Zero logits decoded
/// greedily give the heuristic pipeline exactly: m-ETF, critical-path priorities, priority fusion.
/// With an anchor (joint_config::anchor, e.g. the best placement heuristic's decision), m-ETF's
/// scores are taken relative to the anchor's device (tasks/anchored_decoding.hpp), and the pipeline
/// is that placement (where m-ETF lets each op choose), its critical-path priorities or
/// joint_config::priorities, and priority fusion. With joint_config::anchor_fusion, the fusion levels
/// depart from that heuristic's groups on each decoded placement (tasks/fusion.hpp, fusion_levels),
/// so the pipeline ends with that fusion (greedy fusion, as the heuristic pipelines do).

#include <goopt/baselines/baechi.hpp>
#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/baselines/priority_fusion.hpp>
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
#include <goopt/tasks/fusion.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/ladder.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>
#include <goopt/tasks/step_reward.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::tasks {

/// Which tasks a joint_task decides; the others stay at their defaults.
struct joint_tasks {
    bool placement = true;   ///< off: joint_config::placement (default: the best heuristic's, chosen by the caller)
    bool scheduling = true;  ///< off: FIFO (TensorFlow's executor)
    bool fusion = true;      ///< off: no fusion
    /// "placement+scheduling+fusion", "placement+fusion", ... (GO's method names use it).
    std::string name() const {
        std::string s;
        const std::pair<bool, const char*> parts[] = {
            {placement, "placement"}, {scheduling, "scheduling"}, {fusion, "fusion"}};
        for (const auto& [on, n] : parts)
            if (on) {
                if (!s.empty()) s += '+';
                s += n;
            }
        return s;
    }
};

/// Knobs of the joint task.
struct joint_config {
    joint_tasks tasks = {};
    /// The placement when placement is not learned (one device per op; empty: every op on device 0).
    sim::placement placement = {};
    /// Levels per op (odd; >= 3 for fusion, whose level 0 keeps the op out of every kernel) and their
    /// step as a share of the largest upward rank (scheduling) or largest single-merge saving (fusion).
    std::size_t scheduling_levels = 5, fusion_levels = 5;
    double scheduling_step = 0.1, fusion_step = 0.1;
    /// The decoder's prior on the levels: a product choice's score gets -prior x (its levels' distance
    /// from the middle), so that zero logits prefer the heuristic pipeline and still explore.
    double level_prior = 1.0;
    /// Scheduling or fusion decided: each sample draws its level prior uniformly from these (by its own
    /// seed; the mode keeps level_prior), a second ladder beside anchor_strengths, and its rung joins the
    /// sample's stratum. Why: at level_prior 1, zero logits move half the ops off the middle level of each
    /// task, so a sample's reward is mostly its levels' and a placement departure's effect is lost in
    /// them; samples drawn at a high prior keep the levels and show the departures, ranked among
    /// themselves. Empty: every sample at level_prior.
    std::vector<double> level_priors = {};
    /// Placement: m-ETF's start-time score in units of temperature x the mean op time (as
    /// placement_task_config::temperature), and m-ETF's memory estimate and budget.
    double temperature = 1.0;
    baselines::baechi_config guide = {};
    /// Placement decided: the placement the decoder is anchored on (tasks/anchored_decoding.hpp): zero
    /// logits keep its device for every op where it has room, and a sample departs from it at a score
    /// of -anchor_strength plus m-ETF's; its sources stay where it puts them. Empty: m-ETF alone guides
    /// (its own placement is the anchor).
    sim::placement anchor = {};
    double anchor_strength = 2.0;
    /// Placement decided, with an anchor: each sample departs at one strength drawn uniformly from these
    /// (by its own seed; the mode keeps anchor_strength) and reports it as its stratum, so that PPO ranks
    /// it among the samples of its own strength: placement_task_config::anchor_strengths, whose reasons
    /// hold here (docs/placement.md, "A ladder of anchor strengths"). Empty: every sample at anchor_strength.
    std::vector<double> anchor_strengths = {};
    /// Scheduling decided: the priorities its levels shift (e.g. the anchor heuristic's own, where
    /// they order its placement better than its critical path). Empty: the critical-path priorities
    /// of each decoded placement. Equal priorities are FIFO's order (the simulator gives ties to the
    /// op ready first); the levels then step by scheduling_step x the largest critical-path priority.
    std::vector<double> priorities = {};
    /// Fusion decided: the fusion its levels depart from on each decoded placement (none: the levels
    /// bias priority fusion from scratch).
    fusion_anchor anchor_fusion = fusion_anchor::none;
    /// anchor_fusion given: the groups the levels depart from (a group id per op), on each decoded
    /// placement split where it puts a group's members on different devices.
    sim::fusion_groups fusion_groups = {};
    double oom_penalty = 1.0;       ///< as placement_task_config::oom_penalty
    double invalid_reward = -10.0;  ///< reward of a decision the simulator refuses
};

/// @brief The joint task: a tasks::TrainableTask and rl::GuidedEnvironment (see the file comment).
/// Actions: per op the index (device x S + scheduling level) x F + fusion level of the product, S and
/// F the level counts of the tasks decided (1 for a task at its default), device 0 when placement is
/// not decided. Reward: -sqrt(step / the heuristic pipeline's step), minus oom_penalty x (1 + the
/// devices' summed overflow) for a decision out of memory; a refused decision gets invalid_reward.
template <device::DeviceModel D, cost::CostModel<D> Cost = cost::roofline_model> class joint_task {
public:
    using observation = nn::graph_features<float>;
    using outcome = step_outcome;

    /// @throws goopt::error for no task to decide, an even level count (or a fusion count under 3), a
    /// step, prior, temperature or anchor strength that is not finite and positive, a fixed placement the simulator
    /// refuses; tasks::nothing_to_decide for a fusion task on a graph with no pair that can fuse, or
    /// a heuristic pipeline whose step takes no time.
    joint_task(const graph::computation_graph& g, const device::cluster<D>& c, Cost cost = Cost{},
               joint_config config = {})
        : g_(&g), c_(&c), cost_(std::move(cost)), config_(std::move(config)), features_(nn::node_features<float>(g)) {
        const auto& t = config_.tasks;
        constexpr const char* who = "tasks::joint_task";
        if (!t.placement && !t.scheduling && !t.fusion)
            throw error(who, "no task to decide", "at least one of placement, scheduling and fusion");
        if (t.scheduling && (config_.scheduling_levels == 0 || config_.scheduling_levels % 2 == 0))
            throw error(who, concat(config_.scheduling_levels, " scheduling levels"), "an odd number >= 1");
        if (t.fusion && (config_.fusion_levels < 3 || config_.fusion_levels % 2 == 0))
            throw error(who, concat(config_.fusion_levels, " fusion levels"), "an odd number >= 3");
        const std::pair<double, const char*> knobs[] = {{config_.scheduling_step, "scheduling_step"},
                                                        {config_.fusion_step, "fusion_step"},
                                                        {config_.temperature, "temperature"},
                                                        {config_.anchor_strength, "anchor_strength"}};
        for (const auto& [v, name] : knobs)
            if (!(v > 0) || !std::isfinite(v)) throw error(who, concat(name, " ", v), "a finite number > 0");
        check_ladder(who, "anchor_strengths", config_.anchor_strengths, false);
        if (!(config_.level_prior >= 0) || !std::isfinite(config_.level_prior))
            throw error(who, concat("level_prior ", config_.level_prior), "a finite number >= 0");
        check_ladder(who, "level_priors", config_.level_priors, true);
        devices_ = t.placement ? c.num_devices() : 1;
        s_levels_ = t.scheduling ? config_.scheduling_levels : 1;
        f_levels_ = t.fusion ? config_.fusion_levels : 1;
        const std::size_t n = g.num_ops();
        sims_.push_back(std::make_unique<sim::simulator<D, Cost>>(g, c, cost_));
        if (!t.placement) {
            if (config_.placement.empty()) config_.placement.assign(n, 0);
            sims_[0]->check_placement(config_.placement);
        }
        if (!config_.priorities.empty() &&
            (config_.priorities.size() != n || !std::all_of(config_.priorities.begin(), config_.priorities.end(),
                                                            [](double x) { return std::isfinite(x); })))
            throw error(who, concat(config_.priorities.size(), " base priorities"),
                        concat("one finite priority per op (", n, "), or none"));
        if (t.fusion) check_given_groups(who, config_.anchor_fusion, config_.fusion_groups, n);
        if (!config_.anchor.empty()) {
            if (!t.placement)
                throw error(who, "an anchor placement with placement not decided",
                            "no anchor, or placement among the tasks (the fixed placement is joint_config::placement)");
            sims_[0]->check_placement(config_.anchor);
        }
        if (t.fusion && !t.placement &&
            baselines::priority_fuser<D, Cost>(*sims_[0], config_.placement).num_pairs() == 0)
            throw nothing_to_decide(
                who, concat("graph '", g.name(), "' has no producer/consumer pair that can fuse on one device"),
                "a graph and placement with at least one fusible pair (sim::can_fuse)");
        if (t.fusion && t.placement) {  // the single-device placement has every pair there is
            if (baselines::priority_fuser<D, Cost>(*sims_[0], sim::placement(n, 0)).num_pairs() == 0)
                throw nothing_to_decide(who,
                                        concat("graph '", g.name(), "' has no producer/consumer pair that can fuse"),
                                        "a graph with at least one fusible pair (sim::can_fuse)");
        }
        active_.assign(n, 0);
        for (graph::op_id o = 0; o < n; ++o) active_[o] = is_source(o) ? 0 : 1;
        // priors_[0]: level_prior's, the mode's; priors_[1 + q]: level_priors[q]'s
        priors_.assign(1 + config_.level_priors.size(), std::vector<double>(s_levels_ * f_levels_));
        for (std::size_t r = 0; r < priors_.size(); ++r) {
            const double weight = r == 0 ? config_.level_prior : config_.level_priors[r - 1];
            for (std::size_t s = 0; s < s_levels_; ++s)
                for (std::size_t f = 0; f < f_levels_; ++f)
                    priors_[r][s * f_levels_ + f] = static_cast<double>(
                        static_cast<float>(-weight * (distance(s, s_levels_) + distance(f, f_levels_))));
        }
        tau_ = mean_fastest_op_time(*sims_[0], config_.temperature);
        // the reward's reference: the heuristic pipeline (zero logits, greedy)
        const nn::matrix<double> zero =
            nn::matrix<double>::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(num_choices()));
        heuristic_actions_ = decode(features_, zero, 0, true, 0).actions;
        heuristic_ = decide(heuristic_actions_);
        reference_ =
            sims_[0]->run(heuristic_.placement,
                          {.priorities = heuristic_.priorities, .fusion = heuristic_.fusion, .record_trace = false});
        if (!(reference_.step_time > 0))
            throw nothing_to_decide(who, "the heuristic pipeline's step takes no time (nothing to improve)",
                                    "a step time > 0");
    }
    /// The task keeps references to its graph and cluster (as sim::simulator does): temporaries are refused.
    joint_task(graph::computation_graph&&, const device::cluster<D>&, Cost = Cost{}, joint_config = {}) = delete;
    joint_task(const graph::computation_graph&, device::cluster<D>&&, Cost = Cost{}, joint_config = {}) = delete;

    // ---- rl::Environment
    template <std::uniform_random_bit_generator Rng> const observation& observe(Rng&) const { return features_; }
    std::size_t num_choices() const { return devices_ * s_levels_ * f_levels_; }
    std::span<const std::uint8_t> active() const { return active_; }
    void set_workers(std::size_t k) {
        while (sims_.size() < k) sims_.push_back(std::make_unique<sim::simulator<D, Cost>>(*g_, *c_, cost_));
    }
    outcome evaluate(const observation&, std::span<const int> actions, std::size_t worker) {
        try {
            return outcome_of(score(decide(actions, worker), worker));
        } catch (const sim::decision_refused&) {
            return {.reward = config_.invalid_reward, .step_time = 0, .oom = false, .valid = false};
        }
    }

    // ---- rl::GuidedEnvironment
    bool guided() const noexcept { return true; }
    /// @brief The decoder (see the file comment), from a generator seeded by `seed` (greedy: the most
    /// likely choice at every step). With placement decided, m-ETF draws each op's product row where
    /// it reaches the op; an op it forces (a colocation group placed before, no room anywhere) and
    /// every op when placement is fixed draws its levels among the product choices of its device.
    /// Sources take the middle levels and carry no choice.
    rl::guided_sample decode(const observation&, const nn::matrix<double>& logits, std::uint64_t seed, bool greedy,
                             std::size_t worker) {
        const std::size_t n = g_->num_ops(), k = num_choices(), levels = s_levels_ * f_levels_;
        if (worker >= sims_.size())
            throw error("tasks::joint_task", concat("worker ", worker),
                        concat("below ", sims_.size(), " (set_workers)"));
        if (static_cast<std::size_t>(logits.rows()) != n || static_cast<std::size_t>(logits.cols()) != k)
            throw error("tasks::joint_task", concat(logits.rows(), " x ", logits.cols(), " logits"),
                        concat(n, " x ", k, " (ops x devices x levels)"));
        rl::guided_sample out = unopened_sample(n, k);
        std::vector<std::uint8_t> drawn(n, 0);
        std::mt19937_64 rng(seed);
        double strength = config_.anchor_strength;
        const auto& ladder = config_.anchor_strengths;
        if (!greedy && config_.tasks.placement && !config_.anchor.empty() && !ladder.empty()) {
            const std::size_t rung = draw_rung(ladder.size(), rng);
            strength = ladder[rung];
            out.stratum = static_cast<std::uint32_t>(rung);
        }
        const std::vector<double>* prior = &priors_[0];
        if (!greedy && levels > 1 && !config_.level_priors.empty()) {
            const std::size_t rung = draw_rung(config_.level_priors.size(), rng);
            prior = &priors_[1 + rung];
            out.stratum = static_cast<std::uint32_t>(out.stratum * config_.level_priors.size() + rung);
        }
        std::vector<double> total(k);
        // one row: the product choices of the devices with a finite score, the prior on their levels
        auto draw_row = [&](graph::op_id o, std::span<const double> device_score) {
            const auto oo = static_cast<Eigen::Index>(o);
            for (std::size_t q = 0; q < devices_; ++q)
                for (std::size_t l = 0; l < levels; ++l) {
                    const std::size_t a = q * levels + l;
                    const double b = device_score[q] == -std::numeric_limits<double>::infinity()
                                         ? device_score[q]
                                         : static_cast<double>(static_cast<float>(device_score[q] + (*prior)[l]));
                    out.bias(oo, static_cast<Eigen::Index>(a)) = static_cast<float>(b);
                    total[a] = logits(oo, static_cast<Eigen::Index>(a)) + b;
                }
            drawn[o] = 1;
            out.actions[o] = static_cast<int>(draw_from_scores(total, greedy, rng));
            return static_cast<sim::device_id>(static_cast<std::size_t>(out.actions[o]) / levels);
        };
        sim::placement p = config_.placement;
        std::vector<double> anchored(devices_);
        if (config_.tasks.placement)
            p = guided_earliest_task_first(
                    *sims_[worker], config_.guide, tau_,
                    [&](graph::op_id o, std::span<const double> score, sim::device_id best) {
                        if (config_.anchor.empty()) return draw_row(o, score);
                        std::copy(score.begin(), score.end(), anchored.begin());
                        anchor_scores(anchored, config_.anchor[o], best, strength);
                        return draw_row(o, anchored);
                    },
                    config_.anchor)
                    .placement;
        std::vector<double> only(devices_);
        const std::size_t middle = (s_levels_ / 2) * f_levels_ + f_levels_ / 2;
        for (graph::op_id o = 0; o < n; ++o) {
            if (drawn[o]) continue;
            const std::size_t q = config_.tasks.placement ? p[o] : 0;
            if (is_source(o)) {  // no choice: its device at the middle levels
                const auto oo = static_cast<Eigen::Index>(o);
                out.actions[o] = static_cast<int>(q * levels + middle);
                out.bias(oo, static_cast<Eigen::Index>(out.actions[o])) = 0;
                continue;
            }
            std::fill(only.begin(), only.end(), -std::numeric_limits<double>::infinity());
            only[q] = 0;
            draw_row(o, only);
        }
        return out;
    }

    // ---- tasks::Task
    std::size_t num_nodes() const { return g_->num_ops(); }
    /// @throws goopt::error (not a refusal) for an action count other than one per op; a
    /// sim::decision_refused for a choice out of range.
    sim::decision decide(std::span<const int> actions) const { return decide(actions, 0); }
    sim::simulation_result score(const sim::decision& d, std::size_t worker) {
        if (worker >= sims_.size())
            throw error("tasks::joint_task", concat("worker ", worker),
                        concat("below ", sims_.size(), " (set_workers)"));
        return sim::run(*sims_[worker], d);
    }
    double reward(const sim::simulation_result& r) const {
        return step_reward(r, reference_.step_time, *c_, config_.oom_penalty);
    }
    outcome outcome_of(const sim::simulation_result& r) const {
        return {.reward = reward(r), .step_time = r.step_time, .oom = r.oom, .valid = true};
    }

    /// The heuristic pipeline (zero logits, greedy) and its actions and simulation (the reference).
    const sim::decision& heuristic_decision() const noexcept { return heuristic_; }
    const std::vector<int>& heuristic_actions() const noexcept { return heuristic_actions_; }
    const sim::simulation_result& reference() const noexcept { return reference_; }
    const joint_config& config() const noexcept { return config_; }
    sim::simulator<D, Cost>& simulator() { return *sims_[0]; }
    const graph::computation_graph& graph() const noexcept { return *g_; }

private:
    bool is_source(graph::op_id o) const { return g_->get_op(o).spec().has(ops::source); }
    static double distance(std::size_t level, std::size_t count) {
        return std::abs(static_cast<double>(level) - static_cast<double>(count / 2));
    }

    sim::decision decide(std::span<const int> actions, std::size_t worker) const {
        const std::size_t n = g_->num_ops(), levels = s_levels_ * f_levels_;
        if (actions.size() != n)
            throw error("tasks::joint_task", concat(actions.size(), " actions"), concat("one per op (", n, ")"));
        const sim::simulator<D, Cost>& s = *sims_[std::min(worker, sims_.size() - 1)];
        sim::decision d{.placement = config_.placement, .priorities = {}, .fusion = {}};
        if (config_.tasks.placement) d.placement.assign(n, 0);
        std::vector<int> s_level(n), f_level(n);
        for (graph::op_id o = 0; o < n; ++o) {
            const int a = actions[o];
            if (a < 0 || static_cast<std::size_t>(a) >= num_choices())
                throw sim::decision_refused("tasks::joint_task", concat("action ", a, " of op ", g_->describe(o)),
                                            concat("a choice in [0, ", num_choices(), ")"));
            const auto u = static_cast<std::size_t>(a);
            if (config_.tasks.placement) d.placement[o] = static_cast<sim::device_id>(u / levels);
            s_level[o] = static_cast<int>((u % levels) / f_levels_) - static_cast<int>(s_levels_ / 2);
            f_level[o] = static_cast<int>(u % f_levels_);
        }
        if (config_.tasks.scheduling) {
            d.priorities =
                config_.priorities.empty() ? baselines::critical_path_priorities(s, d.placement) : config_.priorities;
            const auto [lo, hi] = std::minmax_element(d.priorities.begin(), d.priorities.end());
            double reach = std::max({1e-12, *hi, -*lo});
            if (*lo == *hi) {  // FIFO's base (ties go to the op ready first): levels step as on the critical path
                const auto cp = baselines::critical_path_priorities(s, d.placement);
                const auto [a, b] = std::minmax_element(cp.begin(), cp.end());
                reach = std::max({1e-12, *b, -*a});
            }
            const double scale = config_.scheduling_step * reach;
            for (graph::op_id o = 0; o < n; ++o)
                if (active_[o]) d.priorities[o] += s_level[o] * scale;
        }
        if (config_.tasks.fusion) {
            const baselines::priority_fuser<D, Cost> fuser(s, d.placement);
            const double scale = config_.fusion_step * std::max(fuser.max_benefit(), 1e-12);
            fusion_levels levels;
            levels.assign(f_level, active_, static_cast<int>(f_levels_ / 2), scale,
                          config_.anchor_fusion != fusion_anchor::none);
            d.fusion = levels.run(fuser, anchor_groups(*g_, fuser, config_.anchor_fusion, config_.fusion_groups));
        }
        return d;
    }

    const graph::computation_graph* g_;
    const device::cluster<D>* c_;
    Cost cost_;
    joint_config config_;
    observation features_;
    std::vector<std::unique_ptr<sim::simulator<D, Cost>>> sims_;
    std::vector<std::uint8_t> active_;
    std::vector<std::vector<double>> priors_;  // per rung, per (scheduling level, fusion level), float-rounded
    std::size_t devices_ = 1, s_levels_ = 1, f_levels_ = 1;
    double tau_ = 1;
    sim::decision heuristic_;
    std::vector<int> heuristic_actions_;
    sim::simulation_result reference_;
};

/// The first stage of the joint curriculum: `config`'s levels decided with the placement fixed at
/// its anchor (placement not decided, no anchor), the task widen_to_placement starts from.
/// @throws goopt::error for a config that decides no placement or has no anchor.
inline joint_config levels_at_anchor(const joint_config& config) {
    if (!config.tasks.placement || config.anchor.empty())
        throw error("tasks::levels_at_anchor", "a config without placement decided or without an anchor",
                    "placement among the tasks and an anchor placement");
    joint_config fixed = config;
    fixed.tasks.placement = false;
    fixed.placement = config.anchor;
    fixed.anchor = {};
    return fixed;
}

/// @brief `config` anchored on `best`, a decision of its task (tasks::train_joint's rounds): the
/// placement decided departs from best's placement, the scheduling levels shift best's priorities,
/// the fusion levels depart from best's groups (fusion_anchor::given). Zero logits decoded greedily
/// then give `best` again wherever the anchored decoder keeps every op on its anchor's device, so a
/// fresh policy on the result searches the neighbourhood of `best`.
/// A decision without priorities (FIFO) gives equal priorities, FIFO's base.
/// @throws goopt::error for priorities or fusion groups of another op count.
inline joint_config anchored_on(const joint_config& config, const sim::decision& best) {
    constexpr const char* who = "tasks::anchored_on";
    const std::size_t n = best.placement.size();
    joint_config c = config;
    if (config.tasks.placement) c.anchor = best.placement;
    if (config.tasks.scheduling) {  // a decision without priorities runs FIFO: equal priorities
        c.priorities = best.priorities.empty() ? std::vector<double>(n, 0.0) : best.priorities;
        if (c.priorities.size() != n)
            throw error(who, concat("a decision with ", best.priorities.size(), " priorities"),
                        concat("one per op (", n, "), or none"));
    }
    if (config.tasks.fusion) {
        c.anchor_fusion = fusion_anchor::given;
        c.fusion_groups = best.fusion.empty() ? sim::fusion_groups(n, sim::no_group) : best.fusion;
        if (c.fusion_groups.size() != n)
            throw error(who, concat("a decision with ", best.fusion.size(), " fusion groups"),
                        concat("one per op (", n, "), or none"));
    }
    return c;
}

/// @brief A curriculum step for the joint task: `joint` (a fresh policy of the task with placement
/// decided, `devices` device blocks of L level choices each) takes every parameter of `levels` (a
/// policy trained on the same graph with placement fixed: L choices per op), and the first head's
/// column of each level choice goes to that choice in every device block. The joint policy then
/// decides the levels as the trained one does on whichever device the decoder takes, and the
/// devices stay as its anchor's scores rank them: it starts where the levels-only policy ended.
/// Learning placement, scheduling and fusion at once from scratch spends the samples on placement
/// departures, which mostly cost time, before the levels have learned anything (the pair with
/// placement fixed beat the joint policy on every --quick row).
/// @throws goopt::error for networks of different shapes, or a head of other than devices x L columns.
template <class Net> void widen_to_placement(Net& levels, Net& joint, std::size_t devices) {
    auto from = levels.parameters();
    auto to = joint.parameters();
    if (from.size() != to.size() || devices == 0)
        throw error("tasks::widen_to_placement", concat(from.size(), " and ", to.size(), " parameters"),
                    "two policies of one shape but the first head's choices, and at least one device");
    for (std::size_t i = 0; i < from.size(); ++i) {
        auto& a = from[i]->value;
        auto& b = to[i]->value;
        if (from[i]->name != to[i]->name || a.rows() != b.rows())
            throw error("tasks::widen_to_placement", concat("parameter '", to[i]->name, "'"),
                        concat("'", from[i]->name, "' of the same shape"));
        if (a.cols() == b.cols()) {
            b = a;
            continue;
        }
        const auto l = a.cols();
        if (!to[i]->name.starts_with("task0.head") || b.cols() != l * static_cast<Eigen::Index>(devices))
            throw error("tasks::widen_to_placement", concat("parameter '", to[i]->name, "' of ", b.cols(), " columns"),
                        concat(devices, " x ", l, " (one block of level choices per device)"));
        for (std::size_t q = 0; q < devices; ++q) b.middleCols(static_cast<Eigen::Index>(q) * l, l) = a;
    }
}

static_assert(Task<joint_task<device::device_spec>>);
static_assert(rl::GuidedEnvironment<joint_task<device::device_spec>>);

}  // namespace goopt::tasks
