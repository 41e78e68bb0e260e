#pragma once
/// @file
/// @brief What `goopt optimize --out` writes ("goopt.result" version 1): every method's score, the best
/// method's decisions, the graph they index when substitution rewrote it, and the training curve, so
/// that a program embedding goopt reads and writes the same files as the command line. Times in
/// seconds, memory in bytes.
/// @code
/// {"format": "goopt.result", "version": 1,
///  "model": "gnmt2", "ops": 19575,             // ops of the graph the methods ran on
///  "ops_before_substitution": 19575,
///  "cluster": {"description": "4xV100:nvlink",
///              "devices": [{"name": "V100", "mem_capacity_bytes": 17179869184}, ...]},
///  "seed": 1, "budget": {"steps": 200, "seconds": 0.0},
///  "tasks": ["placement"],                     // the goopt tasks run (--tasks, or every one the build has)
///  "skipped": [{"task": "fusion", "reason": "..."}], // optional: those of a default run with nothing to decide
///  "methods": [{"name": "heft", "description": "HEFT placement with upward-rank priorities",
///               "step_time_s": 0.2294, "speedup": 2.79,  // the first method's step time / this one's
///               "peak_memory_bytes": [...per device...], "oom": true,
///               "transfers": 14334, "bytes_moved": 67675586648, "decision_seconds": 0.0449}, ...],
///  "best": "critical_path",                    // fits in memory first, then fastest
///  "best_baseline": "critical_path",
///  "decisions": {goopt.decisions of the best method, with its "method"},
///  "graph": {goopt.graph} or null,             // after substitution: the graph the decisions index
///  "training_curve": {"method": "random_search", // the best method with a curve, or null
///                     "points": [{"update": 1, "samples": 16, "best_step_time_s": ...,
///                                 "mean_step_time_s": ...}, ...]}}
/// @endcode

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/decisions_json.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/io/json_reading.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::io {

inline constexpr std::string_view result_format_name = "goopt.result";

/// A device of the cluster a result was made on.
struct result_device {
    std::string name;
    std::int64_t mem_capacity = 0;  ///< bytes
};

/// One method's row of the result: its decision scored by the simulator.
struct method_summary {
    std::string name;                            ///< "heft", "random_search", "ppo_placement", ...
    std::string description;                     ///< one line
    double step_time = 0;                        ///< seconds
    double speedup = 0;                          ///< the first method's step time / this one's (0 when this one's is 0)
    std::vector<std::int64_t> peak_memory = {};  ///< bytes, one per device
    bool oom = false;                            ///< some device is over its capacity
    std::size_t transfers = 0;
    std::int64_t bytes_moved = 0;
    double decision_seconds = 0;  ///< the time the method took to decide
    /// "original" or "rewritten": the pipeline (graph) the method decided on, when the run had two
    /// (substitution rewrote the graph); empty otherwise ("pipeline" is then absent).
    std::string pipeline = {};
};

/// One of the two pipelines of a run whose substitution stage rewrote the graph: the original and
/// the rewritten graph, each through the same baselines and tasks.
struct pipeline_summary {
    std::string graph;  ///< "original" or "rewritten"
    std::size_t ops = 0;
    std::string best;      ///< its best method
    double step_time = 0;  ///< seconds, its best method's
};

/// A deciding task that ran by default (no --tasks) and was left out because the graph left it
/// nothing to decide (tasks::nothing_to_decide): its name, or the joint method's, and why.
struct skipped_task {
    std::string task;    ///< "fusion", or the joint method's name ("go_placement+scheduling")
    std::string reason;  ///< the one-line message of tasks::nothing_to_decide
    /// "original" or "rewritten" when the run had two pipelines; empty otherwise ("pipeline" absent).
    std::string pipeline = {};
};

/// One point of an iterative method's curve.
struct training_curve_point {
    std::size_t update = 0;   ///< rounds (PPO updates, search rounds) so far
    std::size_t samples = 0;  ///< simulations so far
    double best_step_time = 0;
    double mean_step_time = 0;  ///< of this round's samples
};

/// The curve of the best method that has one.
struct training_curve {
    std::string method;
    std::vector<training_curve_point> points = {};
};

/// Everything a goopt.result holds.
struct optimize_result {
    std::string model;
    std::size_t ops = 0;  ///< ops of the graph the methods ran on: the decisions have one entry per op
    std::size_t ops_before_substitution = 0;  ///< ops of the graph given (== ops without substitution)
    std::string cluster;                      ///< the cluster's description ("4xV100:nvlink")
    std::vector<result_device> devices = {};
    std::uint64_t seed = 0;
    std::size_t steps = 0;  ///< the budget: rounds of the iterative methods
    double seconds = 0;     ///< the budget: wall time (0: none)
    std::vector<std::string> tasks = {};
    std::vector<method_summary> methods = {};
    std::string best;                   ///< the method whose decisions are kept
    std::string best_baseline;          ///< the best heuristic baseline
    decisions_document decisions = {};  ///< best's (decisions.method names it)
    /// The graph after substitution, which the decisions index; empty: they index the graph given.
    std::optional<graph::computation_graph> graph = {};
    std::optional<training_curve> curve = {};  ///< "training_curve"; empty: null
    /// What the substitution stage did (which graph it handed on and why); empty: it did not run
    /// ("substitution" is then absent).
    std::string substitution = {};
    /// Both pipelines when substitution rewrote the graph (the better one's `best` is the run's);
    /// empty otherwise ("pipelines" is then absent).
    std::vector<pipeline_summary> pipelines = {};
    /// Tasks run by default that had nothing to decide on the graph; empty: none ("skipped" is then
    /// absent).
    std::vector<skipped_task> skipped = {};
};

/// @brief The goopt.result document of `r`, keys in the order above.
/// @throws goopt::error when r.graph cannot be written faithfully (see io::to_json_string).
inline nlohmann::ordered_json result_to_json(const optimize_result& r);

/// @brief Reads a goopt.result document, checking every field: its type, that the decisions have
/// one entry per op (`ops`), that the graph has `ops` ops, that the peak memories have one entry per
/// device, and that best, best_baseline and the curve's method name methods of the list.
/// @throws goopt::error `<source>: <JSON pointer>: <what was found>: expected <what>`, also for an
/// unknown key (a typo is never ignored).
inline optimize_result result_from_json(const nlohmann::json& j, std::string_view source);

/// Reads a goopt.result file; errors name the file.
inline optimize_result read_result_file(const std::filesystem::path& path);

/// Decisions read from a file that holds either a goopt.decisions document or a goopt.result.
struct decisions_file {
    decisions_document decisions;
    /// A result's graph after substitution, which the decisions index instead of the graph given.
    std::optional<graph::computation_graph> graph = {};
};

/// @brief What `goopt simulate --decisions` reads: a goopt.decisions document made for a graph of
/// `num_ops` ops, or a goopt.result (its best decisions) made from that graph: its `ops` (or, after
/// substitution, its `ops_before_substitution`) must be `num_ops`.
/// @throws goopt::error naming the file and the field, as decisions_from_json and result_from_json,
/// and for a result made from a graph of another size.
inline decisions_file read_decisions_or_result_file(const std::filesystem::path& path, std::size_t num_ops);
/// Writes result_to_json(r) to a file atomically (io::atomic_write), as `goopt optimize --out` does.
inline void write_result_file(const std::filesystem::path& path, const optimize_result& r);

// ---- implementation ----

namespace detail {

/// The checks of one goopt.result document; holds the source so that every message names it.
class result_reader {
public:
    explicit result_reader(std::string_view source) : source_(source) {}

    void object(const nlohmann::json& v, std::string_view at) const {
        if (!v.is_object()) fail(at, concat("is ", describe(v)), "an object");
    }
    /// Every key of object `v` (at `at`) is one of `allowed` or `optional`, and each of `allowed`
    /// is there (the optional keys are later additions to the format; files without them still read).
    void keys(const nlohmann::json& v, std::string_view at, std::initializer_list<std::string_view> allowed,
              std::initializer_list<std::string_view> optional = {}) const {
        object(v, at);
        auto in = [](std::initializer_list<std::string_view> l, std::string_view k) {
            return std::find(l.begin(), l.end(), k) != l.end();
        };
        for (const auto& [key, value] : v.items())
            if (!in(allowed, key) && !in(optional, key)) {
                std::vector<std::string_view> all(allowed);
                all.insert(all.end(), optional.begin(), optional.end());
                fail(at, concat("unknown key ", quote(key)), join(all));
            }
        for (std::string_view key : allowed)
            if (!v.contains(key)) fail(concat(at, "/", key), "missing");
    }
    std::string text(const nlohmann::json& v, std::string_view at) const {
        if (!v.is_string()) fail(at, concat("is ", describe(v)), "a string");
        return v.get<std::string>();
    }
    double number(const nlohmann::json& v, std::string_view at) const {
        if (!v.is_number() || !std::isfinite(v.get<double>())) fail(at, concat("is ", describe(v)), "a finite number");
        return v.get<double>();
    }
    /// An integer >= 0 up to `max`.
    std::uint64_t count(const nlohmann::json& v, std::string_view at,
                        std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
        const bool ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
        if (!ok || v.get<std::uint64_t>() > max)
            fail(at, concat("is ", describe(v)),
                 max == std::numeric_limits<std::uint64_t>::max() ? std::string("an integer >= 0")
                                                                  : concat("an integer from 0 to ", max));
        return v.get<std::uint64_t>();
    }
    std::int64_t bytes(const nlohmann::json& v, std::string_view at) const {
        return static_cast<std::int64_t>(count(v, at, std::numeric_limits<std::int64_t>::max()));
    }
    bool flag(const nlohmann::json& v, std::string_view at) const {
        if (!v.is_boolean()) fail(at, concat("is ", describe(v)), "true or false");
        return v.get<bool>();
    }
    const nlohmann::json& array(const nlohmann::json& v, std::string_view at) const {
        if (!v.is_array()) fail(at, concat("is ", describe(v)), "an array");
        return v;
    }
    /// A pipeline's name: "original" or "rewritten".
    std::string pipeline(const nlohmann::json& v, std::string_view at) const {
        auto p = text(v, at);
        if (p != "original" && p != "rewritten") fail(at, concat("is ", quote(p)), "\"original\" or \"rewritten\"");
        return p;
    }
    /// `name` (at `at`) names a method of `r`.
    void method_name(const optimize_result& r, const std::string& name, std::string_view at) const {
        for (const auto& m : r.methods)
            if (m.name == name) return;
        fail(at, concat(quote(name), " is not a method of /methods"), "the name of a method in /methods");
    }
    [[noreturn]] void fail(std::string_view at, const std::string& what, std::string_view expected = {}) const {
        fail_at(source_, at, what, expected);
    }

private:
    std::string_view source_;
};

inline std::string at_index(std::string_view array, std::size_t i) { return concat(array, "/", i); }

}  // namespace detail

inline nlohmann::ordered_json result_to_json(const optimize_result& r) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (const auto& d : r.devices) devices.push_back({{"name", d.name}, {"mem_capacity_bytes", d.mem_capacity}});
    nlohmann::ordered_json methods = nlohmann::ordered_json::array();
    for (const auto& m : r.methods) {
        methods.push_back({{"name", m.name},
                           {"description", m.description},
                           {"step_time_s", m.step_time},
                           {"speedup", m.speedup},
                           {"peak_memory_bytes", m.peak_memory},
                           {"oom", m.oom},
                           {"transfers", m.transfers},
                           {"bytes_moved", m.bytes_moved},
                           {"decision_seconds", m.decision_seconds}});
        if (!m.pipeline.empty()) methods.back()["pipeline"] = m.pipeline;
    }
    nlohmann::ordered_json curve = nullptr;
    if (r.curve) {
        nlohmann::ordered_json points = nlohmann::ordered_json::array();
        for (const auto& p : r.curve->points)
            points.push_back({{"update", p.update},
                              {"samples", p.samples},
                              {"best_step_time_s", p.best_step_time},
                              {"mean_step_time_s", p.mean_step_time}});
        curve = {{"method", r.curve->method}, {"points", points}};
    }
    nlohmann::ordered_json doc = {
        {"format", result_format_name},
        {"version", 1},
        {"model", r.model},
        {"ops", r.ops},
        {"ops_before_substitution", r.ops_before_substitution},
        {"cluster", {{"description", r.cluster}, {"devices", devices}}},
        {"seed", r.seed},
        {"budget", {{"steps", r.steps}, {"seconds", r.seconds}}},
        {"tasks", r.tasks},
        {"methods", methods},
        {"best", r.best},
        {"best_baseline", r.best_baseline},
        {"decisions", decisions_to_json(r.decisions)},
        // the graph's canonical text, so that it reads as a goopt.graph file does
        {"graph", r.graph ? nlohmann::ordered_json::parse(to_json_string(*r.graph)) : nlohmann::ordered_json(nullptr)},
        {"training_curve", curve}};
    if (!r.substitution.empty()) doc["substitution"] = r.substitution;
    if (!r.pipelines.empty()) {
        nlohmann::ordered_json pipelines = nlohmann::ordered_json::array();
        for (const auto& p : r.pipelines)
            pipelines.push_back({{"graph", p.graph}, {"ops", p.ops}, {"best", p.best}, {"step_time_s", p.step_time}});
        doc["pipelines"] = std::move(pipelines);
    }
    if (!r.skipped.empty()) {
        nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
        for (const auto& t : r.skipped) {
            nlohmann::ordered_json one = {{"task", t.task}, {"reason", t.reason}};
            if (!t.pipeline.empty()) one["pipeline"] = t.pipeline;
            skipped.push_back(std::move(one));
        }
        doc["skipped"] = std::move(skipped);
    }
    return doc;
}

inline optimize_result result_from_json(const nlohmann::json& j, std::string_view source) {
    const detail::result_reader in(source);
    detail::check_header(j, source, result_format_name);
    in.keys(j, "",
            {"format", "version", "model", "ops", "ops_before_substitution", "cluster", "seed", "budget", "tasks",
             "methods", "best", "best_baseline", "decisions", "graph", "training_curve"},
            {"substitution", "pipelines", "skipped"});
    optimize_result r;
    r.model = in.text(j["model"], "/model");
    r.ops = static_cast<std::size_t>(in.count(j["ops"], "/ops"));
    r.ops_before_substitution =
        static_cast<std::size_t>(in.count(j["ops_before_substitution"], "/ops_before_substitution"));
    const auto& cl = j["cluster"];
    in.keys(cl, "/cluster", {"description", "devices"});
    r.cluster = in.text(cl["description"], "/cluster/description");
    const auto& devices = in.array(cl["devices"], "/cluster/devices");
    for (std::size_t k = 0; k < devices.size(); ++k) {
        const std::string at = detail::at_index("/cluster/devices", k);
        in.keys(devices[k], at, {"name", "mem_capacity_bytes"});
        r.devices.push_back({in.text(devices[k]["name"], at + "/name"),
                             in.bytes(devices[k]["mem_capacity_bytes"], at + "/mem_capacity_bytes")});
    }
    r.seed = in.count(j["seed"], "/seed");
    in.keys(j["budget"], "/budget", {"steps", "seconds"});
    r.steps = static_cast<std::size_t>(in.count(j["budget"]["steps"], "/budget/steps"));
    r.seconds = in.number(j["budget"]["seconds"], "/budget/seconds");
    const auto& tasks = in.array(j["tasks"], "/tasks");
    for (std::size_t k = 0; k < tasks.size(); ++k) r.tasks.push_back(in.text(tasks[k], detail::at_index("/tasks", k)));
    const auto& methods = in.array(j["methods"], "/methods");
    for (std::size_t k = 0; k < methods.size(); ++k) {
        const auto& m = methods[k];
        const std::string at = detail::at_index("/methods", k);
        in.keys(m, at,
                {"name", "description", "step_time_s", "speedup", "peak_memory_bytes", "oom", "transfers",
                 "bytes_moved", "decision_seconds"},
                {"pipeline"});
        method_summary s;
        s.name = in.text(m["name"], at + "/name");
        s.description = in.text(m["description"], at + "/description");
        s.step_time = in.number(m["step_time_s"], at + "/step_time_s");
        s.speedup = in.number(m["speedup"], at + "/speedup");
        const auto& peaks = in.array(m["peak_memory_bytes"], at + "/peak_memory_bytes");
        if (peaks.size() != r.devices.size())
            in.fail(at + "/peak_memory_bytes", concat("has ", peaks.size(), " entries"),
                    concat("one per device of /cluster/devices (", r.devices.size(), ")"));
        for (std::size_t d = 0; d < peaks.size(); ++d)
            s.peak_memory.push_back(in.bytes(peaks[d], detail::at_index(at + "/peak_memory_bytes", d)));
        s.oom = in.flag(m["oom"], at + "/oom");
        s.transfers = static_cast<std::size_t>(in.count(m["transfers"], at + "/transfers"));
        s.bytes_moved = in.bytes(m["bytes_moved"], at + "/bytes_moved");
        s.decision_seconds = in.number(m["decision_seconds"], at + "/decision_seconds");
        if (m.contains("pipeline")) s.pipeline = in.pipeline(m["pipeline"], at + "/pipeline");
        r.methods.push_back(std::move(s));
    }
    r.best = in.text(j["best"], "/best");
    in.method_name(r, r.best, "/best");
    r.best_baseline = in.text(j["best_baseline"], "/best_baseline");
    in.method_name(r, r.best_baseline, "/best_baseline");
    r.decisions = decisions_from_json(j["decisions"], r.ops, source, "/decisions");
    if (!j["graph"].is_null()) {
        r.graph = graph_from_json(j["graph"], source, "/graph");
        if (r.graph->num_ops() != r.ops)
            in.fail("/graph", concat("has ", r.graph->num_ops(), " ops"), concat("/ops (", r.ops, ")"));
    }
    if (const auto& c = j["training_curve"]; !c.is_null()) {
        in.keys(c, "/training_curve", {"method", "points"});
        training_curve curve{in.text(c["method"], "/training_curve/method")};
        in.method_name(r, curve.method, "/training_curve/method");
        const auto& points = in.array(c["points"], "/training_curve/points");
        for (std::size_t k = 0; k < points.size(); ++k) {
            const std::string at = detail::at_index("/training_curve/points", k);
            in.keys(points[k], at, {"update", "samples", "best_step_time_s", "mean_step_time_s"});
            curve.points.push_back({static_cast<std::size_t>(in.count(points[k]["update"], at + "/update")),
                                    static_cast<std::size_t>(in.count(points[k]["samples"], at + "/samples")),
                                    in.number(points[k]["best_step_time_s"], at + "/best_step_time_s"),
                                    in.number(points[k]["mean_step_time_s"], at + "/mean_step_time_s")});
        }
        r.curve = std::move(curve);
    }
    if (j.contains("substitution")) r.substitution = in.text(j["substitution"], "/substitution");
    if (j.contains("pipelines")) {
        const auto& ps = in.array(j["pipelines"], "/pipelines");
        for (std::size_t k = 0; k < ps.size(); ++k) {
            const std::string at = detail::at_index("/pipelines", k);
            in.keys(ps[k], at, {"graph", "ops", "best", "step_time_s"});
            pipeline_summary p{in.pipeline(ps[k]["graph"], at + "/graph"),
                               static_cast<std::size_t>(in.count(ps[k]["ops"], at + "/ops")),
                               in.text(ps[k]["best"], at + "/best"),
                               in.number(ps[k]["step_time_s"], at + "/step_time_s")};
            in.method_name(r, p.best, at + "/best");
            r.pipelines.push_back(std::move(p));
        }
    }
    if (j.contains("skipped")) {
        const auto& ts = in.array(j["skipped"], "/skipped");
        for (std::size_t k = 0; k < ts.size(); ++k) {
            const std::string at = detail::at_index("/skipped", k);
            in.keys(ts[k], at, {"task", "reason"}, {"pipeline"});
            skipped_task t{in.text(ts[k]["task"], at + "/task"), in.text(ts[k]["reason"], at + "/reason")};
            if (ts[k].contains("pipeline")) t.pipeline = in.pipeline(ts[k]["pipeline"], at + "/pipeline");
            r.skipped.push_back(std::move(t));
        }
    }
    return r;
}

inline optimize_result read_result_file(const std::filesystem::path& path) {
    const std::string source = path.string();
    return result_from_json(detail::parse_json_text(detail::read_text_file(path, "result"), source), source);
}

inline decisions_file read_decisions_or_result_file(const std::filesystem::path& path, std::size_t num_ops) {
    const std::string source = path.string();
    const nlohmann::json j = detail::parse_json_text(detail::read_text_file(path, "decisions"), source);
    const auto format = j.is_object() && j.contains("format") && j["format"].is_string()
                            ? j["format"].get<std::string>()
                            : std::string();
    if (format != result_format_name && format != decisions_format_name)
        throw error(source, "/format", concat('"', decisions_format_name, "\" or \"", result_format_name, '"'));
    if (format == decisions_format_name) return {decisions_from_json(j, num_ops, source), std::nullopt};
    optimize_result r = result_from_json(j, source);
    // the decisions index r.graph after substitution, else the graph the result was made from
    const char* key = r.graph ? "ops_before_substitution" : "ops";
    const std::size_t made_for = r.graph ? r.ops_before_substitution : r.ops;
    if (made_for != num_ops)
        throw error(
            source,
            concat("/", key, ": the result was made for a graph of ", made_for, " ops, the graph given has ", num_ops),
            "the graph that 'goopt optimize' read");
    return {std::move(r.decisions), std::move(r.graph)};
}

inline void write_result_file(const std::filesystem::path& path, const optimize_result& r) {
    atomic_write(path, result_to_json(r).dump(1) + "\n");
}

}  // namespace goopt::io
