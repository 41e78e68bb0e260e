#pragma once
/// @file
/// @brief One trainer for every decision task (mlpack's QLearning shape: the trainer owns the
/// loop, a task supplies its action space, decide and reward): rl::ppo on a tasks::Task, plus what
/// every task needs around it and only placement had: incumbents scored first and the best decision
/// seen kept, the warm start and how well it imitated, checkpoints and resume, and a visitor that
/// sees everything (the library prints nothing; a program attaches a reporter). GO (NeurIPS'20 §3).

#include <goopt/error.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulation_result.hpp>
#include <goopt/tasks/concepts.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace goopt::tasks {

/// @brief An outcome the trainer can rank: fits in memory first, then the shorter step; a decision
/// the simulator refused loses. Models: placement_task::outcome.
/// @code
///   o.reward -> double; o.step_time -> double (seconds); o.oom -> bool; o.valid -> bool
/// @endcode
template <class O>
concept RankedOutcome = requires(const O& o) {
    { o.reward } -> std::convertible_to<double>;
    { o.step_time } -> std::convertible_to<double>;
    { o.oom } -> std::convertible_to<bool>;
    { o.valid } -> std::convertible_to<bool>;
};

/// @brief A Task tasks::train runs: its outcome ranks, and it turns any simulated decision (an
/// incumbent's too) into an outcome. Models: tasks::placement_task.
/// @code
///   t.outcome_of(result) -> T::outcome   // result: const sim::simulation_result&
/// @endcode
template <class T>
concept TrainableTask = Task<T> && RankedOutcome<typename T::outcome> &&
    requires(const T& t, const sim::simulation_result& r) {
    { t.outcome_of(r) } -> std::same_as<typename T::outcome>;
};

/// Where the best decision of a training came from.
enum class best_source : std::uint8_t {
    none,       ///< nothing evaluated
    incumbent,  ///< one of train_config::incumbents, never beaten
    sample,     ///< a sampled decision
    mode,       ///< the policy's mode (most likely action per node) after some update
};

/// Everything tasks::train can be told.
struct train_config {
    rl::ppo_config ppo = {};
    /// Actions to imitate before PPO (one per node, for ppo.imitation_steps steps), e.g. a
    /// heuristic's decision; empty: no warm start.
    std::vector<int> imitate = {};
    /// Decisions scored before training; the best of them is kept as the best seen until a sample
    /// or mode beats it, so that training never returns worse than any of them (give the heuristics'
    /// own decisions, each with its own priorities).
    std::vector<sim::decision> incumbents = {};
    /// Checkpoint file; empty: none. Written every `checkpoint_every` updates (0: at the end only) and
    /// at the end, atomically.
    std::filesystem::path checkpoint = {};
    std::size_t checkpoint_every = 0;
    /// Continue from `checkpoint` (it must exist and match this task and network).
    bool resume = false;
    /// A pre-trained policy to start from (a checkpoint of a network of the same shape and action
    /// count): its weights and Adam's moments, then the warm start (if any) and `ppo.updates` more
    /// updates, drawn from the caller's generator. Empty: the network as given.
    std::filesystem::path pretrained = {};
    /// Called once the `pretrained` policy is loaded, before the warm start and any update: e.g.
    /// tasks::start_from_heuristic, to fine-tune from the decoder's heuristic on the pre-trained trunk.
    std::function<void()> after_pretrained = {};
};

/// What tasks::train returns.
struct train_result {
    sim::scored_decision best;  ///< the best decision seen, with its simulation
    best_source best_from = best_source::none;
    /// incumbent: its 0-based index in train_config::incumbents; sample: the 1-based index of the
    /// sample that found it; mode: the 1-based update whose mode it is.
    std::size_t best_index = 0;
    std::size_t updates = 0;  ///< PPO updates done in total (with those before a resume)
    std::size_t samples = 0;  ///< decisions simulated in total
    /// After the warm start: the share of active nodes whose most likely action is the imitated one;
    /// -1 without a warm start.
    double imitation_agreement = -1;
    /// After a warm start with ppo.imitation_min_agreement: the policy's mode's simulated step / the
    /// imitated decision's - 1 (ppo.imitation_max_mode_gap bounds it); NaN otherwise.
    double imitation_mode_gap = std::numeric_limits<double>::quiet_NaN();
    std::size_t imitation_steps = 0;  ///< cross-entropy steps the warm start took (0 without one)
    /// After a warm start through a guided decoder in this call: the active nodes the decoder keeps
    /// from the target whatever the policy's logits (rl::imitation_reach), so a low agreement can be
    /// told apart from a target the decoder cannot reproduce. Zeros otherwise (and after a resume).
    rl::imitation_reach imitation_reach{};
    double seconds = 0;  ///< wall time of this call
};

/// @brief Trains `net` with PPO on `task` and returns the best decision it saw: the best incumbent,
/// a sample, or the policy's mode after some update. Randomness comes from `rng` alone, so the same
/// seed gives the same result on any `config.ppo.threads`, and a run resumed from its checkpoint
/// ends exactly as an uninterrupted one.
/// @param visitor an rl::PpoVisitor over the task's outcomes (progress, early stop); an optional
/// `v.on_best(outcome)` is told every time the best decision changes (incumbents included).
/// @throws goopt::error for a bad configuration, a malformed incumbent, or an unusable checkpoint;
/// an error of the task's own evaluation propagates.
template <TrainableTask T, class Net, rl::SerializableRng Rng, class Visitor = rl::null_visitor>
requires rl::ActorCritic<Net, typename T::observation> train_result train(T& task, Net& net, const train_config& config,
                                                                          Rng& rng, Visitor&& visitor = {});

// ---- implementation ----

namespace detail {

/// Fits in memory first, then the shorter step; a decision the simulator refused loses.
template <RankedOutcome Outcome> bool better_outcome(const Outcome& a, const Outcome& b) {
    if (a.valid != b.valid) return a.valid;
    if (a.oom != b.oom) return !a.oom;
    return a.step_time < b.step_time;
}

/// The tag and version of train()'s own io::binary_record, kept in a PPO checkpoint's extra bytes.
/// Version 1 was a bare list of little-endian words without a header; version 2 is a record.
inline constexpr std::string_view train_record_tag = "goopt-train";
inline constexpr std::uint32_t train_record_version = 2;

}  // namespace detail

template <TrainableTask T, class Net, rl::SerializableRng Rng, class Visitor>
requires rl::ActorCritic<Net, typename T::observation> train_result train(T& task, Net& net, const train_config& config,
                                                                          Rng& rng, Visitor&& visitor) {
    using outcome = typename T::outcome;
    const auto t0 = std::chrono::steady_clock::now();
    constexpr std::string_view who = "tasks::train";
    if (config.resume && config.checkpoint.empty()) throw error(who, "resume without a checkpoint path", "a path");
    if (config.resume && !config.pretrained.empty())
        throw error(who, "both resume and a pre-trained policy are asked for", "one of them");
    if (!config.imitate.empty() && config.ppo.imitation_steps == 0)
        throw error(who, "a decision to imitate is given but ppo.imitation_steps is 0",
                    "ppo.imitation_steps >= 1 with a warm start");
    if (config.imitate.empty() && config.ppo.imitation_steps > 0)
        throw error(who, concat("ppo.imitation_steps is ", config.ppo.imitation_steps), "a decision to imitate");
    rl::ppo<T, Net> trainer(task, net, config.ppo);
    if (!config.pretrained.empty()) {
        const Rng own = rng;  // the weights come from the file, the randomness from the caller
        trainer.load_checkpoint(config.pretrained, rng);
        rng = own;
        trainer.set_environment(task);
        trainer.set_updates(trainer.updates_done() + config.ppo.updates);
        if (config.after_pretrained) config.after_pretrained();
    }
    if (!config.imitate.empty()) trainer.set_imitation_target(config.imitate);

    std::vector<int> best_actions;  // of a sample or mode
    outcome best{};
    std::size_t best_index = 0;
    best_source best_from = best_source::none;
    double agreement = -1;
    double r_mode_gap = std::numeric_limits<double>::quiet_NaN();  // not in the checkpoint: NaN on resume
    std::size_t r_imitation_steps = 0;
    rl::imitation_reach r_reach{};
    auto notify_best = [&] {
        if constexpr (requires { visitor.on_best(best); }) visitor.on_best(best);
    };
    // incumbents first: a malformed one is an error here, not a lost sample
    for (std::size_t i = 0; i < config.incumbents.size(); ++i) {
        const outcome o = task.outcome_of(task.score(config.incumbents[i], 0));
        if (best_from == best_source::none || detail::better_outcome(o, best)) {
            best = o;
            best_index = i;
            best_from = best_source::incumbent;
        }
    }
    if (best_from != best_source::none) notify_best();

    // the trainer's state in a checkpoint: the best decision so far and the warm start's agreement
    auto pack = [&] {
        io::record_writer rec(detail::train_record_tag, detail::train_record_version);
        rec.u64(static_cast<std::uint64_t>(best_from)).u64(best_index);
        rec.f64(best.reward).f64(best.step_time).u64(best.oom ? 1 : 0).u64(best.valid ? 1 : 0);
        rec.f64(agreement).u64(best_actions.size());
        for (int a : best_actions) rec.i64(a);
        return rec.bytes();
    };
    if (config.resume) {
        const std::string where = concat(who, ": checkpoint '", config.checkpoint.string(), "'");
        io::record_reader in(trainer.load_checkpoint(config.checkpoint, rng), where, detail::train_record_tag,
                             detail::train_record_version);
        const auto from = in.u64("the best decision's source");
        const auto index = in.u64("the best decision's index");
        outcome o{};
        o.reward = in.f64("the best reward");
        o.step_time = in.f64("the best step time");
        o.oom = in.u64("the best decision's out-of-memory flag") != 0;
        o.valid = in.u64("the best decision's validity") != 0;
        const double a = in.f64("the warm start's agreement");
        const auto len = in.u64("the best decision's action count");
        if (from > static_cast<std::uint64_t>(best_source::mode))
            throw error(where, concat("a best decision of source ", from), "none, incumbent, sample or mode");
        const auto src = static_cast<best_source>(from);
        const bool has_actions = src == best_source::sample || src == best_source::mode;
        if (has_actions != (len != 0) || (len != 0 && len != task.num_nodes()) ||
            (src == best_source::incumbent && index >= config.incumbents.size()))
            throw error(where, concat("a best decision of source ", from, ", index ", index, " with ", len, " actions"),
                        concat("a sample's or mode's ", task.num_nodes(), " actions, or one of the ",
                               config.incumbents.size(), " incumbents this run is given"));
        if (src != best_source::none && (!std::isfinite(o.reward) || !std::isfinite(o.step_time) || o.step_time < 0))
            throw error(where, concat("a best decision of reward ", o.reward, " and step ", o.step_time, " s"),
                        "a finite reward and a finite step >= 0");
        if (!(a == -1 || (a >= 0 && a <= 1)))
            throw error(where, concat("a warm-start agreement of ", a), "-1 (none) or a share in [0, 1]");
        std::vector<int> actions(static_cast<std::size_t>(len));
        for (auto& x : actions) {
            const std::int64_t v = in.i64("an action of the best decision");
            // checked here, not when the decision is made at the end of the training
            if (v < 0 || static_cast<std::uint64_t>(v) >= task.num_choices())
                throw error(where, concat("an action ", v, " of the best decision"),
                            concat("a choice in [0, ", task.num_choices(), ")"));
            x = static_cast<int>(v);
        }
        in.finish();
        // a record without a best decision (a run that saw none, or none of these incumbents)
        // keeps the incumbents just scored: a resumed run never returns less than they give
        if (src != best_source::none) {
            best_actions = std::move(actions);
            best = o;
            best_index = static_cast<std::size_t>(index);
            best_from = src;
        }
        agreement = a;
    }

    struct watcher {
        T& task;
        std::vector<int>& actions;
        outcome& top;
        std::size_t& top_index;
        best_source& top_from;
        std::size_t sample;
        std::remove_reference_t<Visitor>& user;
        rl::ppo<T, Net>& ppo;
        const train_config& cfg;
        decltype(pack)& state;
        decltype(notify_best)& told;
        Rng& rng;
        void consider(std::span<const int> a, const outcome& o, best_source from, std::size_t index) {
            if (top_from == best_source::none || detail::better_outcome(o, top)) {
                actions.assign(a.begin(), a.end());
                top = o;
                top_index = index;
                top_from = from;
                told();
            }
        }
        void on_sample(std::span<const int> a, const outcome& o) {
            consider(a, o, best_source::sample, ++sample);
            user.on_sample(a, o);
        }
        void on_mode(std::span<const int> a, const outcome& o) {
            consider(a, o, best_source::mode, ppo.updates_done() + 1);  // during that update
            rl::notify_mode(user, a, o);
        }
        bool on_update(const rl::update_stats& s) {
            if (!cfg.checkpoint.empty() && cfg.checkpoint_every > 0 && s.update % cfg.checkpoint_every == 0)
                ppo.save_checkpoint(cfg.checkpoint, rng, state());
            return user.on_update(s);
        }
    };
    watcher w{task,    best_actions, best,   best_index, best_from,   trainer.samples_done(),
              visitor, trainer,      config, pack,       notify_best, rng};
    const bool imitating = !config.imitate.empty() && !config.resume;
    trainer.train(rng, w);
    if (imitating) {
        agreement = trainer.imitation_agreement();
        r_mode_gap = trainer.imitation_mode_gap();
        r_imitation_steps = trainer.imitation_steps_done();
        r_reach = trainer.imitation_reach();
    }
    if (!config.checkpoint.empty()) trainer.save_checkpoint(config.checkpoint, rng, pack());

    train_result r;
    r.updates = trainer.updates_done();
    r.samples = trainer.samples_done();
    r.best_index = best_index;
    r.best_from = best_from;
    r.imitation_agreement = agreement;
    r.imitation_mode_gap = r_mode_gap;
    r.imitation_steps = r_imitation_steps;
    r.imitation_reach = r_reach;
    if (best_from == best_source::incumbent) r.best.decision = config.incumbents[best_index];
    else if (best_from != best_source::none) r.best.decision = task.decide(best_actions);
    if (best_from != best_source::none) r.best.result = task.score(r.best.decision, 0);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace goopt::tasks
