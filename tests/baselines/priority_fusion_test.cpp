// Priority fusion (XLA's cost-driven fuser) and greedy fusion under one legality rule: on zoo graphs
// every group either makes is one kernel (sim::fusion_check), convex and accepted by the simulator,
// and priority fusion is never slower than no fusion on one device.
#include "../sim/random_dag.hpp"

#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/bert.hpp>
#include <goopt/models/resnet.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/models/transformer_xl.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

using namespace goopt;
using graph::op_id;
using ops::op_kind;

namespace {

std::vector<graph::computation_graph> small_zoo() {
    std::vector<graph::computation_graph> r;
    r.push_back(models::squeezenet({.image = 64}));
    r.push_back(models::resnet50({.image = 64, .blocks = {1, 1, 1, 1}, .width = 16}));
    r.push_back(models::bert({.seq_length = 16,
                              .layers = 2,
                              .hidden = 64,
                              .heads = 4,
                              .intermediate = 128,
                              .vocab = 100,
                              .max_positions = 32}));
    r.push_back(models::make_training_graph(models::transformer_xl(
        {.batch = 2, .segment = 16, .memory = 16, .layers = 1, .model = 32, .heads = 2, .head_dim = 16, .inner = 64})));
    return r;
}

/// Every group of `f` is one kernel by sim::fusion_check; the simulator's run (convexity, one device,
/// an acyclic contraction) accepts the decision; returns the number of groups of two or more ops.
std::size_t check_groups(sim::simulator<device::device_spec>& s, const sim::placement& p, const sim::fusion_groups& f) {
    std::map<std::int32_t, std::vector<op_id>> groups;
    for (op_id o = 0; o < f.size(); ++o)
        if (f[o] >= 0) groups[f[o]].push_back(o);
    sim::fusion_check check(s.graph());
    for (const auto& [id, members] : groups) {
        CHECK(members.size() >= 2);
        const auto v = check.violation(members);
        CHECK_MESSAGE(!v, (v ? check.why(*v) : ""));
        for (op_id o : members) CHECK(p[o] == p[members[0]]);
    }
    CHECK_NOTHROW(s.run(p, {.fusion = f, .record_trace = false}));
    return groups.size();
}

}  // namespace

TEST_CASE("priority fusion: merges the pair that saves most first, and only legal pairs") {
    // x -> relu -> sigmoid; y -> matmul -> matmul -> tanh: the two matmuls never share a kernel
    graph::computation_graph g("pairs");
    const auto x = g.input("x", {256, 256});
    const auto r = g.add1(op_kind::relu, {x}, {}, "r");
    const auto sg = g.add1(op_kind::sigmoid, {r}, {}, "sg");
    const auto w = g.weight("w", {256, 256});
    const auto m1 = g.add1(op_kind::matmul, {x, w}, {}, "m1");
    const auto m2 = g.add1(op_kind::matmul, {m1, w}, {}, "m2");
    const auto t = g.add1(op_kind::tanh, {m2}, {}, "t");
    g.mark_output(sg);
    g.mark_output(t);
    const auto cl = device::parse_cluster("1xV100:nvlink");
    sim::simulator s(g, cl);
    const sim::placement one(g.num_ops(), 0);
    const auto f = baselines::priority_fusion(s, one);
    CHECK(f[g.producer(r)] >= 0);
    CHECK(f[g.producer(r)] == f[g.producer(sg)]);
    CHECK(f[g.producer(m2)] >= 0);
    CHECK(f[g.producer(m2)] == f[g.producer(t)]);
    CHECK(f[g.producer(m1)] == sim::no_group);
    CHECK(f[g.producer(x)] == sim::no_group);
    CHECK(f[g.producer(w)] == sim::no_group);
    const baselines::priority_fuser fuser(s, one);
    CHECK(fuser.num_pairs() == 2);  // r -> sg and m2 -> t
    CHECK(fuser.max_benefit() > 0);
    // a frozen op stays alone; a large negative bias keeps a pair apart
    std::vector<std::uint8_t> frozen(g.num_ops(), 0);
    frozen[g.producer(sg)] = 1;
    const auto f2 = fuser.run({}, frozen);
    CHECK(f2[g.producer(r)] == sim::no_group);
    CHECK(f2[g.producer(t)] >= 0);
    std::vector<double> bias(g.num_ops(), 0.0);
    bias[g.producer(t)] = -1.0;
    const auto f3 = fuser.run(bias);
    CHECK(f3[g.producer(t)] == sim::no_group);
    CHECK(f3[g.producer(r)] >= 0);
    // on two devices, a pair split by the placement is no candidate
    const auto cl2 = device::parse_cluster("2xV100:nvlink");
    sim::simulator s2(g, cl2);
    sim::placement split(g.num_ops(), 0);
    split[g.producer(sg)] = 1;
    CHECK(baselines::priority_fusion(s2, split)[g.producer(sg)] == sim::no_group);
    CHECK_THROWS_WITH_AS(fuser.run(std::vector<double>(2, 0.0)), doctest::Contains("one per op"), error);
}

TEST_CASE("greedy and priority fusion on zoo graphs: every group legal and convex; priority fusion never slower") {
    const auto one_device = device::parse_cluster("1xV100:nvlink");
    const auto four = device::parse_cluster("4xV100:nvlink");
    for (const auto& g : small_zoo()) {
        CAPTURE(g.name());
        sim::simulator s(g, one_device);
        const sim::placement one(g.num_ops(), 0);
        const auto unfused = s.run(one, {.record_trace = false});
        const auto greedy = baselines::greedy_fusion(g, one);
        const auto priority = baselines::priority_fusion(s, one);
        CHECK(check_groups(s, one, greedy) > 0);
        CHECK(check_groups(s, one, priority) > 0);
        const double t_priority = s.run(one, {.fusion = priority, .record_trace = false}).step_time;
        CHECK(t_priority < unfused.step_time);
        // several devices: m-ETF's placement, both fusers keep each group on one device
        sim::simulator s4(g, four);
        const auto metf = baselines::m_etf(s4);
        check_groups(s4, metf.placement, baselines::greedy_fusion(g, metf.placement));
        check_groups(s4, metf.placement, baselines::priority_fusion(s4, metf.placement));
    }
}

TEST_CASE("greedy and priority fusion on random graphs: legal, and on one device never slower than no fusion") {
    std::mt19937_64 rng(11);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    for (int trial = 0; trial < 10; ++trial) {
        const auto g = goopt_test::random_dag(rng, 8, 6);
        sim::simulator s(g, cl);
        const sim::placement one(g.num_ops(), 0);
        const auto f = baselines::priority_fusion(s, one);
        check_groups(s, one, f);
        check_groups(s, one, baselines::greedy_fusion(g, one));
        CHECK(s.run(one, {.fusion = f}).step_time <= s.run(one).step_time * (1 + 1e-12));
        const auto h = baselines::heft(s);
        check_groups(s, h.placement, baselines::priority_fusion(s, h.placement));
    }
}

namespace {

/// The groups of `f` as a set of member sets (ids differ between fusers; the partition is what counts).
std::set<std::vector<op_id>> partition_of(const sim::fusion_groups& f) {
    std::map<std::int32_t, std::vector<op_id>> groups;
    for (op_id o = 0; o < f.size(); ++o)
        if (f[o] >= 0) groups[f[o]].push_back(o);
    std::set<std::vector<op_id>> r;
    for (auto& [id, members] : groups) r.insert(members);
    return r;
}

}  // namespace

TEST_CASE("priority fusion from starting groups: kept whole they come back exactly; any departure stays legal") {
    std::mt19937_64 rng(23);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    auto graphs = small_zoo();
    for (int trial = 0; trial < 6; ++trial) graphs.push_back(goopt_test::random_dag(rng, 8, 6));
    for (const auto& g : graphs) {
        CAPTURE(g.name());
        sim::simulator s(g, cl);
        const auto h = baselines::heft(s);
        const baselines::priority_fuser fuser(s, h.placement);
        const auto greedy = baselines::greedy_fusion(g, h.placement);
        const std::size_t n = g.num_ops();
        const std::vector<std::uint8_t> closed(n, 0);
        // nothing departs and nothing is open: greedy fusion's partition, whatever the biases
        const std::vector<double> bias(n, 1.0);
        CHECK(partition_of(fuser.run(bias, {}, {.groups = greedy, .open = closed})) == partition_of(greedy));
        // open everywhere: priority fusion continues from greedy's groups and saves at least as much
        const auto more = fuser.run({}, {}, {.groups = greedy});
        check_groups(s, h.placement, more);
        // random departures: ops leave their groups, some are frozen, some open
        for (int k = 0; k < 5; ++k) {
            std::vector<std::uint8_t> keep(n), open(n), frozen(n);
            std::vector<double> b(n);
            for (op_id o = 0; o < n; ++o) {
                keep[o] = rng() % 3 != 0;
                open[o] = rng() % 2;
                frozen[o] = rng() % 8 == 0;
                b[o] = static_cast<double>(rng() % 5) * 1e-6 - 2e-6;
            }
            const auto f = fuser.run(b, frozen, {.groups = greedy, .keep = keep, .open = open});
            check_groups(s, h.placement, f);
            for (op_id o = 0; o < n; ++o) {
                if (frozen[o]) CHECK(f[o] == sim::no_group);
                // an op that stays and is closed only ever shares a group through a starting group
                // or an open neighbour's merge: never a group without a starting partner or an open op
                if (f[o] >= 0 && greedy[o] < 0 && !open[o]) {
                    bool any_open = false;
                    for (op_id q = 0; q < n; ++q) any_open |= f[q] == f[o] && open[q];
                    CHECK(any_open);
                }
            }
        }
    }
    sim::simulator s0(graphs[0], cl);
    const baselines::priority_fuser fuser0(s0, sim::placement(graphs[0].num_ops(), 0));
    CHECK_THROWS_WITH_AS(fuser0.run({}, {}, {.groups = sim::fusion_groups(3, sim::no_group)}),
                         doctest::Contains("one per op"), error);
}
