// The scheduling task: priority levels as residuals on the critical-path priority, decoded by the
// simulator's list scheduler; trained by tasks::train, never worse than the heuristic schedules.
#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/simulated_task.hpp>

#include <doctest/doctest.h>

#include "fixed_seconds.hpp"

#include <cmath>
#include <random>
#include <span>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {

/// Four chains of matmuls of different lengths from one input, summed: on two devices the order
/// of the ready chains on a device decides when the sum can start.
graph::computation_graph uneven_chains() {
    graph::computation_graph g("uneven_chains");
    const auto x = g.input("x", {256, 256});
    graph::tensor_id sum = x;
    for (int b = 0; b < 4; ++b) {
        auto t = x;
        for (int k = 0; k <= b; ++k) t = g.add1(op_kind::matmul, {t, g.weight(concat("w", b, k), {256, 256})});
        sum = b == 0 ? t : g.add1(op_kind::ewadd, {sum, t});
    }
    g.mark_output(sum);
    return g;
}

}  // namespace

TEST_CASE("scheduling task: the middle level is the critical-path schedule; levels move ops; bad input") {
    const auto g = uneven_chains();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s);
    const tasks::scheduling_decider d(s, metf.placement);
    static_assert(tasks::Decider<tasks::scheduling_decider>);
    CHECK(d.num_choices() == 21);
    const auto h = d.decide(d.heuristic_actions());
    CHECK(h.placement == metf.placement);
    CHECK(h.priorities == baselines::critical_path_priorities(s, metf.placement));
    CHECK(sim::run(s, h).step_time == d.reference_step());
    CHECK(d.reward(sim::run(s, h)) == doctest::Approx(-1.0));
    // a level above the middle raises that op's priority, one below lowers it; sources never move
    auto acts = d.heuristic_actions();
    graph::op_id first_computing = 0;
    while (!d.active()[first_computing]) ++first_computing;
    acts[first_computing] += 3;
    const auto up = d.decide(acts);
    CHECK(up.priorities[first_computing] > h.priorities[first_computing]);
    acts.assign(acts.size(), 20);
    const auto all_up = d.decide(acts);
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (!d.active()[o]) CHECK(all_up.priorities[o] == h.priorities[o]);
    acts[first_computing] = 21;
    CHECK_THROWS_WITH_AS(d.decide(acts), doctest::Contains("a level in [0, 21)"), error);
    CHECK_THROWS_WITH_AS(d.decide(std::vector<int>(3, 0)), doctest::Contains("one per op"), error);
    CHECK_THROWS_WITH_AS(tasks::scheduling_decider(s, metf.placement, {.levels = 20}),
                         doctest::Contains("an odd number"), error);
    // another heuristic's priorities as the base: the middle levels are that schedule; bad bases refused
    const tasks::scheduling_decider own(s, metf.placement, {}, metf.priorities);
    CHECK(own.heuristic_decision().priorities == metf.priorities);
    CHECK(own.decide(own.heuristic_actions()).priorities == metf.priorities);
    CHECK(own.reference_step() == doctest::Approx(s.run(metf.placement, {.priorities = metf.priorities}).step_time));
    CHECK_THROWS_WITH_AS(tasks::scheduling_decider(s, metf.placement, {}, std::vector<double>(2, 0.0)),
                         doctest::Contains("one finite priority per op"), error);
    // links ordered by the priorities too: every decision, and the reference step, carry the order
    const tasks::scheduling_decider linked(s, metf.placement, {.transfers = sim::transfer_order::priority});
    CHECK(linked.heuristic_decision().transfers == sim::transfer_order::priority);
    CHECK(linked.decide(linked.heuristic_actions()).transfers == sim::transfer_order::priority);
    CHECK(d.decide(d.heuristic_actions()).transfers == sim::transfer_order::produced);
    CHECK(linked.reference_step() == sim::run(s, linked.heuristic_decision()).step_time);
    // one global order per device: the middle level is still the critical-path schedule
    const tasks::scheduling_decider ordered(s, metf.placement, {.dispatch = sim::dispatch_order::sequence});
    CHECK(ordered.heuristic_decision().dispatch == sim::dispatch_order::sequence);
    CHECK(ordered.reference_step() == doctest::Approx(d.reference_step()).epsilon(1e-12));
    CHECK(sim::run(s, ordered.decide(ordered.heuristic_actions())).step_time ==
          doctest::Approx(d.reference_step()).epsilon(1e-12));
    auto nan = metf.priorities;
    nan.back() = std::nan("");
    CHECK_THROWS_AS(tasks::scheduling_decider(s, metf.placement, {}, nan), error);
    // one op on each device: nothing to order
    graph::computation_graph one("one_op");
    one.mark_output(one.add1(op_kind::relu, {one.input("x", {8, 8})}));
    sim::simulator s1(one, cl);
    CHECK_THROWS_WITH_AS(tasks::scheduling_decider(s1, sim::placement(one.num_ops(), 0)),
                         doctest::Contains("no device has two ops to order"), tasks::nothing_to_decide);
}

TEST_CASE("start_from_middle_level: a fresh policy's mode is every op at the middle level, the heuristic's") {
    const auto g = uneven_chains();
    std::mt19937_64 rng(4);
    nn::go_policy<float> net(
        {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8, .task_choices = {21}},
        rng);
    tasks::start_from_middle_level(net, 1.0);
    const auto f = nn::node_features<float>(g);
    const auto out = net.evaluate(f, {});
    const auto& logits = out.logits.front();
    for (Eigen::Index o = 0; o < logits.rows(); ++o) {
        Eigen::Index best = 0;
        logits.row(o).maxCoeff(&best);
        CHECK(best == 10);
        CHECK(logits(o, 9) == doctest::Approx(-1.0));
        CHECK(logits(o, 0) == doctest::Approx(-10.0));
    }
}

TEST_CASE("scheduling task: trained priorities are never worse than critical path or m-ETF's own order") {
    const auto g = uneven_chains();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s);
    tasks::scheduling_decider d(s, metf.placement);
    tasks::simulated_task task(g, cl, d);
    const double critical = sim::run(s, d.heuristic_decision()).step_time;
    const double own = sim::run(s, metf).step_time;
    const sim::decision fifo{.placement = metf.placement, .priorities = {}, .fusion = {}};
    std::mt19937_64 rng(9);
    nn::go_policy<float> net(
        {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8, .task_choices = {21}},
        rng);
    const auto r = tasks::train(
        task, net,
        {.ppo = {.updates = 10, .samples_per_update = 8, .minibatch = 8, .epochs = 2, .learning_rate = 3e-3},
         .incumbents = {fifo, d.heuristic_decision(), metf}},
        rng);
    CHECK(r.best.result.step_time <= std::min({critical, own, sim::run(s, fifo).step_time}));
    CHECK(r.best.decision.placement == metf.placement);  // scheduling never moves an op
    CHECK(r.samples == 80);
}

TEST_CASE("scheduling task: geometric levels shift by step x 2^(j - 1), finer near the middle") {
    const auto g = uneven_chains();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s);
    const auto base = baselines::critical_path_priorities(s, metf.placement);
    const tasks::scheduling_decider d(s, metf.placement,
                                      {.levels = 7, .step = 0.01, .spacing = tasks::level_spacing::geometric});
    graph::op_id o = 0;
    while (!d.active()[o]) ++o;
    const double scale = 0.01 * *std::max_element(base.begin(), base.end());
    auto acts = d.heuristic_actions();  // middle: 3
    for (int level = 0; level < 7; ++level) {
        acts[o] = level;
        const int j = level - 3;
        const double shift = j == 0 ? 0.0 : (j > 0 ? 1 : -1) * scale * std::pow(2.0, std::abs(j) - 1);
        CHECK(d.decide(acts).priorities[o] == doctest::Approx(base[o] + shift));
    }
}

TEST_CASE("scheduling task: training from the critical path reaches the optimum the schedule bound certifies") {
    // device 0: a -> b (5 s each) and c (1 s), whose output d (8 s) needs on device 1. The upward rank
    // runs a (rank 10) before c (rank 9): c waits for a, d ends at 14 s. c first: d ends at 9 s, b at
    // 11 s, device 0's total work: the bound, 11 s, is reached.
    graph::computation_graph g("rank_misleads");
    const auto x = g.input("x", {4, 4});
    const auto a = g.add1(op_kind::relu, {x});
    g.mark_output(g.add1(op_kind::relu, {a}));
    const auto c = g.add1(op_kind::sigmoid, {x});
    g.mark_output(g.add1(op_kind::relu, {c}));
    const test::fixed_seconds_cost cost{{0.0, 5.0, 5.0, 1.0, 8.0}};
    const auto cl = device::cluster<test::fixed_seconds_device>::all_to_all(test::fixed_seconds_device{}, 2, 1e15, 0.0);
    sim::simulator s(g, cl, cost);
    const sim::placement p{0, 0, 0, 0, 1};
    const tasks::scheduling_decider d(s, p);
    CHECK(d.reference_step() == doctest::Approx(14.0));
    const double optimum = sim::schedule_lower_bound(s, p).step;
    CHECK(optimum == doctest::Approx(11.0));
    tasks::simulated_task task(g, cl, d, cost);
    std::mt19937_64 rng(3);
    nn::go_policy<float> net(
        {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8, .task_choices = {21}},
        rng);
    tasks::start_from_middle_level(net, 1.0);
    const auto r = tasks::train(
        task, net, {.ppo = {.updates = 10, .samples_per_update = 16, .minibatch = 16, .learning_rate = 3e-3}}, rng);
    CHECK(r.best_from != tasks::best_source::incumbent);
    CHECK(r.best.result.step_time == doctest::Approx(optimum));
}
