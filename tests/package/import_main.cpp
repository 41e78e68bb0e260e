// Links goopt::onnx from the installed package and imports the model named on the command line.
#include <goopt/io/onnx.hpp>

#include <iostream>

int main(int argc, char** argv) try {
    if (argc != 2) return 2;
    const auto model = goopt::io::import_onnx(argv[1]);
    std::cout << "imported " << model.graph.num_ops() << " ops\n";
    return model.graph.num_ops() > 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
}
