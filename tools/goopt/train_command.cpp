// `goopt train`: pre-trains one placement policy across several graphs and clusters (GO's
// generalization setting, NeurIPS'20 §5.3) and writes it to a checkpoint that `goopt optimize
// --checkpoint` starts from, on these graphs or new ones; with the pair head (the default) on any
// device count, with the per-device head on the same one. `./bootstrap.sh pretrain` makes the
// shipped policy with it (docs/transfer.md).
#include "cli.hpp"

#include <cstdio>
#include <memory>

namespace goopt::cli {

namespace {

struct train_flags {
    std::vector<std::string> models, graphs;
    std::string cluster, checkpoint_out, head = "pair";
    std::vector<std::string> clusters;
    budget limits{.steps = 100};
    std::size_t updates_per_graph = 1;
    bool mixed = false;
    std::uint64_t seed = 1;
    bool quiet = false;
};

int run_train(train_flags& f) {
    f.limits.start = std::chrono::steady_clock::now();
    std::vector<loaded_graph> inputs;
    for (const auto& name : f.models) inputs.push_back(load_graph({.model = name}));
    for (const auto& file : f.graphs) inputs.push_back(load_graph({.graph_file = file}));
    std::vector<cluster_type> clusters;
    if (f.clusters.empty()) clusters.push_back(load_cluster(f.cluster));
    for (const auto& c : f.clusters) clusters.push_back(load_cluster(c));
    std::string names;
    for (const auto& c : clusters) names += concat(names.empty() ? "" : ", ", c.description());
    const auto head = f.head == "pair" ? nn::first_head::pair : nn::first_head::per_choice;
    progress_line progress(f.quiet);
    const auto r = pretrain_placement(inputs, clusters, head, f.limits, f.seed, f.checkpoint_out, f.updates_per_graph,
                                      f.mixed, progress);
    std::printf(
        "placement policy pre-trained on %zu graphs on %s: %zu PPO updates%s, %zu samples, %.1f s; seed %llu; %s "
        "head\n",
        inputs.size(), names.c_str(), r.updates, f.mixed ? " mixing every pair" : "", r.samples, r.seconds,
        static_cast<unsigned long long>(f.seed), f.head.c_str());
    std::printf("%-20s %8s %-16s %14s\n", "graph", "ops", "cluster", "best sampled");
    for (std::size_t k = 0; k < inputs.size(); ++k)
        for (std::size_t c = 0; c < clusters.size(); ++c) {
            const auto& b = r.best[k * clusters.size() + c];
            std::printf("%-20s %8zu %-16s %14s%s\n", inputs[k].name.c_str(), inputs[k].graph.num_ops(),
                        clusters[c].description().c_str(), b.step_time > 0 ? format_seconds(b.step_time).c_str() : "-",
                        b.oom ? " OOM" : "");
        }
    std::printf("wrote %s (use it with: goopt optimize --checkpoint %s%s ...)\n", f.checkpoint_out.c_str(),
                f.checkpoint_out.c_str(),
                head == nn::first_head::pair ? " --cluster <any>"
                                             : concat(" --cluster ", clusters.front().description()).c_str());
    return 0;
}

}  // namespace

command add_train_command(CLI::App& root) {
    auto flags = std::make_shared<train_flags>();
    auto* app = root.add_subcommand("train",
                                    "Pre-train one placement policy across several graphs on a cluster, to a "
                                    "checkpoint that 'goopt optimize --checkpoint' starts from");
    auto* group = app->add_option_group("graphs", "The graphs to train on (at least one)");
    group->add_option("--models", flags->models, "Built-in graphs, comma-separated (see 'goopt models')")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("NAME,...");
    group->add_option("--graph", flags->graphs, "A graph in goopt's JSON format (repeatable)")
        ->allow_extra_args(false)
        ->type_name("FILE.json");
    group->require_option(1, 2);
    add_cluster_flag(*app, flags->cluster, "4xV100:nvlink");
    app->add_option("--clusters", flags->clusters,
                    "Several clusters to pre-train on, comma-separated (instead of --cluster; device counts may "
                    "differ with the pair head)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("SPEC|FILE.json,...");
    app->add_option("--head", flags->head,
                    "The placement head: pair (one score per (op, device) pair, any device count) or per-device "
                    "(GO's, one output per device: the checkpoint serves that device count only)")
        ->check(CLI::IsMember({"pair", "per-device"}))
        ->capture_default_str();
    app->add_option("--steps", flags->limits.steps, "PPO updates in all, over every graph")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
        ->capture_default_str();
    app->add_option("--updates-per-graph", flags->updates_per_graph,
                    "Updates on one (graph, cluster) before the next one's (the schedule)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
        ->capture_default_str();
    app->add_flag("--mixed", flags->mixed,
                  "Every update mixes every (graph, cluster) pair (samples of each, advantages per pair, gradients "
                  "summed) instead of switching pairs; under mpirun the ranks hold different pairs");
    app->add_option("--time", flags->limits.seconds, "Wall-time budget in seconds (0: none)")
        ->check(finite_range(0.0, 1e9))
        ->type_name("SECONDS")
        ->capture_default_str();
    app->add_option("--seed", flags->seed, "Seed of every random choice (same seed, same policy)")
        ->transform(count())
        ->capture_default_str();
    app->add_option("--checkpoint-out", flags->checkpoint_out, "Where the policy goes (written atomically)")
        ->type_name("FILE")
        ->check(writable_file())
        ->required();
    app->add_flag("-q,--quiet", flags->quiet, "No progress line (there is none either when stdout is not a terminal)");
    return {app, [flags] { return run_train(*flags); }};
}

}  // namespace goopt::cli
