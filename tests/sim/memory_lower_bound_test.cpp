// sim::memory_lower_bound: no placement and order holds less (a property over random graphs, placements
// and priorities, the simulator's own peaks summed over devices), and the bound is reached on a chain.
#include "random_dag.hpp"

#include <goopt/device.hpp>
#include <goopt/error.hpp>
#include <goopt/sim.hpp>
#include <goopt/sim/memory_lower_bound.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

using namespace goopt;

TEST_CASE(
    "the memory bound is below every placement's and order's summed peak, and the one-op bound below "
    "the largest peak") {
    std::mt19937_64 rng(2026);
    for (int trial = 0; trial < 12; ++trial) {
        const auto g = goopt_test::random_dag(rng, 3 + trial % 4, 3 + trial % 3);
        const auto b = sim::memory_lower_bound(g);
        REQUIRE(b.cut < g.num_ops());
        REQUIRE(b.largest_op_at < g.num_ops());
        CHECK(b.weights > 0);
        CHECK(b.total > b.weights);
        for (const char* spec : {"1xV100:pcie", "2xV100:pcie", "3xV100:nvlink"}) {
            const auto cl = device::parse_cluster(spec);
            const std::size_t devices = cl.num_devices();
            sim::simulator s(g, cl);
            for (int k = 0; k < 6; ++k) {
                const auto p = devices == 1 ? sim::placement(g.num_ops(), 0)
                                            : goopt_test::random_grouped_placement(g, devices, rng);
                std::vector<double> priority(g.num_ops());
                for (auto& x : priority) x = std::uniform_real_distribution<double>(0, 1)(rng);
                const auto r = s.run(p, {.priorities = k == 0 ? std::vector<double>{} : priority});
                const std::int64_t summed =
                    std::accumulate(r.peak_memory.begin(), r.peak_memory.end(), std::int64_t{0});
                CHECK(summed >= b.total);
                CHECK(*std::max_element(r.peak_memory.begin(), r.peak_memory.end()) >= b.largest_op);
            }
        }
    }
}

TEST_CASE("the memory bound is reached on a chain on one device, cut where two activations meet a weight") {
    // x -> relu -> matmul(w) -> relu -> output: at the matmul's start its input and output are held with
    // the weight; at the last relu's, the matmul's output and the graph output; both are 2 activations
    graph::computation_graph g("chain");
    const auto x = g.input("x", {64, 64});
    const auto a = g.add1(ops::op_kind::relu, {x});
    const auto w = g.weight("w", {64, 64});
    const auto m = g.add1(ops::op_kind::matmul, {a, w});
    g.mark_output(g.add1(ops::op_kind::relu, {m}));
    const std::int64_t tile = g.type_of(x).bytes();
    const auto b = sim::memory_lower_bound(g);
    CHECK(b.weights == tile);
    CHECK(b.total == 3 * tile);
    CHECK(b.largest_op == 3 * tile);  // the matmul: a, w and its output
    CHECK(b.largest_op_at == g.producer(m));
    const auto cl = device::parse_cluster("1xV100:pcie");
    sim::simulator s(g, cl);
    CHECK(s.run(sim::placement(g.num_ops(), 0)).peak_memory[0] == b.total);
}

TEST_CASE("the memory bound refuses a cyclic graph") {
    graph::computation_graph g("cycle");
    const auto x = g.input("x", {4, 4});
    const auto a = g.add1(ops::op_kind::relu, {x});
    const auto c = g.add1(ops::op_kind::relu, {a});
    g.rewire(g.producer(a), 0, c);
    CHECK_THROWS_WITH_AS(sim::memory_lower_bound(g), doctest::Contains("cycle"), error);
}
