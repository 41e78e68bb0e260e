#include "../sim/random_dag.hpp"

#include <goopt/baselines.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <random>
#include <set>

using namespace goopt;
using graph::op_id;
using ops::op_kind;

namespace {
/// Fixed seconds per op id: makes list-scheduling cases easy to work out by hand.
struct fixed_cost {
    std::vector<double> seconds;
    template <class D> double op_time(const graph::computation_graph&, op_id o, const D&) const { return seconds[o]; }
    template <class D> double group_time(const graph::computation_graph&, std::span<const op_id> ops, const D&) const {
        double s = 0;
        for (op_id o : ops) s += seconds[o];
        return s;
    }
};
device::cluster<device::device_spec> fast_pair() {
    return device::cluster<device::device_spec>::all_to_all(device::describe(device::v100), 2, 1e18, 0);
}
}  // namespace

TEST_CASE("upward rank of a fork, by hand") {
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto a = g.add1(op_kind::relu, {x});
    const auto b = g.add1(op_kind::relu, {a});
    const auto c = g.add1(op_kind::relu, {a});
    (void)b, (void)c;
    const std::vector<double> w{0, 1, 2, 5};
    const auto r = baselines::upward_rank(
        g, [&](op_id o) { return w[o]; }, [](graph::tensor_id, op_id, op_id) { return 0.5; });
    CHECK(r[3] == 5);
    CHECK(r[2] == 2);
    CHECK(r[1] == 1 + 0.5 + 5);
    CHECK(r[0] == 0 + 0.5 + 6.5);
}

TEST_CASE("expert placements: layer i mod n, contiguous blocks, followers and colocation") {
    graph::computation_graph g;
    const auto x = g.input("x", {4, 4});
    std::vector<graph::tensor_id> t{x};
    for (int l = 0; l < 4; ++l) {
        const auto w = g.weight(concat("w", l), {4, 4});
        const auto y = g.add1(op_kind::matmul, {t.back(), w});
        g.set_layer(g.producer(y), l);
        g.set_colocation(g.producer(w), l);  // no layer on the weight: it follows its group
        g.set_colocation(g.producer(y), l);
        t.push_back(y);
    }
    const auto out = g.add1(op_kind::relu, {t.back()});  // no layer: follows its producer (layer 3)
    const auto p = baselines::expert_placement(g, 2, baselines::model_family::layered);
    CHECK(p[g.producer(t[1])] == 0);
    CHECK(p[g.producer(t[2])] == 1);
    CHECK(p[g.producer(t[3])] == 0);
    CHECK(p[g.producer(t[4])] == 1);
    CHECK(p[g.producer(out)] == 1);
    CHECK(p[g.producer(x)] == 0);  // source without layer: its first consumer's device
    for (int l = 0; l < 4; ++l) CHECK(p[g.producer(t[l + 1]) - 1] == p[g.producer(t[l + 1])]);  // weight with matmul
    const auto q = baselines::expert_placement(g, 2, baselines::model_family::contiguous);
    CHECK(q[g.producer(t[1])] == 0);
    CHECK(q[g.producer(t[2])] == 0);
    CHECK(q[g.producer(t[3])] == 1);
    CHECK(q[g.producer(t[4])] == 1);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    CHECK_NOTHROW(s.run(p));
    CHECK_NOTHROW(s.run(q));
    CHECK_THROWS_AS(baselines::expert_placement(g, 0, baselines::model_family::layered), error);
}

TEST_CASE("HEFT puts independent heavy branches on different devices") {
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::relu, {x}, {}, "b");
    g.add1(op_kind::ewadd, {a, b}, {}, "c");
    const auto cl = fast_pair();
    sim::simulator s(g, cl, fixed_cost{{0, 1, 1, 0.1}});
    const auto h = baselines::heft(s);
    CHECK(h.placement[1] != h.placement[2]);
    CHECK(h.schedule_length == doctest::Approx(1.1));
    CHECK(s.run(h.placement, {.priorities = h.priorities}).step_time == doctest::Approx(1.1));
    CHECK(s.run(baselines::single_device_placement(g)).step_time == doctest::Approx(2.1));
}

TEST_CASE("critical-path priorities beat FIFO when FIFO starts the short branch first") {
    graph::computation_graph g;
    const auto x = g.input("x", {1});
    const auto s1 = g.add1(op_kind::relu, {x}, {}, "short");
    const auto l1 = g.add1(op_kind::relu, {x}, {}, "long1");
    const auto l2 = g.add1(op_kind::relu, {l1}, {}, "long2");
    const auto l3 = g.add1(op_kind::relu, {l2}, {}, "long3");
    (void)s1, (void)l3;
    const auto cl = fast_pair();
    sim::simulator s(g, cl, fixed_cost{{0, 1, 1, 1, 1}});
    const sim::placement p{0, 0, 0, 1, 1};
    // FIFO: short 0-1, long1 1-2, long2 2-3, long3 3-4; by rank: long1 0-1, long2 1-2, long3 2-3
    CHECK(s.run(p).step_time == doctest::Approx(4.0));
    const auto prio = baselines::critical_path_priorities(s, p);
    CHECK(prio[2] == doctest::Approx(3.0));
    CHECK(s.run(p, {.priorities = prio}).step_time == doctest::Approx(3.0));
}

TEST_CASE("greedy fusion: elementwise consumers join their producer's kernel") {
    graph::computation_graph g;
    const auto x = g.input("x", {64, 64});
    const auto w = g.weight("w", {64, 64});
    const auto m = g.add1(op_kind::matmul, {x, w});
    const auto r = g.add1(op_kind::relu, {m});
    const auto s = g.add1(op_kind::sigmoid, {r});
    const auto m2 = g.add1(op_kind::matmul, {x, w});
    const auto e = g.add1(op_kind::ewadd, {s, m2});  // m2 starts after m's group: e may not join it
    g.mark_output(e);
    const auto fz = baselines::greedy_fusion(g, sim::placement(g.num_ops(), 0));
    CHECK(fz[g.producer(m)] == static_cast<std::int32_t>(g.producer(m)));
    CHECK(fz[g.producer(r)] == fz[g.producer(m)]);
    CHECK(fz[g.producer(s)] == fz[g.producer(m)]);
    CHECK(fz[g.producer(x)] == sim::no_group);
    CHECK(fz[g.producer(w)] == sim::no_group);
    // e reads m's group and m2, whose rank (position) is larger than the group's: e joins m2 instead
    CHECK(fz[g.producer(e)] == static_cast<std::int32_t>(g.producer(m2)));
    // devices matter: on another device a consumer stays alone
    sim::placement p(g.num_ops(), 0);
    p[g.producer(r)] = 1;
    const auto fz2 = baselines::greedy_fusion(g, p);
    CHECK(fz2[g.producer(r)] == sim::no_group);
    CHECK(fz2[g.producer(s)] == sim::no_group);  // its producer r is on device 1
    CHECK(fz2[g.producer(m)] == sim::no_group);
}

TEST_CASE("baselines on random graphs: valid decisions, colocation kept, fusion legal and never slower alone") {
    std::mt19937_64 rng(7);
    const auto cl = device::parse_cluster("4xV100:nvlink");
    for (int trial = 0; trial < 8; ++trial) {
        const auto g = goopt_test::random_dag(rng, 8, 6);
        sim::simulator s(g, cl);
        const auto h = baselines::heft(s);
        CHECK_NOTHROW(s.check_placement(h.placement));  // colocation included
        const auto rh = s.run(h.placement, {.priorities = h.priorities});
        const auto single = s.run(baselines::single_device_placement(g));
        CHECK(rh.step_time > 0);
        const auto ex = baselines::expert_placement(g, 4, baselines::model_family::layered);
        CHECK_NOTHROW(s.check_placement(ex));
        const auto cp = baselines::critical_path_priorities(s, ex);
        CHECK_NOTHROW(s.run(ex, {.priorities = cp}));
        // greedy fusion under several placements: the simulator accepts every group (same device,
        // acyclic after contraction); on one device a step is all work, and fusion only removes work
        for (const auto* p : {&h.placement, &ex}) {
            const auto fz = baselines::greedy_fusion(g, *p);
            CHECK_NOTHROW(s.run(*p, {.fusion = fz}));
        }
        const auto one = baselines::single_device_placement(g);
        const auto fz1 = baselines::greedy_fusion(g, one);
        std::set<std::int32_t> groups(fz1.begin(), fz1.end());
        CHECK(groups.size() > 2);
        CHECK(s.run(one, {.fusion = fz1}).step_time <= single.step_time * (1 + 1e-12));
        // random search: deterministic for a seed, never worse than its own first sample
        std::mt19937_64 r1(99), r2(99), r3(99);
        const auto a = baselines::random_search(s, 5, r1);
        const auto b = baselines::random_search(s, 5, r2);
        const auto first = baselines::random_search(s, 1, r3);
        CHECK(a.placement == b.placement);
        CHECK(a.result.step_time == b.result.step_time);
        CHECK(a.result.step_time <= first.result.step_time);
        CHECK_NOTHROW(s.check_placement(a.placement));
    }
}
