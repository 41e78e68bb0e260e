// tasks::train_scheduling: rounds of fresh policies, each re-based on the best order so far, reach
// the optimum a brute force over every priority order finds; a last round of per-device sequences
// finds a schedule that waits, which no priority order gives; bad configurations are refused.
#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks/scheduling_rounds.hpp>

#include <doctest/doctest.h>

#include "fixed_seconds.hpp"
#include "small_policy.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <span>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {

/// A two-machine flow shop: job j is a_j (t_j s on device 0) then b_j (u_j s on device 1). The jobs
/// (t, u) = (4, 1), (1, 3), (3, 5), (2, 2): the upward rank t + u runs job 3 first (14 s); Johnson's
/// order (2, 3, 4, 1) takes 12 s, device 1's work plus the shortest a.
graph::computation_graph flow_shop() {
    graph::computation_graph g("flow_shop");
    const auto x = g.input("x", {4, 4});
    for (int j = 0; j < 4; ++j) g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::relu, {x})}));
    return g;
}

/// flow_shop() with its op times on two devices, each a_j on device 0 and each b_j on device 1.
struct flow_shop_setup {
    graph::computation_graph g = flow_shop();
    // op ids: x, then a_j, b_j per job
    test::fixed_seconds_cost cost{{0.0, 4.0, 1.0, 1.0, 3.0, 3.0, 5.0, 2.0, 2.0}};
    device::cluster<test::fixed_seconds_device> cl =
        device::cluster<test::fixed_seconds_device>::all_to_all(test::fixed_seconds_device{}, 2, 1e15, 0.0);
    sim::placement p{0, 0, 1, 0, 1, 0, 1, 0, 1};
};

/// The best step over every order of the computing ops (priorities a permutation of 1..n).
template <class Sim> double brute_force_best_step(Sim& s, const sim::placement& p) {
    const std::size_t n = s.graph().num_ops();
    std::vector<double> rank(n - 1);
    std::iota(rank.begin(), rank.end(), 1.0);
    double best = 0;
    bool first = true;
    do {
        std::vector<double> priorities{0.0};
        priorities.insert(priorities.end(), rank.begin(), rank.end());
        const double step = s.run(p, {.priorities = priorities, .fusion = {}, .record_trace = false}).step_time;
        if (first || step < best) best = step;
        first = false;
    } while (std::next_permutation(rank.begin(), rank.end()));
    return best;
}

}  // namespace

TEST_CASE("train_scheduling: rounds re-based on the best order reach the brute-forced optimum") {
    const flow_shop_setup shop;
    const auto& [g, cost, cl, p] = shop;
    sim::simulator s(g, cl, cost);
    const tasks::scheduling_decider critical(s, p);
    CHECK(critical.reference_step() == doctest::Approx(14.0));
    const double optimum = brute_force_best_step(s, p);
    CHECK(optimum == doctest::Approx(12.0));

    const auto make_net = [](const auto& task, std::mt19937_64& gen) {
        return test::small_policy(task.num_choices(), gen);
    };
    const tasks::train_config tc{
        .ppo = {.updates = 12, .samples_per_update = 32, .minibatch = 32, .learning_rate = 3e-3}};
    std::mt19937_64 rng(5);
    // levels a quarter of the largest rank apart: Johnson's order is a few levels from the upward rank's
    const tasks::scheduling_rounds_config rounds{.rounds = 4, .prior = 2, .levels = {.step = 0.25}};
    const auto r = tasks::train_scheduling(s, p, {}, make_net, tc, rng, rl::null_visitor{}, rounds);
    CHECK(r.best_from != tasks::best_source::incumbent);
    CHECK(r.best.decision.placement == p);
    CHECK(r.best.result.step_time == doctest::Approx(optimum));
    CHECK(r.updates == 12);
    CHECK(r.samples == 12 * 32);
    if (r.best_from == tasks::best_source::sample) CHECK(r.best_index <= r.samples);

    // the same seed gives the same result
    std::mt19937_64 again(5);
    const auto r2 = tasks::train_scheduling(s, p, {}, make_net, tc, again, rl::null_visitor{}, rounds);
    CHECK(r2.best.decision.priorities == r.best.decision.priorities);
    CHECK(r2.best_index == r.best_index);
}

TEST_CASE("train_scheduling: a last round of per-device sequences finds a schedule that waits") {
    // device 0 holds a (5 s, ready at once) and b (1 s, after p, which takes 1 s on device 1); c (10 s)
    // on device 1 follows b. A list scheduler starts a at 0, the only op ready on device 0, whatever
    // the priorities: b 5-6 s, c 6-16 s. Device 0 waiting for b gives b 1-2 s, c 2-12 s, a 2-7 s: 12 s.
    // Ops: x 0, p 1, b 2, c 3, a 4.
    graph::computation_graph g("wait");
    const auto x = g.input("x", {4});
    const auto p_out = g.add1(op_kind::relu, {x});
    g.mark_output(g.add1(op_kind::relu, {g.add1(op_kind::relu, {p_out})}));  // b, then c
    g.mark_output(g.add1(op_kind::relu, {x}));                               // a
    const test::fixed_seconds_cost cost{{0.0, 1.0, 1.0, 10.0, 5.0}};
    const auto cl = device::cluster<test::fixed_seconds_device>::all_to_all(test::fixed_seconds_device{}, 2, 1e15, 0.0);
    sim::simulator s(g, cl, cost);
    const sim::placement p{1, 1, 0, 1, 0};
    CHECK(brute_force_best_step(s, p) == doctest::Approx(16.0));  // no priority list does better

    const auto make_net = [](const auto& task, std::mt19937_64& gen) {
        return test::small_policy(task.num_choices(), gen);
    };
    const tasks::train_config tc{
        .ppo = {.updates = 8, .samples_per_update = 16, .minibatch = 16, .learning_rate = 3e-3}};
    tasks::scheduling_rounds_config rounds{.rounds = 2, .prior = 1};
    std::mt19937_64 rng(3);
    const auto listed = tasks::train_scheduling(s, p, {}, make_net, tc, rng, rl::null_visitor{}, rounds);
    CHECK(listed.best.result.step_time == doctest::Approx(16.0));
    CHECK(listed.best.decision.dispatch == sim::dispatch_order::ready);

    // the last round runs sequences: its middle level is the list schedule (16 s) and one level of b
    // ahead of a makes device 0 wait for it
    rounds.sequence_rounds = 1;
    rounds.sequence_levels.step = 0.25;
    std::mt19937_64 again(3);
    const auto waited = tasks::train_scheduling(s, p, {}, make_net, tc, again, rl::null_visitor{}, rounds);
    CHECK(waited.best.result.step_time == doctest::Approx(12.0));
    CHECK(waited.best.decision.dispatch == sim::dispatch_order::sequence);
    CHECK(waited.best_from != tasks::best_source::incumbent);
    CHECK(waited.updates == 8);
    CHECK(s.run(p, {.priorities = waited.best.decision.priorities, .dispatch = sim::dispatch_order::sequence})
              .step_time == doctest::Approx(12.0));

    rounds.sequence_rounds = 3;
    CHECK_THROWS_WITH_AS(tasks::train_scheduling(s, p, {}, make_net, tc, rng, rl::null_visitor{}, rounds),
                         doctest::Contains("at most as many sequence rounds as rounds"), error);
    rounds.sequence_rounds = 1;
    rounds.sequence_levels.dispatch = sim::dispatch_order::ready;
    CHECK_THROWS_WITH_AS(tasks::train_scheduling(s, p, {}, make_net, tc, rng, rl::null_visitor{}, rounds),
                         doctest::Contains("sequence_levels.dispatch"), error);
}

TEST_CASE("train_scheduling: an incumbent competes in the first round; bad configurations are refused") {
    const flow_shop_setup shop;
    const auto& [g, cost, cl, p] = shop;
    sim::simulator s(g, cl, cost);
    const auto make_net = [](const auto& task, std::mt19937_64& gen) {
        return test::small_policy(task.num_choices(), gen);
    };
    // Johnson's order as an incumbent: nothing beats the optimum, so the incumbent stays the best
    const sim::decision johnson{.placement = p, .priorities = {0, 1, 1, 8, 8, 7, 7, 4, 4}, .fusion = {}};
    REQUIRE(s.run(p, {.priorities = johnson.priorities}).step_time == doctest::Approx(12.0));
    std::mt19937_64 rng(2);
    const auto r =
        tasks::train_scheduling(s, p, {}, make_net,
                                {.ppo = {.updates = 3, .samples_per_update = 4, .minibatch = 4, .learning_rate = 1e-3},
                                 .incumbents = {johnson}},
                                rng, rl::null_visitor{}, {.rounds = 3});
    CHECK(r.best_from == tasks::best_source::incumbent);
    CHECK(r.best.result.step_time == doctest::Approx(12.0));
    CHECK(r.updates == 3);

    const tasks::train_config one{.ppo = {.updates = 2, .samples_per_update = 2, .minibatch = 2}};
    CHECK_THROWS_WITH_AS(tasks::train_scheduling(s, p, {}, make_net, one, rng, rl::null_visitor{}, {.rounds = 0}),
                         doctest::Contains("at least one round"), error);
    CHECK_THROWS_WITH_AS(
        tasks::train_scheduling(s, p, {}, make_net, one, rng, rl::null_visitor{}, {.rounds = 2, .prior = -1}),
        doctest::Contains("a finite prior >= 0"), error);
    tasks::train_config resume = one;
    resume.resume = true;
    CHECK_THROWS_WITH_AS(tasks::train_scheduling(s, p, {}, make_net, resume, rng, rl::null_visitor{}, {.rounds = 2}),
                         doctest::Contains("rounds 1 for those"), error);
    CHECK_THROWS_WITH_AS(tasks::train_scheduling(s, p, std::vector<double>(3, 0.0), make_net, one, rng),
                         doctest::Contains("one finite priority per op"), error);
}

TEST_CASE("scheduling task: the ops at choice points of the base schedule, as the action space and as features") {
    const flow_shop_setup shop;
    const auto& [g, cost, cl, p] = shop;
    sim::simulator s(g, cl, cost);
    // the upward rank: a3 (rank 8) first while all four a are ready; b3 then starts alone at 3 s
    const auto base = baselines::critical_path_priorities(s, p);
    const auto chosen = tasks::ops_at_choice_points(g, s.run(p, {.priorities = base}));
    CHECK(chosen[0] == 0);  // the input
    for (graph::op_id a : {1, 3, 5, 7}) CHECK(chosen[a] == 1);
    CHECK(chosen[6] == 0);  // b3
    const tasks::scheduling_decider only(s, p, {.choice_points_only = true});
    for (graph::op_id o = 0; o < g.num_ops(); ++o) CHECK(only.active()[o] == chosen[o]);
    // levels of an op off the choice points change nothing
    auto acts = only.heuristic_actions();
    acts[6] = 0;
    CHECK(only.decide(acts).priorities == base);

    const tasks::scheduling_decider plain(s, p);
    CHECK(plain.extra_features().cols() == 0);
    CHECK(tasks::simulated_task(g, cl, plain, cost).num_features() == nn::num_node_features);
    const tasks::scheduling_decider seen(s, p, {.schedule_features = true});
    const auto& x = seen.extra_features();
    REQUIRE(x.rows() == static_cast<Eigen::Index>(g.num_ops()));
    REQUIRE(x.cols() == 5);
    CHECK(x(1, 4) > x(6, 4));  // a1 at a choice point, b3 not
    CHECK(x(2, 0) > x(1, 0));  // b1 on device 1, a1 on device 0
    CHECK(x(5, 1) > x(1, 1));  // a3's rank above a1's
    CHECK(x(2, 2) > x(6, 2));  // b1 waited (ready at 7 s, started at 8 s), b3 did not
    tasks::simulated_task task(g, cl, seen, cost);
    CHECK(task.num_features() == nn::num_node_features + 5);
    std::mt19937_64 rng(1);
    const auto& f = task.observe(rng);
    CHECK(f.x(6, static_cast<Eigen::Index>(nn::num_node_features) + 4) == doctest::Approx(x(6, 4)));
    // a policy of that width trains on it
    nn::go_policy<float> net({.features = task.num_features(),
                              .hidden = 16,
                              .sage_layers = 1,
                              .shared_attention_layers = 1,
                              .heads = 2,
                              .segment = 8,
                              .task_choices = {21}},
                             rng);
    const auto r = tasks::train(task, net, {.ppo = {.updates = 2, .samples_per_update = 4, .minibatch = 4}}, rng);
    CHECK(r.samples == 8);
}
