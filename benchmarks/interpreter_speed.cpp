// Times interp::evaluate on two graphs: a long chain of small elementwise and matmul ops, where
// the cost per op (dispatch through the kernel table, shape checks, allocation) dominates, and the
// training step of a small MLP (models::make_training_graph), where the kernels' loops dominate.
// Prints the best of --repeat runs of each.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/models/training_graph.hpp>

#include "benchmark_main.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {

/// `n` ops on [8, 8] tensors cycling through ewadd, ewmul, sigmoid, sub, tanh, matmul, relu.
graph::computation_graph small_op_chain(std::size_t n) {
    graph::computation_graph g("chain");
    auto x = g.input("x", {8, 8});
    const auto w = g.weight("w", {8, 8});
    for (std::size_t i = 0; i < n; ++i) {
        switch (i % 7) {
            case 0:
                x = g.add1(op_kind::ewadd, {x, w});
                break;
            case 1:
                x = g.add1(op_kind::ewmul, {x, w});
                break;
            case 2:
                x = g.add1(op_kind::sigmoid, {x});
                break;
            case 3:
                x = g.add1(op_kind::sub, {x, w});
                break;
            case 4:
                x = g.add1(op_kind::tanh, {x});
                break;
            case 5:
                x = g.add1(op_kind::matmul, {x, w});
                break;
            default:
                x = g.add1(op_kind::relu, {x});
                break;
        }
    }
    g.mark_output(x);
    return g;
}

/// Training step of a 4-layer MLP, batch 64, width 256, gelu and layernorm.
graph::computation_graph mlp_training_step() {
    graph::computation_graph g("mlp");
    auto x = g.input("x", {64, 256});
    for (int l = 0; l < 4; ++l) {
        const std::string p = "l" + std::to_string(l);
        x = g.add1(op_kind::matmul, {x, g.weight(p + ".w", {256, 256})});
        x = g.add1(op_kind::ewadd, {x, g.weight(p + ".b", {256})});
        x = g.add1(op_kind::gelu, {x});
        x = g.add1(op_kind::layernorm, {x, g.weight(p + ".gamma", {256}), g.weight(p + ".beta", {256})});
    }
    g.mark_output(x);
    return models::make_training_graph(g);
}

double best_seconds(const graph::computation_graph& g, int repeat) {
    std::mt19937_64 rng(1);
    auto feeds = interp::random_feeds<float>(g, rng);
    for (auto& [name, v] : feeds)
        if (name.ends_with(".adam_v"))
            for (float& e : v.storage()) e = std::abs(e);
    double best = 1e30;
    for (int k = 0; k < repeat; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto values = interp::evaluate<float>(g, feeds);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (values.empty()) throw error("interpreter_speed", "no values");
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("interpreter_speed", [&] {
        int repeat = 20;
        bench::command_line cli("interpreter_speed",
                                "Times interp::evaluate on a long chain of small ops (dispatch) and on an MLP "
                                "training step (kernels): the best of --repeat runs of each.");
        cli.add_option("--repeat", repeat, "Runs of each graph")
            ->transform(bench::count(1, 10000))
            ->type_name("N")
            ->capture_default_str();
        if (!cli.parse_flags(argc, argv)) return 0;
        const auto chain = small_op_chain(7000);
        const auto mlp = mlp_training_step();
        const double c = best_seconds(chain, repeat), m = best_seconds(mlp, repeat);
        std::printf("%-28s %8zu ops  best %9.3f ms  %7.3f us/op\n", "chain of small ops [8,8]", chain.num_ops(),
                    1e3 * c, 1e6 * c / static_cast<double>(chain.num_ops()));
        std::printf("%-28s %8zu ops  best %9.3f ms  %7.3f us/op\n", "MLP training step (f32)", mlp.num_ops(), 1e3 * m,
                    1e6 * m / static_cast<double>(mlp.num_ops()));
        return 0;
    });
}
