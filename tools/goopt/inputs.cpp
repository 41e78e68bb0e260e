// The flags every command that reads a graph or a cluster shares, and how they are loaded.
#include "cli.hpp"

#include <goopt/device/cluster_spec.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/cluster_json.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/models/zoo.hpp>
#if defined(GOOPT_PROGRAM_HAS_ONNX)
#include <goopt/io/onnx.hpp>
#endif

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

namespace goopt::cli {

#if defined(GOOPT_PROGRAM_HAS_ONNX)  // the --dim and --input-shape values are read for an ONNX import only
namespace {

std::int64_t positive_integer(std::string_view flag, std::string_view whole, std::string_view text) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < 1)
        throw error(concat(flag, " ", whole), concat("'", text, "' is not a positive integer"));
    return v;
}

/// "NAME=VALUE" split at the first '='; both sides non-empty.
std::pair<std::string, std::string> binding(std::string_view flag, const std::string& text, std::string_view form) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        throw error(concat(flag, " ", text), "no name and value around '='", form);
    return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace
#endif

void add_binding_flags(CLI::App& app, std::vector<std::string>& dims, std::vector<std::string>& input_shapes) {
    app.add_option("--dim", dims,
                   "Bind a symbolic dimension of the ONNX file's inputs, e.g. --dim batch=8 (repeatable)")
        ->type_name("NAME=VALUE")
        ->allow_extra_args(false);
    app.add_option("--input-shape", input_shapes,
                   "Give an ONNX graph input's whole shape, e.g. --input-shape input=8,3,224,224 (repeatable)")
        ->type_name("INPUT=d0,d1,...")
        ->allow_extra_args(false);
}

void graph_source::add_flags(CLI::App& app) {
    auto* group = app.add_option_group("graph", "The graph to optimize or score");
    group->add_option("--model", model, "A built-in graph (see 'goopt models')")->type_name("NAME");
    group->add_option("--graph", graph_file, "A graph in goopt's JSON format (see 'goopt import')")
        ->type_name("FILE.json");
    group->add_option("--onnx", onnx_file, "An ONNX model, imported on the fly")->type_name("FILE.onnx");
    group->require_option(1);
    add_binding_flags(app, dims, input_shapes);
}

#if defined(GOOPT_PROGRAM_HAS_ONNX)
namespace {
/// The names of a comma-separated list (`--param-inputs w1,w2`); an empty name is an error.
std::set<std::string, std::less<>> name_list(std::string_view flag, const std::string& list) {
    std::set<std::string, std::less<>> names;
    if (list.empty()) return names;
    std::size_t begin = 0;
    while (true) {
        const auto comma = list.find(',', begin);
        const std::string name = list.substr(begin, comma - begin);
        if (name.empty()) throw error(flag, concat("'", list, "' has an empty name"), "NAME,NAME,...");
        names.insert(name);
        if (comma == std::string::npos) break;
        begin = comma + 1;
    }
    return names;
}

io::onnx_model import_onnx_model(const std::string& file, const std::vector<std::string>& dims,
                                 const std::vector<std::string>& input_shapes, const std::string& param_inputs = {},
                                 const std::string& data_inputs = {}) {
    io::onnx_options options;
    options.command_line_hints = true;
    options.param_inputs = name_list("--param-inputs", param_inputs);
    options.data_inputs = name_list("--data-inputs", data_inputs);
    for (const auto& d : dims) {
        const auto [name, value] = binding("--dim", d, "NAME=VALUE, e.g. batch=8");
        const auto v = positive_integer("--dim", d, value);
        const auto [it, fresh] = options.dim_values.emplace(name, v);
        if (!fresh && it->second != v)
            throw error(concat("--dim ", d), concat("'", name, "' is already bound to ", it->second),
                        "one value per symbolic dimension");
    }
    for (const auto& s : input_shapes) {
        const auto [name, list] = binding("--input-shape", s, "INPUT=d0,d1,..., e.g. input=8,3,224,224");
        std::vector<std::int64_t> shape;
        std::size_t begin = 0;
        while (true) {
            const auto comma = list.find(',', begin);
            shape.push_back(positive_integer("--input-shape", s, std::string_view(list).substr(begin, comma - begin)));
            if (comma == std::string::npos) break;
            begin = comma + 1;
        }
        const auto [it, fresh] = options.input_shapes.emplace(name, shape);
        if (!fresh && it->second != shape)
            throw error(concat("--input-shape ", s), concat("'", name, "' already has another shape"),
                        "one shape per graph input");
    }
    auto m = io::import_onnx(file, options);
    for (const auto& w : m.warnings) std::printf("warning: %s: %s\n", file.c_str(), w.c_str());
    return m;
}
}  // namespace
#endif

graph::computation_graph import_onnx_file(const std::string& file, const std::vector<std::string>& dims,
                                          const std::vector<std::string>& input_shapes, const std::string& param_inputs,
                                          const std::string& data_inputs) {
#if defined(GOOPT_PROGRAM_HAS_ONNX)
    return import_onnx_model(file, dims, input_shapes, param_inputs, data_inputs).graph;
#else
    (void)dims;
    (void)input_shapes;
    (void)param_inputs;
    (void)data_inputs;
    throw error(file, "this goopt was built without ONNX import",
                "a goopt built with libonnx-dev and libprotobuf-dev installed");
#endif
}

loaded_graph load_graph(const graph_source& source) {
    if (!source.model.empty()) {
        if (!source.dims.empty() || !source.input_shapes.empty())
            throw error("--dim/--input-shape", concat("given with --model ", source.model), "an --onnx file to bind");
        const auto e = models::find_workload(source.model);
        return {e.build(), e.name, e.family, e.training};
    }
    if (!source.onnx_file.empty()) {
        loaded_graph r{import_onnx_file(source.onnx_file, source.dims, source.input_shapes), "", "", false};
        r.name = std::filesystem::path(source.onnx_file)
                     .filename()
                     .string();  // exporters' graph names say little ("torch_jit")
        return r;
    }
    if (!source.dims.empty() || !source.input_shapes.empty())
        throw error("--dim/--input-shape", concat("given with --graph ", source.graph_file), "an --onnx file to bind");
    loaded_graph r{io::read_graph_file(source.graph_file), "", "", false};
    r.name = r.graph.name().empty() ? std::filesystem::path(source.graph_file).filename().string() : r.graph.name();
    return r;
}

graph_with_origin load_graph_with_origin(const graph_source& source) {
#if defined(GOOPT_PROGRAM_HAS_ONNX)
    if (!source.onnx_file.empty()) {
        auto model =
            std::make_shared<io::onnx_model>(import_onnx_model(source.onnx_file, source.dims, source.input_shapes));
        graph_with_origin r{{std::move(model->graph), "", "", false}, nullptr};
        r.loaded.name = std::filesystem::path(source.onnx_file).filename().string();  // as load_graph names it
        model->graph = {};  // the export needs the rest, not a second copy of the graph
        r.onnx = std::move(model);
        return r;
    }
#endif
    return {load_graph(source), nullptr};
}

void add_cluster_flag(CLI::App& app, std::string& cluster, std::string default_spec) {
    cluster = std::move(default_spec);
    app.add_option("--cluster", cluster,
                   "Devices and links: <count>x<device>:<topology> (devices K80, P100, V100, T4, A100, H100, CPU; "
                   "topology nvlink or pcie) or a goopt.cluster JSON file")
        ->type_name("SPEC|FILE.json")
        ->capture_default_str();
}

cluster_type load_cluster(const std::string& spec_or_file) {
    std::error_code ec;
    if (spec_or_file.ends_with(".json") || std::filesystem::exists(spec_or_file, ec))
        return io::read_cluster_file(spec_or_file);
    return device::parse_cluster(spec_or_file);
}

// ---- the progress line ----

namespace {
bool stdout_is_terminal() {
#if defined(_WIN32)
    return ::_isatty(::_fileno(stdout)) != 0;
#else
    return ::isatty(STDOUT_FILENO) == 1;
#endif
}
}  // namespace

progress_line::progress_line(bool quiet) : enabled_(!quiet && stdout_is_terminal()) {}

void progress_line::update(std::string_view label, std::size_t done, std::size_t total, std::string_view unit) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (unit != unit_) {  // a new phase (the rate is per unit: baselines, rounds, models)
        unit_ = std::string(unit);
        start_ = now;
    }
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    char eta[32] = "";
    if (rate > 0 && total > done)
        std::snprintf(eta, sizeof eta, ", ETA %.0f s", static_cast<double>(total - done) / rate);
    std::printf("\r\033[K%.*s: %zu/%zu %.*s, %.1f/s%s", static_cast<int>(label.size()), label.data(), done, total,
                static_cast<int>(unit.size()), unit.data(), rate, eta);
    std::fflush(stdout);
    shown_ = true;
}

void progress_line::clear() {
    if (!shown_) return;
    std::printf("\r\033[K");
    std::fflush(stdout);
    shown_ = false;
}

error missing_capability(std::string_view task, std::string_view capability) {
    return error("--tasks",
                 concat("task '", task, "' needs ", capability, ", which this build of goopt does not have yet"),
                 "it left out of --tasks (the default runs every available task)");
}

std::string format_seconds(double s) {
    char buf[32];
    if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
    else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
    else std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
    return buf;
}

std::string format_bytes(std::int64_t b) {
    char buf[32];
    const double v = static_cast<double>(b);
    if (v >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1024.0 * 1024 * 1024));
    else if (v >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.1f MiB", v / (1024.0 * 1024));
    else if (v >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", v / 1024);
    else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
    return buf;
}

}  // namespace goopt::cli
