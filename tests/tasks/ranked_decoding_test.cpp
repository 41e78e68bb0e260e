// The guided decoder's ranked walk (tasks/ranked_decoding.hpp): HEFT's order with m-ETF's memory
// estimate, against a straightforward list scheduler; the placement task's choice of walk; PPO
// around the ranked walk coming within 2 % of a brute-force optimum.
#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>
#include <goopt/tasks/ranked_decoding.hpp>

#include <doctest/doctest.h>

#include "random_dag.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <unordered_map>

using namespace goopt;

namespace {

/// Without memory limits: each computing op in `order` on the device where it finishes first
/// (lowest index on ties), appended after that device's last op; a colocation group where its first
/// member went. Arrivals from the producers' finish times and links, recomputed for every device.
template <class S>
std::pair<sim::placement, std::vector<double>> ranked_reference(const S& s, const std::vector<graph::op_id>& order) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops(), nd = c.num_devices();
    constexpr double inf = std::numeric_limits<double>::infinity();
    sim::placement p(n, 0);
    std::vector<double> finish(n, 0), start(n, 0), free_at(nd, 0);
    std::unordered_map<std::int32_t, sim::device_id> group;
    for (graph::op_id o : order) {
        double best_finish = inf, best_start = 0;
        sim::device_id best = 0;
        for (sim::device_id d = 0; d < nd; ++d) {
            double ready = 0;
            for (graph::tensor_id t : g.get_op(o).inputs) {
                const graph::op_id q = g.producer(t);
                if (g.get_op(q).spec().has(ops::source)) continue;
                double a = finish[q];
                if (p[q] != d)
                    a += c.get_link(c.route(p[q], d)).transfer_time(static_cast<double>(g.type_of(t).bytes()));
                ready = std::max(ready, a);
            }
            const double st = std::max(free_at[d], ready);
            const auto grp = g.get_op(o).colocation;
            const bool allowed = grp < 0 || !group.count(grp) || group[grp] == d;
            if (allowed && st + s.op_time(o, d) < best_finish)
                best_finish = st + s.op_time(o, d), best_start = st, best = d;
        }
        p[o] = best;
        start[o] = best_start;
        finish[o] = best_finish;
        free_at[best] = best_finish;
        // the op's group, and the groups of the sources it reads first, go where it went
        if (g.get_op(o).colocation >= 0) group.try_emplace(g.get_op(o).colocation, best);
        for (graph::tensor_id t : g.get_op(o).inputs)
            if (const auto& q = g.get_op(g.producer(t)); q.spec().has(ops::source) && q.colocation >= 0)
                group.try_emplace(q.colocation, best);
    }
    return {p, start};
}

}  // namespace

TEST_CASE("ranked walk: zero-temperature draws with room everywhere are HEFT's order without insertion") {
    for (const char* name : {"rnnlm2", "wavenet_2x18"}) {
        CAPTURE(name);
        const auto g = models::find_workload(name).build();
        const auto cl = device::parse_cluster("4xV100:nvlink");
        sim::simulator s(g, cl);
        const auto order = tasks::ranked_order(s);
        // the order: every computing op once, after its computing producers
        std::vector<std::size_t> at(g.num_ops(), order.size());
        for (std::size_t i = 0; i < order.size(); ++i) at[order[i]] = i;
        std::size_t computing = 0, misordered = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            if (g.get_op(o).spec().has(ops::source)) continue;
            ++computing;
            for (graph::op_id q : g.predecessors(o))
                if (!g.get_op(q).spec().has(ops::source) && at[q] >= at[o]) ++misordered;
        }
        CHECK(order.size() == computing);
        CHECK(misordered == 0);
        const baselines::baechi_config roomy{.memory_fraction = 1e6};
        std::size_t drawn = 0;
        const auto d = tasks::guided_ranked_list(s, roomy, order, 1e-5,
                                                 [&](graph::op_id, std::span<const double> score, sim::device_id best) {
                                                     CHECK(score[best] == 0.0);
                                                     for (double x : score) CHECK(x <= 0.0);
                                                     ++drawn;
                                                     return best;
                                                 });
        const auto [p, start] = ranked_reference(s, order);
        std::size_t placement_diff = 0, start_diff = 0;
        for (graph::op_id o : order) {
            placement_diff += d.placement[o] != p[o];
            start_diff += std::bit_cast<std::uint64_t>(d.priorities[o]) != std::bit_cast<std::uint64_t>(-start[o]);
        }
        CHECK(placement_diff == 0);
        CHECK(start_diff == 0);
        CHECK(drawn > 0);
        CHECK(drawn <= computing);
    }
}

TEST_CASE("ranked walk: memory limits close devices; bad orders and draws are refused") {
    const auto g = models::find_workload("rnnlm2").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto order = tasks::ranked_order(s);
    // a budget too small for the whole graph on a few devices: some ops are offered fewer devices
    double total = 0;
    for (graph::tensor_id t = 0; t < g.num_tensors(); ++t) total += static_cast<double>(g.type_of(t).bytes());
    const double capacity = static_cast<double>(cl.device(0).mem_capacity());
    const baselines::baechi_config tight{.memory_fraction = std::min(1.0, 0.5 * total / (4 * capacity)),
                                         .memory = baselines::baechi_memory_model::whole_step};
    std::size_t closed = 0;
    tasks::guided_ranked_list(s, tight, order, 1e-5,
                              [&](graph::op_id, std::span<const double> score, sim::device_id b) {
                                  for (double x : score)
                                      closed += x == -std::numeric_limits<double>::infinity() ? 1 : 0;
                                  return b;
                              });
    CHECK(closed > 0);
    // a draw of a closed device, an op before its producer
    CHECK_THROWS_WITH_AS(tasks::guided_ranked_list(s, tight, order, 1e-5,
                                                   [&](graph::op_id, std::span<const double> score, sim::device_id b) {
                                                       for (sim::device_id q = 0; q < score.size(); ++q)
                                                           if (score[q] == -std::numeric_limits<double>::infinity())
                                                               return q;
                                                       return b;
                                                   }),
                         doctest::Contains("a device whose score is finite"), error);
    std::vector<graph::op_id> reversed(order.rbegin(), order.rend());
    CHECK_THROWS_WITH_AS(
        tasks::guided_ranked_list(s, tight, reversed, 1e-5,
                                  [](graph::op_id, std::span<const double>, sim::device_id b) { return b; }),
        doctest::Contains("before its producer"), error);
}

TEST_CASE("placement task: the guided walk is m-ETF's below ranked_from_ops ops, HEFT's order from there") {
    const auto g = models::find_workload("rnnlm2").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    const auto zero = nn::matrix<double>::Zero(static_cast<Eigen::Index>(g.num_ops()), 4);
    auto make = [&](tasks::guided_walk walk, std::size_t from) {
        return tasks::placement_task(g, cl, cost::roofline_model{},
                                     {.schedule = tasks::ready_order::critical_path,
                                      .decoder = tasks::placement_decoder::guided,
                                      .walk = walk,
                                      .ranked_from_ops = from});
    };
    auto etf = make(tasks::guided_walk::automatic, g.num_ops() + 1);
    auto ranked = make(tasks::guided_walk::automatic, g.num_ops());
    CHECK_FALSE(etf.ranked_walk());
    CHECK(ranked.ranked_walk());
    CHECK(make(tasks::guided_walk::ranked, g.num_ops() + 1).ranked_walk());
    CHECK_FALSE(make(tasks::guided_walk::earliest_start, 0).ranked_walk());
    std::mt19937_64 rng(2);
    const auto& obs = ranked.observe(rng);
    // zero logits decoded greedily: m-ETF's placement, or the ranked walk's own zero-score choice
    const auto metf = baselines::m_etf(etf.simulator());
    CHECK(etf.decode(obs, zero, 0, true, 0).actions == std::vector<int>(metf.placement.begin(), metf.placement.end()));
    const auto own =
        tasks::guided_ranked_list(ranked.simulator(), {}, tasks::ranked_order(ranked.simulator()),
                                  tasks::mean_fastest_op_time(ranked.simulator(), 1.0),
                                  [](graph::op_id, std::span<const double>, sim::device_id b) { return b; });
    const auto greedy = ranked.decode(obs, zero, 0, true, 0);
    CHECK(greedy.actions == std::vector<int>(own.placement.begin(), own.placement.end()));
    // samples: exact rows (the drawn device open; a forced row one open entry), one decision per seed
    ranked.set_workers(2);
    std::size_t differ = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        const auto a = ranked.decode(obs, zero, seed, false, 0);
        CHECK(ranked.decode(obs, zero, seed, false, 1).actions == a.actions);
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            const auto row = a.bias.row(static_cast<Eigen::Index>(o));
            CHECK(std::isfinite(row(a.actions[o])));
            if (g.get_op(o).spec().has(ops::source)) CHECK((row.array() > -1e30f).count() == 1);
            differ += a.actions[o] != greedy.actions[o] ? 1 : 0;
        }
    }
    CHECK(differ > 0);
}

TEST_CASE("guided placement on the ranked walk: PPO comes within 2 % of the brute-force optimum") {
    const auto g = test::random_dag(16, 8);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    const tasks::placement_task_config tc{.schedule = tasks::ready_order::critical_path,
                                          .decoder = tasks::placement_decoder::guided,
                                          .walk = tasks::guided_walk::ranked};
    tasks::placement_task task(g, cl, cost::roofline_model{}, tc);
    // brute force over every computing op's device (sources with their first reader)
    const double optimum = test::two_device_optimum(task, g);
    std::mt19937_64 rng0(0);
    const auto zero = nn::matrix<double>::Zero(static_cast<Eigen::Index>(g.num_ops()), 2);
    const double start =
        task.score(task.decide(task.decode(task.observe(rng0), zero, 0, true, 0).actions), 0).step_time;
    CHECK(start > optimum * 1.05);  // the walk's own choice leaves something to learn
    // set member by member: GCC 12 warns (-Wmaybe-uninitialized, a false positive) on the aggregate
    tasks::placement_config c;
    c.ppo = {.updates = 30, .samples_per_update = 64, .minibatch = 64, .epochs = 4, .learning_rate = 1e-2};
    c.policy = {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8};
    c.task = tc;
    c.progress = {.status = rl::status_mode::never};
    std::mt19937_64 rng(1);
    const auto r = tasks::train_placement(g, cl, cost::roofline_model{}, c, rng);
    CHECK(r.best_from == tasks::best_source::sample);
    // measured: 1.7 % above the optimum after 30 updates and after 80 (m-ETF's walk reaches it:
    // guided_placement_test.cpp); the ranked walk's own plan is more than 5 % above
    CHECK(r.best.result.step_time < start);
    CHECK(r.best.result.step_time <= optimum * 1.02);
}
