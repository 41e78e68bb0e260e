#pragma once
/// @file
/// @brief One placement policy pre-trained across graph families and cluster sizes (GO's
/// generalization setting, NeurIPS'20 §5.3; GiPH, MLSys'23 and WeCAN, 2025, for unseen device
/// counts): PPO updates visit every (graph, cluster) pair in turn on a schedule, with one network
/// whose pair head (nn::first_head::pair) serves any device count, so that the checkpoint starts
/// train_placement (placement_config::pretrained) on a graph and a cluster it has never seen.

#include <goopt/device/cluster_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/environment_dealing.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/rl/sample_sharding.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/train.hpp>
#include <goopt/tasks/train_placement.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace goopt::tasks {

/// When the pre-training moves on to the next (graph, cluster) pair. GO pre-trains 1,000 steps
/// per batch of graphs; a small budget switches more often so every pair is seen several times.
struct pretrain_schedule {
    std::size_t updates_per_pair = 4;  ///< PPO updates on one (graph, cluster) pair before the next
    /// Order of the pairs: graph-major (every cluster of graph 0, then graph 1's, ...), round after
    /// round until the budget (placement_config::ppo.updates) is spent.
    bool graph_major = true;
    /// Mix the pairs instead of switching between them: every update samples
    /// `config.ppo.samples_per_update` decisions on each (graph, cluster) pair, normalizes the
    /// advantages per pair and sums the pairs' gradients in pair order at each minibatch step
    /// (rl::ppo::update_mixed); updates_per_pair and graph_major do not apply. With
    /// config.ppo.sharding (under mpirun) the ranks hold different pairs, dealt by their work (a
    /// pair's ops times its devices; rl::deal_by_work), and the result is the single process's bit
    /// for bit.
    bool mixed = false;
    /// Per (graph, cluster) pair, graph-major, the decision the pair's guided decoder is anchored on
    /// (placement_task_config::anchor; e.g. the best placement heuristic's on that graph and
    /// cluster, as benchmarks/transfer's rows decode): its placement is the pair's anchor and, where
    /// it has priorities, they are the pair's schedule (ready_order::given), so that zero logits
    /// decoded greedily give that decision exactly. Empty: every pair takes config.task as it is.
    std::vector<sim::decision> anchors = {};
};

/// What a pre-training returns.
struct pretrain_result {
    /// per (graph, cluster) pair, graph-major (one cluster: per graph), the best decision sampled on it
    std::vector<sim::scored_decision> best;
    std::size_t updates = 0;  ///< PPO updates done, over all pairs
    std::size_t samples = 0;  ///< decisions simulated, over all pairs
    double seconds = 0;
};

/// @brief Each (graph, cluster) pair's estimated work per update, graph-major: its ops times its
/// devices (the guided decoder and the pair head score every (op, device), the simulator walks
/// every op). A mixed run deals the pairs among its ranks by it (rl::deal_by_work).
template <class D>
std::vector<double> pair_work(std::span<const graph::computation_graph> graphs,
                              std::span<const device::cluster<D>> clusters) {
    std::vector<double> work;
    for (const auto& g : graphs)
        for (const auto& c : clusters) work.push_back(static_cast<double>(g.num_ops() * c.num_devices()));
    return work;
}

namespace detail {

template <class T> void append_vector(std::string& out, const std::vector<T>& v) {
    rl::detail::append_raw(out, static_cast<std::uint64_t>(v.size()));
    for (const T& x : v) rl::detail::append_raw(out, x);
}
template <class T> void read_vector(const std::string& in, std::size_t& at, std::size_t from, std::vector<T>& v) {
    const auto n = rl::detail::read_raw<std::uint64_t>(in, at, from);
    if (n > (in.size() - at) / sizeof(T))
        throw error("tasks::pretrain_placement_policy", concat("rank ", from, " sent ", n, " values of a decision"),
                    "no more than its bytes hold");
    v.resize(static_cast<std::size_t>(n));
    for (T& x : v) x = rl::detail::read_raw<T>(in, at, from);
}

/// @brief Gives every rank the best decision (and its simulation, without a trace) of every pair:
/// pair k's from rank owner[k], which held it; the ranks need not build the others' tasks.
inline void share_best_decisions(rl::sample_sharding& sh, std::span<const std::size_t> owner,
                                 std::vector<sim::scored_decision>& best) {
    const std::size_t R = sh.ranks(), me = sh.rank();
    std::string mine;
    for (std::size_t k = 0; k < best.size(); ++k) {
        if (owner[k] != me) continue;
        const auto& d = best[k];
        append_vector(mine, d.decision.placement);
        append_vector(mine, d.decision.priorities);
        append_vector(mine, d.decision.fusion);
        rl::detail::append_raw(mine, d.result.step_time);
        append_vector(mine, d.result.busy_time);
        append_vector(mine, d.result.peak_memory);
        append_vector(mine, d.result.out_of_memory);
        rl::detail::append_raw(mine, static_cast<std::uint8_t>(d.result.oom));
        rl::detail::append_raw(mine, d.result.bytes_moved);
        rl::detail::append_raw(mine, static_cast<std::uint64_t>(d.result.num_transfers));
    }
    const auto all = sh.all_gather(mine);
    if (all.size() != R)
        throw error("tasks::pretrain_placement_policy", concat("all_gather returned ", all.size(), " parts"),
                    concat(R, ", one per rank"));
    for (std::size_t r = 0; r < R; ++r) {
        if (r == me) continue;
        std::size_t at = 0;
        for (std::size_t k = 0; k < best.size(); ++k) {
            if (owner[k] != r) continue;
            auto& d = best[k];
            read_vector(all[r], at, r, d.decision.placement);
            read_vector(all[r], at, r, d.decision.priorities);
            read_vector(all[r], at, r, d.decision.fusion);
            d.result.step_time = rl::detail::read_raw<double>(all[r], at, r);
            read_vector(all[r], at, r, d.result.busy_time);
            read_vector(all[r], at, r, d.result.peak_memory);
            read_vector(all[r], at, r, d.result.out_of_memory);
            d.result.oom = rl::detail::read_raw<std::uint8_t>(all[r], at, r) != 0;
            d.result.bytes_moved = rl::detail::read_raw<std::int64_t>(all[r], at, r);
            d.result.num_transfers = static_cast<std::size_t>(rl::detail::read_raw<std::uint64_t>(all[r], at, r));
        }
    }
}

}  // namespace detail

/// @brief Pre-trains one policy to place every graph of `graphs` on every cluster of `clusters`,
/// `schedule.updates_per_pair` updates at a time, `config.ppo.updates` in all; the network and
/// Adam's moments are shared, the reward baseline is each pair's own. Clusters of different device
/// counts need `config.policy.head = nn::first_head::pair`. With the guided decoder the pair head's
/// output layer starts at zero (samples around m-ETF from the first update). Writes the policy to
/// `config.checkpoint` (required, atomically, an rl::ppo checkpoint) after every round over the
/// pairs and at the end. Randomness comes from `rng` alone: the same seed, binary and machine give
/// the same file, byte for byte. With `schedule.mixed` every update mixes every pair instead
/// (rl::ppo::update_mixed; the checkpoint is written every pairs-count updates and at the end),
/// `config.resume` continues from the checkpoint when it exists, and with config.ppo.sharding the
/// ranks divide the pairs between them by their work (rl::deal_by_work; rank 0 writes; every rank
/// returns every pair's best decision, simulated by the rank that held it, without a trace). The best
/// decisions are those sampled in this run.
/// `schedule.anchors` anchors each pair's decoder on its own decision (its best heuristic's).
/// @throws goopt::error for no graph or cluster, no checkpoint path, a warm start, incumbent or
/// resume (they belong to one graph; a mixed run resumes), several device counts with a per-device
/// head, updates_per_pair 0, anchors not one per pair or with the independent decoder, an anchor
/// that is not a placement of its pair, or a mixed run with more ranks than pairs.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng,
          class Visitor = rl::null_visitor>
requires rl::SerializableRng<Rng> pretrain_result pretrain_placement_policy(
    std::span<const graph::computation_graph> graphs, std::span<const device::cluster<D>> clusters, const Cost& cost,
    const placement_config& config, const pretrain_schedule& schedule, Rng& rng, Visitor&& visitor = {}) {
    const auto t0 = std::chrono::steady_clock::now();
    constexpr std::string_view who = "tasks::pretrain_placement_policy";
    if (graphs.empty() || clusters.empty())
        throw error(who, concat(graphs.size(), " graphs and ", clusters.size(), " clusters"), "at least one of each");
    if (config.checkpoint.empty()) throw error(who, "no checkpoint path", "config.checkpoint: where the policy goes");
    if (!config.warm_start.empty() || !config.incumbents.empty() || config.ppo.imitation_steps > 0 ||
        (config.resume && !schedule.mixed) || !config.pretrained.empty())
        throw error(who, "a warm start, incumbent, resume or pre-trained start is asked for",
                    "none: they belong to one graph (a mixed schedule resumes)");
    if (schedule.updates_per_pair == 0) throw error(who, "updates_per_pair is 0", "at least 1");
    if (!schedule.anchors.empty() && schedule.anchors.size() != graphs.size() * clusters.size())
        throw error(
            who, concat(schedule.anchors.size(), " anchors"),
            concat("one per (graph, cluster) pair, graph-major (", graphs.size() * clusters.size(), "), or none"));
    if (!schedule.anchors.empty() && config.task.decoder != placement_decoder::guided)
        throw error(who, "anchors with the independent decoder", "the guided decoder (placement_decoder::guided)");
    for (const auto& c : clusters)
        if (c.num_devices() != clusters.front().num_devices() && config.policy.head != nn::first_head::pair)
            throw error(who,
                        concat("clusters of ", clusters.front().num_devices(), " and ", c.num_devices(),
                               " devices with a per-device head"),
                        "policy.head = nn::first_head::pair (one network for any device count)");
    using task_type = placement_task<D, Cost>;
    // a mixed run deals the pairs among the ranks by their work (pair_work); a rank builds its own
    const std::size_t rank = schedule.mixed && config.ppo.sharding ? config.ppo.sharding->rank() : 0,
                      ranks = schedule.mixed && config.ppo.sharding ? config.ppo.sharding->ranks() : 1;
    if (graphs.size() * clusters.size() < ranks)
        throw error(who, concat(graphs.size() * clusters.size(), " (graph, cluster) pairs on ", ranks, " ranks"),
                    "at least one pair per rank (fewer ranks)");
    const auto owner = rl::deal_by_work(pair_work(graphs, clusters), ranks);
    // pair k's task: config.task, anchored on schedule.anchors[k] where given
    auto task_config = [&](std::size_t k) {
        placement_task_config t = config.task;
        if (schedule.anchors.empty()) return t;
        t.anchor = schedule.anchors[k].placement;
        if (!schedule.anchors[k].priorities.empty()) {
            t.schedule = ready_order::given;
            t.priorities = schedule.anchors[k].priorities;
        }
        return t;
    };
    std::vector<std::unique_ptr<task_type>> tasks;  // graph-major
    for (const auto& g : graphs)
        for (const auto& c : clusters) {
            try {
                tasks.push_back(owner[tasks.size()] == rank
                                    ? std::make_unique<task_type>(g, c, cost, task_config(tasks.size()))
                                    : nullptr);
            } catch (const nothing_to_decide& e) {  // of several graphs, say which one
                throw nothing_to_decide(concat(who, ": graph '", g.name(), "' on ", c.description(), ": ", e.what()));
            }
            // as train_placement refuses it for one pair
            if (tasks.back() && config.policy.head == nn::first_head::pair &&
                !tells_devices_apart(tasks.back()->features()))
                throw error(who,
                            concat("graph '", g.name(), "' on ", c.description(),
                                   ": a pair head on devices its features cannot tell apart (equal devices, no "
                                   "reference placement)"),
                            "the guided decoder (its own plan is the reference) or anchors");
        }
    std::vector<std::size_t> order(tasks.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = schedule.graph_major ? i : (i % graphs.size()) * clusters.size() + i / graphs.size();
    nn::policy_config pc = config.policy;
    pc.task_choices = {clusters.front().num_devices()};
    nn::go_policy<float> net(pc, rng);
    if (config.task.decoder == placement_decoder::guided) start_from_heuristic(net);
    // the trainer starts on this rank's first pair (update_mixed visits them all)
    const auto held = std::find(owner.begin(), owner.end(), rank) - owner.begin();
    rl::ppo<task_type> trainer(*tasks[static_cast<std::size_t>(held)], net, config.ppo);
    // a mixed update keeps no state outside the checkpoint: resuming continues exactly, on any rank count
    if (config.resume && std::filesystem::exists(config.checkpoint)) trainer.load_checkpoint(config.checkpoint, rng);

    struct best_of {
        std::vector<int> actions;
        typename task_type::outcome top{};
    };
    std::vector<best_of> best(tasks.size());
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
        void on_environment(std::size_t k) { now = first + k; }
        bool on_update(const rl::update_stats& s) {
            stopped = !user.on_update(s);
            return !stopped;
        }
        best_of* first = nullptr;
    } w{best.data(), visitor, false, best.data()};
    if (schedule.mixed) {
        std::vector<task_type*> envs;
        for (auto& t : tasks) envs.push_back(t.get());
        while (!w.stopped && trainer.updates_done() < config.ppo.updates) {
            if (!w.on_update(trainer.update_mixed(std::span<task_type* const>(envs), owner, rng, w))) break;
            if (trainer.updates_done() % tasks.size() == 0) trainer.save_checkpoint(config.checkpoint, rng);
        }
    }
    for (std::size_t i = 0; !schedule.mixed && !w.stopped && trainer.updates_done() < config.ppo.updates;
         i = (i + 1) % tasks.size()) {
        const std::size_t k = order[i];
        trainer.set_environment(*tasks[k]);
        trainer.set_updates(std::min(config.ppo.updates, trainer.updates_done() + schedule.updates_per_pair));
        w.now = &best[k];
        trainer.train(rng, w);
        if (i + 1 == tasks.size()) trainer.save_checkpoint(config.checkpoint, rng);
    }
    trainer.save_checkpoint(config.checkpoint, rng);

    pretrain_result r;
    r.updates = trainer.updates_done();
    r.samples = trainer.samples_done();
    for (std::size_t k = 0; k < tasks.size(); ++k) {
        sim::scored_decision d;
        if (tasks[k] && !best[k].actions.empty()) {
            d.decision = tasks[k]->decide(best[k].actions);
            d.result = sim::run(tasks[k]->simulator(), d.decision);
        }
        r.best.push_back(std::move(d));
    }
    // a mixed run on several ranks: each pair's best comes from the rank that held it
    if (ranks > 1) detail::share_best_decisions(*config.ppo.sharding, owner, r.best);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

/// @brief pretrain_placement_policy on one cluster, `updates_per_graph` updates per graph at a time
/// (the network may have either head). train_placement starts from its checkpoint with
/// placement_config::pretrained on the same device count, or any with a pair head.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng,
          class Visitor = rl::null_visitor>
requires rl::SerializableRng<Rng> pretrain_result pretrain_placement(std::span<const graph::computation_graph> graphs,
                                                                     const device::cluster<D>& c, const Cost& cost,
                                                                     const placement_config& config,
                                                                     std::size_t updates_per_graph, Rng& rng,
                                                                     Visitor&& visitor = {}) {
    return pretrain_placement_policy(graphs, std::span<const device::cluster<D>>(&c, 1), cost, config,
                                     {.updates_per_pair = updates_per_graph}, rng, std::forward<Visitor>(visitor));
}

/// @brief The settings of the policy shipped in share/goopt/ and of `goopt optimize` and `goopt
/// train`: a narrower network than GO's (width 64, one shared attention layer, 4 heads) with the pair
/// head, Adam at 1e-3, 16 samples per update, the guided decoder and critical-path priorities.
/// A checkpoint fits exactly this network.
inline placement_config shipped_placement_config(std::size_t updates) {
    return {.ppo = {.updates = updates, .samples_per_update = 16, .learning_rate = 1e-3, .threads = 1},
            .policy = {.hidden = 64, .shared_attention_layers = 1, .heads = 4, .head = nn::first_head::pair},
            .task = {.schedule = ready_order::critical_path, .decoder = placement_decoder::guided},
            .progress = {.status = rl::status_mode::never}};
}

/// How to make the shipped policy again (docs/transfer.md), for messages about a file that no
/// longer fits the network.
inline constexpr std::string_view remake_placement_policy =
    "a policy made for this build's network: remake share/goopt/placement_policy.ckpt with "
    "'./bootstrap.sh pretrain' (docs/transfer.md)";

/// @brief The shipped placement policy: the environment variable GOOPT_PLACEMENT_POLICY if set, else
/// the file this build knows (GOOPT_PLACEMENT_POLICY_FILE: the source tree's share/goopt/ in a build
/// tree, the installed copy through goopt-config.cmake) where it exists; empty: none.
inline std::filesystem::path default_placement_policy_file() {
    if (const char* env = std::getenv("GOOPT_PLACEMENT_POLICY"); env != nullptr && *env != '\0') return env;
#if defined(GOOPT_PLACEMENT_POLICY_FILE)
    std::error_code ec;
    if (std::filesystem::exists(GOOPT_PLACEMENT_POLICY_FILE, ec)) return GOOPT_PLACEMENT_POLICY_FILE;
#endif
    return {};
}

/// @brief Checks that the checkpoint at `file` loads into the network of `config` (by default the
/// shipped settings), as train_placement would load it, on a two-op graph and two devices (a pair
/// head serves any count). @throws goopt::error naming the file, the mismatch (another network
/// shape, node-feature width, head, format) and remake_placement_policy.
inline void check_placement_policy(const std::filesystem::path& file,
                                   const placement_config& config = shipped_placement_config(1)) {
    graph::computation_graph g("probe");
    g.mark_output(g.add1(ops::op_kind::relu, {g.input("x", {8, 8})}));
    const auto c = device::parse_cluster("2xV100:nvlink");
    placement_task<device::device_spec> task(g, c, cost::roofline_model{}, config.task);
    std::mt19937_64 rng(1);
    nn::policy_config pc = config.policy;
    pc.task_choices = {c.num_devices()};
    nn::go_policy<float> net(pc, rng);
    rl::ppo<placement_task<device::device_spec>> trainer(task, net, config.ppo);
    try {
        trainer.load_checkpoint(file, rng);
    } catch (const error& e) {
        throw error(concat("placement policy '", file.string(), "'"), e.what(), remake_placement_policy);
    }
}

/// @brief Whether the rl::ppo checkpoint at `path` holds a network for any device count (a pair
/// head: it records 0 choices per node) rather than for one device count, so that a program builds
/// the network that fits it. @throws goopt::error for a file that is not a readable checkpoint.
inline bool checkpoint_any_device_count(const std::filesystem::path& path) {
    auto in = io::record_reader::from_file(path, concat("checkpoint '", path.string(), "'"), rl::checkpoint_tag,
                                           rl::checkpoint_format_version);
    (void)in.u64("the scalar size");
    return in.u64("the number of choices") == 0;
}

}  // namespace goopt::tasks
