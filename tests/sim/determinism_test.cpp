// Determinism of the simulator: it draws no random numbers, so the same graph, cluster and decisions
// must give a bit-identical result (step time, per-device figures and the whole trace), whether the
// simulator is fresh or has run other decisions before (its work arrays are reused across runs).
#include "random_dag.hpp"

#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

using namespace goopt;

namespace {

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

std::vector<std::uint64_t> bits(const std::vector<double>& v) {
    std::vector<std::uint64_t> b;
    for (double x : v) b.push_back(bits(x));
    return b;
}

/// Every field of a simulation_result, doubles compared by their bits (0.1 + 0.2 == 0.3 would not
/// be good enough, and NaN != NaN would hide equal results).
void check_identical(const sim::simulation_result& a, const sim::simulation_result& b) {
    CHECK(bits(a.step_time) == bits(b.step_time));
    CHECK(bits(a.busy_time) == bits(b.busy_time));
    CHECK(a.peak_memory == b.peak_memory);
    CHECK(a.out_of_memory == b.out_of_memory);
    CHECK(a.oom == b.oom);
    CHECK(a.bytes_moved == b.bytes_moved);
    CHECK(a.num_transfers == b.num_transfers);
    REQUIRE(a.ops.size() == b.ops.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        const auto &x = a.ops[i], &y = b.ops[i];
        differ += x.op != y.op || x.device != y.device || bits(x.start) != bits(y.start) || bits(x.end) != bits(y.end);
    }
    REQUIRE(a.transfers.size() == b.transfers.size());
    for (std::size_t i = 0; i < a.transfers.size(); ++i) {
        const auto &x = a.transfers[i], &y = b.transfers[i];
        differ += x.tensor != y.tensor || x.from != y.from || x.to != y.to || x.link != y.link ||
                  bits(x.start) != bits(y.start) || bits(x.end) != bits(y.end) || x.bytes != y.bytes;
    }
    CHECK(differ == 0);
}

}  // namespace

TEST_CASE("simulator: the same decisions give a bit-identical result, fresh or after other runs") {
    std::mt19937_64 rng(2026);
    const auto cl = device::parse_cluster("4xV100:pcie");  // one shared bus: transfers queue
    for (int trial = 0; trial < 12; ++trial) {
        CAPTURE(trial);
        std::mt19937_64 before = rng;  // to build the same graph again below
        const auto g = goopt_test::random_dag(rng, 8 + trial, 5 + trial % 4);
        const std::size_t n = g.num_ops();
        const auto p1 = goopt_test::random_grouped_placement(g, 4, rng),
                   p2 = goopt_test::random_grouped_placement(g, 4, rng);
        std::vector<double> prio(n);
        // few distinct priorities: many ties, which the simulator breaks by readiness order
        for (auto& v : prio) v = static_cast<double>(rng() % 4);
        const auto fuse = baselines::greedy_fusion(g, p1);
        sim::simulation_options opt;
        if (trial % 3 >= 1) opt.priorities = prio;
        if (trial % 3 == 2) opt.fusion = fuse;

        sim::simulator fresh(g, cl);
        const auto first = fresh.run(p1, opt);
        REQUIRE(first.ops.size() == n);  // fused ops are listed too, with their group's times
        CHECK(first.num_transfers > 0);  // decisions that move data, so the link queues are exercised

        sim::simulator reused(g, cl);
        (void)reused.run(p2);  // other decisions first: the work arrays now hold another run
        (void)reused.run(p2, {.priorities = prio});
        const auto again = reused.run(p1, opt);
        check_identical(first, again);
        // the storage-reusing overload with a result that held another run
        sim::simulation_result out = reused.run(p2);
        reused.run(p1, opt, out);
        check_identical(first, out);
        // the same graph built again from the same generator state is the same input
        const auto g2 = goopt_test::random_dag(before, 8 + trial, 5 + trial % 4);
        REQUIRE(g2.num_ops() == n);
        sim::simulator copy(g2, cl);
        check_identical(first, copy.run(p1, opt));
    }
}

TEST_CASE("simulator: a different placement gives a different trace (the comparison can fail)") {
    std::mt19937_64 rng(5);
    const auto cl = device::parse_cluster("2xV100:pcie");
    const auto g = goopt_test::random_dag(rng, 10, 6);
    sim::simulator s(g, cl);
    const sim::placement one(g.num_ops(), 0);
    sim::placement moved = one;
    // the last op (and its colocation group, if any) to the other device
    const auto last = static_cast<graph::op_id>(g.num_ops() - 1);
    const auto grp = g.get_op(last).colocation;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (o == last || (grp >= 0 && g.get_op(o).colocation == grp)) moved[o] = 1;
    const auto a = s.run(one), b = s.run(moved);
    CHECK(a.num_transfers == 0);
    CHECK(b.num_transfers > 0);
    CHECK(bits(a.busy_time) != bits(b.busy_time));
}
