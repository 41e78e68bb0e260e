// benchmarks/distributed: synchronous data-parallel PPO on 1 and on N ranks (goopt::mpi), on a
// graph of thousands of ops: samples per second, seconds per update, peak memory per rank, bytes each
// rank sends per update, and whether the N-rank parameters are the 1-rank ones bit for bit.
//   mpirun -np 2 --oversubscribe build/benchmarks/distributed [--model rnnlm4] [--out FILE]
// The 1-rank row runs on rank 0 while the other ranks sleep (not spinning in MPI), then all ranks run
// the same training together. Started without mpirun: the 1-rank row alone.
#include "benchmark_main.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/train.hpp>

#include <nlohmann/json.hpp>

#if GOOPT_HAS_MPI
#include <goopt/mpi.hpp>
#endif

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <random>
#include <string>
#include <thread>

using namespace goopt;

namespace {

struct training_run {
    double seconds = 0;
    double cpu_seconds = 0;  ///< this process's CPU time (all its threads): the work, whatever the load
    std::size_t samples = 0;
    std::string parameters;  ///< the trained network's parameter bytes
};

/// The program's placement training (goopt optimize --tasks placement: guided decoder, the narrow
/// GO policy) for `updates` updates of `samples` samples on one worker thread per rank.
training_run train_placement(const graph::computation_graph& g, const device::cluster<device::device_spec>& cl,
                             std::size_t updates, std::size_t samples, rl::sample_sharding* sharding) {
    tasks::placement_task task(
        g, cl, cost::roofline_model{},
        {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided});
    std::mt19937_64 rng(1);
    nn::go_policy<float> net(
        {.hidden = 64, .shared_attention_layers = 1, .heads = 4, .task_choices = {cl.num_devices()}}, rng);
    for (auto* p : net.parameters())
        if (p->name.starts_with("task0.head")) p->value.setZero();  // as tasks::train_placement starts
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const auto r = tasks::train(task, net,
                                {.ppo = {.updates = updates,
                                         .samples_per_update = samples,
                                         .learning_rate = 1e-3,
                                         .threads = 1,
                                         .sharding = sharding}},
                                rng);
    training_run out;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    out.samples = r.samples;
    for (auto* p : net.parameters())
        out.parameters.append(reinterpret_cast<const char*>(p->value.data()),
                              static_cast<std::size_t>(p->value.size()) * sizeof(float));
    return out;
}

int run(int argc, char** argv) {
#if GOOPT_HAS_MPI
    std::optional<mpi::session> world;
    if (mpi::launched_by_mpirun()) world.emplace(argc, argv);
    const std::size_t rank = world ? world->rank() : 0, ranks = world ? world->size() : 1;
#else
    const std::size_t rank = 0, ranks = 1;
#endif
    std::string model = "rnnlm4", cluster = "4xV100:nvlink", out;
    std::size_t updates = 3, samples = 16;
    bench::command_line cli("distributed", "Data-parallel PPO on 1 and N MPI ranks (run it under mpirun -np N)");
    cli.add_option("--model", model, "A model of the zoo (its training graph where it has one)")->capture_default_str();
    cli.add_option("--cluster", cluster, "The cluster the ops are placed on")->capture_default_str();
    cli.add_option("--updates", updates, "PPO updates per run")
        ->transform(bench::count(1, 1000))
        ->capture_default_str();
    cli.add_option("--samples", samples, "Samples per update (all ranks together)")
        ->transform(bench::count(1, 100000))
        ->capture_default_str();
    cli.add_option("--out", out, "Write the rows as a JSON list (rank 0)")->type_name("FILE");
    if (!cli.parse_flags(argc, argv)) return 0;

    const auto g = models::find_workload(model).build();
    const auto cl = device::parse_cluster(cluster);
    // cpu: the most CPU seconds of any rank (the machine here is shared: wall time measures the load too)
    auto row = [&](std::size_t n, const training_run& r, double cpu, std::size_t peak, std::uint64_t bytes, bool same) {
        const double per_s = static_cast<double>(r.samples) / r.seconds;
        std::printf(
            "%-10s %2zu ranks x 1 thread  %6zu ops  %7.2f samples/s  %7.2f s/update  %7.2f CPU s/update/rank  "
            "peak %6.1f MiB/rank  %9llu bytes sent/rank/update  identical to 1 rank: %s\n",
            model.c_str(), n, g.num_ops(), per_s, r.seconds / static_cast<double>(updates),
            cpu / static_cast<double>(updates), static_cast<double>(peak) / (1 << 20),
            static_cast<unsigned long long>(bytes), same ? "yes" : "no");
        std::fflush(stdout);
        return nlohmann::json{{"experiment", "training"},
                              {"ranks", n},
                              {"threads_per_rank", 1},
                              {"graph", model},
                              {"ops", g.num_ops()},
                              {"samples_per_update", samples},
                              {"updates", updates},
                              {"samples_per_s", per_s},
                              {"seconds", r.seconds},
                              {"seconds_per_update", r.seconds / static_cast<double>(updates)},
                              {"cpu_seconds_per_update_per_rank", cpu / static_cast<double>(updates)},
                              {"peak_memory_bytes_per_rank", peak},
                              {"bytes_sent_per_rank_per_update", bytes},
                              {"identical_to_one_rank", same}};
    };
    nlohmann::json rows = nlohmann::json::array();
    training_run alone;
    if (rank == 0) {
        alone = train_placement(g, cl, updates, samples, nullptr);
        rows.push_back(row(1, alone, alone.cpu_seconds, bench::peak_memory_bytes(), 0, true));
    }
#if GOOPT_HAS_MPI
    if (world) {
        // the other ranks sleep until rank 0's single-process run is done (a plain MPI_Barrier would
        // spin a core that the 1-rank figure needs)
        MPI_Request done;
        MPI_Ibarrier(MPI_COMM_WORLD, &done);
        for (int finished = 0; !finished;) {
            MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
            if (!finished) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        mpi::sample_sharding sh(*world);
        const auto shared = world->run_or_abort([&] { return train_placement(g, cl, updates, samples, &sh); });
        // the most bytes of any rank, and the largest peak of the ranks other than 0 (rank 0's peak
        // includes its 1-rank run: VmHWM never goes down)
        unsigned long long mine[2] = {rank == 0 ? 0 : bench::peak_memory_bytes(), sh.bytes_sent() / updates},
                           most[2] = {0, 0};
        MPI_Reduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        double cpu = 0;
        MPI_Reduce(&shared.cpu_seconds, &cpu, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) rows.push_back(row(ranks, shared, cpu, most[0], most[1], shared.parameters == alone.parameters));
    }
#endif
    if (rank == 0 && !out.empty()) bench::write_results(out, rows.dump(1) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("distributed", [&] { return run(argc, argv); });
}
