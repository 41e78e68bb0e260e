// Pre-training with ranks holding different graphs (tasks::pretrain_schedule::mixed with
// rl::ppo_config::sharding over mpi::sample_sharding), run by ctest under mpirun -np 2: each rank
// computes its pairs' gradients, the all-gather sums them in pair order, and the checkpoint equals
// the single-process mixed run's byte for byte; a checkpoint of the 2-rank run resumes on one process.
#include "test_session.hpp"

#include <goopt/device.hpp>
#include <goopt/mpi.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace goopt;

namespace {

/// Three small graphs of different shapes: `chains` chains of matmuls of growing width, summed.
std::vector<graph::computation_graph> mixed_graphs() {
    std::vector<graph::computation_graph> out;
    for (int chains : {2, 3, 4}) {
        graph::computation_graph g(concat("mixed_", chains));
        const auto x = g.input("x", {256, 256});
        auto sum = x;
        for (std::int64_t b = 0; b < chains; ++b) {
            const std::int64_t inner = 128 * (b + 1);
            auto t = g.add1(ops::op_kind::matmul, {x, g.weight(concat("a", b), {256, inner})});
            t = g.add1(ops::op_kind::relu, {t});
            t = g.add1(ops::op_kind::matmul, {t, g.weight(concat("b", b), {inner, 256})});
            sum = g.add1(ops::op_kind::ewadd, {sum, t});
        }
        g.mark_output(sum);
        out.push_back(std::move(g));
    }
    return out;
}

std::string mixed_file_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A path every rank agrees on (rank 0's process id in its name).
std::filesystem::path mixed_path(mpi::sample_sharding& sh, const std::string& stem) {
    const auto parts = sh.all_gather(std::to_string(::getpid()));
    std::string name = "goopt_mpi_mixed_";
    name += stem;
    name += '_';
    name += parts.at(0);
    name += ".ckpt";
    return std::filesystem::temp_directory_path() / name;
}

/// Mixed pre-training of the three graphs on 2 and 3 V100s (six pairs, a pair head), 6 samples per
/// pair and update, to `updates`, from seed 11; on the ranks of `sharding` when set.
tasks::pretrain_result mixed_pretrain(rl::sample_sharding* sharding, std::size_t updates,
                                      const std::filesystem::path& checkpoint, bool resume = false) {
    static const auto graphs = mixed_graphs();
    const std::vector<device::cluster<device::device_spec>> clusters{device::parse_cluster("2xV100:nvlink"),
                                                                     device::parse_cluster("3xV100:nvlink")};
    tasks::placement_config cfg{
        .ppo = {.updates = updates,
                .samples_per_update = 6,
                .minibatch = 3,
                .epochs = 2,
                .learning_rate = 1e-2,
                .threads = 2,
                .sharding = sharding},
        .policy = {.hidden = 16, .shared_attention_layers = 1, .heads = 2, .head = nn::first_head::pair},
        .task = {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided},
        .checkpoint = checkpoint,
        .resume = resume,
        .progress = {.status = rl::status_mode::never}};
    std::mt19937_64 rng(11);
    return tasks::pretrain_placement_policy(std::span<const graph::computation_graph>(graphs),
                                            std::span<const device::cluster<device::device_spec>>(clusters),
                                            cost::roofline_model{}, cfg, {.mixed = true}, rng);
}

}  // namespace

TEST_CASE("mixed pre-training: ranks holding different pairs write the single-process checkpoint byte for byte") {
    auto& world = mpi_test::world();
    REQUIRE(world.size() >= 2);  // ctest runs this under mpirun -np 2
    // the pairs' works (ops x devices) differ, so the ranks hold them as dealt by work, not by index
    const auto graphs = mixed_graphs();
    const std::vector<device::cluster<device::device_spec>> clusters{device::parse_cluster("2xV100:nvlink"),
                                                                     device::parse_cluster("3xV100:nvlink")};
    const auto work = tasks::pair_work(std::span<const graph::computation_graph>(graphs),
                                       std::span<const device::cluster<device::device_spec>>(clusters));
    REQUIRE(work.size() == 6);
    CHECK(work[5] == static_cast<double>(graphs[2].num_ops() * 3));
    CHECK(rl::deal_by_work(work, world.size()) != rl::deal_by_index(work.size(), world.size()));
    mpi::sample_sharding sh(world);
    const auto shared = mixed_path(sh, "shared");
    const auto alone = mixed_path(sh, "alone") += "." + std::to_string(world.rank());
    const auto on_ranks = mixed_pretrain(&sh, 3, shared);
    const std::uint64_t sent = sh.bytes_sent();
    const auto one = mixed_pretrain(nullptr, 3, alone);
    world.all(true);  // rank 0 wrote the shared file after the last exchange
    CHECK(on_ranks.samples == 3 * 6 * 6);
    CHECK(on_ranks.samples == one.samples);
    REQUIRE(on_ranks.best.size() == 6);
    for (std::size_t k = 0; k < 6; ++k) {  // every rank has every pair's best, the single process's
        CAPTURE(k);
        CHECK(on_ranks.best[k].result.step_time > 0);
        CHECK(on_ranks.best[k].result.step_time == one.best[k].result.step_time);
        CHECK(on_ranks.best[k].decision.placement == one.best[k].decision.placement);
    }
    CHECK(sent > 3 * 2 * 2 * 1000);  // gradients crossed: 3 updates x 2 epochs x 2 steps
    if (world.rank() == 0) {
        const std::string a = mixed_file_bytes(shared), b = mixed_file_bytes(alone);
        CHECK(a.size() > 1000);
        CHECK(a == b);
    }
    // 2 updates on the ranks, then one process resumes to 4: the file of 4 updates on one process
    const auto resume = mixed_path(sh, "resume");
    mixed_pretrain(&sh, 2, resume);
    world.all(true);
    REQUIRE(world.all(std::filesystem::exists(resume)));
    if (world.rank() == 0) {
        const auto r = mixed_pretrain(nullptr, 4, resume, true);
        CHECK(r.updates == 4);
        mixed_pretrain(nullptr, 4, alone);
        CHECK(mixed_file_bytes(resume) == mixed_file_bytes(alone));
    }
    world.all(true);
    std::filesystem::remove(alone);
    if (world.rank() == 0) {
        std::filesystem::remove(shared);
        std::filesystem::remove(resume);
    }
}
