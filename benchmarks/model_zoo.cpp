// Every built-in benchmark graph with its size: ops, parameter bytes, FLOPs per step and build time.
//
//   build/benchmarks/model_zoo [--out FILE] [--only NAME]
//
// Prints a table and writes a JSON list of {"model", "kind", "ops", "param_bytes", "flops",
// "build_seconds"} (atomically) to FILE (default model_zoo.json). param_bytes counts the model's
// own weights (for training graphs: those of the forward graph, not Adam's moment buffers); flops is
// the sum of the op table's formulas over every op of the graph (forward + backward + update for
// training graphs).
#include "benchmark_main.hpp"

#include <goopt/goopt.hpp>
#include <goopt/models.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>

using namespace goopt;

namespace {

int run(int argc, char** argv) {
    std::string out = "model_zoo.json", only;
    bench::command_line cli("model_zoo",
                            "Every built-in benchmark graph with its size: ops, parameter bytes, FLOPs per step and "
                            "build time.");
    cli.add_option("--out", out, "Write the table as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file())
        ->capture_default_str();
    cli.add_option("--only", only, "One model of the zoo (default: all)")->type_name("NAME");
    if (!cli.parse_flags(argc, argv)) return 0;
    auto entries = only.empty() ? models::zoo() : std::vector<models::zoo_entry>{models::find_workload(only)};

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf("%-20s %-9s %9s %14s %16s %9s\n", "model", "kind", "ops", "param_bytes", "flops", "build_s");
    for (const auto& e : entries) {
        const auto t0 = std::chrono::steady_clock::now();
        const graph::computation_graph g = e.build();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        graph::validate(g);
        double flops = 0;
        for (graph::op_id v = 0; v < g.num_ops(); ++v) flops += g.flops(v);
        const std::int64_t params = e.training ? e.forward().parameter_bytes() : g.parameter_bytes();
        const char* kind = e.training ? "training" : "inference";
        std::printf("%-20s %-9s %9zu %14lld %16.4e %9.3f\n", e.name.c_str(), kind, g.num_ops(),
                    static_cast<long long>(params), flops, seconds);
        std::fflush(stdout);
        results.push_back({{"model", e.name},
                           {"kind", kind},
                           {"ops", g.num_ops()},
                           {"param_bytes", params},
                           {"flops", flops},
                           {"build_seconds", seconds}});
    }
    bench::write_results(out, results.dump(2) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("model_zoo", [&] { return run(argc, argv); });
}
