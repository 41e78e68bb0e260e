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
#include "benchmark_main.hpp"

#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/tasks/placement.hpp>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using task_type = goopt::tasks::placement_task<goopt::device::device_spec>;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// CPU seconds (user + system) of every thread of this process so far: on a shared machine the wall
/// time depends on the others' load, this less so.
double cpu_seconds() {
    struct rusage u {};
    getrusage(RUSAGE_SELF, &u);
    auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return sec(u.ru_utime) + sec(u.ru_stime);
}

/// The placement task, with the time spent in its decoder and simulator per worker (workers write
/// only their own slot, so the threads share nothing).
struct timed_task {
    using observation = task_type::observation;
    using outcome = task_type::outcome;
    task_type* task;
    std::vector<double> decode_s, simulate_s;

    template <class Rng> const observation& observe(Rng& rng) const { return task->observe(rng); }
    std::size_t num_choices() const { return task->num_choices(); }
    std::span<const std::uint8_t> active() const { return task->active(); }
    void set_workers(std::size_t k) {
        task->set_workers(k);
        decode_s.assign(k, 0);
        simulate_s.assign(k, 0);
    }
    outcome evaluate(const observation& o, std::span<const int> actions, std::size_t w) {
        const auto t0 = clock_type::now();
        auto r = task->evaluate(o, actions, w);
        simulate_s[w] += seconds_since(t0);
        return r;
    }
    bool guided() const noexcept { return task->guided(); }
    goopt::rl::guided_sample decode(const observation& o, const goopt::nn::matrix<double>& logits, std::uint64_t seed,
                                    bool greedy, std::size_t w) {
        const auto t0 = clock_type::now();
        auto r = task->decode(o, logits, seed, greedy, w);
        decode_s[w] += seconds_since(t0);
        return r;
    }
    double sum(const std::vector<double>& v) const {
        double s = 0;
        for (double x : v) s += x;
        return s;
    }
};

/// The GO policy, with the time of its forward and backward passes.
struct timed_policy {
    using scalar = float;
    goopt::nn::go_policy<float> net;
    double forward_s = 0, backward_s = 0;

    goopt::nn::policy_output<float> evaluate(const goopt::nn::graph_features<float>& f,
                                             const std::vector<std::vector<int>>& actions) {
        const auto t0 = clock_type::now();
        auto r = net.evaluate(f, actions);
        forward_s += seconds_since(t0);
        return r;
    }
    void backward(const std::vector<goopt::nn::matrix<float>>& dlogits, float dvalue) {
        const auto t0 = clock_type::now();
        net.backward(dlogits, dvalue);
        backward_s += seconds_since(t0);
    }
    goopt::nn::parameter_list<float> parameters() { return net.parameters(); }
};

struct settings {
    std::size_t devices = 8, updates = 2, samples = 16, threads = 2;
    std::size_t epochs = goopt::rl::ppo_config{}.epochs, segment = goopt::nn::policy_config{}.segment;
    std::uint64_t seed = 1;
    goopt::tasks::guided_walk walk = goopt::tasks::guided_walk::automatic;
};

/// One row, measured in this process.
nlohmann::ordered_json measure(const std::string& name, goopt::tasks::placement_decoder decoder, const settings& s) {
    const auto g = goopt::models::find_workload(name).build();
    const auto cl = goopt::device::parse_cluster(std::to_string(s.devices) + "xV100:nvlink");
    task_type task(g, cl, goopt::cost::roofline_model{}, {.decoder = decoder, .walk = s.walk});
    timed_task env{&task, {}, {}};
    std::mt19937_64 rng(s.seed);
    goopt::nn::policy_config pc{};
    pc.task_choices = {s.devices};
    pc.segment = s.segment;
    timed_policy pol{goopt::nn::go_policy<float>(pc, rng)};
    // as tasks::train_placement starts a guided policy: a zero head, m-ETF's decisions first
    if (decoder == goopt::tasks::placement_decoder::guided)
        for (auto* p : pol.net.parameters())
            if (p->name.starts_with("task0.head")) p->value.setZero();
    goopt::rl::ppo<timed_task, timed_policy> trainer(
        env, pol, {.samples_per_update = s.samples, .minibatch = s.samples, .epochs = s.epochs, .threads = s.threads});
    auto t0 = clock_type::now();
    trainer.update(rng);
    const double first = seconds_since(t0);
    pol.forward_s = pol.backward_s = 0;
    env.set_workers(std::min(s.threads, s.samples));  // zeroes the decoder and simulator clocks
    t0 = clock_type::now();
    const double cpu0 = cpu_seconds();
    for (std::size_t u = 0; u < s.updates; ++u) trainer.update(rng);
    const double per = static_cast<double>(s.updates);
    const double wall = seconds_since(t0) / per, cpu = (cpu_seconds() - cpu0) / per;
    const double fw = pol.forward_s / per, bw = pol.backward_s / per;
    const double dec = env.sum(env.decode_s) / per, sim = env.sum(env.simulate_s) / per;
    return {{"experiment", "scale"},
            {"graph", name},
            {"ops", g.num_ops()},
            {"devices", s.devices},
            {"decoder", decoder == goopt::tasks::placement_decoder::guided ? "guided" : "independent"},
            {"walk", !task.guided()       ? "none"
                     : task.ranked_walk() ? "ranked"
                                          : "earliest_start"},
            {"threads", s.threads},
            {"samples", s.samples},
            {"epochs", s.epochs},
            {"segment", s.segment},
            {"updates", s.updates},
            {"seconds_per_update", wall},
            {"cpu_seconds_per_update", cpu},
            {"first_update_seconds", first},
            {"forward_seconds", fw},
            {"backward_seconds", bw},
            {"decode_seconds", dec},
            {"simulate_seconds", sim},
            // the workers' decoder and simulator seconds overlap on several threads
            {"other_seconds", wall - fw - bw - (dec + sim) / static_cast<double>(std::min(s.threads, s.samples))},
            {"peak_memory_bytes", goopt::bench::peak_memory_bytes()}};
}

/// measure() in a child process (its own peak resident set); the row comes back through a pipe.
nlohmann::ordered_json measure_apart(const std::string& name, goopt::tasks::placement_decoder decoder,
                                     const settings& s) {
    int fd[2];
    if (::pipe(fd) != 0) throw goopt::error("scale", "pipe() failed");
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) throw goopt::error("scale", "fork() failed");
    if (pid == 0) {
        ::close(fd[0]);
        std::string text;
        int rc = 0;
        try {
            text = measure(name, decoder, s).dump();
        } catch (const std::exception& e) {
            text = nlohmann::json{{"error", e.what()}}.dump();
            rc = 1;
        }
        for (std::size_t at = 0; at < text.size();) {
            const auto k = ::write(fd[1], text.data() + at, text.size() - at);
            if (k <= 0) break;
            at += static_cast<std::size_t>(k);
        }
        ::close(fd[1]);
        ::_exit(rc);
    }
    ::close(fd[1]);
    std::string text;
    char buf[4096];
    for (ssize_t k; (k = ::read(fd[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(k));
    ::close(fd[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || text.empty())
        throw goopt::error("scale", goopt::concat("the measurement of ", name, " died (status ", status, ")"),
                           "a finished child process (out of memory?)");
    auto row = nlohmann::ordered_json::parse(text);
    if (row.contains("error")) throw goopt::error(row["error"].get<std::string>());
    return row;
}

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
    cli.add_option("--threads", s.threads, "Threads decoding and scoring the samples")
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
    cli.add_option("--out", out, "Write the rows as a JSON list (after every row)")->type_name("FILE");
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
