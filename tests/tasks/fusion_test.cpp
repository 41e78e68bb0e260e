// The fusion task: fusion priority levels decoded by priority fusion; the middle level is the
// heuristic's decision, level 0 keeps an op alone; trained by tasks::train, never worse than greedy
// fusion, and it finds the brute-forced optimum of a tiny graph where priority fusion misses it.
#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks/fusion.hpp>
#include <goopt/tasks/level_prior.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/train.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <vector>

using namespace goopt;
using graph::op_id;
using ops::op_kind;

namespace {

/// Device 0 computes a = relu(x) and a chain of three elementwise ops on it; device 1 multiplies
/// a by a matrix and adds the chain's result. Fusing a into the chain delays a's transfer to
/// device 1 (a fused kernel's outputs appear when it ends), which is on the critical path; priority
/// fusion merges it anyway (it saves a launch on device 0).
struct two_device_graph {
    graph::computation_graph g{"two_device"};
    sim::placement placement;
    two_device_graph() {
        const auto x = g.input("x", {1024, 1024});
        const auto a = g.add1(op_kind::relu, {x}, {}, "a");
        auto b = a;
        for (const char* name : {"b0", "b1", "b2"}) b = g.add1(op_kind::sigmoid, {b}, {}, name);
        const auto m = g.add1(op_kind::matmul, {a, g.weight("w", {1024, 1024})}, {}, "m");
        g.mark_output(g.add1(op_kind::ewadd, {m, b}, {}, "out"));
        placement.assign(g.num_ops(), 0);
        for (const char* name : {"m", "w", "out"})
            for (op_id o = 0; o < g.num_ops(); ++o)
                if (g.get_op(o).name == name) placement[o] = 1;
    }
};

/// The best step time over every legal fusion decision made of the fuser's candidate pairs (each
/// subset of pairs merged, by union): the brute-forced optimum of a small graph.
double brute_force_optimum(sim::simulator<device::device_spec>& s, const sim::placement& p) {
    const auto& g = s.graph();
    std::vector<std::pair<op_id, op_id>> pairs;
    for (op_id c = 0; c < g.num_ops(); ++c)
        for (graph::tensor_id t : g.get_op(c).inputs) {
            const op_id q = g.producer(t);
            if (p[q] == p[c] && sim::can_fuse(g.get_op(q).spec(), g.get_op(c).spec())) pairs.emplace_back(q, c);
        }
    REQUIRE(pairs.size() <= 12);
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t mask = 0; mask < (std::size_t{1} << pairs.size()); ++mask) {
        std::vector<op_id> root(g.num_ops());
        for (op_id o = 0; o < g.num_ops(); ++o) root[o] = o;
        auto find = [&](op_id o) {
            while (root[o] != o) o = root[o];
            return o;
        };
        for (std::size_t k = 0; k < pairs.size(); ++k)
            if (mask >> k & 1) root[find(pairs[k].first)] = find(pairs[k].second);
        sim::fusion_groups f(g.num_ops(), sim::no_group);
        std::vector<int> size(g.num_ops(), 0);
        for (op_id o = 0; o < g.num_ops(); ++o) ++size[find(o)];
        for (op_id o = 0; o < g.num_ops(); ++o)
            if (size[find(o)] > 1) f[o] = static_cast<std::int32_t>(find(o));
        try {
            best = std::min(best, s.run(p, {.fusion = f, .record_trace = false}).step_time);
        } catch (const sim::decision_refused&) {}
    }
    return best;
}

nn::go_policy<float> small_policy(std::mt19937_64& rng) {
    return nn::go_policy<float>(
        {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8, .task_choices = {21}},
        rng);
}

/// PPO (12 updates of 16 samples, the decider's heuristic as the incumbent) on the two-device graph
/// with fusion config `c` reaches the brute-forced optimum, which the heuristic misses, from a sample.
void check_training_reaches_optimum(tasks::fusion_config c, bool from_middle_level) {
    const two_device_graph t;
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(t.g, cl);
    const double optimum = brute_force_optimum(s, t.placement);
    const tasks::fusion_decider d(s, t.placement, {}, c);
    REQUIRE(optimum < d.reference_step() * (1 - 1e-6));  // the heuristic (or the anchor) is not optimal here
    tasks::simulated_task task(t.g, cl, d);
    std::mt19937_64 rng(3);
    auto net = small_policy(rng);
    if (from_middle_level) tasks::start_from_middle_level(net);
    const auto r = tasks::train(
        task, net,
        {.ppo = {.updates = 12, .samples_per_update = 16, .minibatch = 16, .epochs = 2, .learning_rate = 3e-3},
         .incumbents = {d.heuristic_decision()}},
        rng);
    CHECK(r.best_from != tasks::best_source::incumbent);
    CHECK(r.best.result.step_time == doctest::Approx(optimum).epsilon(1e-9));
}

}  // namespace

TEST_CASE("fusion task: the middle level is priority fusion, level 0 keeps an op alone; bad input") {
    const auto g = models::squeezenet({.image = 64});
    const auto cl = device::parse_cluster("1xV100:nvlink");
    sim::simulator s(g, cl);
    const sim::placement one(g.num_ops(), 0);
    const tasks::fusion_decider d(s, one);
    static_assert(tasks::Decider<tasks::fusion_decider<device::device_spec, cost::roofline_model>>);
    CHECK(d.num_choices() == 21);
    const auto h = d.decide(d.heuristic_actions());
    CHECK(h.fusion == baselines::priority_fusion(s, one));
    CHECK(h.fusion == d.heuristic_decision().fusion);
    CHECK(h.placement == one);
    CHECK(sim::run(s, h).step_time == d.reference_step());
    CHECK(d.reward(sim::run(s, h)) == doctest::Approx(-1.0));
    // sources and ops without a fusible pair are inactive
    for (op_id o = 0; o < g.num_ops(); ++o)
        if (g.get_op(o).spec().has(ops::source)) CHECK_FALSE(d.active()[o]);
    const auto none = d.decide(std::vector<int>(g.num_ops(), 0));
    for (auto grp : none.fusion) CHECK(grp == sim::no_group);
    auto acts = d.heuristic_actions();
    acts[0] = 21;
    CHECK_THROWS_WITH_AS(d.decide(acts), doctest::Contains("a level in [0, 21)"), error);
    CHECK_THROWS_WITH_AS(d.decide(std::vector<int>(3, 10)), doctest::Contains("one per op"), error);
    CHECK_THROWS_WITH_AS(tasks::fusion_decider(s, one, {}, {.levels = 20}), doctest::Contains("an odd number"), error);
    // a graph with no fusible pair: matmul after matmul, and a relu on another device
    graph::computation_graph bare("no_fusible_pair");
    const auto x = bare.input("x", {8, 8});
    const auto w = bare.weight("w", {8, 8});
    const auto r = bare.add1(op_kind::relu, {bare.add1(op_kind::matmul, {bare.add1(op_kind::matmul, {x, w}), w})});
    bare.mark_output(r);
    const auto cl2 = device::parse_cluster("2xV100:nvlink");
    sim::simulator s2(bare, cl2);
    sim::placement p2(bare.num_ops(), 0);
    p2[bare.producer(r)] = 1;
    CHECK_THROWS_WITH_AS(tasks::fusion_decider(s2, p2),
                         doctest::Contains("graph 'no_fusible_pair' has no producer/consumer pair that can fuse"),
                         tasks::nothing_to_decide);
}

TEST_CASE("fusion task: trained levels are never worse than greedy or priority fusion") {
    const auto g = models::squeezenet({.image = 64});
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s);
    const tasks::fusion_decider d(s, metf.placement, metf.priorities);
    tasks::simulated_task task(g, cl, d);
    const sim::decision greedy{metf.placement, metf.priorities, baselines::greedy_fusion(g, metf.placement)};
    std::mt19937_64 rng(5);
    auto net = small_policy(rng);
    const auto r = tasks::train(
        task, net,
        {.ppo = {.updates = 3, .samples_per_update = 8, .minibatch = 8, .epochs = 1, .learning_rate = 3e-3},
         .incumbents = {greedy, d.heuristic_decision()}},
        rng);
    CHECK(r.best.result.step_time <= sim::run(s, greedy).step_time);
    CHECK(r.best.result.step_time <= d.reference_step());
    CHECK(r.best.decision.placement == metf.placement);  // fusion never moves an op
    CHECK_NOTHROW(sim::run(s, r.best.decision));
}

TEST_CASE("fusion task: training finds the brute-forced optimum where priority fusion misses it") {
    check_training_reaches_optimum({}, false);
}

TEST_CASE("fusion task anchored on greedy fusion: the middle level is greedy fusion exactly; departures stay legal") {
    const auto g = models::squeezenet({.image = 64});
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s);
    const tasks::fusion_decider d(s, metf.placement, metf.priorities, {.anchor = tasks::fusion_anchor::greedy});
    const sim::decision greedy{metf.placement, metf.priorities, baselines::greedy_fusion(g, metf.placement)};
    const auto h = d.decide(d.heuristic_actions());
    CHECK(sim::run(s, h).step_time == sim::run(s, greedy).step_time);
    CHECK(d.reference_step() == sim::run(s, greedy).step_time);
    // the same partition as greedy fusion's (group ids may differ)
    for (op_id a = 0; a < g.num_ops(); ++a)
        for (op_id b = a + 1; b < g.num_ops(); ++b)
            CHECK(((h.fusion[a] >= 0 && h.fusion[a] == h.fusion[b]) ==
                   (greedy.fusion[a] >= 0 && greedy.fusion[a] == greedy.fusion[b])));
    for (auto grp : d.decide(std::vector<int>(g.num_ops(), 0)).fusion) CHECK(grp == sim::no_group);
    // every level at random: the simulator accepts the decision
    std::mt19937_64 rng(7);
    for (int k = 0; k < 20; ++k) {
        std::vector<int> acts(g.num_ops());
        for (auto& a : acts) a = static_cast<int>(rng() % 21);
        CHECK_NOTHROW(sim::run(s, d.decide(acts)));
    }
    // above the middle everywhere: priority fusion continues from greedy's groups
    const auto up = d.decide(std::vector<int>(g.num_ops(), 11));
    CHECK(sim::run(s, up).step_time <= sim::run(s, greedy).step_time * (1 + 1e-9));
}

TEST_CASE("fusion task anchored on greedy fusion: training finds the brute-forced optimum greedy fusion misses") {
    check_training_reaches_optimum({.anchor = tasks::fusion_anchor::greedy}, true);
}
