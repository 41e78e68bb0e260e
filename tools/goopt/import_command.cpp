// `goopt import`: an ONNX model to goopt's JSON graph format, binding symbolic dimensions from the
// command line (--dim batch=8, --input-shape input=8,3,224,224).
#include "cli.hpp"

#include <goopt/graph/validate.hpp>
#include <goopt/io/graph_json.hpp>

#include <cstdio>
#include <memory>

namespace goopt::cli {

namespace {

struct import_flags {
    std::string onnx_file, out;
    std::vector<std::string> dims, input_shapes;
    std::string param_inputs, data_inputs;
};

int run_import(const import_flags& f) {
    const auto g = import_onnx_file(f.onnx_file, f.dims, f.input_shapes, f.param_inputs, f.data_inputs);
    graph::validate(g);
    io::write_graph_file(f.out, g);
    double flops = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v) flops += g.flops(v);
    std::printf("%s: %zu ops, %.3f GFLOPs, %s of parameters -> %s\n", f.onnx_file.c_str(), g.num_ops(), flops * 1e-9,
                format_bytes(g.parameter_bytes()).c_str(), f.out.c_str());
    return 0;
}

}  // namespace

command add_import_command(CLI::App& root) {
    auto flags = std::make_shared<import_flags>();
    auto* app = root.add_subcommand("import", "Convert an ONNX model to goopt's JSON graph format");
    app->add_option("model", flags->onnx_file, "The ONNX file")->type_name("FILE.onnx")->required();
    app->add_option("-o,--out", flags->out, "The graph file to write (atomically)")
        ->type_name("FILE.json")
        ->check(writable_file())
        ->required();
    add_binding_flags(*app, flags->dims, flags->input_shapes);
    auto* params = app->add_option("--param-inputs", flags->param_inputs,
                                   "Graph inputs that are parameters (weights trained in a training step), not data")
                       ->type_name("NAME,...");
    app->add_option("--data-inputs", flags->data_inputs,
                    "The graph inputs that are data: every other one is a parameter")
        ->type_name("NAME,...")
        ->excludes(params);
    app->footer(
        "A symbolic dimension (a dynamic batch or sequence axis) must be bound: --dim batch=8 binds every\n"
        "input dimension named 'batch'; --input-shape gives an input's whole shape instead.\n"
        "Floating-point initializers of more than one element are parameters (weight ops), every other\n"
        "value of the file a constant; --param-inputs or --data-inputs say which graph inputs are parameters.");
    return {app, [flags] { return run_import(*flags); }};
}

}  // namespace goopt::cli
