#pragma once
// One row of the scale experiment (issue 28 §3): seconds per PPO update and peak memory of the GO
// policy placing one zoo graph, measured in a child process of its own (so that its peak resident
// set is its own). benchmarks/scale.cpp and benchmarks/transfer.cpp (--experiments scale) write
// these rows; the fields are listed in scale.cpp.
#include "benchmark_main.hpp"

#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/tasks/placement.hpp>

#include <nlohmann/json.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace goopt::bench::scale {

using clock_type = std::chrono::steady_clock;
using task_type = goopt::tasks::placement_task<goopt::device::device_spec>;

inline double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// CPU seconds (user + system) of every thread of this process so far: on a shared machine the wall
/// time depends on the others' load, this less so.
inline double cpu_seconds() {
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

/// What a row measures: `updates` timed PPO updates of `samples` samples and `epochs` epochs on
/// `devices` x V100:nvlink, GO's network with attention segments of `segment` nodes.
struct settings {
    std::size_t devices = 8, updates = 2, samples = 16, threads = 2;
    std::size_t epochs = goopt::rl::ppo_config{}.epochs, segment = goopt::nn::policy_config{}.segment;
    std::uint64_t seed = 1;
    goopt::tasks::guided_walk walk = goopt::tasks::guided_walk::automatic;
};

/// Stops the run before any row's child process when a name is not a zoo workload; the error names
/// `flag` (a child's error would come after the table's header).
inline void require_workloads(const std::vector<std::string>& names, const std::string& flag) {
    for (const auto& n : names) {
        try {
            (void)goopt::models::find_workload(n);
        } catch (const goopt::error& e) {
            throw goopt::error(goopt::concat("flag ", flag, ": ", e.what()));
        }
    }
}

/// One row, measured in this process.
inline nlohmann::ordered_json measure(const std::string& name, goopt::tasks::placement_decoder decoder,
                                      const settings& s) {
#if defined(_OPENMP)
    omp_set_num_threads(static_cast<int>(s.threads));  // the network's passes too (a child process's own)
#endif
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
inline nlohmann::ordered_json measure_apart(const std::string& name, goopt::tasks::placement_decoder decoder,
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

}  // namespace goopt::bench::scale
