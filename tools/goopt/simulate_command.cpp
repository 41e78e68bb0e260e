// `goopt simulate`: score given decisions (placement, priorities, fusion groups) on a graph and a
// cluster with the simulator every method is scored by.
#include "cli.hpp"

#include <goopt/io/atomic_write.hpp>
#include <goopt/io/result_json.hpp>
#include <goopt/io/svg_timeline.hpp>

#include <cstdio>
#include <memory>

namespace goopt::cli {

namespace {

struct simulate_flags {
    graph_source source;
    std::string cluster, decisions_file, out, svg;
};

int run_simulate(const simulate_flags& f) {
    auto input = load_graph(f.source);
    const auto cluster = load_cluster(f.cluster);
    auto file = io::read_decisions_or_result_file(f.decisions_file, input.graph.num_ops());
    const auto& d = file.decisions.decision;
    if (file.graph) {
        std::printf("%s: scored on the graph after substitution stored in %s (%zu ops, %zu before)\n",
                    input.name.c_str(), f.decisions_file.c_str(), file.graph->num_ops(), input.graph.num_ops());
        input.graph = std::move(*file.graph);
    }
    simulator_type s(input.graph, cluster);
    const auto r = sim::run(s, d, !f.svg.empty());
    std::printf("%s (%zu ops) on %s: step time %s%s, %zu transfers (%s)\n", input.name.c_str(), input.graph.num_ops(),
                cluster.description().c_str(), format_seconds(r.step_time).c_str(), r.oom ? " (OUT OF MEMORY)" : "",
                r.num_transfers, format_bytes(r.bytes_moved).c_str());
    nlohmann::ordered_json memory = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < cluster.num_devices(); ++k) {
        std::printf("  device %zu %-8s peak memory %10s of %s%s, busy %s\n", k, cluster.device(k).name().c_str(),
                    format_bytes(r.peak_memory[k]).c_str(),
                    format_bytes(static_cast<std::int64_t>(cluster.device(k).mem_capacity())).c_str(),
                    r.out_of_memory[k] ? " OOM" : "", format_seconds(r.busy_time[k]).c_str());
        memory.push_back(r.peak_memory[k]);
    }
    if (!f.svg.empty()) io::write_svg_timeline(f.svg, input.graph, cluster, r);
    if (!f.out.empty()) {
        const nlohmann::ordered_json j{{"format", "goopt.simulation"},
                                       {"version", 1},
                                       {"model", input.name},
                                       {"ops", input.graph.num_ops()},
                                       {"cluster", cluster.description()},
                                       {"step_time_s", r.step_time},
                                       {"peak_memory_bytes", memory},
                                       {"oom", r.oom},
                                       {"transfers", r.num_transfers},
                                       {"bytes_moved", r.bytes_moved}};
        io::atomic_write(f.out, j.dump(1) + "\n");
    }
    return 0;
}

}  // namespace

command add_simulate_command(CLI::App& root) {
    auto flags = std::make_shared<simulate_flags>();
    auto* app = root.add_subcommand("simulate",
                                    "Score a decision file (placement, priorities, fusion groups) "
                                    "on a graph and a cluster");
    flags->source.add_flags(*app);
    add_cluster_flag(*app, flags->cluster, "4xV100:nvlink");
    app->add_option("-d,--decisions", flags->decisions_file,
                    "goopt.decisions file, or a result.json of 'goopt optimize' (its best decisions)")
        ->type_name("FILE.json")
        ->required();
    app->add_option("--out", flags->out, "Write the scores as JSON (atomically)")
        ->type_name("FILE.json")
        ->check(writable_file());
    app->add_option("--svg", flags->svg, "Write the simulated timeline as SVG")
        ->type_name("FILE.svg")
        ->check(writable_file());
    return {app, [flags] { return run_simulate(*flags); }};
}

}  // namespace goopt::cli
