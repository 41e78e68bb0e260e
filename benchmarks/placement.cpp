// Learned device placement (GO-one: the GO policy trained by PPO on one graph) against every
// placement heuristic, on the same simulator, per (graph, device count).
//
//   placement [--graphs a,b,...] [--devices 2,4,8] [--out FILE] [--updates 100] [--samples 16] [--epochs 4]
//             [--threads 2] [--hidden 64] [--imitation-steps 100] [--lr 1e-4] [--entropy 0.01] [--seed 1]
//             [--no-warm] [--no-pure] [--fifo] [--progress] [--metrics FILE]
//             [--guided] [--warm-from HEURISTIC] [--min-agreement 0.95]
//
// Each row: the heuristics' step times (single device FIFO, expert, METIS when built with it, HEFT
// with its rank priorities, critical path on the expert placement, Baechi's m-TOPO, m-ETF, m-SCT),
// then go (pure PPO from random weights) and go_warm (PPO after imitating the placement of the best
// heuristic that fits in memory, with that heuristic's own decision as the incumbent, so it is never
// returned worse). Both keep the best of the samples and of the policy's mode after each update
// ("go_from", "go_warm_from": incumbent, sample or mode). --progress: a status line per update on
// stderr; --metrics: every training's updates as JSON lines (rl::progress_reporter) in one file.
// Learned placements are scored with critical-path priorities
// computed for each sampled placement (as HEFT's placement comes with its ranks); --fifo scores them
// under FIFO ready queues instead (GO's placement task). Step times are simulated on n x V100 with
// NVLink, roofline costs. JSON list: {"graph", "nodes", "devices", "single_ms", "expert_ms",
// "metis_ms", "heft_ms", "critical_path_ms", "m_topo_ms", "m_etf_ms", "m_sct_ms", "go_ms",
// "go_warm_ms", "go_oom", "go_warm_oom", "go_from", "go_warm_from", "best_heuristic", "samples", "updates", "epochs",
// "seconds", "warm_seconds", "updates_per_s", "peak_memory_bytes"}; *_oom_* fields name heuristics that ran out of
// memory. --guided: the heuristic-guided decoder instead of per-op sampling; --warm-from: go_warm imitates this
// heuristic's placement (e.g. m_etf) rather than the best one that fits;
// --min-agreement: ppo.imitation_min_agreement (with ppo.imitation_max_mode_gap's 2 % step criterion).
// go_warm rows add "warm_target" (the heuristic imitated), "warm_target_ms" (its own decision),
// "warm_default_ms" (its placement under the task's priorities: the default incumbent, and the
// decision imitated), "warm_agreement", "warm_mode_gap", "warm_imitation_steps" and the decoder's reach
// counts "warm_reach_closed", "warm_reach_forced", "warm_reach_diverged" (rl::imitation_reach).
#include "benchmark_main.hpp"
#include "placement_heuristics.hpp"

#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

int run(int argc, char** argv) {
    std::string out, metrics;
    std::vector<std::string> names{"rnnlm2", "transformer_xl2", "wavenet_2x18", "inception_v3_train"};
    std::vector<std::size_t> counts{2, 4, 8};
    std::size_t updates = 100, samples = 16, threads = 2, hidden = 64, imitation = 100,
                epochs = goopt::rl::ppo_config{}.epochs;
    std::uint64_t seed = 1;
    double lr = 1e-4, entropy = 0.01;
    bool no_warm = false, no_pure = false, fifo = false, progress = false, guided = false;
    std::string warm_from;
    double min_agreement = 0;
    goopt::bench::command_line cli("placement",
                                   "Learned device placement (GO-one: the GO policy trained by PPO on one graph) "
                                   "against every placement heuristic, on the same simulator, per graph and device "
                                   "count.");
    cli.add_option("--graphs", names, "Models of the zoo")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("NAME,...")
        ->capture_default_str();
    cli.add_option("--devices", counts, "Device counts (n x V100:nvlink), one row each")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->transform(goopt::bench::count(1, 1024))
        ->type_name("N,...")
        ->capture_default_str();
    cli.add_option("--out", out, "Write the rows as a JSON list (after every row)")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_option("--updates", updates, "PPO updates per training")
        ->transform(goopt::bench::count(1, 1000000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--samples", samples, "Placements sampled per update")
        ->transform(goopt::bench::count(1, 4096))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--epochs", epochs, "PPO epochs per update (rl::ppo_config::epochs)")
        ->transform(goopt::bench::count(1, 64))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--threads", threads, "Threads scoring the samples")
        ->transform(goopt::bench::count(1, 256))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--hidden", hidden, "Width of the policy network")
        ->transform(goopt::bench::count(8, 1024))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--imitation-steps", imitation, "go_warm: steps imitating the best heuristic before PPO")
        ->transform(goopt::bench::count(1, 1000000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--lr", lr, "Learning rate")->transform(goopt::bench::non_negative_real())->capture_default_str();
    cli.add_option("--entropy", entropy, "Entropy bonus coefficient")
        ->transform(goopt::bench::non_negative_real())
        ->capture_default_str();
    cli.add_option("--seed", seed, "Seed of each training")->transform(goopt::bench::count())->capture_default_str();
    cli.add_flag("--no-warm", no_warm, "Skip go_warm (PPO after imitating the best heuristic)");
    cli.add_flag("--no-pure", no_pure, "Skip go (pure PPO from random weights)");
    cli.add_flag("--fifo", fifo, "Score learned placements under FIFO ready queues, not critical-path priorities");
    cli.add_flag("--progress", progress, "A status line per update on stderr");
    cli.add_option("--metrics", metrics, "Write every training's updates as JSON lines")->type_name("FILE");
    cli.add_flag("--guided", guided, "The heuristic-guided decoder (placement_decoder::guided)");
    cli.add_option("--warm-from", warm_from, "go_warm imitates this heuristic (default: the best that fits)")
        ->type_name("HEURISTIC");
    cli.add_option("--min-agreement", min_agreement, "go_warm: ppo.imitation_min_agreement (0: off)")
        ->transform(goopt::bench::non_negative_real())
        ->capture_default_str();
    if (!cli.parse_flags(argc, argv)) return 0;
    const bool warm = !no_warm, pure = !no_pure;
    if (counts.empty()) throw goopt::error("flag --devices", "an empty list", "a list such as 2,4,8");
    std::erase(names, std::string{});
    if (names.empty()) throw goopt::error("flag --graphs", "an empty list", "a list such as rnnlm2,gnmt2");

    if (!metrics.empty()) goopt::io::atomic_write(metrics, "");  // each training appends to it
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf(
        "simulated step time in ms on n x V100:nvlink (* = out of memory); go: PPO %zu updates x %zu samples, hidden "
        "%zu\n",
        updates, samples, hidden);
    std::printf("%-20s %2s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s\n", "graph", "n", "single", "expert", "metis",
                "heft", "crit_path", "m_topo", "m_etf", "m_sct", "go", "go_warm", "s");
    for (const auto& name : names) {
        const auto w = goopt::models::find_workload(name);
        const auto g = w.build();
        for (std::size_t n : counts) {
            const auto cl = goopt::device::parse_cluster(std::to_string(n) + "xV100:nvlink");
            goopt::sim::simulator s(g, cl);
            nlohmann::ordered_json row{{"graph", name}, {"nodes", g.num_ops()}, {"devices", n}};
            std::printf("%-20s %2zu", name.c_str(), n);
            std::vector<std::string> oom;
            goopt::sim::decision best_fit;
            double best_fit_ms = 0;
            std::string best_name;
            auto report = [&](const char* key, const std::string& what, const goopt::sim::decision& d) {
                const auto r = goopt::sim::run(s, d);
                row[key] = r.step_time * 1e3;
                if (r.oom) oom.push_back(what);
                else if (best_fit.placement.empty() || r.step_time * 1e3 < best_fit_ms) {
                    best_fit = d;
                    best_fit_ms = r.step_time * 1e3;
                    best_name = what;
                }
                std::printf(" %8.2f%c", r.step_time * 1e3, r.oom ? '*' : ' ');
                std::fflush(stdout);
            };
            goopt::sim::decision chosen;
            for (const auto& h : goopt::bench::placement_heuristics(s, w.family)) {
                if (h.decision && h.name == warm_from) chosen = *h.decision;
                if (h.decision) report((h.name + "_ms").c_str(), h.name, *h.decision);
                else {  // not in this build (METIS)
                    row[h.name + "_ms"] = nullptr;
                    std::printf(" %9s", "-");
                }
            }
            row["heuristics_oom"] = oom;
            row["best_heuristic"] = best_name;
            if (!warm_from.empty()) {
                if (chosen.placement.empty())
                    throw goopt::error("flag --warm-from", goopt::concat("'", warm_from, "'"),
                                       "a heuristic of this build");
                best_fit = chosen;
                best_name = warm_from;
            }

            goopt::tasks::placement_config cfg{
                .ppo = {.updates = updates,
                        .samples_per_update = samples,
                        .minibatch = samples,
                        .epochs = epochs,
                        .learning_rate = lr,
                        .entropy_coef = entropy,
                        .threads = threads},
                .policy =
                    {.hidden = hidden, .sage_layers = 2, .shared_attention_layers = 1, .heads = 4, .segment = 256},
                .task = {.schedule = fifo ? goopt::tasks::ready_order::fifo : goopt::tasks::ready_order::critical_path,
                         .decoder = guided ? goopt::tasks::placement_decoder::guided
                                           : goopt::tasks::placement_decoder::independent},
                .progress = {.metrics = metrics,
                             .append = true,
                             .status = progress ? goopt::rl::status_mode::always : goopt::rl::status_mode::never}};
            auto train = [&](bool with_warm, const char* key) {
                auto c = cfg;
                if (with_warm) {
                    c.warm_start = best_fit.placement;
                    c.incumbents = {best_fit};  // the heuristic's own decision: never returned worse
                    c.ppo.imitation_steps = imitation;
                    c.ppo.imitation_min_agreement = min_agreement;
                }
                std::mt19937_64 rng(seed);
                const auto r = goopt::tasks::train_placement(g, cl, goopt::cost::roofline_model{}, c, rng);
                row[std::string(key) + "_ms"] = r.best.result.step_time * 1e3;
                row[std::string(key) + "_oom"] = r.best.result.oom;
                row[std::string(key) + "_from"] = goopt::bench::source_name(r.best_from);
                std::printf(" %8.2f%c", r.best.result.step_time * 1e3, r.best.result.oom ? '*' : ' ');
                std::fflush(stdout);
                return r;
            };
            double secs = 0;
            if (pure) {
                const auto r = train(false, "go");
                row["samples"] = r.samples;
                row["updates"] = r.updates;
                row["epochs"] = epochs;
                row["seconds"] = r.seconds;
                row["updates_per_s"] = static_cast<double>(r.updates) / r.seconds;
                secs += r.seconds;
            } else std::printf(" %9s", "-");
            if (warm && !best_fit.placement.empty()) {
                const auto r = train(true, "go_warm");
                goopt::sim::decision d{.placement = best_fit.placement, .priorities = {}, .fusion = {}};
                if (!fifo) d.priorities = goopt::baselines::critical_path_priorities(s, d.placement);
                row["warm_target"] = best_name;
                row["warm_target_ms"] = goopt::sim::run(s, best_fit).step_time * 1e3;
                row["warm_default_ms"] = goopt::sim::run(s, d).step_time * 1e3;
                row["warm_agreement"] = r.imitation_agreement;
                row["warm_mode_gap"] = r.imitation_mode_gap;
                row["warm_imitation_steps"] = r.imitation_steps;
                row["warm_reach_closed"] = r.imitation_reach.closed;
                row["warm_reach_forced"] = r.imitation_reach.forced;
                row["warm_reach_diverged"] = r.imitation_reach.diverged;
                row["warm_seconds"] = r.seconds;
                std::printf(
                    "\n  go_warm imitating %s: own %.2f ms, under the task's priorities %.2f ms; agreement %.4f, "
                    "mode gap %.4f after %zu imitation steps (decoder: %zu closed, %zu forced, %zu diverged); "
                    "best %.2f ms (%s)",
                    best_name.c_str(), double(row["warm_target_ms"]), double(row["warm_default_ms"]),
                    r.imitation_agreement, r.imitation_mode_gap, r.imitation_steps, r.imitation_reach.closed,
                    r.imitation_reach.forced, r.imitation_reach.diverged, r.best.result.step_time * 1e3,
                    goopt::bench::source_name(r.best_from));
                row["warm_samples"] = r.samples;
                secs += r.seconds;
            } else std::printf(" %9s", "-");
            row["peak_memory_bytes"] = goopt::bench::peak_memory_bytes();
            std::printf(" %7.1f\n", secs);
            results.push_back(row);
            if (!out.empty()) goopt::bench::write_results(out, results.dump(1) + "\n");  // after every row
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("placement", [&] { return run(argc, argv); });
}
