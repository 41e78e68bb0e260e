#pragma once
/// @file
/// @brief What the subcommands of the `goopt` program share: how each registers itself, the graph and
/// cluster flags (declared once, used by optimize and simulate), a method's result, the progress
/// line, and the hooks through which the learned optimizers plug in.

#include <goopt/device/cluster.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulation_result.hpp>
#include <goopt/sim/simulator.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::cli {

using cluster_type = device::cluster<device::device_spec>;
using simulator_type = sim::simulator<device::device_spec>;

/// A subcommand: its CLI11 app (flags declared there) and what runs once the flags are parsed.
/// The function returns the exit status; bad input is a goopt::error (exit 1, one line).
struct command {
    CLI::App* app;
    std::function<int()> run;
};

command add_models_command(CLI::App& root);
command add_import_command(CLI::App& root);
command add_generate_rules_command(CLI::App& root);
command add_simulate_command(CLI::App& root);
command add_optimize_command(CLI::App& root);

/// `--model NAME | --graph FILE.json | --onnx FILE.onnx [--dim NAME=VALUE]... [--input-shape IN=d0,d1,...]...`
struct graph_source {
    std::string model, graph_file, onnx_file;
    std::vector<std::string> dims, input_shapes;

    /// Declares the flags on `app`; exactly one of --model, --graph, --onnx is required (else a
    /// usage error).
    void add_flags(CLI::App& app);
};

/// A graph with what goopt knows about where it came from.
struct loaded_graph {
    graph::computation_graph graph;
    std::string name;    ///< the zoo name, or the file's graph name (else the file name)
    std::string family;  ///< the zoo family (expert placements follow it); empty for files
    bool training = false;
};

loaded_graph load_graph(const graph_source& source);

/// An ONNX file imported with the --dim and --input-shape bindings (exit 1 without ONNX support).
graph::computation_graph import_onnx_file(const std::string& file, const std::vector<std::string>& dims,
                                          const std::vector<std::string>& input_shapes);

/// `--dim`/`--input-shape` flags, declared on `app` (shared by import and the graph source).
void add_binding_flags(CLI::App& app, std::vector<std::string>& dims, std::vector<std::string>& input_shapes);

/// `--cluster 4xV100:nvlink` (a spec, device::parse_cluster) or `--cluster FILE.json` (goopt.cluster).
void add_cluster_flag(CLI::App& app, std::string& cluster, std::string default_spec);
cluster_type load_cluster(const std::string& spec_or_file);

/// What every method hands back: the same decisions, scored by the same simulator.
struct decisions {
    sim::placement placement;
    std::vector<double> priorities;  ///< empty: FIFO
    sim::fusion_groups fusion;       ///< empty: no fusion
};

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
    sim::simulation_result result;  ///< without trace
    double seconds = 0;             ///< time the method took to decide
    std::vector<curve_point> curve; ///< iterative methods only
    std::string curve_unit = {};    ///< what one curve point is: "PPO update (16 rollouts)", ...
};

/// Budget of the iterative methods: rounds (PPO updates, search rounds) and wall time.
struct budget {
    std::size_t steps = 50;
    double seconds = 0;  ///< 0: no time limit
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    bool time_left() const {
        return seconds <= 0 ||
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds;
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
    std::string label_;
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

/// Substitution search (TASO SOSP'19 / TENSAT MLSys'21): a cheaper equivalent graph.
task_status substitution_status();
graph::computation_graph optimize_substitution(const optimize_context& ctx);
/// PPO-trained placement (GO, NeurIPS'20): device per op.
task_status placement_status();
method_result optimize_placement(const optimize_context& ctx);
/// PPO-trained scheduling: priority per op.
task_status scheduling_status();
method_result optimize_scheduling(const optimize_context& ctx);
/// PPO-trained fusion: fusion priority per op, merged greedily.
task_status fusion_status();
method_result optimize_fusion(const optimize_context& ctx);

/// The error of a task this build cannot do: names the task and the missing capability.
error missing_capability(std::string_view task, std::string_view capability);

/// Result files: the decision document read by `simulate` (goopt.decisions, or the "decisions" of a
/// goopt.result) and its JSON form.
decisions read_decisions_file(const std::string& path, const graph::computation_graph& g);
nlohmann::ordered_json decisions_to_json(const decisions& d);

/// "12.345 ms", "1.2 GiB"
std::string format_seconds(double s);
std::string format_bytes(std::int64_t b);

}  // namespace goopt::cli
