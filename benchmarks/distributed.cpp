// benchmarks/distributed: goopt on 1 and on N ranks (goopt::mpi).
// Experiment "training": synchronous data-parallel PPO on a graph of thousands of ops: samples per
// second, seconds per update, peak memory per rank, bytes each rank sends per update, and whether
// the N-rank parameters are the 1-rank ones bit for bit.
// Experiment "mixed": pre-training across graphs with updates that mix them (goopt train --mixed),
// the ranks holding different graphs and summing their gradients: samples per second, seconds per
// update, bytes each rank sends per update, and whether the N-rank checkpoint is the 1-rank one.
// Experiment "generation": rule generation of TASO's world at each --depth: seconds, peak memory per
// rank, bytes each rank sends, and whether the N-rank rule file is the 1-rank one byte for byte.
//   mpirun -np 2 --oversubscribe build/benchmarks/distributed [--experiments training,mixed,generation]
//          [--model rnnlm4] [--samples 16] [--minibatch 16] [--mixed-models rnnlm2,wavenet_2x18] [--depth 3]
//          [--exchange-bytes 4194304] [--ranks-only] [--reference-rules FILE] [--rules-out FILE] [--exchange-log
//          PREFIX]
//          [--out FILE]     (--minibatch 0: all of an update's samples in one step per epoch)
// Each 1-rank row runs on rank 0 while the other ranks sleep (not spinning in MPI), then all ranks
// run the same work together. Started without mpirun: the 1-rank rows alone. --ranks-only: the
// generation's N-rank rows alone, in a fresh process (no 1-rank heap left on rank 0); then
// identical_to_one_rank compares with --reference-rules (a rule file of one process), null without.
#include "benchmark_main.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/device.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/environment_dealing.hpp>
#include <goopt/subst/generation/generate_rules.hpp>
#include <goopt/subst/world.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/pretrain.hpp>
#include <goopt/tasks/train.hpp>

#include <nlohmann/json.hpp>

#if GOOPT_HAS_MPI
#include <goopt/mpi.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include <unistd.h>

using namespace goopt;

namespace {

struct training_run {
    double seconds = 0;
    double cpu_seconds = 0;  ///< this process's CPU time (all its threads): the work, whatever the load
    std::size_t samples = 0;
    std::string parameters;  ///< the trained network's parameter bytes
};

/// A training row (printed, and as JSON): `experiment` "training" or "mixed_pretraining"; `cpu` the
/// most CPU seconds of any rank (the machine here is shared: wall time measures the load too);
/// `work` the most of any rank's CPU seconds outside the all-gathers (OpenMPI busy-waits there for
/// the slowest rank: what is left is the work the rank did itself, whatever the load).
struct training_row_figures {
    std::size_t ranks, ops, samples_per_update, minibatch, updates;
    double cpu, work;
    std::size_t peak;
    std::uint64_t bytes;
    bool same;
};
nlohmann::json training_row(const char* experiment, const std::string& graph, const training_run& r,
                            const training_row_figures& f) {
    const double per_s = static_cast<double>(r.samples) / r.seconds;
    const auto updates = static_cast<double>(f.updates);
    std::printf(
        "%s %-20s %2zu ranks x 1 thread  %6zu ops  minibatch %4zu  %7.2f samples/s  %7.2f s/update  %7.2f CPU "
        "s/update/rank (%.2f work)  "
        "peak %6.1f MiB/rank  %9llu bytes sent/rank/update  identical to 1 rank: %s\n",
        experiment, graph.c_str(), f.ranks, f.ops, f.minibatch, per_s, r.seconds / updates, f.cpu / updates,
        f.work / updates, static_cast<double>(f.peak) / (1 << 20), static_cast<unsigned long long>(f.bytes),
        f.same ? "yes" : "no");
    std::fflush(stdout);
    return nlohmann::json{{"experiment", experiment},
                          {"ranks", f.ranks},
                          {"threads_per_rank", 1},
                          {"graph", graph},
                          {"ops", f.ops},
                          {"samples_per_update", f.samples_per_update},
                          {"minibatch", f.minibatch},
                          {"updates", f.updates},
                          {"samples_per_s", per_s},
                          {"seconds", r.seconds},
                          {"seconds_per_update", r.seconds / updates},
                          {"cpu_seconds_per_update_per_rank", f.cpu / updates},
                          {"work_cpu_seconds_per_update_per_rank", f.work / updates},
                          {"peak_memory_bytes_per_rank", f.peak},
                          {"bytes_sent_per_rank_per_update", f.bytes},
                          {"identical_to_one_rank", f.same}};
}

/// The program's placement training (goopt optimize --tasks placement: guided decoder, the narrow
/// GO policy) for `updates` updates of `samples` samples, `minibatch` per gradient step, on one
/// worker thread per rank.
training_run train_placement(const graph::computation_graph& g, const device::cluster<device::device_spec>& cl,
                             std::size_t updates, std::size_t samples, std::size_t minibatch,
                             rl::sample_sharding* sharding) {
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
                                         .minibatch = minibatch,
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

/// `goopt train --mixed` on `graphs` (the shipped network, one worker thread per rank): `updates`
/// updates of `samples` samples per graph, the checkpoint to `file` (rank 0's when `sharding` is set).
training_run pretrain_mixed(std::span<const graph::computation_graph> graphs,
                            const device::cluster<device::device_spec>& cl, std::size_t updates, std::size_t samples,
                            rl::sample_sharding* sharding, const std::filesystem::path& file) {
    auto cfg = tasks::shipped_placement_config(updates);
    cfg.ppo.samples_per_update = samples;
    cfg.ppo.sharding = sharding;
    cfg.checkpoint = file;
    std::mt19937_64 rng(1);
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const auto r =
        tasks::pretrain_placement_policy(graphs, std::span<const device::cluster<device::device_spec>>(&cl, 1),
                                         cost::roofline_model{}, cfg, {.mixed = true}, rng);
    training_run out;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    out.samples = r.samples;
    return out;
}

/// The bytes of a file (empty when it is absent).
std::string file_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Resets this process's peak resident memory (VmHWM) to its current size (Linux 4.0+), so that
/// the next peak_memory_bytes() is the peak of what runs after it, on top of what the process holds.
void reset_peak_memory() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
}

/// This process's resident memory now (VmRSS).
std::size_t resident_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
}

struct generation_run {
    double seconds = 0;
    double cpu_seconds = 0;            ///< this process's CPU time (OpenMPI's busy waiting in an exchange included)
    std::size_t peak = 0, before = 0;  ///< VmHWM during the run, VmRSS before it
    std::size_t rules = 0, graphs = 0;
    std::string file;  ///< the rule file's bytes, as goopt generate-rules writes it
};

/// The bytes io::write_rules_file writes for `rules` (through a scratch file: the same writer).
std::string rule_file_bytes(std::span<const subst::rule> rules) {
    const auto path = std::filesystem::temp_directory_path() / concat("goopt_distributed_rules_", ::getpid(), ".json");
    io::write_rules_file(path, rules);
    auto bytes = file_bytes(path);
    std::filesystem::remove(path);
    return bytes;
}

#if GOOPT_HAS_MPI
/// mpi::generation_sharding that writes a line per exchange (--exchange-log): bytes sent and received
/// (own part included), the process's resident memory and its peak so far after the exchange, and
/// the seconds since the run began; to see which exchange and which pass set the peak.
class logged_sharding final : public subst::generation_sharding {
public:
    logged_sharding(const mpi::session& s, const std::string& path) : inner_(s), log_(path) {
        log_ << "exchange\tseconds\tbytes_out\tbytes_in\tresident_bytes\tpeak_bytes\n";
    }
    std::size_t rank() const override { return inner_.rank(); }
    std::size_t ranks() const override { return inner_.ranks(); }
    std::vector<std::string> all_to_all(std::vector<std::string> parts) override {
        std::size_t out = 0, in = 0;
        for (const auto& p : parts) out += p.size();
        auto received = inner_.all_to_all(std::move(parts));
        for (const auto& p : received) in += p.size();
        log_ << calls_++ << '\t' << std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()
             << '\t' << out << '\t' << in << '\t' << resident_bytes() << '\t' << bench::peak_memory_bytes()
             << std::endl;  // whole lines, should a rank die
        return received;
    }
    mpi::generation_sharding& inner() noexcept { return inner_; }

private:
    mpi::generation_sharding inner_;
    std::ofstream log_;
    std::size_t calls_ = 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};
#endif

/// goopt generate-rules --max-ops `depth` --threads 1 (the program's worlds), on the ranks of
/// `sharding` (nullptr: this process alone), exchanging in rounds of about `exchange_bytes` per rank.
generation_run generate(std::size_t depth, subst::generation_sharding* sharding, std::size_t exchange_bytes) {
    const auto world = subst::taso_world();
    const subst::world check[] = {subst::taso_world({.n = 5, .c = 2, .h = 7, .w = 4}),
                                  subst::taso_world({.n = 3, .c = 4, .h = 6, .w = 6})};
    generation_run out;
    out.before = resident_bytes();
    reset_peak_memory();
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const auto r = subst::generate_rules(
        world, check, {.max_ops = depth, .threads = 1, .sharding = sharding, .exchange_bytes = exchange_bytes});
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    out.peak = bench::peak_memory_bytes();
    out.rules = r.rules.size();
    out.graphs = r.stats.graphs;
    out.file = rule_file_bytes(r.rules);
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
    std::size_t updates = 3, samples = 16, minibatch = 16;
    std::vector<std::string> experiments{"training", "generation"};
    std::vector<std::string> mixed_models{"rnnlm2", "wavenet_2x18"};
    std::size_t mixed_samples = 8;
    std::vector<std::size_t> depths{3};
    bool ranks_only = false;
    std::size_t exchange_bytes = subst::generation_config{}.exchange_bytes;
    std::string reference_rules, rules_out, exchange_log;
    bench::command_line cli("distributed", "Data-parallel PPO on 1 and N MPI ranks (run it under mpirun -np N)");
    cli.add_option("--model", model, "A model of the zoo (its training graph where it has one)")->capture_default_str();
    cli.add_option("--cluster", cluster, "The cluster the ops are placed on")->capture_default_str();
    cli.add_option("--updates", updates, "PPO updates per run")
        ->transform(bench::count(1, 1000))
        ->capture_default_str();
    cli.add_option("--samples", samples, "Samples per update (all ranks together)")
        ->transform(bench::count(1, 100000))
        ->capture_default_str();
    cli.add_option("--minibatch", minibatch,
                   "Samples per gradient step of the training (0: all of an update's, one step per epoch)")
        ->transform(bench::count(0, 100000))
        ->capture_default_str();
    cli.add_option("--experiments", experiments, "training, mixed, generation (comma-separated)")
        ->delimiter(',')
        ->check(CLI::IsMember({"training", "mixed", "generation"}))
        ->capture_default_str();
    cli.add_option("--mixed-models", mixed_models, "The graphs of the mixed pre-training (ranks hold different ones)")
        ->delimiter(',')
        ->capture_default_str();
    cli.add_option("--mixed-samples", mixed_samples, "Samples per graph and update of the mixed pre-training")
        ->transform(bench::count(1, 100000))
        ->capture_default_str();
    cli.add_option("--depth", depths, "Rule generation depths (repeatable or comma-separated)")
        ->delimiter(',')
        ->check(CLI::Range(1, 4))
        ->capture_default_str();
    cli.add_option("--exchange-bytes", exchange_bytes,
                   "Rule generation: bytes per rank of each round of the exchanges (generation_config::exchange_bytes)")
        ->transform(bench::count(1, std::size_t{1} << 40))
        ->capture_default_str();
    cli.add_flag("--ranks-only", ranks_only,
                 "Rule generation: the N-rank rows alone (no 1-rank run first on rank 0: a fresh process)");
    cli.add_option("--reference-rules", reference_rules,
                   "Rule generation: a rule file (one process's, one --depth) that identical_to_one_rank compares with "
                   "byte for byte")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    cli.add_option("--rules-out", rules_out,
                   "Rule generation: write the rule file of the run on the most ranks (rank 0; one --depth)")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_option("--exchange-log", exchange_log,
                   "Rule generation: write a line per exchange of the N-rank run to PREFIX.rankR.tsv")
        ->type_name("PREFIX");
    cli.add_option("--out", out, "Write the rows as a JSON list (rank 0)")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    if (!cli.parse_flags(argc, argv)) return 0;
    if ((!reference_rules.empty() || !rules_out.empty()) && depths.size() != 1)
        throw error("distributed", concat("--reference-rules or --rules-out with ", depths.size(), " depths"),
                    "one --depth (a rule file is one depth's)");
    const std::string reference = reference_rules.empty() ? std::string() : file_bytes(reference_rules);

    nlohmann::json rows = nlohmann::json::array();
    const auto wanted = [&](const char* e) {
        return std::find(experiments.begin(), experiments.end(), e) != experiments.end();
    };
#if GOOPT_HAS_MPI
    // the other ranks sleep until rank 0's single-process run is done (a plain MPI_Barrier would
    // spin a core that the 1-rank figure needs)
    auto wait_for_rank0 = [&] {
        MPI_Request done;
        MPI_Ibarrier(MPI_COMM_WORLD, &done);
        for (int finished = 0; !finished;) {
            MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
            if (!finished) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    };
#endif
    if (wanted("training")) {
        if (minibatch == 0) minibatch = samples;
        const auto g = models::find_workload(model).build();
        const auto cl = device::parse_cluster(cluster);
        auto row = [&](std::size_t n, const training_run& r, double cpu, double work, std::size_t peak,
                       std::uint64_t bytes, bool same) {
            return training_row("training", model, r,
                                {n, g.num_ops(), samples, minibatch, updates, cpu, work, peak, bytes, same});
        };
        training_run alone;
        if (rank == 0) {
            reset_peak_memory();
            alone = train_placement(g, cl, updates, samples, minibatch, nullptr);
            rows.push_back(row(1, alone, alone.cpu_seconds, alone.cpu_seconds, bench::peak_memory_bytes(), 0, true));
        }
#if GOOPT_HAS_MPI
        if (world) {
            wait_for_rank0();
            mpi::sample_sharding sh(*world);
            reset_peak_memory();
            const auto shared =
                world->run_or_abort([&] { return train_placement(g, cl, updates, samples, minibatch, &sh); });
            // the most bytes and the largest peak of any rank
            unsigned long long mine[2] = {bench::peak_memory_bytes(), sh.bytes_sent() / updates}, most[2] = {0, 0};
            MPI_Reduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
            double cpu = 0, work = 0;
            const double own_work = shared.cpu_seconds - sh.exchange_cpu_seconds();
            MPI_Reduce(&shared.cpu_seconds, &cpu, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&own_work, &work, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0)
                rows.push_back(row(ranks, shared, cpu, work, most[0], most[1], shared.parameters == alone.parameters));
        }
#endif
    }
    if (wanted("mixed")) {
        std::vector<graph::computation_graph> graphs;
        std::size_t ops = 0;
        std::string names;
        for (const auto& m : mixed_models) {
            graphs.push_back(models::find_workload(m).build());
            ops += graphs.back().num_ops();
            names += concat(names.empty() ? "" : ",", m);
        }
        const auto cl = device::parse_cluster(cluster);
        const auto dir = std::filesystem::temp_directory_path();
        const auto one_file = dir / concat("goopt_distributed_mixed_1_", ::getpid(), ".ckpt");
        auto row = [&](std::size_t n, const training_run& r, double cpu, double work, std::size_t peak,
                       std::uint64_t bytes, bool same) {
            return training_row("mixed_pretraining", names, r,
                                {n, ops, mixed_samples * graphs.size(), 16, updates, cpu, work, peak, bytes, same});
        };
        std::string alone_file;
        if (rank == 0) {
            reset_peak_memory();
            const auto alone = pretrain_mixed(graphs, cl, updates, mixed_samples, nullptr, one_file);
            alone_file = file_bytes(one_file);
            std::filesystem::remove(one_file);
            rows.push_back(row(1, alone, alone.cpu_seconds, alone.cpu_seconds, bench::peak_memory_bytes(), 0, true));
        }
#if GOOPT_HAS_MPI
        if (world) {
            wait_for_rank0();
            mpi::sample_sharding sh(*world);
            const auto gathered = sh.all_gather(std::to_string(::getpid()));
            const auto shared_file = dir / concat("goopt_distributed_mixed_n_", gathered.at(0), ".ckpt");
            const std::uint64_t before = sh.bytes_sent();
            reset_peak_memory();
            const auto shared = world->run_or_abort(
                [&] { return pretrain_mixed(graphs, cl, updates, mixed_samples, &sh, shared_file); });
            unsigned long long mine[2] = {bench::peak_memory_bytes(), (sh.bytes_sent() - before) / updates},
                               most[2] = {0, 0};
            MPI_Reduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
            double cpu = 0, work = 0;
            const double own_work = shared.cpu_seconds - sh.exchange_cpu_seconds();
            MPI_Reduce(&shared.cpu_seconds, &cpu, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&own_work, &work, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                const bool same = !alone_file.empty() && file_bytes(shared_file) == alone_file;
                std::filesystem::remove(shared_file);
                rows.push_back(row(ranks, shared, cpu, work, most[0], most[1], same));
                // the busiest rank's share of the estimated work (ops x devices) over an even share:
                // the pairs dealt by work, as the trainer deals them, and by index (k mod ranks)
                const auto work = tasks::pair_work(std::span<const graph::computation_graph>(graphs),
                                                   std::span<const device::cluster<device::device_spec>>(&cl, 1));
                const auto imbalance = [&](const std::vector<std::size_t>& owner) {
                    std::vector<double> load(ranks, 0.0);
                    for (std::size_t k = 0; k < owner.size(); ++k) load[owner[k]] += work[k];
                    const double total = std::accumulate(load.begin(), load.end(), 0.0);
                    return *std::max_element(load.begin(), load.end()) * static_cast<double>(ranks) / total;
                };
                rows.back()["work_imbalance"] = imbalance(rl::deal_by_work(work, ranks));
                rows.back()["work_imbalance_by_index"] = imbalance(rl::deal_by_index(work.size(), ranks));
                std::printf("  busiest rank's estimated work over an even share: %.3f dealt by work, %.3f by index\n",
                            rows.back()["work_imbalance"].get<double>(),
                            rows.back()["work_imbalance_by_index"].get<double>());
            }
        }
#endif
    }
    if (wanted("generation"))
        for (const std::size_t depth : depths) {
            // peak: VmHWM during the run (the process's resident memory before it included: an MPI
            // rank's own cost, reported beside it as before)
            // same: the rule file is the 1-rank one (or --reference-rules); nullopt: nothing to compare with
            auto row = [&](std::size_t n, const generation_run& r, double seconds, double cpu, std::size_t peak,
                           std::size_t before, std::uint64_t bytes, std::uint64_t held, std::optional<bool> same) {
                std::printf(
                    "depth %zu   %2zu ranks x 1 thread  %9zu graphs  %5zu rules  %7.1f s  %7.1f CPU s/rank  peak %7.1f "
                    "MiB/rank "
                    "(%5.1f MiB before)  %11llu bytes sent/rank (most held at once %llu)  identical to 1 rank: %s\n",
                    depth, n, r.graphs, r.rules, seconds, cpu, static_cast<double>(peak) / (1 << 20),
                    static_cast<double>(before) / (1 << 20), static_cast<unsigned long long>(bytes),
                    static_cast<unsigned long long>(held),
                    !same   ? "not compared"
                    : *same ? "yes"
                            : "no");
                std::fflush(stdout);
                return nlohmann::json{{"experiment", "generation"},
                                      {"ranks", n},
                                      {"threads_per_rank", 1},
                                      {"depth", depth},
                                      {"graphs", r.graphs},
                                      {"rules", r.rules},
                                      {"seconds", seconds},
                                      {"cpu_seconds_per_rank", cpu},
                                      {"peak_memory_bytes_per_rank", peak},
                                      {"resident_bytes_before_per_rank", before},
                                      {"bytes_sent_per_rank", bytes},
                                      {"most_bytes_held_in_one_exchange", held},
                                      {"identical_to_one_rank", same ? nlohmann::json(*same) : nlohmann::json()}};
            };
            // the N-rank file is compared with the reference file when one is given, else with the 1-rank
            // run's (none under --ranks-only)
            auto same_as = [&](const std::string& file,
                               const std::optional<std::string>& alone) -> std::optional<bool> {
                if (!reference.empty()) return file == reference;
                if (alone) return file == *alone;
                return std::nullopt;
            };
            std::optional<std::string> alone_file;
            const bool one_rank_row = !ranks_only || ranks == 1;
            if (rank == 0 && one_rank_row) {
                const auto alone = generate(depth, nullptr, exchange_bytes);
                rows.push_back(row(1, alone, alone.seconds, alone.cpu_seconds, alone.peak, alone.before, 0, 0,
                                   reference.empty() ? std::optional<bool>(true) : same_as(alone.file, {})));
                if (ranks == 1 && !rules_out.empty()) bench::write_results(rules_out, alone.file);
                alone_file = alone.file;
            }
#if GOOPT_HAS_MPI
            if (world) {
                if (one_rank_row) wait_for_rank0();
                std::optional<logged_sharding> logged;
                std::optional<mpi::generation_sharding> plain;
                if (!exchange_log.empty()) logged.emplace(*world, concat(exchange_log, ".rank", rank, ".tsv"));
                else plain.emplace(*world);
                mpi::generation_sharding& sh = logged ? logged->inner() : *plain;
                subst::generation_sharding& used = logged ? static_cast<subst::generation_sharding&>(*logged) : *plain;
                const auto shared = world->run_or_abort([&] { return generate(depth, &used, exchange_bytes); });
                // the most of any rank: the run ends when the slowest rank ends
                unsigned long long mine[6] = {shared.peak,
                                              shared.before,
                                              sh.bytes_sent(),
                                              sh.most_held(),
                                              static_cast<unsigned long long>(shared.seconds * 1e6),
                                              static_cast<unsigned long long>(shared.cpu_seconds * 1e6)},
                                   most[6] = {};
                MPI_Reduce(mine, most, 6, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
                if (rank == 0) {
                    rows.push_back(row(ranks, shared, static_cast<double>(most[4]) / 1e6,
                                       static_cast<double>(most[5]) / 1e6, most[0], most[1], most[2], most[3],
                                       same_as(shared.file, alone_file)));
                    if (!rules_out.empty()) bench::write_results(rules_out, shared.file);
                }
            }
#endif
        }
    if (rank == 0 && !out.empty()) bench::write_results(out, rows.dump(1) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("distributed", [&] { return run(argc, argv); });
}
