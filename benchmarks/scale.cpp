// The scale experiment (issue 28 §3): seconds per PPO update of 16 samples, and peak memory, of the
// GO policy placing the largest zoo graphs (GNMT-8 at 80 steps, ~60,000 ops; gnmt8_long at 110
// steps, ~82,000 ops, GO's largest size), with the independent and the guided placement decoder.
//
//   scale [--graphs gnmt8,gnmt8_long] [--decoders independent,guided] [--devices 8] [--updates 2]
//         [--epochs 4,2] [--segment 256] [--samples 16] [--threads 2] [--seed 1] [--walk automatic]
//         [--quick] [--out FILE]
//
// Each (graph, decoder, epochs) row runs in a child process of its own, so that its peak resident set
// (getrusage) is its own: the graph, its training transform, the task, the network (GO's shape:
// nn::policy_config's defaults) and `--updates` timed PPO updates after one untimed warm-up update
// (the first touches every buffer once). The time of each update is split into the network's
// forward and backward passes, the decoder (guided only: m-ETF's memory estimate drawing every
// device, walking the ops as --walk says: tasks::guided_walk; automatic takes HEFT's order from
// 50,000 ops on, m-ETF's below) and the simulator (scoring every sample, and the mode), each summed
// over the worker threads; "other" is the rest of the wall time (sampling, log-probabilities, the
// PPO loss, Adam). --epochs: PPO's passes over an update's samples (each a forward and a backward
// pass of the network but the first, whose forward is the sampling pass): GO's 4, and 2, which
// halves the network's work per update (docs/placement.md measures what each learns);
// --segment: the attention's segment length.
// --quick: gnmt8_long only, one timed update. JSON list of {"experiment": "scale", "graph", "ops",
// "devices", "decoder", "walk" (guided: "earliest_start" or "ranked"; independent: "none"),
// "threads", "samples", "epochs", "segment", "updates", "seconds_per_update", "cpu_seconds_per_update" (user + system,
// all threads: less sensitive to other processes' load), "first_update_seconds", "forward_seconds",
// "backward_seconds", "decode_seconds", "simulate_seconds", "other_seconds", "peak_memory_bytes"}
// (per update: the timed updates' mean), written atomically.
#include "scale_rows.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace goopt::bench::scale;

int run(int argc, char** argv) {
    std::string out;
    std::vector<std::string> names{"gnmt8", "gnmt8_long"}, decoders{"independent", "guided"};
    settings s;
    bool quick = false;
    goopt::bench::command_line cli("scale",
                                   "Seconds per PPO update and peak memory of the GO policy placing the zoo's "
                                   "largest graphs (issue 28's scale experiment).");
    cli.add_option("--graphs", names, "Models of the zoo")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("NAME,...")
        ->capture_default_str();
    cli.add_option("--decoders", decoders, "Placement decoders")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::IsMember({"independent", "guided"}))
        ->type_name("NAME,...")
        ->capture_default_str();
    cli.add_option("--devices", s.devices, "Devices (n x V100:nvlink)")
        ->transform(goopt::bench::count(1, 1024))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--updates", s.updates, "Timed PPO updates per row, after one warm-up update")
        ->transform(goopt::bench::count(1, 1000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--samples", s.samples, "Placements sampled per update")
        ->transform(goopt::bench::count(1, 4096))
        ->type_name("N")
        ->capture_default_str();
    std::vector<std::size_t> epochs{goopt::rl::ppo_config{}.epochs, 2};
    cli.add_option("--epochs", epochs, "PPO epochs per update (rl::ppo_config::epochs), one row each")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::Range(std::size_t{1}, std::size_t{64}))
        ->type_name("N,...")
        ->capture_default_str();
    cli.add_option("--segment", s.segment, "Attention segment length (nn::policy_config::segment)")
        ->transform(goopt::bench::count(1, 1 << 20))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--threads", s.threads, "Threads decoding and scoring the samples, and the network's OpenMP threads")
        ->transform(goopt::bench::count(1, 256))
        ->type_name("N")
        ->capture_default_str();
    cli.add_option("--seed", s.seed, "Seed of the network and the samples")
        ->transform(goopt::bench::count())
        ->capture_default_str();
    std::string walk = "automatic";
    cli.add_option("--walk", walk, "Guided decoder's walk over the ops (tasks::guided_walk)")
        ->check(CLI::IsMember({"automatic", "earliest_start", "ranked"}))
        ->capture_default_str();
    cli.add_flag("--quick", quick, "gnmt8_long only, one timed update");
    cli.add_option("--out", out, "Write the rows as a JSON list (after every row)")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    if (!cli.parse_flags(argc, argv)) return 0;
    s.walk = walk == "ranked"           ? goopt::tasks::guided_walk::ranked
             : walk == "earliest_start" ? goopt::tasks::guided_walk::earliest_start
                                        : goopt::tasks::guided_walk::automatic;
    if (quick) {
        names = {"gnmt8_long"};
        s.updates = 1;
    }
    std::erase(names, std::string{});
    if (names.empty()) throw goopt::error("flag --graphs", "an empty list", "a list such as gnmt8,gnmt8_long");
    require_workloads(names, "--graphs");
    if (epochs.empty()) throw goopt::error("flag --epochs", "an empty list", "a list such as 4,2");
    if (decoders.empty()) throw goopt::error("flag --decoders", "an empty list", "independent, guided or both");

    std::printf(
        "one PPO update of %zu samples on %zu x V100:nvlink, %zu threads, GO's network (segment %zu); seconds per "
        "update (mean of %zu after a warm-up) and its parts (decode and simulate: summed over threads)\n",
        s.samples, s.devices, s.threads, s.segment, s.updates);
    std::printf("%-12s %7s %-26s %6s %8s %8s %8s %8s %8s %8s %8s %8s %9s\n", "graph", "ops", "decoder", "epochs",
                "s/update", "cpu s", "first", "forward", "backward", "decode", "simulate", "other", "peak MiB");
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (const auto& name : names) {
        for (const auto& d : decoders) {
            for (const std::size_t e : epochs) {
                const auto decoder = d == "guided" ? goopt::tasks::placement_decoder::guided
                                                   : goopt::tasks::placement_decoder::independent;
                s.epochs = e;
                const auto row = measure_apart(name, decoder, s);
                std::printf("%-12s %7zu %-26s %6zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %9.0f\n",
                            name.c_str(), row["ops"].get<std::size_t>(),
                            (d + " " + row["walk"].get<std::string>()).c_str(), e,
                            row["seconds_per_update"].get<double>(), row["cpu_seconds_per_update"].get<double>(),
                            row["first_update_seconds"].get<double>(), row["forward_seconds"].get<double>(),
                            row["backward_seconds"].get<double>(), row["decode_seconds"].get<double>(),
                            row["simulate_seconds"].get<double>(), row["other_seconds"].get<double>(),
                            static_cast<double>(row["peak_memory_bytes"].get<std::size_t>()) / (1 << 20));
                std::fflush(stdout);
                results.push_back(row);
                if (!out.empty()) goopt::bench::write_results(out, results.dump(1) + "\n");
            }
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("scale", [&] { return run(argc, argv); });
}
