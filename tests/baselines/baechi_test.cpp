#include "../sim/random_dag.hpp"

#include <goopt/baselines.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/models/rnnlm.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

using namespace goopt;
using graph::op_id;
using ops::op_kind;

namespace {
/// n V100s whose memory is `capacity` bytes, all-to-all links.
device::cluster<device::device_spec> small_memory(std::size_t n, double capacity, double bandwidth = 25e9) {
    auto d = device::describe(device::v100);
    d.capacity = capacity;
    return device::cluster<device::device_spec>::all_to_all(d, n, bandwidth, 5e-6);
}
/// The bytes of o's outputs: what Baechi's whole-step estimate holds for o.
double output_bytes(const graph::computation_graph& g, op_id o) {
    double b = 0;
    for (graph::tensor_id t : g.get_op(o).outputs) b += static_cast<double>(g.type_of(t).bytes());
    return b;
}
/// Baechi's estimate summed per device: the bytes of every output placed there.
std::vector<double> estimated_use(const graph::computation_graph& g, const sim::placement& p, std::size_t nd) {
    std::vector<double> use(nd, 0);
    for (op_id o = 0; o < g.num_ops(); ++o) use[p[o]] += output_bytes(g, o);
    return use;
}
/// The most that placing `o` can add to a device under Baechi's whole-step estimate: its outputs
/// and those of the sources it reads (placed with their first reader).
double unit_bytes(const graph::computation_graph& g, op_id o) {
    double b = output_bytes(g, o);
    for (graph::tensor_id t : g.get_op(o).inputs)
        if (const op_id p = g.producer(t); g.get_op(p).spec().has(ops::source)) b += output_bytes(g, p);
    return b;
}
}  // namespace

TEST_CASE("Baechi placers: colocation kept and every device within its memory when the graph fits") {
    std::mt19937_64 rng(11);
    for (int trial = 0; trial < 6; ++trial) {
        const auto g = goopt_test::random_dag(rng, 8, 6);
        double total = 0, largest = 0;
        for (op_id o = 0; o < g.num_ops(); ++o) {
            total += output_bytes(g, o);
            largest = std::max(largest, unit_bytes(g, o));
        }
        const std::size_t nd = 4;
        // A greedy placer falls back to the roomiest device only when an op fits on none, i.e. when
        // every device holds more than cap - largest; at this capacity that would exceed the total.
        // (The test had 1.25x the mean, which no greedy fit is sure to meet; a seed sweep found 1
        // graph in 20 over it, from an input that no op reads, which the placers counted only after
        // planning: baechi_memory::pin_sources now counts it first.)
        const double cap = total / nd + largest;
        const auto cl = small_memory(nd, cap);
        sim::simulator s(g, cl);
        // Baechi's own estimate (every output held for the whole step) is kept as planned
        const baselines::baechi_config whole{.memory = baselines::baechi_memory_model::whole_step, .verify_rounds = 0};
        for (const auto& d : {baselines::m_topo(s, whole), baselines::m_etf(s, whole), baselines::m_sct(s, whole)}) {
            CHECK_NOTHROW(s.check_placement(d.placement));
            const auto use = estimated_use(g, d.placement, nd);
            for (double u : use) CHECK(u <= cap);
            const auto r = sim::run(s, d);
            CHECK_FALSE(r.oom);
            CHECK(r.step_time > 0);
        }
        // the planned lifetimes, checked on the simulator, fit as well
        for (const auto& d : {baselines::m_topo(s), baselines::m_etf(s), baselines::m_sct(s)}) {
            CHECK_NOTHROW(s.check_placement(d.placement));
            CHECK_FALSE(sim::run(s, d).oom);
        }
        // HEFT ignores memory; on a roomy cluster m-ETF is a fair list scheduler too
        const auto roomy = small_memory(nd, 1e12);
        sim::simulator s2(g, roomy);
        const auto e = sim::run(s2, baselines::m_etf(s2));
        CHECK(e.step_time <= s2.run(baselines::single_device_placement(g)).step_time * 1.5);
    }
}

TEST_CASE("m-ETF splits independent branches; m-TOPO fills devices in order; m-SCT keeps a heavy edge local") {
    graph::computation_graph g;
    const auto x = g.input("x", {1024, 1024});
    const auto a = g.add1(op_kind::matmul, {x, x}, {}, "a");
    const auto b = g.add1(op_kind::matmul, {x, x}, {}, "b");
    g.mark_output(g.add1(op_kind::ewadd, {a, b}, {}, "c"));
    const auto cl = small_memory(2, 1e12, 1e15);  // transfers nearly free: splitting pays
    sim::simulator s(g, cl);
    const auto etf = baselines::m_etf(s);
    CHECK(etf.placement[g.producer(a)] != etf.placement[g.producer(b)]);
    CHECK(sim::run(s, etf).step_time < s.run(baselines::single_device_placement(g)).step_time);
    // m-TOPO: an even share of the estimate is two tensors' bytes, and the first of a and b brings x
    // along, so they cannot share a device
    const auto topo = baselines::m_topo(s);
    CHECK(topo.placement[g.producer(a)] != topo.placement[g.producer(b)]);
    CHECK(topo.placement[g.producer(x)] == 0);
    // a chain of cheap ops with big tensors: m-SCT puts each op with its favourite parent
    graph::computation_graph h;
    auto t = h.input("x", {4096, 4096});
    for (int i = 0; i < 6; ++i) t = h.add1(op_kind::relu, {t});
    h.mark_output(t);
    sim::simulator sh(h, cl);
    const auto sct = baselines::m_sct(sh);
    for (op_id o = 1; o < h.num_ops(); ++o) CHECK(sct.placement[o] == sct.placement[1]);
}

TEST_CASE("Baechi placers: too little memory everywhere still gives a valid placement; bad config is an error") {
    std::mt19937_64 rng(3);
    const auto g = goopt_test::random_dag(rng, 4, 4);
    const auto cl = small_memory(2, 1024);  // one tensor fills a device
    sim::simulator s(g, cl);
    for (const auto& d : {baselines::m_topo(s), baselines::m_etf(s), baselines::m_sct(s)}) {
        CHECK_NOTHROW(s.check_placement(d.placement));
        CHECK(sim::run(s, d).oom);
    }
    CHECK_THROWS_AS(baselines::m_etf(s, {.memory_fraction = 0}), error);
}

TEST_CASE("Baechi placers: planned lifetimes place a training graph whose outputs do not all fit at once") {
    // A 2-layer LSTM language model's training step: 10.1 MB of outputs in all, against 2 x 4 MB. The
    // whole-step estimate overfills both devices and falls back to the roomiest one; the planned
    // lifetimes (an activation lives until its gradient has read it) still choose by start time.
    const auto g = models::make_training_graph(
        models::rnnlm({.batch = 8, .steps = 6, .layers = 2, .hidden = 64, .embedding = 64, .vocab = 500}));
    const auto cl = small_memory(2, 4e6);
    sim::simulator s(g, cl);
    REQUIRE(baselines::baechi_memory(s, {}).total_bytes() > 2 * 4e6);
    const baselines::baechi_config whole{.memory = baselines::baechi_memory_model::whole_step, .verify_rounds = 0};
    for (const auto& [planned, old] : {std::pair{baselines::m_etf(s), baselines::m_etf(s, whole)},
                                       std::pair{baselines::m_sct(s), baselines::m_sct(s, whole)}}) {
        const auto r = sim::run(s, planned);
        CHECK_FALSE(r.oom);
        for (std::size_t d = 0; d < 2; ++d) CHECK(static_cast<double>(r.peak_memory[d]) <= 4e6);
        CHECK(r.step_time < sim::run(s, old).step_time);
    }
}

TEST_CASE("Baechi placers: a plan the simulator finds over memory is planned again, and the best plan returned") {
    // Memory for a sixth of the outputs on each of 3 devices: whatever the rounds find, the placement
    // is valid and never worse than the unchecked first plan (out of memory first, then step time).
    std::mt19937_64 rng(5);
    const auto g = goopt_test::random_dag(rng, 10, 6);
    double total = 0;
    for (op_id o = 0; o < g.num_ops(); ++o) total += output_bytes(g, o);
    const auto cl = small_memory(3, total / 6);
    sim::simulator s(g, cl);
    for (std::size_t rounds : {0, 1, 3}) {
        const baselines::baechi_config c{.verify_rounds = rounds};
        const auto first = sim::run(s, baselines::m_etf(s, {.verify_rounds = 0}));
        const auto d = baselines::m_etf(s, c);
        CHECK_NOTHROW(s.check_placement(d.placement));
        const auto r = sim::run(s, d);
        CHECK((r.oom <= first.oom));
        if (r.oom == first.oom) CHECK(r.step_time <= first.step_time);
    }
}
