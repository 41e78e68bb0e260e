// sim::schedule_lower_bound: no priorities give a faster step on a fixed placement (a property over
// random graphs, placements and priorities), and the bound is reached where it should be.
#include "../tasks/fixed_seconds.hpp"
#include "random_dag.hpp"

#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>
#include <goopt/sim/schedule_lower_bound.hpp>

#include <doctest/doctest.h>

#include <random>
#include <vector>

using namespace goopt;

TEST_CASE("Jackson's preemptive rule: largest tail first, preempting at releases") {
    // job 1 runs [0, 1), job 2 (released at 1, tail 10) preempts it: 2 + 10; job 1 ends at 4
    std::vector<sim::detail::machine_job> jobs{{0, 3, 0}, {1, 1, 10}};
    CHECK(sim::detail::jackson_preemptive_bound(jobs) == doctest::Approx(12.0));
    // both released at 0: the longer tail first, 2 + 5 (the other: 4 + 1)
    jobs = {{0, 2, 1}, {0, 2, 5}};
    CHECK(sim::detail::jackson_preemptive_bound(jobs) == doctest::Approx(7.0));
    // idle until the first release
    jobs = {{5, 1, 0}};
    CHECK(sim::detail::jackson_preemptive_bound(jobs) == doctest::Approx(6.0));
    jobs.clear();
    CHECK(sim::detail::jackson_preemptive_bound(jobs) == 0.0);
}

TEST_CASE("the schedule bound is reached on a link that carries three tensors one after another") {
    // device 0: a_i = relu(x), i = 0..2, each read by b_i = relu(a_i) on device 1: the one link
    // 0 -> 1 copies the three tensors one at a time, so the step is one op, three copies, one op
    graph::computation_graph g("three_copies");
    const auto x = g.input("x", {16, 16});
    std::vector<graph::tensor_id> a;
    for (int i = 0; i < 3; ++i) a.push_back(g.add1(ops::op_kind::relu, {x}));
    for (int i = 0; i < 3; ++i) g.mark_output(g.add1(ops::op_kind::relu, {a[static_cast<std::size_t>(i)]}));
    const double op = 1e-3, bandwidth = 1e6;
    test::fixed_seconds_cost cost{std::vector<double>(g.num_ops(), op)};
    cost.seconds[g.producer(x)] = 0;
    const auto cl =
        device::cluster<test::fixed_seconds_device>::all_to_all(test::fixed_seconds_device{}, 2, bandwidth, 0.0);
    sim::simulator s(g, cl, cost);
    sim::placement p(g.num_ops(), 0);
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (g.get_op(o).inputs.size() == 1 && g.get_op(o).inputs[0] != x) p[o] = 1;
    const double copy = static_cast<double>(g.type_of(a[0]).bytes()) / bandwidth;
    const auto b = sim::schedule_lower_bound(s, p);
    CHECK(b.link == doctest::Approx(op + 3 * copy + op));
    CHECK(b.path == doctest::Approx(op + copy + op));
    CHECK(b.busiest_device == doctest::Approx(3 * op));
    CHECK(b.step == b.link);
    // FIFO and the reverse order both reach it: the link is the bottleneck whatever the order
    CHECK(s.run(p).step_time == doctest::Approx(b.step));
    std::vector<double> reverse(g.num_ops());
    for (graph::op_id o = 0; o < g.num_ops(); ++o) reverse[o] = -static_cast<double>(o);
    CHECK(s.run(p, {.priorities = reverse}).step_time == doctest::Approx(b.step));
    // the placement-free bound (half the work on each device) sees none of the link
    CHECK(sim::step_time_lower_bound(s) < 0.7 * b.step);
}

TEST_CASE("no priorities beat the schedule bound: random graphs, placements and priorities") {
    std::mt19937_64 rng(2025);
    for (const char* cluster : {"3xV100:pcie", "4xV100:nvlink", "2xV100:nvlink"}) {
        const auto cl = device::parse_cluster(cluster);
        for (int trial = 0; trial < 12; ++trial) {
            const auto g = goopt_test::random_dag(rng, 4 + trial % 5, 3 + trial % 4);
            sim::simulator s(g, cl);
            const auto p = goopt_test::random_grouped_placement(g, cl.num_devices(), rng);
            const auto b = sim::schedule_lower_bound(s, p);
            CHECK(b.step >= b.path);
            CHECK(b.step >= b.busiest_device);
            CHECK(b.device >= b.busiest_device * (1 - 1e-12));  // Jackson's bound holds the total work
            double best = s.run(p).step_time;
            CHECK(best >= b.step * (1 - 1e-12));
            std::vector<double> prio(g.num_ops());
            for (int draw = 0; draw < 40; ++draw) {
                for (auto& v : prio) v = std::uniform_real_distribution<double>(-1, 1)(rng);
                const double step = s.run(p, {.priorities = prio, .fusion = {}, .record_trace = false}).step_time;
                CHECK(step >= b.step * (1 - 1e-12));
                best = std::min(best, step);
            }
            // the bound is not loose by orders of magnitude on these small graphs
            CHECK(best <= 3 * b.step);
        }
    }
}

TEST_CASE("the schedule bound refuses a placement the simulator refuses") {
    std::mt19937_64 rng(7);
    const auto g = goopt_test::random_dag(rng, 3, 3);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    CHECK_THROWS_AS(sim::schedule_lower_bound(s, sim::placement(g.num_ops(), 2)), sim::decision_refused);
    CHECK_THROWS_AS(sim::schedule_lower_bound(s, sim::placement(g.num_ops() + 1, 0)), error);
}
