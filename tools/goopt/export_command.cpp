// `goopt export`: a graph (built-in, goopt JSON or ONNX) written as ONNX or goopt JSON, the format by
// --out's extension or --format; and the graph writer that `goopt superopt --out` shares with it.
#include "cli.hpp"

#include <goopt/graph/validate.hpp>
#include <goopt/io/graph_json.hpp>
#if defined(GOOPT_PROGRAM_HAS_ONNX)
#include <goopt/io/onnx.hpp>
#endif

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

namespace goopt::cli {

graph_file_format output_format(const std::string& path, const std::string& format) {
    if (format == "json") return graph_file_format::json;
    if (format == "onnx") return graph_file_format::onnx;
    if (!format.empty()) throw error("--format", concat("'", format, "'"), "json or onnx");
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".json") return graph_file_format::json;
    if (ext == ".onnx") return graph_file_format::onnx;
    throw error(concat("--out ", path),
                ext.empty() ? std::string("the file name has no extension to tell the format by")
                            : concat("the extension '", ext, "' names no graph format"),
                "a .json (goopt.graph) or .onnx file, or --format json|onnx");
}

void add_format_flag(CLI::App& app, std::string& format) {
    app.add_option("--format", format,
                   "The format of --out: json (goopt.graph) or onnx; default: by its extension (.json, .onnx)")
        ->check(CLI::IsMember({"json", "onnx"}))
        ->type_name("json|onnx");
}

void write_graph_output(const std::string& path, graph_file_format format, const graph::computation_graph& g,
                        const io::onnx_model* origin, std::int64_t opset, const graph::computation_graph* before) {
    if (format == graph_file_format::json) {
        io::write_graph_file(path, g);
        std::printf("wrote %s (goopt.graph JSON, %zu ops)\n", path.c_str(), g.num_ops());
        return;
    }
#if defined(GOOPT_PROGRAM_HAS_ONNX)
    // an opaque op is written as the ONNX node it stands for, which only the file it came from holds
    if (const auto opaque = g.ops_of_kind(ops::op_kind::opaque).size();
        opaque > 0 && (!origin || origin->opaque_nodes.empty()))
        throw error(concat("--out ", path),
                    concat("the graph has ", opaque,
                           " opaque ops (operators of an ONNX file that goopt has no kind for), and a goopt.graph JSON "
                           "file does not keep their ONNX nodes"),
                    "the graph read from its ONNX file: 'goopt export --onnx FILE' or 'goopt superopt --onnx FILE "
                    "--out OUT.onnx'");
    const auto report = io::write_onnx(
        g, path,
        {.source = origin,
         .opset = opset,
         .output_names = !origin && before ? io::onnx_output_names(*before) : std::vector<std::string>{}});
    for (const auto& w : report.warnings) std::printf("warning: %s\n", w.c_str());
    std::printf("wrote %s (ONNX opset %lld: %zu nodes, %zu initializers, %zu weights as graph inputs)\n", path.c_str(),
                static_cast<long long>(report.opset), report.nodes, report.initializers, report.weight_inputs);
    if (!report.symbolic_dims.empty()) {  // the --dim bindings the file names again
        std::string names;
        for (const auto& n : report.symbolic_dims) names += concat(names.empty() ? "" : ", ", n);
        std::printf("symbolic dimensions named in %s: %s\n", path.c_str(), names.c_str());
    }
#else
    (void)g, (void)origin, (void)opset, (void)before;
    throw error(concat("--out ", path), "this goopt was built without ONNX support",
                "a goopt built with libonnx-dev and libprotobuf-dev installed, or a .json file");
#endif
}

namespace {

struct export_flags {
    graph_source source;
    std::string out, format;
    std::int64_t opset = 0;
    std::optional<std::uint64_t> random_weights;
};

int run_export(const export_flags& f) {
    const auto format = output_format(f.out, f.format);
    if (f.opset != 0 && format != graph_file_format::onnx)
        throw error("--opset", concat(f.opset, " for a goopt.graph JSON file"), "an ONNX output (.onnx)");
    const auto in = load_graph_with_origin(f.source);
    graph::validate(in.loaded.graph);
    std::printf("%s: %zu ops\n", in.loaded.name.c_str(), in.loaded.graph.num_ops());
    if (!f.random_weights) {
        write_graph_output(f.out, format, in.loaded.graph, in.onnx.get(), f.opset);
        return 0;
    }
    if (format != graph_file_format::onnx)
        throw error("--random-weights", "for a goopt.graph JSON file (which holds no weight values)",
                    "an ONNX output (.onnx)");
#if defined(GOOPT_PROGRAM_HAS_ONNX)
    // the weights without values get seeded ones, written as initializers like a trained model's
    io::onnx_model origin;
    if (in.onnx) origin = *in.onnx;
    const auto drawn = io::random_weight_values(in.loaded.graph, *f.random_weights, origin.weight_values);
    origin.weight_values.insert(drawn.begin(), drawn.end());
    std::printf("random weights (seed %llu): %zu weights\n", static_cast<unsigned long long>(*f.random_weights),
                drawn.size());
    write_graph_output(f.out, format, in.loaded.graph, &origin, f.opset, in.onnx ? nullptr : &in.loaded.graph);
#else
    write_graph_output(f.out, format, in.loaded.graph, nullptr, f.opset);  // says this build has no ONNX
#endif
    return 0;
}

}  // namespace

command add_export_command(CLI::App& root) {
    auto flags = std::make_shared<export_flags>();
    auto* app = root.add_subcommand("export", "Write a graph as ONNX (or as goopt JSON): the format follows --out");
    flags->source.add_flags(*app);
    app->add_option("-o,--out", flags->out, "The file to write (atomically): .onnx or .json, else give --format")
        ->type_name("FILE.onnx")
        ->check(writable_file())
        ->required();
    add_format_flag(*app, flags->format);
    app->add_option("--opset", flags->opset,
                    "The ONNX operator set to write, 13-22 (default: the --onnx file's where it is 13-22, else 13)")
        ->check(CLI::Range(13, 22))
        ->type_name("13-22");
    app->add_option("--random-weights", flags->random_weights,
                    "Give every weight without values (a built-in model's, a stripped file's) seeded random values, "
                    "uniform in +-1/sqrt(fan-in), written as initializers: a model a runtime can time")
        ->check(CLI::Validator(
            [](std::string& v) {
                return !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos
                           ? std::string()
                           : concat("'", v, "' is not a non-negative integer (at most 19 digits)");
            },
            "SEED"))
        ->type_name("SEED");
    app->footer(
        "An --onnx file's weights are written with their values; a graph without values (--model, --graph)\n"
        "gets its weights as graph inputs, with a warning, or random ones with --random-weights SEED.\n"
        "Fused ops are written as standard ONNX operators.");
    return {app, [flags] { return run_export(*flags); }};
}

}  // namespace goopt::cli
