// How far the anchored placement decoder's samples depart from their anchor, per anchor strength
// (tasks::placement_task_config::anchor_strength): at zero logits, as a fresh policy samples, the
// share of the computing ops a sample moves off the anchor's device, and how many samples are faster
// than the anchor. The anchor is the best placement heuristic that fits (as benchmarks/decisions
// picks it), every decision scored with its critical-path priorities. What it is for: choosing
// placement_task_config::anchor_strengths for a cluster (a strength whose samples move a third of the
// ops teaches the policy nothing but to stay home).
//
//   anchor_departures [--out FILE] [--model NAME]... [--devices 2,4,8] [--strengths 2,3,4,5,6] [--samples 16]
//
// JSON list, one object per (model, devices, strength): {"model", "devices", "ops", "anchor",
// "anchor_ms", "strength", "moved_share", "faster_samples", "best_sample_ms", "samples"}.
#include "benchmark_main.hpp"
#include "placement_heuristics.hpp"

#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace goopt;

int run(int argc, char** argv) {
    std::string out;
    std::vector<std::string> models;
    std::vector<std::size_t> counts{2, 4, 8};
    std::vector<double> strengths{2, 3, 4, 5, 6};
    std::size_t samples = 16;
    bench::command_line cli("anchor_departures",
                            "How many ops the anchored placement decoder moves per sample at each anchor strength, "
                            "at zero logits, and how many samples beat the anchor");
    cli.add_option("--out", out, "Write the results as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_option("--model", models, "A model of the zoo (repeatable; default: wavenet_2x18, transformer_xl2, rnnlm2)")
        ->allow_extra_args(false)
        ->type_name("NAME");
    cli.add_option("--devices", counts, "Device counts (n x V100:nvlink), one cluster each")
        ->delimiter(',')
        ->transform(bench::count(1))
        ->type_name("N,...")
        ->capture_default_str();
    cli.add_option("--strengths", strengths, "Anchor strengths (> 0)")
        ->delimiter(',')
        ->transform(bench::non_negative_real())
        ->type_name("S,...")
        ->capture_default_str();
    cli.add_option("--samples", samples, "Samples per strength (seeds 1..N)")
        ->transform(bench::count(1))
        ->capture_default_str();
    if (!cli.parse_flags(argc, argv)) return 0;
    if (models.empty()) models = {"wavenet_2x18", "transformer_xl2", "rnnlm2"};
    if (counts.empty()) throw error("flag --devices", "an empty list", "a list such as 2,4,8");
    for (double x : strengths)
        if (!(x > 0)) throw error("flag --strengths", concat(x), "numbers > 0");

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf("per strength: share of computing ops a sample moves off the anchor, samples faster than it (of %zu)\n",
                samples);
    for (const auto& name : models) {
        const auto w = models::find_workload(name);
        const auto g = w.build();
        std::size_t computing = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o) computing += g.get_op(o).spec().has(ops::source) ? 0 : 1;
        for (std::size_t n : counts) {
            const auto cl = device::parse_cluster(std::to_string(n) + "xV100:nvlink");
            sim::simulator s(g, cl);
            const auto anchor = bench::best_fitting_heuristic(s, w.family);
            std::printf("%-20s %2zu", name.c_str(), n);
            if (anchor.name.empty()) {
                std::printf("  no placement heuristic fits\n");
                continue;
            }
            std::printf("  anchor %-13s", anchor.name.c_str());
            const auto zero =
                nn::matrix<double>::Zero(static_cast<Eigen::Index>(g.num_ops()), static_cast<Eigen::Index>(n));
            for (double strength : strengths) {
                tasks::placement_task task(g, cl, cost::roofline_model{},
                                           {.schedule = tasks::ready_order::critical_path,
                                            .decoder = tasks::placement_decoder::guided,
                                            .anchor = anchor.decision.placement,
                                            .anchor_strength = strength});
                std::mt19937_64 rng(1);
                const auto& obs = task.observe(rng);
                // the zero-logit mode: the anchor's placement wherever the decoder keeps it
                const auto home = task.decide(task.decode(obs, zero, 0, true, 0).actions);
                const double home_step = task.score(home, 0).step_time;
                std::size_t moved = 0, faster = 0;
                double best = home_step;
                for (std::uint64_t seed = 1; seed <= samples; ++seed) {
                    const auto d = task.decide(task.decode(obs, zero, seed, false, 0).actions);
                    for (graph::op_id o = 0; o < g.num_ops(); ++o) moved += d.placement[o] != home.placement[o] ? 1 : 0;
                    const auto r = task.score(d, 0);
                    if (!r.oom && r.step_time < home_step) ++faster;
                    if (!r.oom) best = std::min(best, r.step_time);
                }
                const double share = static_cast<double>(moved) / static_cast<double>(samples * computing);
                std::printf("  S=%g: %5.1f %% %2zu", strength, 100 * share, faster);
                std::fflush(stdout);
                results.push_back({{"model", name},
                                   {"devices", n},
                                   {"ops", g.num_ops()},
                                   {"anchor", anchor.name},
                                   {"anchor_ms", anchor.ms},
                                   {"strength", strength},
                                   {"moved_share", share},
                                   {"faster_samples", faster},
                                   {"best_sample_ms", best * 1e3},
                                   {"samples", samples}});
            }
            std::printf("\n");
        }
    }
    if (!out.empty()) bench::write_results(out, results.dump(1) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("anchor_departures", [&] { return run(argc, argv); });
}
