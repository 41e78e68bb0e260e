#pragma once
/// @file
/// @brief Learned device placement in one call: the GO policy trained by PPO on the placement task
/// of one graph (GO-one, NeurIPS'20 §4), with an optional warm start and checkpoints; and one policy
/// pre-trained across graphs (GO's generalization setting, NeurIPS'20 §5.3) to start from.

#include <goopt/error.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/rl/progress.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/tasks/placement.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::tasks {

/// Everything train_placement can be told.
struct placement_config {
    rl::ppo_config ppo = {};
    /// The network; task_choices is set to the cluster's device count.
    nn::policy_config policy = {};
    placement_task_config task = {};
    /// Decision to imitate before PPO (for ppo.imitation_steps steps), e.g. the best heuristic's;
    /// empty: no warm start.
    sim::placement warm_start = {};
    /// A decision scored before training and kept as the best seen until a sample or mode beats it,
    /// so that training never returns worse: give the imitated heuristic's own decision (with its
    /// priorities) to never lose to it. Default with a warm start: the warm-start placement under
    /// the task's schedule (placement_task::decision_of); without one: none.
    std::optional<sim::decision> incumbent = {};
    /// Checkpoint file; empty: none. Written every `checkpoint_every` updates (0: at the end only) and
    /// at the end, atomically.
    std::filesystem::path checkpoint = {};
    std::size_t checkpoint_every = 0;
    /// Continue from `checkpoint` (it must exist and match: see rl::ppo::load_checkpoint).
    bool resume = false;
    /// A pre-trained policy to start from (a checkpoint of pretrain_placement or train_placement for
    /// as many devices and the same network shape): its weights and Adam's moments, then the warm
    /// start (if any) and `ppo.updates` more updates on this graph, drawn from the caller's generator.
    /// Empty: freshly initialized weights.
    std::filesystem::path pretrained = {};
    rl::progress_config progress = {};
};

/// Where the best decision of a training came from.
enum class best_source : std::uint8_t {
    none,       ///< nothing evaluated
    incumbent,  ///< placement_config::incumbent (or the warm start's placement), never beaten
    sample,     ///< a sampled decision
    mode,       ///< the policy's mode (most likely device per op) after some update
};

/// What train_placement returns.
struct placement_result {
    sim::scored_decision best;  ///< the best decision seen (fits in memory first, then step time)
    best_source best_from = best_source::none;
    /// 1-based index of the sample that found it (best_from == sample), or of the update whose mode
    /// it is (mode); 0 otherwise.
    std::size_t best_sample = 0;
    std::size_t updates = 0;  ///< PPO updates done in total (with those before a resume)
    std::size_t samples = 0;  ///< decisions simulated in total
    double seconds = 0;       ///< wall time of this call
};

/// What pretrain_placement returns.
struct pretrain_result {
    std::vector<sim::scored_decision> best;  ///< per graph, the best decision sampled on it
    std::size_t updates = 0;                 ///< PPO updates done, over all graphs
    std::size_t samples = 0;                 ///< decisions simulated, over all graphs
    double seconds = 0;
};

namespace detail {
/// Fits in memory first, then the shorter step; a decision the simulator refused loses.
template <class Outcome> bool better_outcome(const Outcome& a, const Outcome& b) {
    if (a.valid != b.valid) return a.valid;
    if (a.oom != b.oom) return !a.oom;
    return a.step_time < b.step_time;
}
}  // namespace detail

/// @brief Trains a GO policy with PPO to place `g`'s ops on `c` and returns the best decision it
/// saw (the incumbent, a sample or the policy's mode at some update), with its simulation.
/// Randomness comes from `rng` alone: the network's initial weights, every sampled decision and
/// minibatch order, so the same seed gives the same result on any `config.ppo.threads`, and a run
/// resumed from its checkpoint ends exactly as an uninterrupted one.
/// @param visitor an rl::PpoVisitor over placement_task outcomes (progress, early stop).
/// @throws goopt::error for a bad configuration, graph or cluster, or an unusable checkpoint.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng,
          class Visitor = rl::null_visitor>
requires rl::SerializableRng<Rng> placement_result train_placement(const graph::computation_graph& g,
                                                                   const device::cluster<D>& c, const Cost& cost,
                                                                   const placement_config& config, Rng& rng,
                                                                   Visitor&& visitor = {}) {
    const auto t0 = std::chrono::steady_clock::now();
    if (config.resume && config.checkpoint.empty())
        throw error("tasks::train_placement", "resume without a checkpoint path", "a checkpoint path");
    if (config.resume && !config.pretrained.empty())
        throw error("tasks::train_placement", "both resume and a pre-trained policy are asked for", "one of them");
    if (!config.warm_start.empty() && config.ppo.imitation_steps == 0)
        throw error("tasks::train_placement", "a warm-start placement is given but ppo.imitation_steps is 0",
                    "ppo.imitation_steps >= 1 with a warm start");
    placement_task<D, Cost> task(g, c, cost, config.task);
    nn::policy_config pc = config.policy;
    pc.task_choices = {c.num_devices()};
    nn::go_policy<float> net(pc, rng);
    rl::ppo<placement_task<D, Cost>> trainer(task, net, config.ppo);
    if (!config.pretrained.empty()) {
        const Rng own = rng;  // the weights come from the file, the randomness from the caller
        trainer.load_checkpoint(config.pretrained, rng);
        rng = own;
        trainer.set_environment(task);
        trainer.set_updates(trainer.updates_done() + config.ppo.updates);
    }
    if (!config.warm_start.empty()) {
        task.simulator().check_placement(config.warm_start);
        trainer.set_imitation_target(task.actions_of(config.warm_start));
    } else if (config.ppo.imitation_steps > 0) {
        throw error("tasks::train_placement", concat("ppo.imitation_steps is ", config.ppo.imitation_steps),
                    "a warm-start placement to imitate");
    }

    std::vector<int> best_actions;  // of a sample or mode (best_from sample or mode)
    typename placement_task<D, Cost>::outcome best{};
    std::size_t best_sample = 0;
    best_source best_from = best_source::none;
    std::optional<sim::decision> incumbent = config.incumbent;
    if (!incumbent && !config.warm_start.empty()) incumbent = task.decision_of(config.warm_start);
    if (incumbent) {  // scored first: a malformed incumbent is an error here, not a lost sample
        task.simulator().check_placement(incumbent->placement);
        best = task.outcome_of(task.score(*incumbent, 0));
        best_from = best_source::incumbent;
    }
    auto better = [](const auto& a, const auto& b) { return detail::better_outcome(a, b); };
    // the caller's state in a checkpoint: the best decision so far
    auto pack = [&] {
        std::string s;
        rl::detail::put(s, static_cast<std::uint64_t>(best_actions.size()));
        s.append(reinterpret_cast<const char*>(best_actions.data()), best_actions.size() * sizeof(int));
        rl::detail::put(s, best.reward);  // field by field: the struct's padding is not state
        rl::detail::put(s, best.step_time);
        rl::detail::put(s, static_cast<std::uint8_t>(best.oom));
        rl::detail::put(s, static_cast<std::uint8_t>(best.valid));
        rl::detail::put(s, static_cast<std::uint64_t>(best_sample));
        rl::detail::put(s, static_cast<std::uint8_t>(best_from));
        return s;
    };
    if (config.resume) {
        const std::string s = trainer.load_checkpoint(config.checkpoint, rng);
        std::uint64_t len = 0, at = 0;
        const std::string where = concat("tasks::train_placement: checkpoint '", config.checkpoint.string(), "'");
        if (s.size() < 8) throw error(where, "no best decision recorded");
        std::memcpy(&len, s.data(), 8);
        if (len != 0 && len != g.num_ops())
            throw error(where, concat("made for a graph of ", len, " ops"), concat(g.num_ops(), ", as this graph has"));
        const std::size_t record = 8 + 8 + 1 + 1 + 8 + 1;  // reward, step time, oom, valid, sample, source
        if (s.size() != 8 + len * sizeof(int) + record)
            throw error(where, concat("the best decision record has ", s.size(), " bytes"),
                        concat(8 + len * sizeof(int) + record, " bytes"));
        best_actions.resize(len);
        const char* p = s.data() + 8;
        if (len != 0) std::memcpy(best_actions.data(), p, len * sizeof(int));  // (no null pointer to memcpy)
        p += len * sizeof(int);
        std::uint8_t oom = 0, valid = 0, from = 0;
        std::memcpy(&best.reward, p, 8);
        std::memcpy(&best.step_time, p + 8, 8);
        std::memcpy(&oom, p + 16, 1);
        std::memcpy(&valid, p + 17, 1);
        std::memcpy(&at, p + 18, 8);
        std::memcpy(&from, p + 26, 1);
        const auto src = static_cast<best_source>(from);
        const bool has_actions = src == best_source::sample || src == best_source::mode;
        if (from > static_cast<std::uint8_t>(best_source::mode) || has_actions != (len != 0) ||
            (src == best_source::incumbent && !incumbent))
            throw error(where, concat("a best decision of source ", int{from}, " with ", len, " actions"),
                        "a sample's or mode's actions, or the incumbent (warm start) this run is given");
        best.oom = oom != 0;
        best.valid = valid != 0;
        best_sample = at;
        best_from = static_cast<best_source>(from);
    }
    rl::progress_config progress = config.progress;
    progress.total_updates = trainer.config().updates;
    progress.append = progress.append || config.resume;
    rl::progress_reporter reporter(progress);
    struct watcher {
        decltype(best_actions)& actions;
        decltype(best)& top;
        std::size_t& top_sample;
        best_source& top_from;
        decltype(better)& is_better;
        std::size_t sample;
        rl::progress_reporter& out;
        Visitor& user;
        decltype(trainer)& ppo;
        const placement_config& cfg;
        decltype(pack)& state;
        Rng& rng;
        void consider(std::span<const int> a, const typename placement_task<D, Cost>::outcome& o, best_source from,
                      std::size_t index) {
            if (top_from == best_source::none || is_better(o, top)) {
                actions.assign(a.begin(), a.end());
                top = o;
                top_sample = index;
                top_from = from;
            }
        }
        void on_sample(std::span<const int> a, const typename placement_task<D, Cost>::outcome& o) {
            consider(a, o, best_source::sample, ++sample);
            user.on_sample(a, o);
        }
        void on_mode(std::span<const int> a, const typename placement_task<D, Cost>::outcome& o) {
            consider(a, o, best_source::mode, ppo.updates_done() + 1);  // during that update
            rl::notify_mode(user, a, o);
        }
        bool on_update(const rl::update_stats& s) {
            out.report(s, "best ms", top.step_time * 1e3,
                       {{"best_ms", top.step_time * 1e3}, {"best_oom", top.oom ? 1.0 : 0.0}});
            if (!cfg.checkpoint.empty() && cfg.checkpoint_every > 0 && s.update % cfg.checkpoint_every == 0)
                ppo.save_checkpoint(cfg.checkpoint, rng, state());
            return user.on_update(s);
        }
    };
    watcher w{best_actions, best,    best_sample, best_from, better, trainer.samples_done(),
              reporter,     visitor, trainer,     config,    pack,   rng};
    trainer.train(rng, w);
    if (!config.checkpoint.empty()) trainer.save_checkpoint(config.checkpoint, rng, pack());

    placement_result r;
    r.updates = trainer.updates_done();
    r.samples = trainer.samples_done();
    r.best_sample = best_sample;
    r.best_from = best_from;
    if (best_from == best_source::incumbent) r.best.decision = *incumbent;
    else if (best_from != best_source::none) r.best.decision = task.decide(best_actions);
    if (best_from != best_source::none) r.best.result = sim::run(task.simulator(), r.best.decision);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

/// @brief Pre-trains one GO policy to place the ops of every graph of `graphs` on `c` (GO's
/// generalization setting, NeurIPS'20 §5.3): PPO updates visit the graphs in turn,
/// `updates_per_graph` at a time, until `config.ppo.updates` in all; the network and Adam's moments
/// are shared, the reward baseline is each graph's own. Writes the policy to `config.checkpoint`
/// (required, atomically) after every round over the graphs and at the end; train_placement starts
/// from it with `placement_config::pretrained`. Randomness comes from `rng` alone.
/// `config.warm_start`, `config.incumbent`, `config.resume` and `config.progress` are not used (a
/// warm start belongs to one graph): they must be left empty, false and as they are. The best per
/// graph is taken over samples and modes.
/// @param visitor an rl::PpoVisitor over placement_task outcomes; its on_update may stop the run.
/// @throws goopt::error for no graph, no checkpoint path, a warm start, or a bad configuration.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng,
          class Visitor = rl::null_visitor>
requires rl::SerializableRng<Rng> pretrain_result pretrain_placement(std::span<const graph::computation_graph> graphs,
                                                                     const device::cluster<D>& c, const Cost& cost,
                                                                     const placement_config& config,
                                                                     std::size_t updates_per_graph, Rng& rng,
                                                                     Visitor&& visitor = {}) {
    const auto t0 = std::chrono::steady_clock::now();
    constexpr std::string_view who = "tasks::pretrain_placement";
    if (graphs.empty()) throw error(who, "no graph given", "at least one graph");
    if (config.checkpoint.empty()) throw error(who, "no checkpoint path", "config.checkpoint: where the policy goes");
    if (!config.warm_start.empty() || config.incumbent || config.ppo.imitation_steps > 0 || config.resume)
        throw error(who, "a warm start, incumbent or resume is asked for", "none: they belong to one graph");
    if (updates_per_graph == 0) throw error(who, "updates_per_graph is 0", "at least 1");
    using task_type = placement_task<D, Cost>;
    std::vector<std::unique_ptr<task_type>> tasks;
    for (const auto& g : graphs) tasks.push_back(std::make_unique<task_type>(g, c, cost, config.task));
    nn::policy_config pc = config.policy;
    pc.task_choices = {c.num_devices()};
    nn::go_policy<float> net(pc, rng);
    rl::ppo<task_type> trainer(*tasks.front(), net, config.ppo);

    struct best_of {
        std::vector<int> actions;
        typename task_type::outcome top{};
    };
    std::vector<best_of> best(graphs.size());
    struct watcher {
        best_of* now;
        Visitor& user;
        bool stopped = false;
        void on_sample(std::span<const int> a, const typename task_type::outcome& o) {
            keep(a, o);
            user.on_sample(a, o);
        }
        void on_mode(std::span<const int> a, const typename task_type::outcome& o) {
            keep(a, o);
            rl::notify_mode(user, a, o);
        }
        void keep(std::span<const int> a, const typename task_type::outcome& o) {
            if (now->actions.empty() || detail::better_outcome(o, now->top)) {
                now->actions.assign(a.begin(), a.end());
                now->top = o;
            }
        }
        bool on_update(const rl::update_stats& s) {
            stopped = !user.on_update(s);
            return !stopped;
        }
    } w{best.data(), visitor};
    for (std::size_t k = 0; !w.stopped && trainer.updates_done() < config.ppo.updates; k = (k + 1) % tasks.size()) {
        trainer.set_environment(*tasks[k]);
        trainer.set_updates(std::min(config.ppo.updates, trainer.updates_done() + updates_per_graph));
        w.now = &best[k];
        trainer.train(rng, w);
        if (k + 1 == tasks.size()) trainer.save_checkpoint(config.checkpoint, rng);
    }
    trainer.save_checkpoint(config.checkpoint, rng);

    pretrain_result r;
    r.updates = trainer.updates_done();
    r.samples = trainer.samples_done();
    for (std::size_t k = 0; k < tasks.size(); ++k) {
        sim::scored_decision d;
        if (!best[k].actions.empty()) {
            d.decision = tasks[k]->decide(best[k].actions);
            d.result = sim::run(tasks[k]->simulator(), d.decision);
        }
        r.best.push_back(std::move(d));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace goopt::tasks
