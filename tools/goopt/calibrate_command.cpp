// `goopt calibrate`: measures what a graph's op configurations (and its fused groups) take in
// onnxruntime on this machine and writes them to a cost table (goopt.cost_table version 2), which
// `goopt superopt --cost-table` then searches with. Each distinct configuration is written as a tiny
// ONNX model (the op alone: weights as initializers, activations as graph inputs; a fused group as
// the runtime runs it, its members in one model) and timed by tools/ort/measure_ops.js in a node
// child process: the median of --repetitions runs, less the runtime's cost of running any model.
#include "cli.hpp"

#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/cost_table_json.hpp>
#include <goopt/subst/inference_cost.hpp>
#if defined(GOOPT_PROGRAM_HAS_ONNX)
#include <goopt/io/onnx.hpp>
#endif

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>

#if !defined(GOOPT_ORT_DIR)
#define GOOPT_ORT_DIR "tools/ort"
#endif

namespace goopt::cli {

namespace fs = std::filesystem;

std::string default_ort_dir() { return GOOPT_ORT_DIR; }

std::string installed_ort_version(const std::string& ort_dir) {
    const fs::path package = fs::path(ort_dir) / "node_modules" / "onnxruntime-node" / "package.json";
    std::error_code ec;
    if (!fs::exists(package, ec)) return {};
    const auto j = io::detail::parse_json_text(io::detail::read_text_file(package, "package"), package.string());
    return j.contains("version") && j["version"].is_string() ? j["version"].get<std::string>() : std::string();
}

void cost_table_flags::add_flags(CLI::App& app) {
    app.add_option("--cost-table", file,
                   "Search with op times measured on this machine (a table 'goopt calibrate' wrote); what it "
                   "did not measure costs the roofline of --device (default then: CPU)")
        ->type_name("FILE.json");
    app.add_option("--threads", threads,
                   "With --cost-table: the thread count the table must have been measured with (and onnxruntime's "
                   "intra-op threads where it runs the models: superopt's --runtime-gate)")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_flag("--accept-foreign-table", accept_foreign,
                 "With --cost-table: use a table measured with another runtime version, thread count or machine "
                 "(with a warning) instead of refusing it");
    app.add_option("--unmeasured", fallback,
                   "With --cost-table: what a configuration the table lacks costs: the roofline scaled by the "
                   "table's measured/roofline ratio (per op kind, the median over the graph's measured "
                   "configurations; else over all kinds), shape (the same over the whole table, but for a kind "
                   "with 5 or more configurations, the median ratio of the 5 nearest in size, never below the "
                   "kind's: docs/cost.md), the roofline itself (optimistic on a CPU runtime), or refuse (a million "
                   "times the roofline: rewrites into unmeasured configurations are never taken)")
        ->check(CLI::IsMember({"scaled", "shape", "roofline", "refuse"}))
        ->capture_default_str();
    app.add_option("--ort-dir", ort_dir,
                   "Where onnxruntime-node is installed (./bootstrap.sh ort): its version is checked against the "
                   "table's")
        ->capture_default_str();
    app.add_option("--measurer", measurer,
                   "With --cost-table: the table is of the runtime this command measures with (its --environment "
                   "is checked against the table's, not onnxruntime-node's): e.g. 'python3 "
                   "tools/gpu/torch_runtime.py' for a CUDA GPU (docs/cost.md)")
        ->type_name("CMD");
}

std::optional<cost::cost_table> load_cost_table(const cost_table_flags& f) {
    if (f.file.empty()) return std::nullopt;
    auto table = io::read_measured_table_file(f.file);
    const auto here = f.measurer.empty()
                          ? cost::this_machine(installed_ort_version(f.ort_dir), f.threads)
                          : measuring_environment({.ort_dir = f.ort_dir, .measurer = f.measurer}, f.threads);
    if (here.runtime_version.empty())
        std::printf(
            "warning: onnxruntime-node is not installed in %s: the table's runtime version (%s) is not "
            "checked\n",
            f.ort_dir.c_str(), table.environment.runtime_version.c_str());
    const auto warning = cost::check_environment(f.file, table.environment, here, f.accept_foreign);
    if (!warning.empty()) std::printf("warning: %s\n", warning.c_str());
    return table;
}

cost::measured_model<cost::scaled_roofline> cost_model_of(const cost_table_flags& f, cost::cost_table table,
                                                          const graph::computation_graph& g,
                                                          const device::device_spec& d) {
    if (f.fallback == "roofline") return cost::measured_model<cost::scaled_roofline>(std::move(table));
    if (f.fallback == "shape") {
        auto fallback = cost::scaled_roofline::fit_shape(table, d);  // before the table moves
        return cost::measured_model<cost::scaled_roofline>(std::move(table), std::move(fallback));
    }
    if (f.fallback == "refuse")
        return cost::measured_model<cost::scaled_roofline>(
            std::move(table), cost::scaled_roofline::uniform(cost::scaled_roofline::refusal_factor));
    return cost::unbiased_model(std::move(table), g, subst::runs_per_inference(g), d);
}

std::string describe_fallback(const cost::scaled_roofline& s) {
    if (s.by_kind().empty() && s.overall() == 1.0) return "the roofline";
    auto ratio = [](double x) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.3g", x);
        return std::string(buffer);
    };
    std::string kinds;
    for (const auto& [kind, factor] : s.by_kind())
        kinds += concat(kinds.empty() ? "" : ", ", ops::name(kind), " ", ratio(factor));
    std::string shaped;  // the kinds whose factor follows the size (--unmeasured shape)
    for (const auto& [kind, curve] : s.curves())
        shaped += concat(shaped.empty() ? "" : ", ", ops::name(kind), " (", curve.points(), ")");
    return concat("the roofline x ", ratio(s.overall()), kinds.empty() ? "" : concat(" (per kind: ", kinds, ")"),
                  shaped.empty()
                      ? ""
                      : concat("; by size (the median of the table's 5 configurations nearest in size, never below "
                               "the kind's), for ",
                               shaped));
}

std::string describe_coverage(const cost::table_coverage& c) {
    return concat(c.measured_configs, " of ", c.configs, " op configurations measured (", c.measured_ops, " of ", c.ops,
                  " ops)");
}

namespace {

struct calibrate_flags {
    graph_source source;
    std::string out = "goopt.cost_table.json", ort_dir = default_ort_dir(), statistic = "median", measurer;
    std::int64_t threads = 1, repetitions = 30, warmup = 5;
    bool groups = true;
};

bool node_on_path() {
    const char* path = std::getenv("PATH");
    if (!path) return false;
    std::string_view rest(path);
    while (!rest.empty()) {
        const auto colon = rest.find(':');
        const fs::path dir(std::string(rest.substr(0, colon)));
        if (::access((dir / "node").c_str(), X_OK) == 0) return true;
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return false;
}

/// A shell word: the text in single quotes (a quote inside as '\'').
std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// The last line of a child's error output that is not blank: where a Python traceback or a
/// script's own "error:" line says what went wrong.
std::string last_line(const fs::path& log) {
    std::ifstream in(log);
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last.empty() ? std::string("(nothing on its error output)") : last;
}

/// Runs `command` (a shell command line) with its error output into `log`, and reads the JSON it
/// wrote to `out`. `name` is how messages call the command, `what` what it writes. @throws goopt::error
/// naming `who` where it fails (with the last line of its error output: `expected` is what was
/// expected of it), exits 0 without writing `out`, or writes no JSON there.
nlohmann::json run_for_json(const std::string& command, const fs::path& out, const fs::path& log,
                            const std::string& who, const std::string& name, const std::string& what,
                            const std::string& expected) {
    const std::string line = concat(command, " 2> ", shell_quote(log.string()));
    if (std::system(line.c_str()) != 0) throw error(who, concat(name, " failed: ", last_line(log)), expected);
    if (std::error_code ec; !fs::exists(out, ec))
        throw error(who, concat(name, " exited 0 but wrote no ", what),
                    concat("a measurer that writes its ", what, " JSON to the file after --out"));
    return io::detail::parse_json_text(io::detail::read_text_file(out, what), out.string());
}

/// A directory of its own under the system's temporary directory, removed when this goes away.
class scratch_directory {
public:
    scratch_directory() {
        const auto base = fs::temp_directory_path();
        for (int k = 0;; ++k) {
            path_ = base / concat("goopt-calibrate-", ::getpid(), "-", k);
            if (fs::create_directory(path_)) break;
        }
    }
    ~scratch_directory() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    scratch_directory(const scratch_directory&) = delete;
    scratch_directory& operator=(const scratch_directory&) = delete;
    const fs::path& path() const noexcept { return path_; }

private:
    fs::path path_;
};

/// A configuration to measure: its key, and the ops of `graph` that have it (one op, or a group).
struct config_to_measure {
    std::string key;
    const graph::computation_graph* graph;
    std::vector<graph::op_id> ops;
};

/// The distinct configurations of `g` that run per inference and `table` lacks: each op's, and each
/// fused group's as greedy fusion forms them on one device (what a runtime's fusion would run).
std::vector<config_to_measure> configurations(const graph::computation_graph& g, const cost::cost_table& table,
                                              bool groups, std::size_t& total) {
    const auto runs = subst::runs_per_inference(g);
    std::vector<config_to_measure> out;
    std::set<std::string, std::less<>> seen;
    auto consider = [&](std::string key, std::vector<graph::op_id> ops) {
        if (!seen.insert(key).second) return;
        ++total;
        if (!table.find(key)) out.push_back({std::move(key), &g, std::move(ops)});
    };
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (runs[o] && cost::is_measurable(g, o)) consider(cost::op_config_key(g, o), {o});
    if (!groups) return out;
    const std::vector<sim::device_id> one_device(g.num_ops(), 0);
    const auto fusion = baselines::greedy_fusion(g, one_device);
    std::map<std::int32_t, std::vector<graph::op_id>> members;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (runs[o] && fusion[o] >= 0) members[fusion[o]].push_back(o);
    for (auto& [id, ops] : members) {
        if (ops.size() < 2) continue;
        if (!std::all_of(ops.begin(), ops.end(), [&](graph::op_id o) { return cost::is_measurable(g, o); })) continue;
        consider(cost::group_config_key(g, ops), ops);
    }
    return out;
}

#if defined(GOOPT_PROGRAM_HAS_ONNX)
/// `ops` of `g` (in topological order) as a graph of their own: what they read from outside becomes
/// a weight (with values: an initializer the runtime may prepare once) where `g` reads it from a
/// weight or a constant, else a graph input; the outputs nobody else in `ops` reads are graph outputs.
io::onnx_model standalone(const graph::computation_graph& g, const std::vector<graph::op_id>& ops,
                          std::mt19937_64& rng) {
    io::onnx_model m;
    auto& s = m.graph;
    std::map<graph::tensor_id, graph::tensor_id> mapped;
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    auto inside = [&](graph::op_id o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
    for (graph::op_id o : ops) {
        const auto& op = g.get_op(o);
        std::vector<graph::tensor_id> inputs;
        for (graph::tensor_id t : op.inputs) {
            if (auto it = mapped.find(t); it != mapped.end()) {
                inputs.push_back(it->second);
                continue;
            }
            const auto& type = g.type_of(t);
            const std::string name = concat("x", mapped.size());
            graph::tensor_id u;
            if (cost::detail::is_fixed(g, t)) {
                u = s.weight(name, type.dims, type.type);
                io::onnx_tensor values{type, {}};
                const bool floating = ops::is_floating(type.type);
                values.values.resize(static_cast<std::size_t>(type.dims.num_elements()));
                for (auto& v : values.values) v = floating ? value(rng) : 0.0;
                m.weight_values.emplace(name, std::move(values));
            } else {
                u = s.input(name, type.dims, type.type);
            }
            mapped.emplace(t, u);
            inputs.push_back(u);
        }
        const auto outs = s.add(op.kind, inputs, op.attrs, op.name);
        for (std::size_t k = 0; k < outs.size(); ++k) mapped.emplace(op.outputs[k], outs[k]);
    }
    for (graph::op_id o : ops)
        for (graph::tensor_id t : g.get_op(o).outputs) {
            const auto& uses = g.get_tensor(t).uses;
            const bool read_inside =
                std::any_of(uses.begin(), uses.end(), [&](const graph::use& u) { return inside(u.op); });
            const bool read_outside = uses.empty() || std::any_of(uses.begin(), uses.end(),
                                                                  [&](const graph::use& u) { return !inside(u.op); });
            if (!read_inside || read_outside) s.mark_output(mapped.at(t));
        }
    return m;
}
#endif

}  // namespace

namespace {

/// Times `todo` (configurations `table` lacks, `out.configurations` of them considered, of graph
/// `name`) in onnxruntime and adds them to `table` (and the dispatch time to a table with nothing yet).
measured_round measure(const std::vector<config_to_measure>& todo, const std::string& name, measured_round out,
                       std::int64_t opset, cost::cost_table& table, const measuring& m) {
#if !defined(GOOPT_PROGRAM_HAS_ONNX)
    (void)todo, (void)name, (void)out, (void)opset, (void)table, (void)m;
    throw error("goopt calibrate", "this goopt was built without ONNX support (the measured models are ONNX files)",
                "a goopt built with libonnx-dev and libprotobuf-dev installed");
#else
    const auto t0 = std::chrono::steady_clock::now();
    out.already = out.configurations - todo.size();
    const bool fresh = table.seconds.empty() && table.dispatch_seconds == 0;
    const fs::path script = fs::path(m.ort_dir) / "measure_ops.js";
    const std::string measurer = m.measurer.empty() ? concat("node ", shell_quote(script.string())) : m.measurer;
    scratch_directory scratch;
    std::mt19937_64 rng(1);
    nlohmann::json models = nlohmann::json::array();
    auto write_model = [&](const io::onnx_model& model, const std::string& id) {
        const std::string file = concat(id, ".onnx");
        io::write_onnx(model.graph, scratch.path() / file, {.source = &model, .opset = opset});
        models.push_back({{"id", id}, {"file", file}});
    };
    // The cost of a call, not of an op: a model of one op on one number, and one of a chain of
    // dispatch_chain such ops. The chain's extra time is what each op of a session costs (the
    // runtime's kernel launch, which a graph of fewer ops saves, and which a tiny op measured alone
    // must keep); the rest of the one-op model's time is the call from Node.js, subtracted from every
    // time. (Subtracting the whole one-op time made every op of a small transformer "free".)
    constexpr int dispatch_chain = 33;
    if (fresh)
        for (const int length : {1, dispatch_chain}) {
            io::onnx_model dispatch;
            auto x = dispatch.graph.input("x", ops::shape{1});
            for (int k = 0; k < length; ++k) x = dispatch.graph.add1(ops::op_kind::sigmoid, {x});
            dispatch.graph.mark_output(x);
            write_model(dispatch, length == 1 ? "dispatch" : "dispatch_chain");
        }
    for (std::size_t i = 0; i < todo.size(); ++i) {
        try {
            write_model(standalone(*todo[i].graph, todo[i].ops, rng), std::to_string(i));
        } catch (const error& e) {
            out.not_measured.push_back(
                concat("no ONNX form: ", todo[i].key.substr(0, todo[i].key.find('(')), ": ", e.what()));
        }
    }
    std::printf("%s: %zu configurations (%zu already measured), %zu models to time in %s %s, %lld thread%s\n",
                name.c_str(), out.configurations, out.already, models.size(), table.environment.runtime.c_str(),
                table.environment.runtime_version.c_str(), static_cast<long long>(table.environment.threads),
                table.environment.threads == 1 ? "" : "s");
    std::fflush(stdout);
    if (models.empty()) return out;
    const fs::path manifest = scratch.path() / "manifest.json";
    const fs::path result = scratch.path() / "result.json";
    const fs::path log = scratch.path() / "stderr.txt";
    io::atomic_write(manifest, nlohmann::json{{"threads", table.environment.threads},
                                              {"repetitions", table.repetitions},
                                              {"warmup", m.warmup},
                                              {"models", models}}
                                   .dump());
    const auto report =
        run_for_json(concat(measurer, " ", shell_quote(manifest.string()), " --out ", shell_quote(result.string())),
                     result, log, "goopt calibrate", concat("the measuring process (", measurer, ")"), "result",
                     m.measurer.empty() ? "a working onnxruntime-node (./bootstrap.sh ort)"
                                        : "a --measurer that measures a manifest as tools/ort/measure_ops.js does");
    std::map<std::string, double> medians;
    for (const auto& r : report.at("results")) {
        const auto id = r.at("id").get<std::string>();
        if (r.contains("error"))
            out.not_measured.push_back(
                concat(table.environment.runtime, " refused model ", id, ": ", r.at("error").get<std::string>()));
        else medians[id] = r.at(concat(table.statistic, "_seconds")).get<double>();
    }
    if (fresh) {
        if (!medians.count("dispatch") || !medians.count("dispatch_chain"))
            throw error("goopt calibrate", concat(measurer, " could not run the one-op dispatch models"),
                        "a measurer that runs a chain of sigmoids");
        const double per_op =
            std::max(0.0, (medians["dispatch_chain"] - medians["dispatch"]) / static_cast<double>(dispatch_chain - 1));
        table.dispatch_seconds = std::max(0.0, medians["dispatch"] - per_op);
        std::printf("a call costs %s, an op of a session at least %s (a chain of %d tiny ops)\n",
                    format_seconds(table.dispatch_seconds).c_str(), format_seconds(per_op).c_str(), dispatch_chain);
    }
    for (std::size_t i = 0; i < todo.size(); ++i)
        if (auto it = medians.find(std::to_string(i)); it != medians.end()) {
            table.set(todo[i].key, std::max(0.0, it->second - table.dispatch_seconds));
            ++out.measured;
        }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
#endif
}

}  // namespace

measured_round measure_missing(const graph::computation_graph& g, std::int64_t opset, cost::cost_table& table,
                               const measuring& m) {
    measured_round out;
    const auto todo = configurations(g, table, m.groups, out.configurations);
    return measure(todo, g.name(), std::move(out), opset, table, m);
}

measured_round measure_asked(const std::map<std::string, graph::computation_graph>& asked, const std::string& name,
                             std::int64_t opset, cost::cost_table& table, const measuring& m) {
    measured_round out;
    std::vector<config_to_measure> todo;
    for (const auto& [key, one] : asked) {
        ++out.configurations;
        if (table.find(key)) continue;
        // the graph's one op (after its sources) has the configuration: single_op_graph made it so
        graph::op_id op = 0;
        while (op < one.num_ops() && one.get_op(op).spec().has(ops::source)) ++op;
        if (op == one.num_ops() || cost::op_config_key(one, op) != key)
            throw error("goopt superopt --calibrate-rounds", concat("no op of key ", key, " in its graph"),
                        "the graph of one op that cost::recording_model made");
        todo.push_back({key, &one, {op}});
    }
    return measure(todo, name, std::move(out), opset, table, m);
}

runtime_comparison compare_in_runtime(const graph::computation_graph& before, const graph::computation_graph& after,
                                      const io::onnx_model* origin, std::int64_t opset, std::int64_t threads,
                                      std::int64_t rounds, const std::string& ort_dir) {
    constexpr const char* who = "goopt superopt --runtime-gate";
#if !defined(GOOPT_PROGRAM_HAS_ONNX)
    (void)before, (void)after, (void)origin, (void)opset, (void)threads, (void)rounds, (void)ort_dir;
    throw error(who, "this goopt was built without ONNX support (onnxruntime runs ONNX files)",
                "a goopt built with libonnx-dev and libprotobuf-dev installed");
#else
    const fs::path script = fs::path(ort_dir) / "time_models.js";
    std::error_code ec;
    if (!node_on_path() || installed_ort_version(ort_dir).empty() || !fs::exists(script, ec))
        throw error(who, concat("node or onnxruntime-node (", script.string(), ") is not there"),
                    "Node.js 18 or later and onnxruntime-node: run ./bootstrap.sh ort (or give --ort-dir)");
    scratch_directory scratch;
    const fs::path a = scratch.path() / "input.onnx", b = scratch.path() / "result.onnx";
    const fs::path result = scratch.path() / "times.json", log = scratch.path() / "stderr.txt";
    // both written by the same exporter with the same options: the two files superopt could write
    io::write_onnx(before, a, {.source = origin, .opset = opset});
    io::write_onnx(after, b, {.source = origin, .opset = opset});
    const auto report = run_for_json(
        concat("node ", shell_quote(script.string()), " ", shell_quote(a.string()), " ", shell_quote(b.string()),
               " --threads ", threads, " --repeat ", rounds, " > ", shell_quote(result.string())),
        result, log, who, concat("the timing process (", script.string(), ")"), "timing",
        "a working onnxruntime-node (./bootstrap.sh ort)");
    const auto& run = report.at("runs").at(0);
    if (!run.contains("max_rel_diff") || !run.at("max_rel_diff").is_number())  // null: a NaN, or no match
        throw error(
            who,
            concat("onnxruntime could not compare the result's outputs with the input's (",
                   run.contains("error") ? run.at("error").dump() : run.value("outputs", nlohmann::json()).dump(),
                   ": a difference of null is not finite, e.g. a model whose weights are not in the file)"),
            "outputs of the same names and shapes, finite on random inputs");
    const auto ref = run.at("reference_ms").get<std::vector<double>>();
    const auto other = run.at("other_ms").get<std::vector<double>>();
    if (ref.empty() || ref.size() != other.size())
        throw error(who, concat(ref.size(), " and ", other.size(), " timed rounds"), "one pair per round");
    std::vector<double> gains(ref.size());
    for (std::size_t k = 0; k < ref.size(); ++k) gains[k] = 1 - other[k] / ref[k];
    std::sort(gains.begin(), gains.end());
    const std::size_t n = gains.size();
    const auto at = [&](double q) {  // linear interpolation between the sorted rounds
        const double x = q * static_cast<double>(n - 1);
        const auto lo = static_cast<std::size_t>(x);
        return lo + 1 < n ? gains[lo] + (x - static_cast<double>(lo)) * (gains[lo + 1] - gains[lo]) : gains[lo];
    };
    return {.median_gain = at(0.5),
            .lower_quartile_gain = at(0.25),
            .max_rel_diff = run.at("max_rel_diff").get<double>(),
            .rounds = n,
            .threads = threads};
#endif
}

std::int64_t onnx_opset(const graph_with_origin& origin) {
#if defined(GOOPT_PROGRAM_HAS_ONNX)
    return origin.onnx && origin.onnx->opset >= io::onnx_export_min_opset &&
                   origin.onnx->opset <= io::onnx_export_max_opset
               ? origin.onnx->opset
               : io::onnx_export_min_opset;
#else
    (void)origin;
    return 13;
#endif
}

std::string check_measuring(const measuring& m) {
    const fs::path script = fs::path(m.ort_dir) / "measure_ops.js";
    if (!node_on_path())
        throw error("goopt calibrate", "node is not on PATH (onnxruntime runs in Node.js)",
                    "Node.js 18 or later and onnxruntime-node: run ./bootstrap.sh ort");
    const std::string version = installed_ort_version(m.ort_dir);
    std::error_code ec;
    if (version.empty() || !fs::exists(script, ec))
        throw error("goopt calibrate", concat("onnxruntime-node is not installed in ", m.ort_dir),
                    "run ./bootstrap.sh ort (or give --ort-dir DIR holding measure_ops.js and node_modules)");
    return version;
}

cost::measurement_environment measuring_environment(const measuring& m, std::int64_t threads) {
    if (m.measurer.empty()) return cost::this_machine(check_measuring(m), threads);
    const std::string who = "--measurer";
    scratch_directory scratch;
    const fs::path out = scratch.path() / "environment.json", log = scratch.path() / "stderr.txt";
    const auto j =
        run_for_json(concat(m.measurer, " --environment --threads ", threads, " --out ", shell_quote(out.string())),
                     out, log, who, concat("'", m.measurer, " --environment'"), "environment",
                     "a measurer that prints its runtime and machine (tools/gpu/torch_runtime.py --environment)");
    cost::measurement_environment e;
    try {
        e.runtime = j.at("runtime").get<std::string>();
        e.runtime_version = j.at("version").get<std::string>();
        e.threads = j.at("threads").get<std::int64_t>();
        e.cpu = j.at("cpu").get<std::string>();
        e.cores = j.at("cores").get<std::int64_t>();
    } catch (const nlohmann::json::exception& x) {
        throw error(who, concat("'", m.measurer, " --environment' printed ", j.dump(), " (", x.what(), ")"),
                    "{\"runtime\", \"version\", \"threads\", \"cpu\", \"cores\"}");
    }
    return e;
}

namespace {

int run_calibrate(const calibrate_flags& f) {
#if !defined(GOOPT_PROGRAM_HAS_ONNX)
    (void)f;
    throw error("goopt calibrate", "this goopt was built without ONNX support (the measured models are ONNX files)",
                "a goopt built with libonnx-dev and libprotobuf-dev installed");
#else
    const measuring m{.ort_dir = f.ort_dir, .measurer = f.measurer, .warmup = f.warmup, .groups = f.groups};
    const auto here = measuring_environment(m, f.threads);

    // an existing table of this environment grows; one of another is refused
    cost::cost_table table{.environment = here, .repetitions = f.repetitions, .statistic = f.statistic};
    std::error_code ec;
    if (fs::exists(f.out, ec)) {
        table = io::read_measured_table_file(f.out);
        cost::check_environment(f.out, table.environment, here, false);
        if (table.repetitions != f.repetitions || table.statistic != f.statistic)
            throw error(concat("--out ", f.out),
                        concat("holds the ", table.statistic, " of ", table.repetitions, " runs"),
                        concat("--repetitions ", table.repetitions, " --statistic ", table.statistic,
                               " to extend it, or another --out"));
    }

    const auto origin = load_graph_with_origin(f.source);
    const auto& g = origin.loaded.graph;
    graph::validate(g);
    const auto round = measure_missing(g, onnx_opset(origin), table, m);
    io::write_measured_table_file(f.out, table);
    std::printf("measured %zu configurations in %.1f s (%s of %lld runs each, less the dispatch %s)\n", round.measured,
                round.seconds, table.statistic.c_str(), static_cast<long long>(table.repetitions),
                format_seconds(table.dispatch_seconds).c_str());
    for (const auto& n : round.not_measured) std::printf("not measured (%s)\n", n.c_str());

    const device::device_spec cpu = device::describe(*device::find_preset("CPU"));
    const auto runs = subst::runs_per_inference(g);
    std::printf("inference cost: roofline (CPU preset) %s, measured %s; %s\n",
                format_seconds(subst::inference_cost(g, cost::roofline_model{}, cpu)).c_str(),
                format_seconds(subst::inference_cost(g, cost::unbiased_model(table, g, runs, cpu), cpu)).c_str(),
                describe_coverage(cost::coverage(table, g, runs)).c_str());
    std::printf("wrote %s (%zu configurations, %s)\n", f.out.c_str(), table.seconds.size(),
                cost::describe(table.environment).c_str());
    return 0;
#endif
}

}  // namespace

command add_calibrate_command(CLI::App& root) {
    auto flags = std::make_shared<calibrate_flags>();
    auto* app = root.add_subcommand("calibrate",
                                    "Measure a graph's op configurations in onnxruntime on this machine and write "
                                    "them to a cost table for 'goopt superopt --cost-table'");
    flags->source.add_flags(*app);
    app->add_option("-o,--out", flags->out,
                    "The cost table to write (atomically); an existing table of this machine, runtime and thread "
                    "count is extended with what it lacks")
        ->type_name("FILE.json")
        ->check(writable_file())
        ->capture_default_str();
    app->add_option("--threads", flags->threads, "onnxruntime's intra-op threads")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app->add_option("--repetitions", flags->repetitions, "Timed runs per configuration (the table holds the median)")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    app->add_option("--warmup", flags->warmup, "Untimed runs per configuration before the timed ones")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    app->add_option("--statistic", flags->statistic,
                    "What the table keeps of each configuration's runs: the median, or the fastest (min: on a "
                    "machine so busy that most runs are interrupted)")
        ->check(CLI::IsMember({"median", "min"}))
        ->capture_default_str();
    app->add_flag("!--no-groups", flags->groups,
                  "Measure single ops only, not the fused groups greedy fusion forms (as one model each)");
    app->add_option("--ort-dir", flags->ort_dir, "Where measure_ops.js and onnxruntime-node (./bootstrap.sh ort) are")
        ->capture_default_str();
    app->add_option("--measurer", flags->measurer,
                    "Measure with this command instead of onnxruntime-node: it times a manifest of ONNX models as "
                    "tools/ort/measure_ops.js does and says where with --environment (e.g. 'python3 "
                    "tools/gpu/torch_runtime.py' on a CUDA GPU; docs/cost.md)")
        ->type_name("CMD");
    app->footer(
        "The configurations measured are those of the ops that run per inference (not weight preprocessing)\n"
        "and, unless --no-groups, of greedy fusion's groups. Needs Node.js and onnxruntime-node: ./bootstrap.sh ort.");
    return {app, [flags] { return run_calibrate(*flags); }};
}

}  // namespace goopt::cli
