// How fast the simulator scores one decision: ms per simulation and ops simulated per second, for
// every GO workload (models::go_workloads()), under the family's expert placement and under a random
// placement (many more transfers). The target is < 20 ms for the 8-layer GNMT training graph.
//
//   simulator_speed [--out FILE] [--model NAME]... [--graph FILE.json]... [--cluster SPEC] [--seconds S]
//
// Writes a JSON list of {"model", "ops", "ms_per_simulation", "ops_per_second", ...} (ms_per_simulation
// is the expert placement without a trace, as a search loop runs it).
#include "benchmark_main.hpp"

#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

struct workload {
    std::string name, family;
    std::function<goopt::graph::computation_graph()> build;
};

/// Median seconds of one run(), over runs repeated for at least `budget` seconds and 5 runs. The
/// median, because the machines this runs on are shared: a mean would report the neighbours' load.
template <class Sim>
double time_runs(Sim& s, const goopt::sim::placement& p, bool trace, double budget, goopt::sim::simulation_result& r) {
    s.run(p, {.record_trace = trace}, r);  // warm: work arrays sized
    std::vector<double> times;
    const auto t0 = clock_type::now();
    do {
        const auto t = clock_type::now();
        s.run(p, {.record_trace = trace}, r);
        times.push_back(seconds_since(t));
    } while (times.size() < 5 || seconds_since(t0) < budget);
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    return times[times.size() / 2];
}

int run(int argc, char** argv) {
    std::string out, cluster_spec = "4xV100:nvlink";
    double budget = 0.3;
    std::vector<std::string> models, graphs;
    goopt::bench::command_line cli("simulator_speed",
                                   "How fast the simulator scores one decision, for every GO workload under the "
                                   "family's expert placement and under a random one.");
    cli.add_option("--out", out, "Write the table as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_graph_flags(models, graphs);
    cli.add_option("--cluster", cluster_spec, "The cluster (device::parse_cluster)")
        ->type_name("SPEC")
        ->capture_default_str();
    cli.add_option("--seconds", budget, "Least time each measurement repeats for (and at least 5 runs)")
        ->transform(goopt::bench::non_negative_real())
        ->type_name("S")
        ->capture_default_str();
    if (!cli.parse_flags(argc, argv)) return 0;
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

    const auto cluster = goopt::device::parse_cluster(cluster_spec);
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf("cluster %s; times are medians over >= 5 runs and >= %.2f s\n", cluster_spec.c_str(), budget);
    std::printf("%-22s %8s %10s %12s %12s %12s %14s\n", "model", "ops", "setup ms", "ms/sim", "ms/sim+trace",
                "ms/sim rand", "ops/s");
    for (const auto& w : work) {
        const auto g = w.build();
        const auto t0 = clock_type::now();
        goopt::sim::simulator s(g, cluster);
        const double setup = seconds_since(t0);
        const auto expert =
            goopt::baselines::expert_placement(g, cluster.num_devices(), goopt::baselines::family_convention(w.family));
        std::mt19937_64 rng(1);
        goopt::sim::placement random(g.num_ops());
        for (auto& d : random) d = static_cast<goopt::sim::device_id>(rng() % cluster.num_devices());
        goopt::baselines::apply_colocation(g, random);
        goopt::sim::simulation_result r;
        const double plain = time_runs(s, expert, false, budget, r);
        const double step = r.step_time;
        const double traced = time_runs(s, expert, true, budget, r);
        const double rand = time_runs(s, random, false, budget, r);
        const double ops_per_s = static_cast<double>(g.num_ops()) / plain;
        std::printf("%-22s %8zu %10.1f %12.3f %12.3f %12.3f %14.3g\n", w.name.c_str(), g.num_ops(), setup * 1e3,
                    plain * 1e3, traced * 1e3, rand * 1e3, ops_per_s);
        std::fflush(stdout);
        results.push_back({{"model", w.name},
                           {"ops", g.num_ops()},
                           {"ms_per_simulation", plain * 1e3},
                           {"ops_per_second", ops_per_s},
                           {"ms_per_simulation_with_trace", traced * 1e3},
                           {"ms_per_simulation_random_placement", rand * 1e3},
                           {"setup_ms", setup * 1e3},
                           {"cluster", cluster_spec},
                           {"simulated_step_time_ms", step * 1e3}});
    }
    if (!out.empty()) goopt::bench::write_results(out, results.dump(2) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("simulator_speed", [&] { return run(argc, argv); });
}
