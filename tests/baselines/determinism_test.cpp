// Determinism of the baselines: random search draws only from the generator it is given, so a seed
// fixes its answer; the heuristics (HEFT, critical path, expert placement, greedy fusion) draw
// nothing, so the same graph gives the same decisions, bit for bit, however often they run.
#include "../sim/random_dag.hpp"

#include <goopt/baselines.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

using namespace goopt;

namespace {

std::vector<std::uint64_t> bits(const std::vector<double>& v) {
    std::vector<std::uint64_t> b;
    for (double x : v) b.push_back(std::bit_cast<std::uint64_t>(x));
    return b;
}

/// The figures random_search keeps (it records no trace), doubles by their bits.
void check_identical(const sim::simulation_result& a, const sim::simulation_result& b) {
    CHECK(std::bit_cast<std::uint64_t>(a.step_time) == std::bit_cast<std::uint64_t>(b.step_time));
    CHECK(bits(a.busy_time) == bits(b.busy_time));
    CHECK(a.peak_memory == b.peak_memory);
    CHECK(a.oom == b.oom);
    CHECK(a.bytes_moved == b.bytes_moved);
    CHECK(a.num_transfers == b.num_transfers);
}

}  // namespace

TEST_CASE("random_search: the same seed gives the same placement and result; another seed another placement") {
    std::mt19937_64 graphs(31);
    const auto cl = device::parse_cluster("4xV100:nvlink");
    for (int trial = 0; trial < 6; ++trial) {
        CAPTURE(trial);
        const auto g = goopt_test::random_dag(graphs, 10, 6);
        sim::simulator s(g, cl);
        const auto h = baselines::heft(s);
        // with and without priorities: options are passed through unchanged
        const sim::simulation_options opt =
            trial % 2 ? sim::simulation_options{.priorities = h.priorities} : sim::simulation_options{};
        std::mt19937_64 r1(1000 + static_cast<unsigned>(trial)), r2(1000 + static_cast<unsigned>(trial)),
            r3(2000 + static_cast<unsigned>(trial));
        const auto a = baselines::random_search(s, 20, r1, opt);
        sim::simulator other(g, cl);  // a fresh simulator: no state carried over from s
        const auto b = baselines::random_search(other, 20, r2, opt);
        CHECK(a.calls == 20);
        CHECK(a.placement == b.placement);
        check_identical(a.result, b.result);
        // the generators were advanced by the same draws
        CHECK(r1() == r2());
        const auto c = baselines::random_search(s, 20, r3, opt);
        CHECK(c.placement != a.placement);  // 4^(ops) placements: a repeat would mean the seed is ignored
    }
}

TEST_CASE("heuristic baselines: the same graph gives identical decisions, on a rebuilt graph too") {
    const auto cl = device::parse_cluster("3xV100:pcie");
    for (int trial = 0; trial < 4; ++trial) {
        CAPTURE(trial);
        std::mt19937_64 ga(77 + static_cast<unsigned>(trial)), gb(77 + static_cast<unsigned>(trial));
        const auto g = goopt_test::random_dag(ga, 9, 5), g2 = goopt_test::random_dag(gb, 9, 5);
        sim::simulator s(g, cl), s2(g2, cl);
        const auto h = baselines::heft(s), h2 = baselines::heft(s2), h_again = baselines::heft(s);
        CHECK(h.placement == h2.placement);
        CHECK(h.placement == h_again.placement);
        CHECK(bits(h.priorities) == bits(h2.priorities));
        CHECK(bits(h.priorities) == bits(h_again.priorities));
        for (auto family : {baselines::model_family::layered, baselines::model_family::contiguous}) {
            const auto e = baselines::expert_placement(g, 3, family);
            CHECK(e == baselines::expert_placement(g2, 3, family));
            const auto cp = baselines::critical_path_priorities(s, e);
            CHECK(bits(cp) == bits(baselines::critical_path_priorities(s2, e)));
            const auto fz = baselines::greedy_fusion(g, e);
            CHECK(fz == baselines::greedy_fusion(g2, e));
            // and the simulated step of those decisions
            const auto r1 = s.run(e, {.priorities = cp, .fusion = fz, .record_trace = false});
            const auto r2 = s2.run(e, {.priorities = cp, .fusion = fz, .record_trace = false});
            check_identical(r1, r2);
        }
        CHECK(baselines::single_device_placement(g, 2) == baselines::single_device_placement(g2, 2));
    }
}
