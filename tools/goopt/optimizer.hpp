#pragma once
/// @file
/// @brief The interface of the optimizers the `goopt` program runs: what each gets (the graph, the
/// cluster's simulator, the budget, the seed), what each hands back (decisions scored by the one
/// simulator), the baselines, and the hooks through which substitution search and the learned
/// policies plug in. Free of the command line (CLI11) and of JSON, so that these files stay light.

#include "ranks.hpp"

#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/scaled_roofline.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulation_result.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/concepts.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::cli {

using cluster_type = device::cluster<device::device_spec>;
/// Op times: measured (`--cost-table`) where the table has them, else the roofline scaled by the
/// table's error; without a table the roofline itself.
using cost_model_type = cost::measured_model<cost::scaled_roofline>;
using simulator_type = sim::simulator<device::device_spec, cost_model_type>;

/// A graph with what goopt knows about where it came from.
struct loaded_graph {
    graph::computation_graph graph;
    std::string name;    ///< the zoo name, or the file's graph name (else the file name)
    std::string family;  ///< the zoo family (expert placements follow it); empty for files
    bool training = false;
};

/// What every method hands back: the same decisions, scored by the same simulator.
using decisions = sim::decision;  ///< placement, priorities (empty: FIFO), fusion groups (empty: none)

/// One point of an iterative method's curve: after `update` rounds, the best step time so far and
/// the mean step time of that round's samples.
struct curve_point {
    std::size_t update = 0;
    std::size_t samples = 0;  ///< simulations so far
    double best_step_time = 0;
    double mean_step_time = 0;
};

struct method_result {
    std::string name;         ///< "heft", "random_search", "ppo_placement", ...
    std::string description;  ///< one line for the table's footnote and result.json
    decisions chosen;
    sim::simulation_result result;   ///< without trace
    double seconds = 0;              ///< time the method took to decide
    std::vector<curve_point> curve;  ///< iterative methods only
    std::string curve_unit = {};     ///< what one curve point is: "PPO update (16 rollouts)", ...
    std::string note = {};           ///< printed under the table when not empty (e.g. what the result is)
};

/// Budget of the iterative methods: rounds (PPO updates, search rounds) and wall time.
struct budget {
    std::size_t steps = 50;
    double seconds = 0;  ///< 0: no time limit
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    /// Under mpirun every rank gets the same answer (all_ranks), so that no rank stops alone.
    bool time_left() const {
        return all_ranks(seconds <= 0 ||
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds);
    }
};

/// A one-line status on a terminal, rewritten in place; silent when stdout is not a terminal or
/// with --quiet, so that logs and pipes get only the final table.
class progress_line {
public:
    explicit progress_line(bool quiet);
    bool enabled() const noexcept { return enabled_; }
    /// "label: done/total unit, rate/s, ETA"
    void update(std::string_view label, std::size_t done, std::size_t total, std::string_view unit);
    void clear();

private:
    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::string unit_;
};

/// Everything an optimizer gets: the graph, the cluster's simulator, the budget and the seed.
struct optimize_context {
    const loaded_graph& input;
    simulator_type& simulator;
    const budget& limits;
    std::uint64_t seed;
    std::string checkpoint;  ///< pre-trained policy to start from (empty: from scratch)
    progress_line& progress;
};

/// @brief The visitor of a learned task's training in the program: records the training curve into
/// `out` (per update: samples so far, best and mean sampled step time), draws the progress line
/// under `label`, and stops training when the run's time budget is spent.
struct training_curve {
    const optimize_context& ctx;
    method_result& out;
    std::string_view label;
    double best = 0, sum = 0;
    std::size_t in_update = 0, updates = 0, samples = 0;  // this run's (a pre-trained policy's counters go on)
    void on_sample(std::span<const int>, const tasks::step_outcome& o) {
        if (o.valid && !o.oom && (best == 0 || o.step_time < best)) best = o.step_time;
        sum += o.step_time;
        ++in_update;
    }
    bool on_update(const rl::update_stats&) {
        samples += in_update;
        out.curve.push_back({++updates, samples, best, in_update ? sum / static_cast<double>(in_update) : 0});
        sum = 0;
        in_update = 0;
        ctx.progress.update(label, updates, ctx.limits.steps, "updates");
        return ctx.limits.time_left();
    }
};

/// The heuristic baselines, every one scored by the simulator (baselines.cpp: the one file that
/// uses the baseline heuristics).
std::vector<method_result> run_baselines(const optimize_context& ctx);
/// Names of the baselines in this build, in the order run_baselines returns them.
std::vector<std::string> baseline_names();
/// One that fits in memory beats one that does not, then the shorter step.
bool better_method(const method_result& a, const method_result& b);

// ---- hooks of the optimizers (one file each) ----
// `*_status()` says whether this build has the capability and what it is; the function does the
// work, or throws missing_capability() when it is not there. Nothing is faked: an unavailable task
// is an error when asked for, and left out (and said so) when the default "all available" is taken.

struct task_status {
    bool available;
    std::string_view capability;  ///< what the task needs, for messages
};

/// What a graph-to-graph stage hands on: a graph, whether it is a rewrite of the one given, and
/// what the stage did (printed under the table).
struct stage_result {
    graph::computation_graph graph;
    bool rewritten = false;  ///< false: the graph given, handed on unchanged
    std::string note;
};

/// The step time of `g` with every op on the cluster's device 0 in FIFO order: the default the
/// program measures (TensorFlow's single device).
double single_device_step(const graph::computation_graph& g, const cluster_type& cluster,
                          const cost_model_type& cost = {});

/// Substitution search (TASO SOSP'19 / TENSAT MLSys'21): a cheaper equivalent graph, handed on
/// only when its single-device step is shorter than the original's.
task_status substitution_status();
stage_result optimize_substitution(const optimize_context& ctx);
/// PPO-trained placement (GO, NeurIPS'20): device per op, started from `m_etf`, Baechi's m-ETF
/// decision as the baselines made it (imitated by a fresh policy, and the incumbent either way).
task_status placement_status();
method_result optimize_placement(const optimize_context& ctx, const decisions& m_etf);
/// One placement policy pre-trained across graphs and clusters (`goopt train`), for optimize_placement
/// to start from (optimize_context::checkpoint): the network of optimize_placement with `head`
/// (several device counts need nn::first_head::pair), written to `checkpoint`.
struct pretrain_summary {
    std::vector<sim::simulation_result> best;  ///< per (graph, cluster), graph-major, the best decision sampled on it
    std::size_t updates = 0, samples = 0;
    double seconds = 0;
};
pretrain_summary pretrain_placement(std::span<const loaded_graph> inputs, std::span<const cluster_type> clusters,
                                    nn::first_head head, const budget& limits, std::uint64_t seed,
                                    const std::string& checkpoint, std::size_t updates_per_graph, bool mixed,
                                    progress_line& progress);
/// PPO-trained scheduling: priority per op.
task_status scheduling_status();
method_result optimize_scheduling(const optimize_context& ctx, const decisions& m_etf);
/// PPO-trained fusion: a fusion level per op on m-ETF's placement, decoded by priority fusion.
task_status fusion_status();
method_result optimize_fusion(const optimize_context& ctx, const decisions& m_etf);

/// One GO policy deciding several of placement, scheduling and fusion together (tasks::joint_task:
/// the heuristic pipeline, i.e. m-ETF anchored on the best baseline's placement, critical-path
/// priorities and priority fusion, as the decoder), the others at their defaults (the best
/// baseline's placement, FIFO, no fusion). Named "go_" + the tasks joined by '+', e.g.
/// go_placement+scheduling+fusion.
method_result optimize_joint(const optimize_context& ctx, const decisions& m_etf, const method_result& best_baseline,
                             bool placement, bool scheduling, bool fusion);

/// The error of a task this build cannot do: names the task and the missing capability.
error missing_capability(std::string_view task, std::string_view capability);

}  // namespace goopt::cli
