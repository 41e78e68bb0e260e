#include "../test_support.hpp"
#include "../trace_check.hpp"
#include "random_dag.hpp"

#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/graph/critical_path.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>
#include <unordered_map>

using namespace goopt;
using graph::op_id;
using ops::op_kind;

namespace {

/// A device with round figures so that roofline times can be worked out by hand.
struct round_device {
    double flops, bandwidth, capacity, launch;
    double peak_flops(ops::dtype) const { return flops; }
    double mem_bandwidth() const { return bandwidth; }
    double mem_capacity() const { return capacity; }
    double launch_overhead() const { return launch; }
};
static_assert(device::DeviceModel<round_device>);

/// Fixed seconds per op id (sources cost 0): isolates the simulator from the cost formulas.
struct fixed_cost {
    std::vector<double> seconds;
    template <class D> double op_time(const graph::computation_graph&, op_id o, const D&) const { return seconds[o]; }
    template <class D> double group_time(const graph::computation_graph&, std::span<const op_id> ops, const D&) const {
        double s = 0;
        for (op_id o : ops) s += seconds[o];
        return s;
    }
};
static_assert(cost::CostModel<fixed_cost, round_device>);

// The simulator keeps references: it is made from lvalues only, never from a temporary graph or
// cluster that would dangle.
using round_simulator = sim::simulator<round_device, fixed_cost>;
static_assert(std::is_constructible_v<round_simulator, const graph::computation_graph&,
                                      const device::cluster<round_device>&, fixed_cost>);
static_assert(!std::is_constructible_v<round_simulator, const graph::computation_graph&, device::cluster<round_device>,
                                       fixed_cost>);
static_assert(!std::is_constructible_v<round_simulator, graph::computation_graph, const device::cluster<round_device>&,
                                       fixed_cost>);

device::cluster<round_device> two_devices(round_device d, double bandwidth, double latency) {
    return device::cluster<round_device>::all_to_all(d, 2, bandwidth, latency);
}

/// A random placement on `devices` devices that respects colocation (a weight follows its matmul's group).
sim::placement random_placement(std::mt19937_64& rng, const graph::computation_graph& g, std::size_t devices) {
    sim::placement p(g.num_ops());
    std::unordered_map<std::int32_t, sim::device_id> coloc;
    for (op_id o = 0; o < g.num_ops(); ++o) {
        const auto grp = g.get_op(o).colocation;
        const auto d = static_cast<sim::device_id>(rng() % devices);
        p[o] = grp < 0 ? d : coloc.emplace(grp, d).first->second;
    }
    return p;
}

/// Priorities 0..99 drawn per op (ties on purpose).
std::vector<double> random_priorities(std::mt19937_64& rng, std::size_t n) {
    std::vector<double> prio(n);
    for (auto& v : prio) v = static_cast<double>(rng() % 100);
    return prio;
}

}  // namespace

TEST_CASE("a chain split over two devices: roofline times and one transfer, worked out by hand") {
    graph::computation_graph g;
    const auto x = g.input("x", {256});  // 1024 bytes
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::relu, {a}, {}, "b");
    const auto c = g.add1(op_kind::relu, {b}, {}, "c");
    g.mark_output(c);
    // relu on 256 floats: 256 FLOPs / 1e6 = 0.256 ms, 2048 bytes / 1e6 = 2.048 ms -> 2.048 ms
    const round_device dev{1e6, 1e6, 1e9, 0.0};
    const auto cl = two_devices(dev, 1e6, 1e-3);  // 1024 bytes: 1 ms + 1.024 ms
    sim::simulator s(g, cl);
    CHECK(s.op_time(1, 0) == doctest::Approx(2.048e-3));
    const sim::placement p{0, 0, 1, 1};
    const auto r = s.run(p);
    CHECK(r.step_time == doctest::Approx(8.168e-3));
    REQUIRE(r.transfers.size() == 1);
    CHECK(r.transfers[0].tensor == a);
    CHECK(r.transfers[0].start == doctest::Approx(2.048e-3));
    CHECK(r.transfers[0].end == doctest::Approx(4.072e-3));
    CHECK(r.bytes_moved == 1024);
    CHECK(r.busy_time[0] == doctest::Approx(2.048e-3));
    CHECK(r.busy_time[1] == doctest::Approx(4.096e-3));
    // device 0: x and a's output together (a's output stays until its copy is done)
    CHECK(r.peak_memory[0] == 2048);
    // device 1: the copy of a with b's output, then b's output with c's
    CHECK(r.peak_memory[1] == 2048);
    CHECK_FALSE(r.oom);
    REQUIRE(r.ops.size() == 4);
    const auto ev_c =
        std::find_if(r.ops.begin(), r.ops.end(), [&](const sim::op_event& e) { return e.op == g.producer(c); });
    CHECK(ev_c->start == doctest::Approx(6.120e-3));
    CHECK(ev_c->device == 1u);
    (void)b;

    // on one device there is no transfer: 3 x 2.048 ms
    const auto r1 = s.run(sim::placement{0, 0, 0, 0});
    CHECK(r1.step_time == doctest::Approx(6.144e-3));
    CHECK(r1.bytes_moved == 0);
}

TEST_CASE("a diamond over two devices waits for the slower branch and its copy") {
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::relu, {a}, {}, "b");
    const auto c = g.add1(op_kind::sigmoid, {a}, {}, "c");
    const auto d = g.add1(op_kind::ewadd, {b, c}, {}, "d");
    g.mark_output(d);
    // a = 1 s, b = 2 s, c = 1 s, d = 1 s; a 4-byte tensor crosses a link in 0.5 + 4/8 = 1 s
    const fixed_cost cost{{0, 1, 2, 1, 1}};
    const auto cl = two_devices({1, 1, 1e9, 0}, 8, 0.5);
    sim::simulator s(g, cl, cost);
    const auto r = s.run(sim::placement{0, 0, 0, 1, 0});
    // a 0-1; b 1-3 on device 0; copy a 1-2; c 2-3 on device 1; copy c 3-4; d 4-5
    CHECK(r.step_time == doctest::Approx(5.0));
    CHECK(r.num_transfers == 2);
    CHECK(r.bytes_moved == 8);
    CHECK(r.busy_time[0] == doctest::Approx(4.0));
    CHECK(r.busy_time[1] == doctest::Approx(1.0));
    // all on one device: 1 + 2 + 1 + 1
    CHECK(s.run(sim::placement{0, 0, 0, 0, 0}).step_time == doctest::Approx(5.0));
    // c on device 1 with a slower link (latency 2.5 s): d starts at 3 + 3 = 6... plus a's copy 1-4, c 4-5, copy 5-8
    const auto slow = two_devices({1, 1, 1e9, 0}, 8, 2.5);
    CHECK(sim::simulate(g, slow, cost, sim::placement{0, 0, 0, 1, 0}).step_time == doctest::Approx(9.0));
}

TEST_CASE("FIFO runs ready ops in the order they became ready; priorities override it") {
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    g.add1(op_kind::relu, {x}, {}, "first");
    g.add1(op_kind::relu, {x}, {}, "second");
    const fixed_cost cost{{0, 1, 1}};
    device::cluster<round_device> cl;
    cl.add_device({1, 1, 1e9, 0});
    sim::simulator s(g, cl, cost);
    const sim::placement p{0, 0, 0};
    auto start_of = [](const sim::simulation_result& r, op_id o) {
        return std::find_if(r.ops.begin(), r.ops.end(), [&](const sim::op_event& e) { return e.op == o; })->start;
    };
    const auto fifo = s.run(p);
    CHECK(start_of(fifo, 1) == 0.0);
    CHECK(start_of(fifo, 2) == 1.0);
    const std::vector<double> prio{0, 1, 5};
    const auto pr = s.run(p, {.priorities = prio});
    CHECK(start_of(pr, 2) == 0.0);
    CHECK(start_of(pr, 1) == 1.0);
    CHECK(pr.step_time == 2.0);
}

TEST_CASE("a link carries waiting tensors as produced, or by their consumers' priorities") {
    // device 0 runs a, b, c (1 s each); each output goes to device 1 over one link (2.5 s a copy).
    // When a's copy ends at 3.5 s, b's and c's wait: FIFO sends b's first, the priority order c's, whose
    // consumer z outranks b's consumer y.
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::relu, {x}, {}, "b");
    const auto c = g.add1(op_kind::relu, {x}, {}, "c");
    for (const auto t : {a, b, c}) g.mark_output(g.add1(op_kind::relu, {t}, {}, "consumer"));
    const fixed_cost cost{{0, 1, 1, 1, 0, 0, 0}};
    const auto cl = two_devices({1, 1, 1e9, 0}, 1e12, 2.5);
    sim::simulator s(g, cl, cost);
    const sim::placement p{0, 0, 0, 0, 1, 1, 1};
    const std::vector<double> prio{0, 10, 9, 8, 0, 1, 5};
    auto copy_start = [](const sim::simulation_result& r, graph::tensor_id t) {
        return std::find_if(r.transfers.begin(), r.transfers.end(), [&](const auto& e) { return e.tensor == t; })
            ->start;
    };
    const auto fifo = s.run(p, {.priorities = prio});
    CHECK(copy_start(fifo, a) == doctest::Approx(1.0));
    CHECK(copy_start(fifo, b) == doctest::Approx(3.5));
    CHECK(copy_start(fifo, c) == doctest::Approx(6.0));
    const auto by_priority = s.run(p, {.priorities = prio, .transfers = sim::transfer_order::priority});
    CHECK(copy_start(by_priority, a) == doctest::Approx(1.0));
    CHECK(copy_start(by_priority, c) == doctest::Approx(3.5));
    CHECK(copy_start(by_priority, b) == doctest::Approx(6.0));
    CHECK(by_priority.step_time == doctest::Approx(fifo.step_time));  // the last copy ends at 8.5 s either way
    // without priorities there is nothing to order by: the links stay FIFO
    const auto plain = s.run(p, {.transfers = sim::transfer_order::priority});
    CHECK(copy_start(plain, b) == doctest::Approx(copy_start(s.run(p), b)));
    CHECK(copy_start(plain, c) == doctest::Approx(copy_start(s.run(p), c)));
    // and the order reaches the step: a long consumer of c finishes sooner when c's copy goes first
    const fixed_cost long_z{{0, 1, 1, 1, 0, 0, 10}};
    sim::simulator s2(g, cl, long_z);
    CHECK(s2.run(p, {.priorities = prio, .transfers = sim::transfer_order::priority}).step_time <
          s2.run(p, {.priorities = prio}).step_time);
}

TEST_CASE("a device that follows one global order can wait for an op about to arrive") {
    // device 0 holds a (5 s, ready at once) and b (1 s, after p on device 1 at 1 s); c (10 s) on
    // device 1 follows b. A list scheduler starts a at 0, the only op ready there, whatever the
    // priorities: b 5-6 s, c 6-16 s. Run as the order b, a, device 0 waits for b: b 1-2 s, c 2-12 s.
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto p = g.add1(op_kind::relu, {x}, {}, "p");
    const auto b = g.add1(op_kind::relu, {p}, {}, "b");
    g.mark_output(g.add1(op_kind::relu, {b}, {}, "c"));
    g.mark_output(g.add1(op_kind::relu, {x}, {}, "a"));
    const fixed_cost cost{{0, 1, 1, 10, 5}};
    const auto cl = two_devices({1, 1, 1e9, 0}, 1e12, 0.0);
    sim::simulator s(g, cl, cost);
    const sim::placement placement{1, 1, 0, 1, 0};
    const std::vector<double> b_first{0, 0, 10, 0, 5};
    CHECK(s.run(placement, {.priorities = b_first}).step_time == doctest::Approx(16.0));
    const auto ordered = s.run(placement, {.priorities = b_first, .dispatch = sim::dispatch_order::sequence});
    CHECK(ordered.step_time == doctest::Approx(12.0));
    // the order a, b is the list schedule again; without priorities there is no order: list scheduling
    const std::vector<double> a_first{0, 0, 5, 0, 10};
    CHECK(s.run(placement, {.priorities = a_first, .dispatch = sim::dispatch_order::sequence}).step_time ==
          doctest::Approx(16.0));
    CHECK(s.run(placement, {.dispatch = sim::dispatch_order::sequence}).step_time == doctest::Approx(16.0));
}

TEST_CASE("a list schedule's start order, as priorities, run as a sequence gives that schedule again") {
    std::mt19937_64 rng(7);
    const auto cl = device::parse_cluster("3xV100:pcie");
    for (int trial = 0; trial < 20; ++trial) {
        const auto g = goopt_test::random_dag(rng, 6 + trial % 5, 4 + trial % 3);
        sim::simulator s(g, cl);
        const std::size_t n = g.num_ops();
        const auto p = random_placement(rng, g, 3);
        const auto prio = random_priorities(rng, n);
        const auto listed = s.run(p, {.priorities = prio});
        std::vector<double> order(n);  // the trace holds the starts in order, zero-time ops too
        for (std::size_t i = 0; i < listed.ops.size(); ++i) order[listed.ops[i].op] = -static_cast<double>(i);
        const auto again = s.run(p, {.priorities = order, .dispatch = sim::dispatch_order::sequence});
        CHECK(again.step_time == doctest::Approx(listed.step_time).epsilon(1e-12));
        std::vector<double> start(n);
        for (const auto& e : again.ops) start[e.op] = e.start;
        for (const auto& e : listed.ops) CHECK(start[e.op] == doctest::Approx(e.start).epsilon(1e-12));
    }
}

TEST_CASE("a fused elementwise chain is one kernel: one launch, no intermediate traffic or memory") {
    graph::computation_graph g;
    const auto x = g.input("x", {1024});  // 4096 bytes
    const auto r1 = g.add1(op_kind::relu, {x});
    const auto r2 = g.add1(op_kind::relu, {r1});
    const auto r3 = g.add1(op_kind::relu, {r2});
    g.mark_output(r3);
    // per relu: launch 1 us + max(1024 / 1e9, 8192 / 1e9) = 9.192 us
    device::cluster<round_device> cl;
    cl.add_device({1e9, 1e9, 1e9, 1e-6});
    sim::simulator s(g, cl);
    const sim::placement p{0, 0, 0, 0};
    const auto unfused = s.run(p);
    CHECK(unfused.step_time == doctest::Approx(3 * 9.192e-6));
    CHECK(unfused.peak_memory[0] == 8192);  // two live 4 KiB tensors at a time
    // fused: one launch + 8192 bytes (read x, write r3) -> 9.192 us
    const std::vector<std::int32_t> fusion{-1, 0, 0, 0};
    const auto fused = s.run(p, {.fusion = fusion});
    CHECK(fused.step_time == doctest::Approx(9.192e-6));
    CHECK(fused.peak_memory[0] == 8192);  // x and r3 only
    REQUIRE(fused.ops.size() == 4);
    CHECK(fused.ops[1].start == fused.ops[3].start);
    // saved: r1 and r2 are each read once inside and never written out; r3 is a graph output
    CHECK(cost::roofline_model::internal_bytes(g, std::vector<op_id>{1, 2, 3}) == doctest::Approx(16384));
}

TEST_CASE("illegal fusion groups and malformed decisions are clear errors") {
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::relu, {x}, {}, "b");
    const auto c = g.add1(op_kind::relu, {a}, {}, "c");
    const auto d = g.add1(op_kind::relu, {b}, {}, "d");
    const auto e = g.add1(op_kind::ewadd, {c, d}, {}, "e");
    (void)e;
    const fixed_cost cost{{0, 1, 1, 1, 1, 1}};
    const auto cl = two_devices({1, 1, 1e9, 0}, 1, 0);
    sim::simulator s(g, cl, cost);
    const sim::placement p(6, 0);
    // {a, e} with c outside: a -> c -> e leaves and re-enters the group
    const std::vector<std::int32_t> nonconvex{-1, 0, -1, -1, -1, 0};
    CHECK_THROWS_WITH_AS(s.run(p, {.fusion = nonconvex}), doctest::Contains("'c' (relu) outside the group"),
                         sim::decision_refused);
    // {p1, q1} and {p2, q2}: each convex and one kernel, but p1 -> q2 and p2 -> q1 make the
    // contracted graph cyclic
    {
        graph::computation_graph h;
        const auto y = h.input("y", {1});
        const auto p1 = h.add1(op_kind::relu, {y}, {}, "p1");
        const auto p2 = h.add1(op_kind::relu, {y}, {}, "p2");
        h.mark_output(h.add1(op_kind::ewadd, {p1, p2}, {}, "q1"));
        h.mark_output(h.add1(op_kind::ewadd, {p2, p1}, {}, "q2"));
        sim::simulator sh(h, cl, cost);
        const std::vector<std::int32_t> cyclic{-1, 1, 2, 1, 2};
        CHECK_THROWS_WITH_AS(sh.run(sim::placement(5, 0), {.fusion = cyclic}), doctest::Contains("cycle"),
                             sim::decision_refused);
    }
    const std::vector<std::int32_t> split{-1, 0, -1, 0, -1, -1};
    CHECK_THROWS_WITH_AS(s.run(sim::placement{0, 0, 0, 1, 0, 0}, {.fusion = split}),
                         doctest::Contains("spans two devices"), sim::decision_refused);
    const std::vector<std::int32_t> out_of_range{-1, 7, -1, -1, -1, -1};
    CHECK_THROWS_AS(s.run(p, {.fusion = out_of_range}), sim::decision_refused);
    CHECK_THROWS_WITH_AS(s.run(sim::placement{0, 0, 0, 2, 0, 0}),
                         doctest::Contains("'c' (relu) on device 2: expected a device of the cluster, 0..1"),
                         sim::decision_refused);
    const std::vector<double> nan_prio{0, 1, 2, std::nan(""), 4, 5};
    CHECK_THROWS_WITH_AS(s.run(p, {.priorities = nan_prio}), doctest::Contains("priority of op 'c' (relu) is nan"),
                         sim::decision_refused);
    // a decision of the wrong length is the caller's mistake, not a decision: a plain goopt::error
    CHECK_THROWS_WITH_AS(s.run(sim::placement(5, 0)), doctest::Contains("expected one per op (6)"), error);
    CHECK(test::thrown_by([&] { s.run(sim::placement(5, 0)); }) == "error");
    const std::vector<double> short_prio{1, 2};
    CHECK(test::thrown_by([&] { s.run(p, {.priorities = short_prio}); }) == "error");
    const std::vector<std::int32_t> short_fusion{-1, 0};
    CHECK(test::thrown_by([&] { s.run(p, {.fusion = short_fusion}); }) == "error");
    // a legal group works: {c, e} is a chain
    const std::vector<std::int32_t> legal{-1, -1, -1, 3, -1, 3};
    CHECK(s.run(p, {.fusion = legal}).step_time == doctest::Approx(5.0));
}

TEST_CASE("placements that break a colocation group are rejected, naming both ops") {
    graph::computation_graph g;
    const auto x = g.input("x", {4, 4});
    const auto w = g.weight("w", {4, 4});
    const auto y = g.add1(op_kind::matmul, {x, w}, {}, "y");
    g.set_colocation(g.producer(w), 7);
    g.set_colocation(g.producer(y), 7);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    CHECK_THROWS_WITH_AS(
        s.run(sim::placement{0, 0, 1}),
        doctest::Contains("breaks colocation group 7: op 'w' (weight) is on device 0 but op 'y' (matmul)"),
        sim::decision_refused);
    const auto r = s.run(sim::placement{1, 1, 1});
    // the weight is persistent: 64 bytes from the start, plus x and y
    CHECK(r.peak_memory[1] == 64 * 3);
    CHECK(r.peak_memory[0] == 0);
}

TEST_CASE("out of memory is reported, not hidden, and the step still completes") {
    graph::computation_graph g;
    const auto x = g.input("x", {1024});
    const auto y = g.add1(op_kind::relu, {x});
    g.mark_output(y);
    device::cluster<round_device> cl;
    cl.add_device({1e9, 1e9, 6000, 0});  // x and y need 8192 bytes at once
    cl.add_device({1e9, 1e9, 1e6, 0});
    cl.connect(0, 1, cl.add_link({"l", 1e9, 0}));
    cl.connect(1, 0, cl.add_link({"l", 1e9, 0}));
    sim::simulator s(g, cl);
    const auto r = s.run(sim::placement{0, 0});
    CHECK(r.oom);
    CHECK(r.out_of_memory[0] == 1);
    CHECK(r.out_of_memory[1] == 0);
    CHECK(r.peak_memory[0] == 8192);
    CHECK(r.step_time > 0);
    CHECK_FALSE(s.run(sim::placement{1, 1}).oom);
}

TEST_CASE("a transfer between devices without a link is an error") {
    graph::computation_graph g;
    const auto x = g.input("x", {4});
    g.add1(op_kind::relu, {x});
    device::cluster<round_device> cl;
    cl.add_device({1, 1, 1e9, 0});
    cl.add_device({1, 1, 1e9, 0});
    sim::simulator s(g, cl);
    CHECK_THROWS_WITH_AS(s.run(sim::placement{0, 1}), doctest::Contains("no link"), sim::decision_refused);
}

TEST_CASE("the trace check names a broken promise: an op before its producer, two ops at once, a wrong device") {
    // without this, a check that passed everything would make the property test below vacuous
    graph::computation_graph g;
    const auto x = g.input("x", {64, 64});
    const auto a = g.add1(op_kind::relu, {x});
    g.mark_output(g.add1(op_kind::relu, {a}));
    g.mark_output(g.add1(op_kind::sigmoid, {x}));
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const sim::placement p{0, 0, 0, 0};
    const auto r = s.run(p);
    REQUIRE(test::trace_problem(g, p, {}, 2, r).empty());
    auto early = r;  // the second relu starts before the first ends
    for (auto& e : early.ops)
        if (e.op == 2) e.start = 0;
    CHECK(test::trace_problem(g, p, {}, 2, early) == "an op started before its producer ended");
    // as one fused group the two relus have no order between them, but the group, now starting at 0,
    // covers the sigmoid's run on the same device
    CHECK(test::trace_problem(g, p, std::vector<std::int32_t>{-1, 0, 0, -1}, 2, early) ==
          "two kernels overlap on one device");
    CHECK(test::trace_problem(g, sim::placement{0, 0, 0, 1}, {}, 2, r) ==
          "an op ran on a device other than its placement's");
}

TEST_CASE("properties on random graphs: dependencies, streams, bounds, memory") {
    std::mt19937_64 rng(42);
    const auto cl = device::parse_cluster("3xV100:pcie");
    for (int trial = 0; trial < 20; ++trial) {
        const auto g = goopt_test::random_dag(rng, 6 + trial % 5, 4 + trial % 3);
        sim::simulator s(g, cl);
        const std::size_t n = g.num_ops();
        const auto p = random_placement(rng, g, 3);
        const auto prio = random_priorities(rng, n);
        const bool use_prio = trial % 2 == 1;
        // every fourth trial: the links ordered by the priorities too; every other fourth: the devices
        // following one global order by the (random) priorities, which must not deadlock
        const sim::simulation_options options{
            .priorities = use_prio ? std::span<const double>(prio) : std::span<const double>(),
            .transfers = trial % 4 == 3 ? sim::transfer_order::priority : sim::transfer_order::produced,
            .dispatch = trial % 4 == 1 ? sim::dispatch_order::sequence : sim::dispatch_order::ready};
        const auto r = s.run(p, options);
        // every op once on its device after its inputs (same device: after the producer; another: after
        // the copy arrives), one op at a time per device stream, a finite step holding every event
        const std::string problem = test::trace_problem(g, p, {}, 3, r);
        CHECK_MESSAGE(problem.empty(), problem);
        // one transfer per tensor per destination
        for (std::size_t i = 0; i < r.transfers.size(); ++i)
            for (std::size_t j = i + 1; j < r.transfers.size(); ++j)
                CHECK_FALSE((r.transfers[i].tensor == r.transfers[j].tensor && r.transfers[i].to == r.transfers[j].to));
        // one transfer at a time on the shared bus
        for (std::size_t i = 1; i < r.transfers.size(); ++i)
            CHECK(r.transfers[i].start >= r.transfers[i - 1].end - 1e-15);
        // bounds: critical path (devices are identical) and total work over devices
        const auto cp = graph::critical_path(g, [&](std::size_t o) { return s.op_time(static_cast<op_id>(o), 0); });
        double work = 0;
        for (op_id o = 0; o < n; ++o) work += s.op_time(o, 0);
        CHECK(r.step_time >= cp.length * (1 - 1e-12));
        CHECK(r.step_time >= work / 3 * (1 - 1e-12));
        double busy = 0;
        for (double b : r.busy_time) busy += b;
        CHECK(busy == doctest::Approx(work));
        // memory never negative (asserted inside run) and at least the persistent weights
        for (std::size_t d = 0; d < 3; ++d) CHECK(r.peak_memory[d] >= 0);
        // the same decisions give the same result (work arrays are reused correctly)
        const auto again = s.run(p, options);
        CHECK(again.step_time == r.step_time);
        CHECK(again.peak_memory == r.peak_memory);
    }
}
