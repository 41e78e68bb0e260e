// Synchronous data-parallel PPO (rl::ppo_config::sharding over mpi::sample_sharding), run by ctest
// under mpirun -np 2: the ranks' training equals the single-process training bit for bit, only
// rank 0 writes checkpoints, and a checkpoint of a 2-rank run resumes on one process. The fault
// cases are skipped in the normal run; ctest runs each alone (--no-skip) and checks that the run
// stops, naming the rank.
#include "test_session.hpp"

#include <goopt/device.hpp>
#include <goopt/mpi.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <doctest/doctest.h>

#include <unistd.h>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

using namespace goopt;

namespace {

using placement = tasks::placement_task<device::device_spec, cost::roofline_model>;

/// The network's parameters as bytes: equal strings are equal parameters, bit for bit.
std::string parameter_bytes(nn::go_policy<float>& net) {
    std::string out;
    for (auto* p : net.parameters())
        out.append(reinterpret_cast<const char*>(p->value.data()), static_cast<std::size_t>(p->value.size()) * 4);
    return out;
}

/// Four chains of three matmuls (each chain its own width) on one input, summed: small enough for
/// a few PPO updates in seconds, with devices worth choosing.
graph::computation_graph four_chains() {
    graph::computation_graph g("four_chains");
    const auto x = g.input("x", {256, 256});
    auto sum = x;
    for (std::int64_t b = 0; b < 4; ++b) {
        const std::int64_t inner = 128 * (b + 1);
        auto t = g.add1(ops::op_kind::matmul, {x, g.weight(concat("a", b), {256, inner})});
        t = g.add1(ops::op_kind::relu, {t});
        t = g.add1(ops::op_kind::matmul, {t, g.weight(concat("b", b), {inner, inner})});
        t = g.add1(ops::op_kind::matmul, {t, g.weight(concat("c", b), {inner, 256})});
        sum = g.add1(ops::op_kind::ewadd, {sum, t});
    }
    g.mark_output(sum);
    return g;
}

/// A fresh GO policy for `devices` choices from `seed` (the same weights on every rank).
nn::go_policy<float> fresh_net(std::size_t devices, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    return nn::go_policy<float>({.hidden = 16, .shared_attention_layers = 1, .heads = 2, .task_choices = {devices}},
                                rng);
}

struct trained {
    std::string parameters;
    double best_step_time = 0;
    std::size_t samples = 0;
};

/// tasks::train on four_chains over 2 V100s: `updates` updates of 6 samples from seed 7, `minibatch`
/// per step in blocks of `gradient_block`, shared among the ranks when `sharding` is set.
trained train_chains(tasks::placement_decoder decoder, rl::sample_sharding* sharding, std::size_t updates,
                     const std::filesystem::path& checkpoint = {}, bool resume = false, std::size_t minibatch = 3,
                     std::size_t gradient_block = 16) {
    static const auto g = four_chains();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    placement task(g, cl, cost::roofline_model{}, {.schedule = tasks::ready_order::critical_path, .decoder = decoder});
    auto net = fresh_net(cl.num_devices(), 3);
    std::mt19937_64 rng(7);
    const auto r = tasks::train(task, net,
                                {.ppo = {.updates = updates,
                                         .samples_per_update = 6,
                                         .minibatch = minibatch,
                                         .epochs = 2,
                                         .gradient_block = gradient_block,
                                         .learning_rate = 1e-2,
                                         .threads = 2,
                                         .sharding = sharding},
                                 .checkpoint = checkpoint,
                                 .resume = resume},
                                rng);
    return {parameter_bytes(net), r.best.result.step_time, r.samples};
}

/// A path every rank agrees on (rank 0's process id in its name), in the temporary directory.
std::filesystem::path shared_path(mpi::sample_sharding& sh, const std::string& stem) {
    const auto parts = sh.all_gather(std::to_string(::getpid()));
    std::string name = "goopt_mpi_";  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on a chain of +
    name += stem;
    name += '_';
    name += parts.at(0);
    name += ".ckpt";
    return std::filesystem::temp_directory_path() / name;
}

}  // namespace

TEST_CASE("data-parallel PPO: 2 ranks train the single-process parameters bit for bit") {
    auto& world = mpi_test::world();
    REQUIRE(world.size() >= 2);  // ctest runs this under mpirun -np 2
    mpi::sample_sharding sh(world);
    for (auto decoder : {tasks::placement_decoder::guided, tasks::placement_decoder::independent}) {
        CAPTURE(static_cast<int>(decoder));
        const auto shared = train_chains(decoder, &sh, 3);
        const auto alone = train_chains(decoder, nullptr, 3);
        CHECK(shared.samples == 18);
        CHECK(shared.parameters.size() > 1000);
        CHECK(shared.parameters == alone.parameters);
        CHECK(shared.best_step_time == alone.best_step_time);
        // and every rank holds the same network (rank 0's bytes are everyone's)
        const auto all = sh.all_gather(shared.parameters);
        for (const auto& p : all) CHECK(p == all[0]);
        // the training moved the network: the comparison is not of two untouched initializations
        auto untouched = fresh_net(2, 3);
        CHECK(parameter_bytes(untouched) != shared.parameters);
    }
    CHECK(sh.bytes_sent() > 0);
}

TEST_CASE("data-parallel PPO: the ranks share a minibatch's blocks and still train the single-process parameters") {
    auto& world = mpi_test::world();
    mpi::sample_sharding sh(world);
    const std::size_t nodes = four_chains().num_ops();
    for (auto decoder : {tasks::placement_decoder::guided, tasks::placement_decoder::independent}) {
        CAPTURE(static_cast<int>(decoder));
        // the bytes of the samples alone: one block of 16 holds the whole minibatch of 6 (no exchange)
        std::uint64_t before = sh.bytes_sent();
        train_chains(decoder, &sh, 3, {}, false, 6, 16);
        const std::uint64_t samples_only = sh.bytes_sent() - before;
        // one minibatch of all 6 samples in blocks of 2 (blocks 0, 2 on rank 0, block 1 on rank 1)
        // and of 4 (blocks of unequal size)
        for (std::size_t block : {2, 4}) {
            CAPTURE(block);
            before = sh.bytes_sent();
            const auto shared = train_chains(decoder, &sh, 3, {}, false, 6, block);
            const std::uint64_t sent = sh.bytes_sent() - before;
            const auto alone = train_chains(decoder, nullptr, 3, {}, false, 6, block);
            CHECK(shared.parameters == alone.parameters);
            CHECK(shared.best_step_time == alone.best_step_time);
            // each rank sent at least one block's gradient (nodes x 2 devices doubles) per step:
            // 3 updates x 2 epochs x 1 step
            CHECK(sent >= samples_only + 3 * 2 * nodes * 2 * sizeof(double));
            const auto all = sh.all_gather(shared.parameters);
            for (const auto& p : all) CHECK(p == all[0]);
        }
    }
}

TEST_CASE("data-parallel PPO: rank 0 alone writes the checkpoint, and one process resumes a 2-rank run") {
    auto& world = mpi_test::world();
    mpi::sample_sharding sh(world);
    // each rank names its own file: only rank 0's may appear
    const auto own = shared_path(sh, "own") += "." + std::to_string(world.rank());
    std::filesystem::remove(own);
    train_chains(tasks::placement_decoder::guided, &sh, 2, own);
    CHECK(std::filesystem::exists(own) == (world.rank() == 0));
    std::filesystem::remove(own);

    // 2 updates on the ranks, then 2 more on one process from rank 0's checkpoint = 4 on one process
    const auto path = shared_path(sh, "resume");
    train_chains(tasks::placement_decoder::guided, &sh, 2, path);
    world.all(true);  // rank 0 writes the last checkpoint after the last exchange: wait for it
    REQUIRE(world.all(std::filesystem::exists(path)));
    const auto resumed = train_chains(tasks::placement_decoder::guided, nullptr, 4, path, true);
    const auto straight = train_chains(tasks::placement_decoder::guided, nullptr, 4);
    CHECK(resumed.parameters == straight.parameters);
    CHECK(resumed.samples == 24);
    world.all(true);  // everyone has read it before rank 0 removes it
    if (world.rank() == 0) std::filesystem::remove(path);
}

namespace {
/// Trains with sharding; rank 1 runs `fail` after its second update while rank 0 goes on into the
/// third update's exchange, where it would wait for ever without the fault rule.
template <class Fail> void train_until_rank1_fails(Fail fail) {
    auto& world = mpi_test::world();
    mpi::sample_sharding sh(world);
    world.run_or_abort([&] {
        static const auto g = four_chains();
        const auto cl = device::parse_cluster("2xV100:nvlink");
        placement task(g, cl, cost::roofline_model{}, {.decoder = tasks::placement_decoder::guided});
        auto net = fresh_net(cl.num_devices(), 3);
        std::mt19937_64 rng(7);
        struct visitor {
            std::size_t rank;
            Fail& fail;
            void on_sample(std::span<const int>, const placement::outcome&) {}
            bool on_update(const rl::update_stats& s) {
                if (rank == 1 && s.update == 2) fail();
                return true;
            }
        } v{world.rank(), fail};
        tasks::train(task, net, {.ppo = {.updates = 1000, .samples_per_update = 4, .threads = 1, .sharding = &sh}}, rng,
                     v);
    });
}
}  // namespace

TEST_CASE("fault: a rank whose training throws stops the run, naming the rank" * doctest::skip()) {
    train_until_rank1_fails([] { throw error("test", "rank 1 fails on purpose"); });
    FAIL("the run went on after rank 1 failed");
}

TEST_CASE("fault: a rank killed by a signal stops the run" * doctest::skip()) {
    train_until_rank1_fails([] { std::raise(SIGKILL); });
    FAIL("the run went on after rank 1 was killed");
}
