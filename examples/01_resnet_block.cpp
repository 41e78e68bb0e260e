// A ResNet basic block, end to end through the foundation: build it with the builder API, validate
// it, order it with Boost.Graph's topological_sort, evaluate it with the reference interpreter, and
// write it as JSON (read back to check the round trip) and as Graphviz DOT.
//
//   build/examples/resnet_block [--out DIR] [--channels C] [--size HW] [--seed N]
#include <goopt/goopt.hpp>

#include <boost/graph/topological_sort.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <random>
#include <string>

using namespace goopt;

namespace {

struct options {
    std::filesystem::path out = ".";
    std::int64_t channels = 64;
    std::int64_t size = 56;
    std::uint64_t seed = 1;
};

std::int64_t positive(const std::string& flag, const char* text) {
    std::size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || text[used] != '\0' || v < 1)
        throw error("flag " + flag + ": '" + text + "' is not a positive integer");
    return v;
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            std::cout << "usage: resnet_block [--out DIR] [--channels C] [--size HW] [--seed N]\n";
            std::exit(0);
        }
        if (i + 1 >= argc) throw error("flag " + flag + ": expected a value after it (see --help)");
        const char* value = argv[++i];
        if (flag == "--out") o.out = value;
        else if (flag == "--channels") o.channels = positive(flag, value);
        else if (flag == "--size") o.size = positive(flag, value);
        else if (flag == "--seed") o.seed = static_cast<std::uint64_t>(positive(flag, value));
        else throw error("unknown flag " + flag + " (see --help)");
    }
    return o;
}

/// conv3x3 -> batchnorm -> relu -> conv3x3 -> batchnorm -> + x -> relu (He et al., 2016).
graph::computation_graph resnet_block(std::int64_t c, std::int64_t hw) {
    graph::computation_graph g("resnet_block");
    graph::builder b(g);
    auto x = b.input("x", {1, c, hw, hw});
    auto norm = [&](graph::tensor_id t, const std::string& n) {
        const auto scale = b.weight(n + ".scale", {c});
        const auto bias = b.weight(n + ".bias", {c});
        const auto mean = b.weight(n + ".mean", {c});
        const auto var = b.weight(n + ".var", {c});
        return b.batchnorm(t, scale, bias, mean, var, 1e-5, n);
    };
    b.set_layer(0);
    auto y = b.conv2d(x, b.weight("conv1.w", {c, c, 3, 3}), {.name = "conv1"});
    y = b.relu(norm(y, "bn1"), "relu1");
    b.set_layer(1);
    y = b.conv2d(y, b.weight("conv2.w", {c, c, 3, 3}), {.name = "conv2"});
    y = norm(y, "bn2");
    y = b.relu(b.ewadd(y, x, "residual"), "relu2");
    g.mark_output(y);
    return g;
}

}  // namespace

int main(int argc, char** argv) try {
    const options opt = parse(argc, argv);
    auto g = resnet_block(opt.channels, opt.size);
    graph::validate(g);

    std::vector<graph::op_id> reversed;
    boost::topological_sort(g, std::back_inserter(reversed));
    std::cout << "resnet_block: " << g.num_ops() << " ops, " << g.parameter_bytes() << " parameter bytes\n"
              << "execution order (Boost.Graph topological_sort):";
    for (auto it = reversed.rbegin(); it != reversed.rend(); ++it)
        if (g.get_op(*it).kind != ops::op_kind::weight) std::cout << ' ' << g.get_op(*it).name;
    double flops = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v) flops += g.flops(v);
    std::cout << "\nFLOPs per run: " << flops << ", critical path: "
              << graph::critical_path(g, [&](std::size_t v) { return g.flops(static_cast<graph::op_id>(v)); }).length
              << " FLOPs\n";

    std::mt19937_64 rng(opt.seed);
    auto feeds = interp::random_feeds<float>(g, rng);
    for (auto& [name, value] : feeds)  // a variance is positive: uniform [-1, 1) would make sqrt NaN
        if (name.ends_with(".var")) value = xt::abs(value) + 0.5f;
    const auto out = interp::run(g, feeds);
    const auto& y = out.front();
    float lo = y.data()[0], hi = lo;
    double mean = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        lo = std::min(lo, y.data()[i]);
        hi = std::max(hi, y.data()[i]);
        mean += y.data()[i];
    }
    mean /= static_cast<double>(y.size());
    std::cout << "interpreter: output " << ops::to_string(g.type_of(g.outputs()[0])) << ", min " << lo << ", max " << hi
              << ", mean " << mean << " (relu output: min must be >= 0)\n";

    std::filesystem::create_directories(opt.out);
    const auto json_path = opt.out / "resnet_block.json";
    const auto dot_path = opt.out / "resnet_block.dot";
    io::write_graph_file(json_path, g);
    io::atomic_write(dot_path, io::to_dot(g));
    const auto back = io::read_graph_file(json_path);
    const bool same = graph::structural_hash(back) == graph::structural_hash(g) && back.num_ops() == g.num_ops();
    std::cout << "wrote " << json_path.string() << " (read back: " << (same ? "identical" : "DIFFERENT") << ") and "
              << dot_path.string() << '\n';
    return same && lo >= 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "resnet_block: " << e.what() << '\n';
    return 1;
}
