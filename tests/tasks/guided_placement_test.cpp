#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <doctest/doctest.h>

#include "random_dag.hpp"

#include <cmath>
#include <limits>
#include <random>

using namespace goopt;
using test::random_dag;

namespace {

nn::matrix<double> zero_logits(std::size_t n, std::size_t k) {
    return nn::matrix<double>::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
}

}  // namespace

TEST_CASE("guided placement decoder: zero logits decoded greedily are m-ETF's placement; every row is exact") {
    const auto w = models::find_workload("rnnlm2");
    const auto g = w.build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    tasks::placement_task task(
        g, cl, cost::roofline_model{},
        {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided});
    CHECK(task.guided());
    std::mt19937_64 rng(3);
    const auto& obs = task.observe(rng);
    const auto zero = zero_logits(g.num_ops(), cl.num_devices());
    const auto metf = baselines::m_etf(task.simulator());
    const auto greedy = task.decode(obs, zero, 0, true, 0);
    CHECK(std::equal(greedy.actions.begin(), greedy.actions.end(), metf.placement.begin(), metf.placement.end()));
    CHECK(task.decide(greedy.actions).placement == metf.placement);

    // samples depart from m-ETF; each row's drawn device has a finite bias, a forced row (a source,
    // a group member placed before) exactly one finite entry, at its device
    tasks::placement_task hot(g, cl, cost::roofline_model{},
                              {.schedule = tasks::ready_order::critical_path,
                               .decoder = tasks::placement_decoder::guided,
                               .temperature = 20.0});
    std::size_t differ = 0, choices = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        const auto s = hot.decode(obs, zero, seed, false, 0);
        REQUIRE(s.actions.size() == g.num_ops());
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            const auto row = s.bias.row(static_cast<Eigen::Index>(o));
            std::size_t finite = 0;
            for (Eigen::Index j = 0; j < row.size(); ++j) finite += std::isfinite(row(j)) ? 1 : 0;
            CHECK(std::isfinite(row(s.actions[o])));
            if (g.get_op(o).spec().has(ops::source)) CHECK(finite == 1);
            choices += finite > 1 ? 1 : 0;
            differ += s.actions[o] != static_cast<int>(metf.placement[o]) ? 1 : 0;
        }
        // the same seed draws the same decision, on any worker
        hot.set_workers(2);
        CHECK(hot.decode(obs, zero, seed, false, 1).actions == s.actions);
        CHECK_NOTHROW(hot.simulator().check_placement(hot.decide(s.actions).placement));
    }
    CHECK(choices > 0);
    CHECK(differ > 0);
    // bad input: a temperature that is not positive, logits of another shape
    CHECK_THROWS_AS(tasks::placement_task(g, cl, cost::roofline_model{},
                                          {.decoder = tasks::placement_decoder::guided, .temperature = 0}),
                    error);
    CHECK_THROWS_WITH_AS(task.decode(obs, zero_logits(g.num_ops(), 3), 1, false, 0), doctest::Contains("ops x devices"),
                         error);
}

TEST_CASE("guided placement decoder anchored on m-SCT's placement: zero logits keep it; samples depart") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto msct = baselines::m_sct(s).placement;
    REQUIRE(msct != baselines::m_etf(s).placement);
    tasks::placement_task task(
        g, cl, cost::roofline_model{},
        {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided, .anchor = msct});
    std::mt19937_64 rng(3);
    const auto& obs = task.observe(rng);
    const auto zero = zero_logits(g.num_ops(), cl.num_devices());
    CHECK(task.decide(task.decode(obs, zero, 0, true, 0).actions).placement == msct);
    const auto x = task.decode(obs, zero, 5, false, 0);
    const auto p = task.decide(x.actions).placement;
    std::size_t moved = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        CHECK(std::isfinite(x.bias(static_cast<Eigen::Index>(o), x.actions[o])));
        moved += p[o] != msct[o] ? 1 : 0;
    }
    CHECK(moved > 0);
    CHECK(moved < g.num_ops() / 2);
    // the anchor's own priorities (ready_order::given): the greedy decode is m-SCT's decision exactly
    const auto own = baselines::m_sct(s);
    tasks::placement_task exact(g, cl, cost::roofline_model{},
                                {.schedule = tasks::ready_order::given,
                                 .priorities = own.priorities,
                                 .decoder = tasks::placement_decoder::guided,
                                 .anchor = msct});
    const auto d = exact.decide(exact.decode(obs, zero, 0, true, 0).actions);
    CHECK(d.placement == own.placement);
    CHECK(d.priorities == own.priorities);
    // bad input: an anchor of another length, with the independent decoder, a strength that is not positive
    using cfg = tasks::placement_task_config;
    auto make = [&](cfg c) { return tasks::placement_task(g, cl, cost::roofline_model{}, std::move(c)); };
    CHECK_THROWS_AS(make({.decoder = tasks::placement_decoder::guided, .anchor = sim::placement(2, 0)}), error);
    CHECK_THROWS_WITH_AS(make({.anchor = msct}), doctest::Contains("guided decoder"), error);
    CHECK_THROWS_WITH_AS(make({.schedule = tasks::ready_order::given}), doctest::Contains("one finite priority"),
                         error);
    CHECK_THROWS_WITH_AS(make({.decoder = tasks::placement_decoder::guided, .anchor_strength = 0}),
                         doctest::Contains("anchor_strength"), error);
}

TEST_CASE("anchored decoder with a ladder of strengths: each sample departs at one of them, as its bias says") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto msct = baselines::m_sct(s).placement;
    const tasks::placement_task_config c{.schedule = tasks::ready_order::critical_path,
                                         .decoder = tasks::placement_decoder::guided,
                                         .anchor = msct,
                                         .anchor_strengths = {1.0, 40.0}};
    tasks::placement_task task(g, cl, cost::roofline_model{}, c);
    std::mt19937_64 rng(3);
    const auto& obs = task.observe(rng);
    const auto zero = zero_logits(g.num_ops(), cl.num_devices());
    CHECK(task.decide(task.decode(obs, zero, 0, true, 0).actions).placement == msct);  // the mode: no ladder
    std::size_t near = 0, far = 0;
    for (std::uint64_t seed = 0; seed < 32; ++seed) {
        const auto x = task.decode(obs, zero, seed, false, 0);
        CHECK(task.decode(obs, zero, seed, false, 0).actions == x.actions);  // the seed decides the strength too
        // the sample's strength, read from its bias: a device other than the anchor's scores at most -strength
        // (m-ETF's own score is at most 0), and at exactly -1 where m-ETF prefers it under strength 1
        double closest = -std::numeric_limits<double>::infinity();
        std::size_t moved = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            const auto oo = static_cast<Eigen::Index>(o);
            moved += x.actions[o] != static_cast<int>(msct[o]) ? 1 : 0;
            if (x.bias(oo, msct[o]) != 0) continue;  // a row the decoder forced elsewhere
            for (sim::device_id q = 0; q < cl.num_devices(); ++q)
                if (q != msct[o]) closest = std::max(closest, static_cast<double>(x.bias(oo, q)));
        }
        CHECK(x.stratum == (closest >= -1.0 ? 0u : 1u));  // the rung of the ladder, for PPO's advantages
        if (closest >= -1.0) {
            ++near;
        } else {
            CHECK(closest <= -40.0);
            CHECK(moved == 0);  // e^-40: no op leaves the anchor
            ++far;
        }
    }
    CHECK(near > 4);
    CHECK(far > 4);
    using cfg = tasks::placement_task_config;
    auto make = [&](cfg x) { return tasks::placement_task(g, cl, cost::roofline_model{}, std::move(x)); };
    CHECK_THROWS_WITH_AS(
        make({.decoder = tasks::placement_decoder::guided, .anchor = msct, .anchor_strengths = {2.0, 0.0}}),
        doctest::Contains("anchor_strengths"), error);
    CHECK_THROWS_WITH_AS(make({.decoder = tasks::placement_decoder::guided,
                               .anchor = msct,
                               .anchor_strengths = {std::numeric_limits<double>::quiet_NaN()}}),
                         doctest::Contains("anchor_strengths"), error);
}

TEST_CASE("guided placement decoder anchored on HEFT's training-step placement: weights stay apart from readers") {
    // HEFT places a weight (and its update, in the weight's colocation group) apart from the op that
    // reads it first; m-ETF would bring the weight along with that reader. The anchor pins sources.
    const auto g = models::find_workload("transformer_xl2").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto heft = baselines::heft(s);
    std::size_t apart = 0;  // weights HEFT puts on another device than their first reader's
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (g.get_op(o).kind == ops::op_kind::weight)
            for (graph::tensor_id t : g.get_op(o).outputs)
                if (!g.get_tensor(t).uses.empty())
                    apart += heft.placement[g.get_tensor(t).uses.front().op] != heft.placement[o];
    REQUIRE(apart > 0);
    tasks::placement_task task(g, cl, cost::roofline_model{},
                               {.schedule = tasks::ready_order::given,
                                .priorities = heft.priorities,
                                .decoder = tasks::placement_decoder::guided,
                                .anchor = heft.placement});
    std::mt19937_64 rng(3);
    const auto& obs = task.observe(rng);
    const auto d = task.decide(task.decode(obs, zero_logits(g.num_ops(), cl.num_devices()), 0, true, 0).actions);
    CHECK(d.placement == heft.placement);
    CHECK(sim::run(s, d).step_time == doctest::Approx(sim::run(s, heft.decision()).step_time).epsilon(1e-12));
}

TEST_CASE("guided placement decoder anchored where m-ETF's memory estimate closes the anchor's devices") {
    // devices of 4 KiB: by m-ETF's estimate no op fits anywhere, so without the anchor each goes to
    // the roomiest device; the anchor's devices stay open, and zero logits keep the anchor
    const auto g = random_dag(7, 12);
    auto v100 = device::describe(device::v100);
    v100.capacity = 4096;
    const auto cl = device::cluster<device::device_spec>::all_to_all(v100, 3, 25e9, 5e-6);
    sim::simulator s(g, cl);
    sim::placement anchor(g.num_ops());
    for (graph::op_id o = 0; o < g.num_ops(); ++o) anchor[o] = static_cast<sim::device_id>((o * 7 + 1) % 3);
    // both walks: m-ETF's earliest start, and the ranked list large graphs take (GNMT-8's 60k ops)
    for (const auto walk : {tasks::guided_walk::earliest_start, tasks::guided_walk::ranked}) {
        CAPTURE(static_cast<int>(walk));
        tasks::placement_task plain(g, cl, cost::roofline_model{},
                                    {.decoder = tasks::placement_decoder::guided, .walk = walk});
        tasks::placement_task anchored(g, cl, cost::roofline_model{},
                                       {.decoder = tasks::placement_decoder::guided, .anchor = anchor, .walk = walk});
        std::mt19937_64 rng(3);
        const auto zero = zero_logits(g.num_ops(), cl.num_devices());
        const auto m_etf = plain.decide(plain.decode(plain.observe(rng), zero, 0, true, 0).actions);
        REQUIRE(m_etf.placement != anchor);  // the estimate alone would not reproduce it
        const auto d = anchored.decide(anchored.decode(anchored.observe(rng), zero, 0, true, 0).actions);
        CHECK(d.placement == anchor);
    }
}

TEST_CASE("guided placement: PPO around m-ETF finds the brute-force optimum the heuristics miss") {
    const auto g = random_dag(16, 8);  // m-ETF, m-SCT and HEFT all > 15 % above the optimum on two V100s
    const auto cl = device::parse_cluster("2xV100:nvlink");
    tasks::placement_task task(
        g, cl, cost::roofline_model{},
        {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided});
    // brute force over every computing op's device (sources with their first reader)
    const double optimum = test::two_device_optimum(task, g);
    auto& s = task.simulator();
    const double metf = task.score(task.decision_of(baselines::m_etf(s).placement), 0).step_time;
    for (const double heuristic :
         {metf, sim::run(s, baselines::m_etf(s)).step_time, sim::run(s, baselines::m_sct(s)).step_time,
          sim::run(s, baselines::heft(s).decision()).step_time})
        CHECK(heuristic > optimum * 1.15);  // the heuristics leave something to learn here

    tasks::placement_config c{
        .ppo = {.updates = 30, .samples_per_update = 64, .minibatch = 64, .epochs = 4, .learning_rate = 3e-3},
        .policy = {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8},
        .task = {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided},
        .progress = {.status = rl::status_mode::never}};
    struct first_mode {
        double step = 0;
        void on_sample(std::span<const int>, const tasks::step_outcome&) {}
        void on_mode(std::span<const int>, const tasks::step_outcome& o) {
            if (step == 0) step = o.step_time;
        }
        bool on_update(const rl::update_stats&) { return true; }
    };
    // Five seeds, one of which must reach it. Some policies settle 1.7 % above the optimum and stay
    // there at any budget: in a seed sweep (offsets of 1,000 to the seed) 6 of 40 did at a learning
    // rate of 1e-2, 2 of 40 at 3e-3; with three seeds, all three did at 1 offset of 60
    std::size_t optimal = 0;
    for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
        CAPTURE(seed);
        first_mode mode;
        std::mt19937_64 rng(seed);
        const auto r = tasks::train_placement(g, cl, cost::roofline_model{}, c, rng, mode);
        CHECK(mode.step == doctest::Approx(metf).epsilon(1e-12));  // a fresh policy's mode is m-ETF's placement
        CHECK(r.best_from == tasks::best_source::sample);          // no incumbent: learned
        CHECK(r.best.result.step_time <= optimum * 1.02);
        optimal += r.best.result.step_time <= optimum * (1 + 1e-9);
    }
    CHECK(optimal >= 1);
    // the same on two threads: samples are decoded on the workers, each from its own seed
    auto two = c;
    two.ppo.threads = 2;
    std::mt19937_64 rng1(1), rng2(1);
    const auto r = tasks::train_placement(g, cl, cost::roofline_model{}, c, rng1);
    const auto r2 = tasks::train_placement(g, cl, cost::roofline_model{}, two, rng2);
    CHECK(r2.best.decision.placement == r.best.decision.placement);
    CHECK(r2.best_sample == r.best_sample);
}
