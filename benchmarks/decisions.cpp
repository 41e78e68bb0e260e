// Learned decisions against the heuristics, per (graph, device count, experiment), on the same
// simulator (n x V100 with NVLink, roofline costs).
//
//   decisions [--quick] [--out FILE] [--experiments placement,scheduling,fusion,joint] [--graphs a,b,...]
//             [--devices 2,4,8] [--updates 100] [--samples 16] [--epochs 4] [--seeds 1,2,3] [--threads 2]
//             [--temperature 1] [--independent] [--no-anchor] [--anchor-strength 2] [--anchor-strengths 2,5]
//             [--no-joint-stages] [--first-stage-share 0.5] [--joint-rounds 1] [--pipeline-bases] [--joint-only]
//             [--schedule-samples 256] [--schedule-prior 4] [--schedule-stages 4] [--schedule-choice-points]
//             [--schedule-features] [--schedule-step 0.1] [--schedule-spacing linear|geometric]
//             [--transfer-order produced|priority] [--dispatch ready|sequence]
//             [--schedule-sequence-rounds 0] [--sequence-step 0.0005]
//
// --quick: every experiment on transformer_xl2 and wavenet_2x18 with 2 and 4 devices, 40 updates, seeds 1,2,3
// (flags given win); without it, placement and scheduling on GO's workloads with 2, 4 and 8 devices.
//
// placement: every placement heuristic (benchmarks/placement_heuristics.hpp) and the GO policy
// trained by PPO with the guided decoder (m-ETF as the decoder, the policy's logits as residuals on
// its scores, anchored on the best placement heuristic's decision unless --no-anchor:
// tasks::placement_decoder::guided, tasks/anchored_decoding.hpp); --independent also trains GO's own decoder (every
// op's device drawn independently). scheduling: on the best placement heuristic's placement, the
// critical-path priorities of that placement, HEFT's upward-rank priorities and the heuristic's own
// order, against learned priority levels (tasks::scheduling_decider) on the best of those three,
// the policy starting at the middle level (tasks::start_from_middle_level: that order itself), with
// --schedule-samples per update, the updates split into --schedule-stages rounds, each a fresh policy
// around the best order of the rounds before (tasks::train_scheduling); --schedule-choice-points decides
// only the ops at a choice point of each round's base order (scheduling_config::choice_points_only),
// --schedule-features shows the policy the base schedule (scheduling_config::schedule_features);
// --transfer-order priority has the links of every scheduling row (the heuristic orders' and the
// learned) carry waiting tensors by the same priorities (sim::transfer_order), not as produced;
// --dispatch sequence has the learned priorities run as one global order that a device follows even
// when that means waiting (sim::dispatch_order; the heuristic orders stay list schedules, which they
// are); --schedule-sequence-rounds N runs only the last N rounds so, from the best list schedule of
// the rounds before (scheduling_rounds_config::sequence_rounds). fusion: on that
// placement and its own priorities, greedy fusion and XLA-style priority fusion against learned fusion levels
// (tasks::fusion_decider, anchored on the better of the two fusers' groups unless --no-anchor, the
// policy starting at the middle level: that fusion itself). joint: one policy deciding placement,
// scheduling and fusion together (tasks::joint_task, anchored unless --no-anchor on the best heuristic
// pipeline: its placement, its own priorities where they beat its critical path, greedy fusion's groups),
// each task alone and each pair with the others at their defaults (placement: the best placement
// heuristic's; scheduling: FIFO; fusion: none), against the default decision
// (one device, FIFO, no fusion) and the heuristic pipelines HEFT, m-ETF and m-SCT, each with its
// own priorities and greedy fusion.
// No incumbent is given to any training: "learned_ms" is the best of the policy's own samples and
// modes (learned_from says which), per seed, and the row reports the mean over the seeds and the
// spread (max - min). "lower_bound_ms" is sim::step_time_lower_bound (no placement and schedule is
// faster; null on fusion and joint rows, since a fused kernel costs less than its ops apart). JSON list, one object per
// row: {"experiment", "graph", "devices", "ops", "lower_bound_ms", "best_heuristic", "best_heuristic_ms",
// "<heuristic>_ms"..., "learned_ms", "learned_spread_ms", "learned_seeds_ms", "learned_from", "learned_oom", "samples",
// "updates", "epochs", "seconds", "peak_memory_bytes"}; scheduling rows add "schedule_lower_bound_ms"
// (sim::schedule_lower_bound: no order of that placement is faster), "schedule_bound_from" (path, device or link: what
// sets it) and "choice_points" (starts at which the best order's list scheduler chose among ready ops); placement rows
// add "independent_ms" (with --independent), "heuristics_oom" names the heuristics that ran out of memory, and
// "memory_lower_bound_bytes" (sim::memory_lower_bound: held at once on all devices by any placement and order) beside
// "cluster_memory_bytes" (the devices' capacities summed) says whether a row where no placer fits could fit; joint
// rows add "default_ms", "placement_ms", "scheduling_ms", "fusion_ms", "pairs": {"pl+sch", "pl+fu", "sch+fu"} (means
// over the seeds), "joint_ms", "best_heuristic_pipeline_ms" and "decoder_pipeline_ms" (the joint decoder's zero-logit
// decision).
#include "benchmark_main.hpp"
#include "placement_heuristics.hpp"
#include "seed_figures.hpp"

#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/sim/schedule_lower_bound.hpp>
#include <goopt/tasks.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

using namespace goopt;

struct settings {
    std::size_t updates = 100, samples = 16, threads = 2, epochs = rl::ppo_config{}.epochs;
    std::vector<std::uint64_t> seeds{1, 2, 3};
    double temperature = 1.0;
    bool independent = false;
    bool anchor = true;                    ///< guided decoders anchored on the best placement heuristic's decision
    double anchor_strength = 2.0;          ///< placement_task_config::anchor_strength, joint_config::anchor_strength
    std::vector<double> anchor_strengths;  ///< placement_task_config:: and joint_config::anchor_strengths
    std::vector<double> level_priors;      ///< joint rows: joint_config::level_priors
    bool joint_stages = true;              ///< learn_joint: the levels first on the anchor's placement, then all
    double first_stage_share = tasks::joint_curriculum_config{}.first_stage_share;  ///< learn_joint's curriculum
    bool joint_only = false;       ///< joint rows: the joint policy alone, not each task and pair
    std::size_t joint_rounds = 1;  ///< learn_joint: joint_curriculum_config::rounds
    bool pipeline_bases = false;   ///< joint rows: the levels' bases chosen on the decoder's pipeline
    bool progress = false;         ///< joint rows: a line on stderr after every update (update_lines)
    // scheduling rows (learn_schedule): a simulation of a fixed placement costs little beside the
    // policy's passes, so many more samples per update (Jeon et al., ICLR'23, draw 1,000 per graph)
    std::size_t schedule_samples = 256;
    double schedule_prior = 4;            ///< tasks::start_from_middle_level's prior: ~4 % of ops leave the middle
    std::size_t schedule_stages = 4;      ///< rounds, each re-based on the best order of the rounds before
    std::size_t sequence_rounds = 0;      ///< the last of those rounds that decide per-device sequences
    double sequence_step = 0.0005;        ///< their geometric levels' first step (share of the order's length)
    bool schedule_choice_points = false;  ///< scheduling_config::choice_points_only
    bool schedule_features = false;       ///< scheduling_config::schedule_features
    sim::transfer_order transfers = sim::transfer_order::produced;         ///< scheduling rows' links
    sim::dispatch_order dispatch = sim::dispatch_order::ready;             ///< scheduling rows' learned orders
    double schedule_step = tasks::scheduling_config{}.step;                ///< scheduling_config::step
    tasks::level_spacing schedule_spacing = tasks::level_spacing::linear;  ///< scheduling_config::spacing
};

/// Per seed: the learned step (ms), where it came from, whether it ran out of memory; then the row's
/// mean, spread and totals.
struct seeds_result : bench::seed_figures {
    std::vector<std::string> from;
    bool oom = false;
    std::size_t samples = 0, updates = 0;
    double seconds = 0;
    void add(double step, tasks::best_source f, bool out_of_memory, std::size_t s, std::size_t u, double secs) {
        ms.push_back(step * 1e3);
        from.push_back(bench::source_name(f));
        oom = oom || out_of_memory;
        samples += s;
        updates += u;
        seconds += secs;
    }
    void write(nlohmann::ordered_json& row, const std::string& key) const {
        seed_figures::write(row, key);
        row[key + "_from"] = from;
        row[key + "_oom"] = oom;
    }
};

/// The devices' memory capacities summed (what sim::memory_lower_bound is held against).
double cluster_memory(const device::cluster<device::device_spec>& cl) {
    double total = 0;
    for (std::size_t d = 0; d < cl.num_devices(); ++d) total += static_cast<double>(cl.device(d).mem_capacity());
    return total;
}

rl::ppo_config ppo_of(const settings& st) {
    return {.updates = st.updates,
            .samples_per_update = st.samples,
            .minibatch = st.samples,
            .epochs = st.epochs,
            .learning_rate = 1e-3,
            .threads = st.threads};
}

const nn::policy_config network{.hidden = 64, .sage_layers = 2, .shared_attention_layers = 1, .heads = 4};

template <class Sim>
seeds_result learn_placement(const graph::computation_graph& g, const device::cluster<device::device_spec>& cl,
                             const settings& st, tasks::placement_decoder decoder, const sim::decision& anchor,
                             const std::vector<double>& own_order) {
    const bool anchored = decoder == tasks::placement_decoder::guided && st.anchor;
    seeds_result r;
    for (std::uint64_t seed : st.seeds) {
        tasks::placement_config c{
            .ppo = ppo_of(st),
            .policy = network,
            .task = {.schedule =
                         anchored && !own_order.empty() ? tasks::ready_order::given : tasks::ready_order::critical_path,
                     .priorities = anchored ? own_order : std::vector<double>{},
                     .decoder = decoder,
                     .temperature = st.temperature,
                     .anchor = anchored ? anchor.placement : sim::placement{},
                     .anchor_strength = st.anchor_strength,
                     .anchor_strengths = anchored ? st.anchor_strengths : std::vector<double>{}},
            .progress = {.status = rl::status_mode::never}};
        std::mt19937_64 rng(seed);
        const auto t = tasks::train_placement(g, cl, cost::roofline_model{}, c, rng);
        r.add(t.best.result.step_time, t.best_from, t.best.result.oom, t.samples, t.updates, t.seconds);
    }
    return r;
}

/// A fresh policy of the benchmark's network for `task`; a task that decodes with its heuristic
/// (rl::GuidedEnvironment) starts from zero logits, its heuristic's decision.
template <class Task> nn::go_policy<float> fresh_policy(Task& task, std::mt19937_64& rng) {
    nn::policy_config pc = network;
    pc.task_choices = {task.num_choices()};
    if constexpr (requires { task.num_features(); }) pc.features = task.num_features();
    nn::go_policy<float> net(pc, rng);
    if constexpr (rl::GuidedEnvironment<Task>)
        if (task.guided()) tasks::start_from_heuristic(net);
    return net;
}

/// One fresh policy per seed trained on `task` (no incumbent).
template <class Task> seeds_result learn_on(Task& task, const settings& st, bool from_middle_level = false) {
    seeds_result r;
    for (std::uint64_t seed : st.seeds) {
        std::mt19937_64 rng(seed);
        auto net = fresh_policy(task, rng);
        if (from_middle_level) tasks::start_from_middle_level(net);
        const auto t = tasks::train(task, net, {.ppo = ppo_of(st)}, rng);
        r.add(t.best.result.step_time, t.best_from, t.best.result.oom, t.samples, t.updates, t.seconds);
    }
    return r;
}

/// Where a priority decides anything: the starts of timed ops at which another timed op of the
/// same device was ready and waiting, so that the list scheduler chose between them (from a traced
/// run). The simulator never leaves a device idle while an op is ready: elsewhere the order is fixed.
std::size_t choice_points(const graph::computation_graph& g, const sim::simulation_result& r) {
    const std::size_t n = g.num_ops();
    std::vector<double> start(n, 0.0), end(n, 0.0), ready(n, 0.0);
    std::vector<std::uint32_t> device(n, 0);
    std::size_t devices = 0;
    for (const auto& e : r.ops) {
        start[e.op] = e.start;
        end[e.op] = e.end;
        device[e.op] = e.device;
        devices = std::max<std::size_t>(devices, e.device + 1);
    }
    std::unordered_map<std::uint64_t, double> arrival;  // (tensor, destination) -> end of its copy
    for (const auto& x : r.transfers) arrival[(std::uint64_t{x.tensor} << 32) | x.to] = x.end;
    for (graph::op_id o = 0; o < n; ++o)
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id p = g.producer(t);
            ready[o] =
                std::max(ready[o], device[p] == device[o] ? end[p] : arrival.at((std::uint64_t{t} << 32) | device[o]));
        }
    std::vector<std::vector<double>> readies(devices), starts(devices);
    for (graph::op_id o = 0; o < n; ++o)
        if (end[o] > start[o]) {
            readies[device[o]].push_back(ready[o]);
            starts[device[o]].push_back(start[o]);
        }
    std::size_t points = 0;
    for (std::size_t d = 0; d < devices; ++d) {
        std::sort(readies[d].begin(), readies[d].end());
        std::sort(starts[d].begin(), starts[d].end());
        for (double s : starts[d]) {
            // ops ready by s, less those started by s (each started op was ready before its start)
            const auto ready_by = std::upper_bound(readies[d].begin(), readies[d].end(), s) - readies[d].begin();
            const auto started_by = std::upper_bound(starts[d].begin(), starts[d].end(), s) - starts[d].begin();
            if (ready_by > started_by) ++points;
        }
    }
    return points;
}

/// The scheduling experiment's training, per seed: tasks::train_scheduling's rounds (a fresh
/// policy at the middle level per round, each re-based on the best order so far; the first base
/// `base`), no incumbent.
template <class Sim>
seeds_result learn_schedule(Sim& s, const sim::placement& p, const std::vector<double>& base, const settings& st) {
    settings sched = st;
    sched.samples = st.schedule_samples;
    const tasks::scheduling_rounds_config rounds{.rounds = st.schedule_stages,
                                                 .prior = st.schedule_prior,
                                                 .levels = {.step = st.schedule_step,
                                                            .spacing = st.schedule_spacing,
                                                            .choice_points_only = st.schedule_choice_points,
                                                            .schedule_features = st.schedule_features,
                                                            .transfers = st.transfers,
                                                            .dispatch = st.dispatch},
                                                 .sequence_rounds = st.sequence_rounds,
                                                 .sequence_levels = {.step = st.sequence_step,
                                                                     .spacing = tasks::level_spacing::geometric,
                                                                     .dispatch = sim::dispatch_order::sequence}};
    seeds_result r;
    for (std::uint64_t seed : sched.seeds) {
        std::mt19937_64 rng(seed);
        const auto t = tasks::train_scheduling(
            s, p, base, [](auto& task, std::mt19937_64& gen) { return fresh_policy(task, gen); },
            {.ppo = ppo_of(sched)}, rng, rl::null_visitor{}, rounds);
        r.add(t.best.result.step_time, t.best_from, t.best.result.oom, t.samples, t.updates, t.seconds);
    }
    return r;
}

/// --progress: after every PPO update of a joint row's training, one line on stderr with the best
/// step time that training has found so far, so that a row's learning curve (a staged training's
/// two stages each count as one training) can be read, e.g. to see when a stage stops improving.
struct update_lines {
    bool on = false;
    std::string what;          ///< the row and the policy: "transformer_xl2 n=4 pl+sch+fu seed 1"
    std::size_t training = 0;  ///< 1-based: the stage (or round) of a staged training
    double best_ms = 0;        ///< of the current training
    template <class Outcome> void on_sample(std::span<const int>, const Outcome&) {}
    template <class Outcome> void on_best(const Outcome& o) { best_ms = o.step_time * 1e3; }
    bool on_update(const rl::update_stats& u) {
        if (u.update == 1) ++training;
        if (on)
            std::fprintf(stderr, "progress %s: training %zu, update %zu: best %.4f ms, mean reward %.5f\n",
                         what.c_str(), training, u.update, best_ms, u.mean_reward);
        return true;
    }
};

/// The joint task of `config` (tasks::joint_task: the heuristic pipeline as the decoder), learned by
/// tasks::train_joint: in two stages where placement and another task are decided and an anchor is
/// given (--first-stage-share of the updates, a quarter by default, on the levels at the anchor, then
/// the whole task from there), unless --no-joint-stages; the row's figure is the best decision of the
/// whole training.
seeds_result learn_joint(const graph::computation_graph& g, const device::cluster<device::device_spec>& cl,
                         const settings& st, const tasks::joint_config& config) {
    const tasks::joint_curriculum_config curriculum{.first_stage_share = st.joint_stages ? st.first_stage_share : 0.0,
                                                    .rounds = st.joint_rounds};
    std::string decided;  // "pl+sch+fu", as the rows' pairs are named
    for (const auto& [on, name] : {std::pair{config.tasks.placement, "pl"}, std::pair{config.tasks.scheduling, "sch"},
                                   std::pair{config.tasks.fusion, "fu"}})
        if (on) decided += (decided.empty() ? "" : "+") + std::string(name);
    seeds_result r;
    for (std::uint64_t seed : st.seeds) {
        std::mt19937_64 rng(seed);
        update_lines lines{.on = st.progress,
                           .what = concat(g.name(), " n=", cl.num_devices(), " ", decided, " seed ", seed)};
        const auto t = tasks::train_joint(
            g, cl, cost::roofline_model{}, config,
            [](auto& task, std::mt19937_64& gen) { return fresh_policy(task, gen); }, {.ppo = ppo_of(st)}, rng, lines,
            curriculum);
        r.add(t.best.result.step_time, t.best_from, t.best.result.oom, t.samples, t.updates, t.seconds);
    }
    return r;
}

/// Scores each named decision into `row` ("<name>_ms") and returns the fastest one's name and ms.
template <class Sim>
std::pair<std::string, double> score_named(nlohmann::ordered_json& row, Sim& s,
                                           std::span<const std::pair<const char*, const sim::decision*>> named) {
    std::pair<std::string, double> best{"", 0.0};
    for (const auto& [key, d] : named) {
        const double ms = sim::run(s, *d).step_time * 1e3;
        row[std::string(key) + "_ms"] = ms;
        if (best.first.empty() || ms < best.second) best = {key, ms};
    }
    return best;
}

/// The heuristic pipelines of the joint rows: HEFT, m-ETF and m-SCT, each with its own priorities
/// and greedy fusion on its placement.
template <class Sim> std::vector<std::pair<std::string, sim::decision>> heuristic_pipelines(Sim& s) {
    std::vector<std::pair<std::string, sim::decision>> r{{"heft+greedy_fusion", baselines::heft(s).decision()},
                                                         {"m_etf+greedy_fusion", baselines::m_etf(s)},
                                                         {"m_sct+greedy_fusion", baselines::m_sct(s)}};
    for (auto& [name, d] : r) d.fusion = baselines::greedy_fusion(s.graph(), d.placement);
    return r;
}

int run(int argc, char** argv) {
    std::string out;
    std::vector<std::string> names, experiments{"placement", "scheduling"};
    std::vector<std::size_t> counts;
    settings st;
    bool quick = false;
    bench::command_line cli(
        "decisions",
        "Learned placement, scheduling, fusion and all three jointly (GO policy, PPO, the heuristic "
        "as the decoder) against the heuristics on the same simulator, per graph, device count and "
        "experiment.");
    cli.add_flag("--quick", quick,
                 "Every experiment on two graphs on 2 and 4 devices, 40 updates, seeds 1,2,3 (flags given win)");
    cli.add_option("--out", out, "Write the rows as a JSON list (after every row)")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    auto* experiments_given = cli.add_option("--experiments", experiments, "Experiments to run (--quick: all four)")
                                  ->delimiter(',')
                                  ->allow_extra_args(false)
                                  ->check(CLI::IsMember({"placement", "scheduling", "fusion", "joint"}))
                                  ->type_name("NAME,...")
                                  ->capture_default_str();
    cli.add_option("--graphs", names, "Models of the zoo (default: GO's workloads)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("NAME,...");
    cli.add_option("--devices", counts, "Device counts (n x V100:nvlink), one row each (default 2,4,8)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->transform(bench::count(2, 1024))
        ->type_name("N,...");
    auto* updates = cli.add_option("--updates", st.updates, "PPO updates per training")
                        ->transform(bench::count(1, 1000000))
                        ->type_name("N")
                        ->capture_default_str();
    cli.add_option("--samples", st.samples, "Decisions sampled per update")
        ->transform(bench::count(1, 4096))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--epochs", st.epochs, "PPO epochs per update (rl::ppo_config::epochs)")
        ->transform(bench::count(1, 64))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--seeds", st.seeds, "One training per seed; the row reports the mean and the spread")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->transform(bench::count())
        ->type_name("N,...");
    cli.add_option("--threads", st.threads, "Threads decoding and scoring the samples")
        ->transform(bench::count(1, 256))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--temperature", st.temperature,
                   "Guided decoder: departure from m-ETF's earliest start, in mean op times")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_flag("--independent", st.independent, "Also train GO's independent decoder (placement)");
    cli.add_flag("!--no-anchor", st.anchor,
                 "Guided decoders follow m-ETF alone, not anchored on the best placement heuristic's decision, "
                 "and fusion levels bias priority fusion from scratch, not anchored on the better fuser's groups");
    cli.add_flag("!--no-joint-stages", st.joint_stages,
                 "Joint rows: learn placement with the other tasks from the start, not after half the updates "
                 "on the levels alone (tasks::widen_to_placement)");
    cli.add_flag("--pipeline-bases", st.pipeline_bases,
                 "Joint rows: the levels depart from FIFO's order where it gives the decoder's pipeline a shorter "
                 "step than the heuristic's priorities, and from priority fusion's groups where they beat greedy "
                 "fusion's");
    cli.add_option("--first-stage-share", st.first_stage_share,
                   "Joint rows: the share of the updates spent on the levels at the anchor's placement before "
                   "placement joins them (joint_curriculum_config::first_stage_share)")
        ->capture_default_str();
    cli.add_flag("--joint-only", st.joint_only,
                 "Joint rows: train the joint policy alone, not each task and pair beside it (their fields are null)");
    cli.add_flag("--progress", st.progress,
                 "Joint rows: after every PPO update, the best step time of that training so far on stderr");
    cli.add_option("--joint-rounds", st.joint_rounds,
                   "Joint rows: the second stage in this many rounds, each a fresh policy anchored on the best "
                   "decision so far (1: the first stage's policy, widened, trains on)")
        ->transform(bench::count(1, 1000))
        ->capture_default_str();
    cli.add_option("--schedule-samples", st.schedule_samples, "Scheduling rows: decisions sampled per update")
        ->transform(bench::count(1, 65536))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--schedule-prior", st.schedule_prior,
                   "Scheduling rows: the fresh policy's preference for the base order's level (0: uniform)")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_option("--schedule-stages", st.schedule_stages,
                   "Scheduling rows: rounds of training, each from the best order of the rounds before")
        ->transform(bench::count(1, 1000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--schedule-sequence-rounds", st.sequence_rounds,
                   "Scheduling rows: how many of the last rounds decide one order per device (devices may wait), "
                   "starting from the best list schedule so far")
        ->transform(bench::count(0, 1000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--sequence-step", st.sequence_step,
                   "Scheduling rows' sequence rounds: the first geometric level's step, as a share of the order's "
                   "length (> 0)")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_flag("--schedule-choice-points", st.schedule_choice_points,
                 "Scheduling rows: decide only the ops at a choice point of each round's base order (where a "
                 "device had several ops ready)");
    cli.add_flag("--schedule-features", st.schedule_features,
                 "Scheduling rows: the policy also sees each op's device, base priority, slack, start and "
                 "choice point in the base schedule");
    std::string transfer_order = "produced", dispatch = "ready", spacing = "linear";
    cli.add_option("--transfer-order", transfer_order,
                   "Scheduling rows: the order in which a link carries waiting tensors, for every order "
                   "compared (produced: FIFO; priority: by the schedule's priorities)")
        ->check(CLI::IsMember({"produced", "priority"}))
        ->capture_default_str();
    cli.add_option("--schedule-step", st.schedule_step,
                   "Scheduling rows: a priority level's step, as a share of the largest base priority (> 0)")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_option("--schedule-spacing", spacing,
                   "Scheduling rows: levels linear (j steps) or geometric (2^(j-1) steps) from the middle")
        ->check(CLI::IsMember({"linear", "geometric"}))
        ->capture_default_str();
    cli.add_option("--dispatch", dispatch,
                   "Scheduling rows: how the devices follow the learned priorities (ready: list scheduling; "
                   "sequence: one global order, waiting for the next op)")
        ->check(CLI::IsMember({"ready", "sequence"}))
        ->capture_default_str();
    cli.add_option("--anchor-strength", st.anchor_strength,
                   "Anchored decoders: the score a device other than the anchor's starts from (> 0)")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_option("--anchor-strengths", st.anchor_strengths,
                   "Anchored placement and joint rows: each sample departs at one of these strengths, drawn per sample "
                   "(the mode keeps --anchor-strength); default: every sample at --anchor-strength")
        ->delimiter(',');
    cli.add_option("--level-priors", st.level_priors,
                   "Joint rows: each sample draws its level prior from these (the mode keeps the default, 1); "
                   "default: every sample at 1")
        ->delimiter(',');
    if (!cli.parse_flags(argc, argv)) return 0;
    for (double x : st.level_priors)
        if (!(x >= 0) || !std::isfinite(x)) throw error("flag --level-priors", concat(x), "numbers >= 0");
    for (double x : st.anchor_strengths)
        if (!(x > 0) || !std::isfinite(x)) throw error("flag --anchor-strengths", concat(x), "numbers > 0");
    if (!(st.anchor_strength > 0)) throw error("flag --anchor-strength", concat(st.anchor_strength), "a number > 0");
    if (!(st.first_stage_share >= 0 && st.first_stage_share < 1))
        throw error("flag --first-stage-share", concat(st.first_stage_share), "a share in [0, 1)");
    if (!(st.temperature > 0)) throw error("flag --temperature", concat(st.temperature), "a number > 0");
    if (!(st.schedule_step > 0)) throw error("flag --schedule-step", concat(st.schedule_step), "a number > 0");
    if (!(st.sequence_step > 0)) throw error("flag --sequence-step", concat(st.sequence_step), "a number > 0");
    if (st.sequence_rounds > st.schedule_stages)
        throw error("flag --schedule-sequence-rounds", concat(st.sequence_rounds),
                    concat("at most --schedule-stages (", st.schedule_stages, ")"));
    st.transfers = transfer_order == "priority" ? sim::transfer_order::priority : sim::transfer_order::produced;
    st.dispatch = dispatch == "sequence" ? sim::dispatch_order::sequence : sim::dispatch_order::ready;
    st.schedule_spacing = spacing == "geometric" ? tasks::level_spacing::geometric : tasks::level_spacing::linear;
    if (st.seeds.empty()) throw error("flag --seeds", "an empty list", "a list such as 1,2,3");
    std::erase(names, std::string{});
    if (names.empty())
        names = quick ? std::vector<std::string>{"transformer_xl2", "wavenet_2x18"}
                      : std::vector<std::string>{"rnnlm2",          "rnnlm4",          "gnmt2",
                                                 "gnmt4",           "transformer_xl2", "transformer_xl4",
                                                 "wavenet_2x18",    "wavenet_4x36",    "inception_v3_train",
                                                 "amoebanet_train", "nasnet_a_train",  "resnet50_train"};
    if (counts.empty()) counts = quick ? std::vector<std::size_t>{2, 4} : std::vector<std::size_t>{2, 4, 8};
    if (quick && updates->count() == 0) st.updates = 40;
    if (quick && experiments_given->count() == 0) experiments = {"placement", "scheduling", "fusion", "joint"};

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf(
        "simulated step time in ms on n x V100:nvlink (* = out of memory); learned: PPO %zu updates x %zu "
        "samples, mean of %zu seeds (spread), no incumbent\n",
        st.updates, st.samples, st.seeds.size());
    std::printf("%-11s %-20s %2s %6s %9s %-14s %9s %9s %8s %-6s %9s %7s\n", "experiment", "graph", "n", "ops", "bound",
                "best_heur", "best_ms", "learned", "spread", "from", "indep", "s");
    for (const auto& name : names) {
        const auto w = models::find_workload(name);
        const auto g = w.build();
        // the graph's alone (1.4 s on gnmt8): once per graph, for the placement rows only
        const bool places = std::find(experiments.begin(), experiments.end(), "placement") != experiments.end();
        const sim::memory_bound memory = places ? sim::memory_lower_bound(g) : sim::memory_bound{};
        for (std::size_t n : counts) {
            const auto cl = device::parse_cluster(std::to_string(n) + "xV100:nvlink");
            sim::simulator s(g, cl);
            const double bound = sim::step_time_lower_bound(s) * 1e3;
            // every placement heuristic: the best that fits is the scheduling experiment's placement
            nlohmann::ordered_json heur = nlohmann::ordered_json::object();
            std::vector<std::string> oom;
            std::string best_name;
            sim::decision best;
            double best_ms = 0;
            for (const auto& h : bench::placement_heuristics(s, w.family)) {
                if (!h.decision) {
                    heur[h.name + "_ms"] = nullptr;
                    continue;
                }
                const auto r = sim::run(s, *h.decision);
                heur[h.name + "_ms"] = r.step_time * 1e3;
                if (r.oom) oom.push_back(h.name);
                else if (best_name.empty() || r.step_time * 1e3 < best_ms) {
                    best_name = h.name;
                    best = *h.decision;
                    best_ms = r.step_time * 1e3;
                }
            }
            // the best heuristic's own priorities where they order its placement better than its
            // critical path does: the anchored decoders then start from its decision exactly
            std::vector<double> own_order;
            if (!best_name.empty() && !best.priorities.empty() &&
                sim::run(s, best).step_time <=
                    s.run(best.placement, {.priorities = baselines::critical_path_priorities(s, best.placement)})
                        .step_time)
                own_order = best.priorities;
            for (const auto& experiment : experiments) {
                // the bound holds for unfused ops: a fused kernel can beat it
                const bool fuses = experiment == "fusion" || experiment == "joint";
                nlohmann::ordered_json row{
                    {"experiment", experiment},
                    {"graph", name},
                    {"devices", n},
                    {"ops", g.num_ops()},
                    {"lower_bound_ms", fuses ? nlohmann::ordered_json() : nlohmann::ordered_json(bound)}};
                seeds_result learned;
                double row_best_ms = best_ms, independent_ms = -1;
                std::string row_best = best_name;
                if (experiment == "placement") {
                    row["best_heuristic"] =
                        best_name.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(best_name);
                    row["best_heuristic_ms"] =
                        best_name.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(best_ms);
                    row.update(heur);
                    row["heuristics_oom"] = oom;
                    // where no placer fits, whether anything could: the memory held at one moment of
                    // every placement and order, against the devices' memory together
                    row["memory_lower_bound_bytes"] = memory.total;
                    row["cluster_memory_bytes"] = cluster_memory(cl);
                    learned =
                        learn_placement<decltype(s)>(g, cl, st, tasks::placement_decoder::guided, best, own_order);
                    learned.write(row, "learned");
                    if (st.independent) {
                        const auto ind =
                            learn_placement<decltype(s)>(g, cl, st, tasks::placement_decoder::independent, {}, {});
                        ind.write(row, "independent");
                        independent_ms = ind.mean();
                    }
                } else if (experiment == "fusion") {
                    if (best_name.empty()) continue;  // no placement fits: nothing to fuse on
                    const sim::decision greedy{.placement = best.placement,
                                               .priorities = best.priorities,
                                               .fusion = baselines::greedy_fusion(g, best.placement)};
                    const tasks::fusion_decider decider(s, best.placement, best.priorities);
                    const std::pair<const char*, const sim::decision*> fusions[] = {
                        {"greedy_fusion", &greedy}, {"priority_fusion", &decider.heuristic_decision()}};
                    std::tie(row_best, row_best_ms) = score_named(row, s, fusions);
                    row["unfused_ms"] = best_ms;
                    row["placement"] = best_name;
                    row["best_heuristic"] = row_best;
                    row["best_heuristic_ms"] = row_best_ms;
                    // anchored: the levels depart from the better fuser's groups, starting at them
                    const auto anchor = !st.anchor                    ? tasks::fusion_anchor::none
                                        : row_best == "greedy_fusion" ? tasks::fusion_anchor::greedy
                                                                      : tasks::fusion_anchor::priority;
                    const tasks::fusion_decider learner(s, best.placement, best.priorities, {.anchor = anchor});
                    tasks::simulated_task task(g, cl, learner);
                    learned = learn_on(task, st, st.anchor);
                    learned.write(row, "learned");
                } else if (experiment == "joint") {
                    if (best_name.empty()) continue;  // no placement fits: no default for the pairs
                    const auto single = sim::run(
                        s, sim::decision{.placement = sim::placement(g.num_ops(), 0), .priorities = {}, .fusion = {}});
                    row["default_ms"] = single.step_time * 1e3;
                    row["default_oom"] = single.oom;
                    row_best.clear();
                    sim::decision pipeline;
                    for (const auto& [key, d] : heuristic_pipelines(s)) {
                        const auto r = sim::run(s, d);
                        row[key + "_ms"] = r.step_time * 1e3;
                        if (!r.oom && (row_best.empty() || r.step_time * 1e3 < row_best_ms)) {
                            row_best = key;
                            row_best_ms = r.step_time * 1e3;
                            pipeline = d;
                        }
                    }
                    // a learned placement is anchored on the best pipeline's, with its own priorities
                    // where they order it better than its critical path does
                    const std::vector<double> pipeline_order =
                        tasks::own_or_critical_path(s, pipeline.placement, pipeline.priorities, pipeline.fusion);
                    // --pipeline-bases: the levels' bases chosen on the decoder's own pipeline
                    // (tasks::pipeline_bases: FIFO or the order, priority or greedy fusion)
                    auto bases = [&](const sim::placement& p, const std::vector<double>& order, bool fu) {
                        return st.pipeline_bases ? tasks::pipeline_bases(s, p, order, fu)
                                                 : tasks::joint_bases{.priorities = order};
                    };
                    row["best_heuristic"] = row_best;
                    row["best_heuristic_ms"] = row_best_ms;
                    row["best_heuristic_pipeline_ms"] = row_best_ms;
                    row["placement"] = best_name;
                    auto with = [&](bool pl, bool sch, bool fu) {
                        const auto b =
                            pl ? bases(pipeline.placement, pipeline_order, fu) : bases(best.placement, own_order, fu);
                        const auto& order = b.priorities;
                        return tasks::joint_config{
                            .tasks = {.placement = pl, .scheduling = sch, .fusion = fu},
                            .placement = pl ? sim::placement{} : best.placement,
                            .level_priors = st.level_priors,
                            .temperature = st.temperature,
                            .anchor = pl && st.anchor ? pipeline.placement : sim::placement{},
                            .anchor_strength = st.anchor_strength,
                            .anchor_strengths = pl && st.anchor ? st.anchor_strengths : std::vector<double>{},
                            .priorities = sch && st.anchor ? order : std::vector<double>{},
                            .anchor_fusion = fu && st.anchor ? b.fusion : tasks::fusion_anchor::none};
                    };
                    // the joint decoder's own pipeline (zero logits, greedy): anchored, the best
                    // heuristic pipeline (its placement, priorities and greedy fusion)
                    row["decoder_pipeline_ms"] =
                        tasks::joint_task(g, cl, cost::roofline_model{}, with(true, true, true)).reference().step_time *
                        1e3;
                    std::size_t samples = 0, updates = 0;
                    double seconds = 0;
                    auto learn = [&](bool pl, bool sch, bool fu) {
                        const auto r = learn_joint(g, cl, st, with(pl, sch, fu));
                        samples += r.samples;
                        updates += r.updates;
                        seconds += r.seconds;
                        return r.mean();
                    };
                    if (st.joint_only) {
                        row["placement_ms"] = row["scheduling_ms"] = row["fusion_ms"] = nullptr;
                        row["pairs"] = {{"pl+sch", nullptr}, {"pl+fu", nullptr}, {"sch+fu", nullptr}};
                    } else {
                        row["placement_ms"] = learn(true, false, false);
                        row["scheduling_ms"] = learn(false, true, false);
                        row["fusion_ms"] = learn(false, false, true);
                        row["pairs"] = {{"pl+sch", learn(true, true, false)},
                                        {"pl+fu", learn(true, false, true)},
                                        {"sch+fu", learn(false, true, true)}};
                    }
                    learned = learn_joint(g, cl, st, with(true, true, true));
                    row["joint_ms"] = learned.mean();
                    learned.write(row, "learned");
                    learned.samples += samples;  // the row's totals: every training of the row
                    learned.updates += updates;
                    learned.seconds += seconds;
                } else {
                    if (best_name.empty()) continue;  // no placement fits: nothing to schedule
                    // the heuristics' priorities on that placement
                    const auto& p = best.placement;
                    const sim::decision cp{.placement = p,
                                           .priorities = baselines::critical_path_priorities(s, p),
                                           .fusion = {},
                                           .transfers = st.transfers};
                    const sim::decision rank{.placement = p,
                                             .priorities = baselines::detail::heft_steps::heft_ranks(s),
                                             .fusion = {},
                                             .transfers = st.transfers};
                    sim::decision own = best;
                    own.transfers = st.transfers;
                    const std::pair<const char*, const sim::decision*> schedules[] = {
                        {"critical_path", &cp}, {"heft_rank", &rank}, {"own", &own}};
                    std::tie(row_best, row_best_ms) = score_named(row, s, schedules);
                    row["placement"] = best_name;
                    row["best_heuristic"] = row_best;
                    row["best_heuristic_ms"] = row_best_ms;
                    // learning starts from the best of the three orders on this placement
                    const sim::decision* base = row_best == "heft_rank" ? &rank : row_best == "own" ? &own : &cp;
                    // what no order of this placement beats: the headroom a learned order has at all
                    const auto headroom = sim::schedule_lower_bound(s, p);
                    row["schedule_lower_bound_ms"] = headroom.step * 1e3;
                    row["schedule_bound_from"] = headroom.step == headroom.path   ? "path"
                                                 : headroom.step == headroom.link ? "link"
                                                                                  : "device";
                    const auto& base_order = base->priorities.empty() ? cp.priorities : base->priorities;
                    row["choice_points"] =
                        choice_points(g, s.run(p, {.priorities = base_order, .transfers = st.transfers}));
                    row["transfer_order"] = st.transfers == sim::transfer_order::priority ? "priority" : "produced";
                    row["dispatch"] = st.dispatch == sim::dispatch_order::sequence ? "sequence" : "ready";
                    row["sequence_rounds"] = st.sequence_rounds;
                    learned = learn_schedule(s, p, base_order, st);
                    learned.write(row, "learned");
                }
                row["samples"] = learned.samples;
                row["updates"] = learned.updates;
                row["epochs"] = st.epochs;
                row["seconds"] = learned.seconds;
                row["peak_memory_bytes"] = bench::peak_memory_bytes();
                std::printf("%-11s %-20s %2zu %6zu %9.3f %-14s %9.3f %9.3f %8.3f %-6s ", experiment.c_str(),
                            name.c_str(), n, g.num_ops(), fuses ? std::nan("") : bound, row_best.c_str(), row_best_ms,
                            learned.mean(), learned.spread(),
                            learned.from.empty() ? "-" : learned.from.front().c_str());
                if (independent_ms >= 0) std::printf("%9.3f", independent_ms);
                else std::printf("%9s", "-");
                std::printf(" %7.1f\n", learned.seconds);
                std::fflush(stdout);
                results.push_back(row);
                if (!out.empty()) bench::write_results(out, results.dump(1) + "\n");  // after every row
            }
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("decisions", [&] { return run(argc, argv); });
}
