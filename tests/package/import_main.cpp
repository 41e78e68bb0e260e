// Links goopt::onnx from the installed package, imports the model named on the command line and
// exports it again (to memory): both halves of the edge from the installed headers.
#include <goopt/io/onnx.hpp>

#include <iostream>

int main(int argc, char** argv) try {
    if (argc != 2) return 2;
    const auto model = goopt::io::import_onnx(argv[1]);
    const auto exported = goopt::io::to_onnx(model.graph, {.source = &model});
    std::cout << "imported " << model.graph.num_ops() << " ops, exported " << exported.report.nodes << " nodes\n";
    return model.graph.num_ops() > 0 && exported.report.nodes > 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
}
