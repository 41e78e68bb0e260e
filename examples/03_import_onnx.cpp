// Imports an ONNX model, validates the graph and summarizes it: ops by type, parameters, FLOPs.
//
//   build/examples/import_onnx FILE.onnx [--json OUT.json] [--graph OUT.graph.json]
//     --json   writes the summary as JSON {"model", "opset", "onnx_nodes", "folded_nodes", "ops",
//              "ops_by_type", "param_bytes", "flops"}
//     --graph  writes the imported graph in goopt's graph format (io/graph_json.hpp)
// Exit status: 0 on success, 1 with a one-line error on bad input, 2 on bad flags.
#include <goopt/goopt.hpp>
#include <goopt/io/onnx.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

using namespace goopt;

namespace {

int usage(const std::string& why) {
    std::cerr << "import_onnx: " << why
              << "\nusage: import_onnx FILE.onnx [--json OUT.json] [--graph OUT.graph.json]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::filesystem::path model, json_out, graph_out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json" || a == "--graph") {
            if (i + 1 >= argc) return usage(a + " needs a file name");
            (a == "--json" ? json_out : graph_out) = argv[++i];
        } else if (a == "-h" || a == "--help") {
            usage("imports an ONNX model and summarizes it");
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            return usage("unknown flag '" + a + "'");
        } else if (model.empty()) {
            model = a;
        } else {
            return usage("more than one model file given");
        }
    }
    if (model.empty()) return usage("no model file given");

    try {
        const io::onnx_model m = io::import_onnx(model);
        const graph::computation_graph& g = m.graph;
        graph::validate(g);
        std::map<std::string, std::size_t> by_type;
        double flops = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            ++by_type[std::string(ops::name(g.get_op(o).kind))];
            flops += g.flops(o);
        }
        std::size_t onnx_nodes = 0;
        for (const auto& [type, count] : m.onnx_nodes) onnx_nodes += count;

        std::printf("%s: opset %lld, producer '%s'\n", model.string().c_str(), static_cast<long long>(m.opset),
                    m.producer.c_str());
        std::printf("ONNX nodes %zu (%zu folded at import) -> %zu ops, %zu tensors\n", onnx_nodes, m.folded_nodes,
                    g.num_ops(), g.num_tensors());
        std::printf("%-16s %8s\n", "op", "count");
        for (const auto& [type, count] : by_type) std::printf("%-16s %8zu\n", type.c_str(), count);
        std::printf("parameters  %.3f MB (%lld bytes, %zu weights with values in the file)\n",
                    static_cast<double>(g.parameter_bytes()) / 1e6, static_cast<long long>(g.parameter_bytes()),
                    m.weight_values.size());
        std::printf("FLOPs       %.4g per run\n", flops);
        for (const auto t : g.outputs()) std::printf("output      %s\n", ops::to_string(g.type_of(t)).c_str());

        if (!json_out.empty()) {
            nlohmann::ordered_json j;
            j["model"] = model.filename().string();
            j["opset"] = m.opset;
            j["onnx_nodes"] = onnx_nodes;
            j["folded_nodes"] = m.folded_nodes;
            j["ops"] = g.num_ops();
            j["ops_by_type"] = by_type;
            j["param_bytes"] = g.parameter_bytes();
            j["flops"] = flops;
            io::atomic_write(json_out, j.dump(2) + "\n");
        }
        if (!graph_out.empty()) io::write_graph_file(graph_out, g);
    } catch (const std::exception& e) {
        std::cerr << "import_onnx: error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
