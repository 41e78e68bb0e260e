#pragma once
/// @file
/// @brief What the subcommands of the `goopt` program share: how each registers itself, the graph and
/// cluster flags (declared once, used by optimize and simulate). What the optimizers share (and
/// nothing of the command line) is in optimizer.hpp; the result and decision files are io/'s.

#include "../cli_checks.hpp"
#include "optimizer.hpp"

#include <goopt/cost/cost_table.hpp>
#include <goopt/cost/measured_model.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace goopt::io {
struct onnx_model;  // <goopt/io/onnx/model.hpp>, only where goopt::onnx is built
}  // namespace goopt::io

namespace goopt::cli {

/// @brief A CLI11 check for a floating-point flag: a finite number from `lo` to `hi`. CLI::Range lets
/// "nan" through (every comparison with NaN is false) and reports a refused value in fixed notation
/// with six decimals; this names what is wrong ("nan is not a finite number: expected a number from
/// 0 to 1e+09", after CLI11's "--time: ").
inline CLI::Validator finite_range(double lo, double hi) {
    const std::string range = concat("from ", lo, " to ", hi);
    return CLI::Validator(
        [lo, hi, range](std::string& input) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(input, v))
                return concat("'", input, "' is not a number: expected a number ", range);
            if (!std::isfinite(v)) return concat(input, " is not a finite number: expected a number ", range);
            if (v < lo || v > hi) return concat(input, " is out of range: expected a number ", range);
            return {};
        },
        concat("FLOAT in [", lo, " - ", hi, "]"));
}

using cli_checks::count;
using cli_checks::writable_file;

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
command add_superopt_command(CLI::App& root);
command add_train_command(CLI::App& root);
command add_export_command(CLI::App& root);
command add_calibrate_command(CLI::App& root);

/// Where onnxruntime-node is installed: this source tree's tools/ort.
std::string default_ort_dir();
/// `--cost-table FILE [--threads N] [--accept-foreign-table] [--ort-dir DIR]`: a search's measured
/// op costs (calibrate_command.cpp).
struct cost_table_flags {
    std::string file{}, ort_dir = default_ort_dir();
    std::string measurer{};  ///< --measurer: the command that measures (default: onnxruntime-node in ort_dir)
    std::int64_t threads = 1;
    bool accept_foreign = false;
    std::string fallback = "scaled";  ///< --unmeasured: scaled (cost::scaled_roofline fitted on the graph), shape
                                      ///< (scaled_roofline::fit_shape on the table), roofline or refuse
    void add_flags(CLI::App& app);
};
/// The cost model of a search from `g` on `d` with `table` (what --unmeasured says costs the rest).
cost::measured_model<cost::scaled_roofline> cost_model_of(const cost_table_flags& f, cost::cost_table table,
                                                          const graph::computation_graph& g,
                                                          const device::device_spec& d);
/// "the roofline x 4.2 (conv2d 3.1, matmul 6.5)": what the unmeasured configurations cost.
std::string describe_fallback(const cost::scaled_roofline& s);
/// The onnxruntime-node version installed in `ort_dir` ("" when none is).
std::string installed_ort_version(const std::string& ort_dir);
/// The table of --cost-table (none without the flag), refused when it was measured with another
/// runtime version (the one installed in --ort-dir, when there is one), thread count or machine,
/// unless --accept-foreign-table (then it prints a warning).
std::optional<cost::cost_table> load_cost_table(const cost_table_flags& f);
/// "40 of 52 op configurations measured (130 of 144 ops)"
std::string describe_coverage(const cost::table_coverage& c);

/// How `goopt calibrate` and `superopt --calibrate-rounds` measure (calibrate_command.cpp).
struct measuring {
    std::string ort_dir = default_ort_dir();
    /// --measurer CMD: a command that measures in another runtime by measure_ops.js's protocol
    /// (`CMD MANIFEST.json --out RESULT.json`; `CMD --environment --threads N` prints where it
    /// measures), e.g. tools/gpu/torch_runtime.py on a GPU; empty: node and tools/ort/measure_ops.js
    std::string measurer{};
    std::int64_t warmup = 5;
    bool groups = true;  ///< also greedy fusion's groups, each as one model
};
/// What one measuring pass did.
struct measured_round {
    std::size_t configurations = 0;         ///< distinct configurations of the graph
    std::size_t already = 0;                ///< of those, already in the table
    std::size_t measured = 0;               ///< newly measured
    std::vector<std::string> not_measured;  ///< why the others were not
    double seconds = 0;
};
/// Node.js and onnxruntime-node are there (else goopt::error saying how to get them): their version.
std::string check_measuring(const measuring& m);
/// Where `m` measures with `threads` intra-op threads: this machine and onnxruntime-node (checked as
/// check_measuring does), or what `m.measurer --environment` says (else goopt::error naming the command).
cost::measurement_environment measuring_environment(const measuring& m, std::int64_t threads);
/// Times in onnxruntime (in the table's environment: its thread count, repetitions and statistic)
/// the configurations of `g` that run per inference and `table` lacks, and adds them; a table with
/// nothing yet also gets its dispatch time. ONNX models are written at operator set `opset`.
measured_round measure_missing(const graph::computation_graph& g, std::int64_t opset, cost::cost_table& table,
                               const measuring& m);
/// Times the configurations a search asked about (cost::recording_model::unmeasured: by key, each
/// the graph of one op) that `table` lacks, as measure_missing does; `name` is what the log calls them.
measured_round measure_asked(const std::map<std::string, graph::computation_graph>& asked, const std::string& name,
                             std::int64_t opset, cost::cost_table& table, const measuring& m);

/// What onnxruntime measured of a rewritten graph against its input (superopt --runtime-gate).
struct runtime_comparison {
    double median_gain = 0;  ///< median over the rounds of 1 - result's time / input's time
    /// the rounds' 25th percentile of that gain: three rounds in four gained at least this much
    double lower_quartile_gain = 0;
    double max_rel_diff = 0;  ///< max over outputs of max |a - b| / max |b|, b the input's, on random inputs
    std::size_t rounds = 0;
    std::int64_t threads = 1;
};
/// Exports `before` and `after` (with `origin`'s weights, at `opset`) and times them in onnxruntime
/// (tools/ort/time_models.js: `rounds` rounds, each running both in alternating order, `threads`
/// intra-op threads, the highest graph optimization level), comparing their outputs on one random
/// input (calibrate_command.cpp). @throws goopt::error without node or onnxruntime-node, or when the
/// runtime cannot run or compare them.
runtime_comparison compare_in_runtime(const graph::computation_graph& before, const graph::computation_graph& after,
                                      const io::onnx_model* origin, std::int64_t opset, std::int64_t threads,
                                      std::int64_t rounds, const std::string& ort_dir);

/// `--model NAME | --graph FILE.json | --onnx FILE.onnx [--dim NAME=VALUE]... [--input-shape IN=d0,d1,...]...`
struct graph_source {
    std::string model{}, graph_file{}, onnx_file{};  // ({}: one source named by a designated initializer)
    std::vector<std::string> dims{}, input_shapes{};

    /// Declares the flags on `app`; exactly one of --model, --graph, --onnx is required (else a
    /// usage error).
    void add_flags(CLI::App& app);
};

loaded_graph load_graph(const graph_source& source);

/// A graph and, when it was imported from an ONNX file, what an ONNX export needs of that file:
/// its weights' values, operator set and output names (io::onnx_model less its graph).
struct graph_with_origin {
    loaded_graph loaded;
    std::shared_ptr<const io::onnx_model> onnx = nullptr;
};
graph_with_origin load_graph_with_origin(const graph_source& source);
/// The operator set to write a graph's parts at: its ONNX file's where that is 13-22, else 13
/// (calibrate_command.cpp).
std::int64_t onnx_opset(const graph_with_origin& origin);

/// The file formats a graph is written in: goopt.graph JSON or ONNX.
enum class graph_file_format { json, onnx };
/// `--format json|onnx`, else the extension of `path` (.json, .onnx); anything else is an error
/// naming the `--out` flag, so that a file never gets a format its name does not say.
graph_file_format output_format(const std::string& path, const std::string& format);
/// `--format`: declared on `app` for the format of `--out`.
void add_format_flag(CLI::App& app, std::string& format);
/// Writes g to `path` atomically; as ONNX with `origin`'s weights, opset and output names where it
/// has them. Prints the exporter's warnings and one line saying what was written. `before`: the graph
/// a search rewrote into g; with no `origin`, g's outputs are written under the names they had there
/// (a rewrite renames the op that computes an output).
void write_graph_output(const std::string& path, graph_file_format format, const graph::computation_graph& g,
                        const io::onnx_model* origin, std::int64_t opset = 0,
                        const graph::computation_graph* before = nullptr);

/// An ONNX file imported with the --dim and --input-shape bindings (exit 1 without ONNX support);
/// `param_inputs` / `data_inputs`: `goopt import`'s --param-inputs / --data-inputs lists
/// (comma-separated names: the graph inputs that are parameters, or those that are not).
graph::computation_graph import_onnx_file(const std::string& file, const std::vector<std::string>& dims,
                                          const std::vector<std::string>& input_shapes,
                                          const std::string& param_inputs = {}, const std::string& data_inputs = {});

/// `--dim`/`--input-shape` flags, declared on `app` (shared by import and the graph source).
void add_binding_flags(CLI::App& app, std::vector<std::string>& dims, std::vector<std::string>& input_shapes);

/// `--cluster 4xV100:nvlink` (a spec, device::parse_cluster) or `--cluster FILE.json` (goopt.cluster).
void add_cluster_flag(CLI::App& app, std::string& cluster, std::string default_spec);
cluster_type load_cluster(const std::string& spec_or_file);

/// "12.345 ms", "1.2 GiB"
std::string format_seconds(double s);
std::string format_bytes(std::int64_t b);

}  // namespace goopt::cli
