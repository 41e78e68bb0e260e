// `goopt models`: the built-in graphs (TASO's inference workloads, GO's training workloads) with
// their size: ops, FLOPs per step, parameter bytes.
#include "cli.hpp"

#include <goopt/graph/validate.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/models/zoo.hpp>

#include <cstdio>
#include <memory>

namespace goopt::cli {

namespace {

struct models_flags {
    std::vector<std::string> only;
    std::string out;
    bool quiet = false;
};

int run_models(const models_flags& f) {
    std::vector<models::zoo_entry> entries;
    if (f.only.empty()) entries = models::zoo();
    else
        for (const auto& name : f.only) entries.push_back(models::find_workload(name));
    progress_line progress(f.quiet);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    std::printf("%-20s %-10s %-15s %8s %12s %12s\n", "model", "kind", "family", "ops", "GFLOPs", "parameters");
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        progress.update("building " + e.name, i, entries.size(), "models");
        const auto g = e.build();
        graph::validate(g);
        double flops = 0;
        for (graph::op_id v = 0; v < g.num_ops(); ++v) flops += g.flops(v);
        // training graphs: the model's own weights (the forward graph's), not Adam's moment buffers
        const std::int64_t params = e.training ? e.forward().parameter_bytes() : g.parameter_bytes();
        const char* kind = e.training ? "training" : "inference";
        progress.clear();
        std::printf("%-20s %-10s %-15s %8zu %12.2f %12s\n", e.name.c_str(), kind, e.family.c_str(), g.num_ops(),
                    flops * 1e-9, format_bytes(params).c_str());
        std::fflush(stdout);
        list.push_back({{"model", e.name},
                        {"kind", kind},
                        {"family", e.family},
                        {"ops", g.num_ops()},
                        {"flops", flops},
                        {"parameter_bytes", params}});
    }
    if (!f.out.empty()) io::atomic_write(f.out, list.dump(1) + "\n");
    return 0;
}

}  // namespace

command add_models_command(CLI::App& root) {
    auto flags = std::make_shared<models_flags>();
    auto* app = root.add_subcommand("models", "List the built-in graphs with their ops, FLOPs per step and parameters");
    app->add_option("--only", flags->only, "Only these models (repeatable)")
        ->type_name("NAME")
        ->allow_extra_args(false);
    app->add_option("--out", flags->out, "Also write the list as JSON (atomically)")
        ->type_name("FILE.json")
        ->check(writable_file());
    app->add_flag("-q,--quiet", flags->quiet, "No progress line");
    return {app, [flags] { return run_models(*flags); }};
}

}  // namespace goopt::cli
