// Every heuristic baseline on every GO workload (models::go_workloads()) on 2, 4 and 8 devices,
// scored by the same simulator: simulated step time and peak memory per device.
//
//   baselines [--out FILE] [--model NAME]... [--graph FILE.json]... [--devices 2,4,8]
//             [--device V100] [--topology nvlink] [--random-calls 100] [--seed 1]
//
// Baselines: single_device (TensorFlow default: one device, FIFO, no fusion); expert (the family's
// human placement, FIFO); metis (when built with goopt::metis); heft (placement and rank priorities);
// critical_path (expert placement, upward-rank priorities); greedy_fusion (single device with
// XLA-style elementwise fusion); priority_fusion (single device with XLA's cost-driven priority
// fusion); random_search (best of --random-calls random placements).
// Writes a JSON list of {"model", "devices", "baseline", "step_time_ms", "peak_memory_bytes": [..], "oom"}.
#include "benchmark_main.hpp"

#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#if defined(GOOPT_HAS_METIS)
#include <goopt/baselines/metis_placement.hpp>
#endif

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

struct workload {
    std::string name, family;
    std::function<goopt::graph::computation_graph()> build;
};

int run(int argc, char** argv) {
    std::string out, device = "V100", topology = "nvlink";
    std::vector<std::size_t> counts{2, 4, 8};
    std::size_t random_calls = 100;
    std::uint64_t seed = 1;
    std::vector<std::string> models, graphs;
    goopt::bench::command_line cli("baselines",
                                   "Every heuristic baseline on every GO workload on 2, 4 and 8 devices, scored by "
                                   "the same simulator: simulated step time and peak memory per device.");
    cli.add_option("--out", out, "Write the results as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_graph_flags(models, graphs);
    cli.add_option("--devices", counts, "Device counts, one cluster each")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->transform(goopt::bench::count(1))
        ->type_name("N,...")
        ->capture_default_str();
    cli.add_option("--device", device, "The device of the clusters")->type_name("NAME")->capture_default_str();
    cli.add_option("--topology", topology, "The interconnect of the clusters")
        ->type_name("NAME")
        ->capture_default_str();
    cli.add_option("--random-calls", random_calls, "random_search: the best of this many random placements")
        ->transform(goopt::bench::count())
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--seed", seed, "Seed of random_search")->transform(goopt::bench::count())->capture_default_str();
    if (!cli.parse_flags(argc, argv)) return 0;
    if (counts.empty()) throw goopt::error("flag --devices", "an empty list", "a list such as 2,4,8");
    std::vector<workload> work;
    for (const auto& m : models) {
        const auto e = goopt::models::find_workload(m);
        work.push_back({e.name, e.family, e.build});
    }
    for (const auto& f : graphs) {
        auto g = std::make_shared<goopt::graph::computation_graph>(goopt::io::read_graph_file(f));
        work.push_back({g->name().empty() ? f : g->name(), "", [g] { return *g; }});
    }
    if (work.empty())
        for (auto& e : goopt::models::go_workloads()) work.push_back({e.name, e.family, e.build});

    std::vector<std::string> names{"single_device", "expert"};
#if defined(GOOPT_HAS_METIS)
    names.push_back("metis");
#endif
    for (const char* n : {"heft", "critical_path", "greedy_fusion", "priority_fusion", "random_search"})
        names.push_back(n);

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf("simulated step time in ms on <n>x%s:%s (* = out of memory); random_search: best of %zu\n",
                device.c_str(), topology.c_str(), random_calls);
    std::printf("%-20s %3s", "model", "n");
    for (const auto& n : names) std::printf(" %14s", n.c_str());
    std::printf("\n");
    for (const auto& w : work) {
        const auto g = w.build();
        const auto family = goopt::baselines::family_convention(w.family);
        for (std::size_t n : counts) {
            const auto cl = goopt::device::parse_cluster(std::to_string(n) + "x" + device + ":" + topology);
            goopt::sim::simulator s(g, cl);
            std::printf("%-20s %3zu", w.name.c_str(), n);
            auto report = [&](const std::string& baseline, const goopt::sim::simulation_result& r) {
                std::printf(" %13.3f%c", r.step_time * 1e3, r.oom ? '*' : ' ');
                std::fflush(stdout);
                results.push_back({{"model", w.name},
                                   {"devices", n},
                                   {"baseline", baseline},
                                   {"step_time_ms", r.step_time * 1e3},
                                   {"peak_memory_bytes", r.peak_memory},
                                   {"oom", r.oom},
                                   {"ops", g.num_ops()},
                                   {"cluster", cl.description()}});
            };
            const goopt::sim::simulation_options no_trace{.record_trace = false};
            const auto single = goopt::baselines::single_device_placement(g);
            report("single_device", s.run(single, no_trace));
            const auto expert = goopt::baselines::expert_placement(g, n, family);
            report("expert", s.run(expert, no_trace));
#if defined(GOOPT_HAS_METIS)
            report("metis", s.run(goopt::baselines::metis_placement(s), no_trace));
#endif
            const auto h = goopt::baselines::heft(s);
            report("heft", s.run(h.placement, {.priorities = h.priorities, .record_trace = false}));
            const auto cp = goopt::baselines::critical_path_priorities(s, expert);
            report("critical_path", s.run(expert, {.priorities = cp, .record_trace = false}));
            const auto fz = goopt::baselines::greedy_fusion(g, single);
            report("greedy_fusion", s.run(single, {.fusion = fz, .record_trace = false}));
            const auto pf = goopt::baselines::priority_fusion(s, single);
            report("priority_fusion", s.run(single, {.fusion = pf, .record_trace = false}));
            std::mt19937_64 rng(seed);
            report("random_search", goopt::baselines::random_search(s, random_calls, rng).result);
            std::printf("\n");
        }
    }
    if (!out.empty()) goopt::bench::write_results(out, results.dump(1) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("baselines", [&] { return run(argc, argv); });
}
