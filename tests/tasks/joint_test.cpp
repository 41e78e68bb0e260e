#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <doctest/doctest.h>

#include "random_dag.hpp"
#include "small_policy.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <random>

using namespace goopt;

namespace {

nn::matrix<double> joint_zero_logits(std::size_t n, std::size_t k) {
    return nn::matrix<double>::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
}

/// The best step of placement + fusion (3 fusion levels) on 2 devices over every computing op's
/// (device, fusion level), each source with its first reader: a graph of at most 6 computing ops.
template <class Task> double joint_brute_force_optimum(Task& task, const graph::computation_graph& g) {
    std::vector<graph::op_id> computing;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (!g.get_op(o).spec().has(ops::source)) computing.push_back(o);
    REQUIRE(computing.size() <= 6);
    REQUIRE(task.num_choices() == 6);
    std::vector<int> acts = task.heuristic_actions();
    std::size_t total = 1;
    for (std::size_t i = 0; i < computing.size(); ++i) total *= 6;
    double optimum = 1e300;
    std::mt19937_64 rng(1);
    const auto& obs = task.observe(rng);
    for (std::size_t m = 0; m < total; ++m) {
        std::size_t x = m;
        for (graph::op_id o : computing) {
            acts[o] = static_cast<int>(x % 6);
            x /= 6;
        }
        for (graph::op_id o = 0; o < g.num_ops(); ++o)
            if (g.get_op(o).spec().has(ops::source))
                acts[o] = acts[g.get_tensor(g.get_op(o).outputs[0]).uses[0].op] / 3 * 3 + 1;
        const auto out = task.evaluate(obs, acts, 0);
        if (out.valid && !out.oom) optimum = std::min(optimum, out.step_time);
    }
    return optimum;
}

/// Whether two fusion groupings put the same ops together (group ids may differ; a group of one op
/// is the op alone).
bool same_partition(const sim::fusion_groups& a, const sim::fusion_groups& b) {
    auto canonical = [](const sim::fusion_groups& f) {
        std::map<std::int32_t, std::pair<std::size_t, std::size_t>> first_and_size;  // id -> (first op, members)
        for (std::size_t o = 0; o < f.size(); ++o)
            if (f[o] != sim::no_group) {
                auto [it, fresh] = first_and_size.try_emplace(f[o], o, 0);
                ++it->second.second;
            }
        std::vector<std::int64_t> c(f.size(), -1);
        for (std::size_t o = 0; o < f.size(); ++o)
            if (f[o] != sim::no_group && first_and_size[f[o]].second > 1)
                c[o] = static_cast<std::int64_t>(first_and_size[f[o]].first);
        return c;
    };
    return a.size() == b.size() && canonical(a) == canonical(b);
}

/// The curriculum tests' small network, from its heuristic (zero head).
struct fresh_small_policy {
    template <class Task> auto operator()(const Task& t, std::mt19937_64& rng) const {
        auto net = test::small_policy(t.num_choices(), rng);
        tasks::start_from_heuristic(net);
        return net;
    }
};

/// The curriculum tests' task: placement + fusion (3 levels) anchored on m-ETF's placement.
template <class Sim> tasks::joint_config placement_fusion_at_m_etf(Sim& s) {
    return {.tasks = {.placement = true, .scheduling = false, .fusion = true},
            .fusion_levels = 3,
            .anchor = baselines::m_etf(s).placement};
}

}  // namespace

TEST_CASE("joint task: zero logits decoded greedily are the heuristic pipeline, for the triple and each pair") {
    const auto g = models::find_workload("transformer_xl2").build();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s).placement;
    std::mt19937_64 rng(1);

    tasks::joint_task all(g, cl);
    CHECK(all.config().tasks.name() == "placement+scheduling+fusion");
    CHECK(all.num_choices() == 2 * 5 * 5);
    const auto& h = all.heuristic_decision();
    CHECK(h.placement == metf);
    CHECK(h.priorities == baselines::critical_path_priorities(s, metf));
    CHECK(h.fusion == baselines::priority_fusion(s, metf));
    CHECK(all.decide(all.heuristic_actions()).fusion == h.fusion);

    // scheduling + fusion on a given placement; placement + fusion under FIFO; placement + scheduling unfused
    tasks::joint_task sf(g, cl, cost::roofline_model{},
                         {.tasks = {.placement = false, .scheduling = true, .fusion = true}, .placement = metf});
    CHECK(sf.config().tasks.name() == "scheduling+fusion");
    CHECK(sf.num_choices() == 25);
    CHECK(sf.heuristic_decision().placement == metf);
    CHECK(sf.heuristic_decision().fusion == h.fusion);
    tasks::joint_task pf(g, cl, cost::roofline_model{}, {.tasks = {.placement = true, .scheduling = false}});
    CHECK(pf.num_choices() == 2 * 5);
    CHECK(pf.heuristic_decision().priorities.empty());
    CHECK(pf.heuristic_decision().placement == metf);
    tasks::joint_task ps(g, cl, cost::roofline_model{}, {.tasks = {.fusion = false}});
    CHECK(ps.heuristic_decision().fusion.empty());
    CHECK(ps.heuristic_decision().priorities == h.priorities);

    // samples: every row's action has a finite bias (the ratio's denominator is exact), a source's row
    // exactly one; the same seed draws the same decision on any worker; samples depart from the heuristic
    const auto& obs = all.observe(rng);
    const auto zero = joint_zero_logits(g.num_ops(), all.num_choices());
    all.set_workers(2);
    std::size_t differ = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        const auto x = all.decode(obs, zero, seed, false, 0);
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            const auto row = x.bias.row(static_cast<Eigen::Index>(o));
            CHECK(std::isfinite(row(x.actions[o])));
            if (g.get_op(o).spec().has(ops::source)) CHECK((row.array() > -1e30f).count() == 1);
            differ += x.actions[o] != all.heuristic_actions()[o] ? 1 : 0;
        }
        CHECK(all.decode(obs, zero, seed, false, 1).actions == x.actions);
        const auto out = all.evaluate(obs, x.actions, 1);
        CHECK(out.valid);
        CHECK(out.step_time > 0);
    }
    CHECK(differ > 0);
}

TEST_CASE("joint task: anchored on another heuristic's placement, zero logits keep it and samples depart from it") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto msct = baselines::m_sct(s).placement;
    REQUIRE(msct != baselines::m_etf(s).placement);  // else the anchor would change nothing
    tasks::joint_task t(g, cl, cost::roofline_model{}, {.anchor = msct});
    const auto& h = t.heuristic_decision();
    CHECK(h.placement == msct);
    CHECK(h.priorities == baselines::critical_path_priorities(s, msct));
    CHECK(h.fusion == baselines::priority_fusion(s, msct));
    // m-SCT's own priorities as scheduling's base: the pipeline is m-SCT's decision with priority fusion
    const auto own = baselines::m_sct(s);
    tasks::joint_task with_own(g, cl, cost::roofline_model{}, {.anchor = msct, .priorities = own.priorities});
    CHECK(with_own.heuristic_decision().priorities == own.priorities);
    CHECK(with_own.heuristic_decision().placement == msct);
    // samples: the action drawn always has a finite bias; some ops move, most stay
    std::mt19937_64 rng(1);
    const auto& obs = t.observe(rng);
    const auto zero = joint_zero_logits(g.num_ops(), t.num_choices());
    const auto x = t.decode(obs, zero, 7, false, 0);
    std::size_t moved = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        CHECK(std::isfinite(x.bias(static_cast<Eigen::Index>(o), x.actions[o])));
        moved += t.decide(x.actions).placement[o] != msct[o] ? 1 : 0;
    }
    CHECK(moved > 0);
    CHECK(moved < g.num_ops() / 2);
    CHECK(t.evaluate(obs, x.actions, 0).valid);
    // the scores: the anchor's device 0, the others m-ETF's minus the strength, no room stays no room
    std::vector<double> score{0.0, -0.5, -std::numeric_limits<double>::infinity()};
    CHECK(tasks::anchor_scores(score, 1, 0, 2.0) == 1);
    CHECK(score[0] == -2.0);
    CHECK(score[1] == 0.0);
    CHECK(score[2] == -std::numeric_limits<double>::infinity());
    CHECK(tasks::anchor_scores(score, 2, 1, 2.0) == 1);  // no room on the anchor's device: m-ETF's choice
    CHECK(score[1] == 0.0);
}

TEST_CASE(
    "joint task: ladders of anchor strengths and level priors, one rung of each per sample, reported as its stratum") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto msct = baselines::m_sct(s).placement;
    const tasks::joint_config config{.anchor = msct, .anchor_strengths = {1.0, 40.0}};
    tasks::joint_task t(g, cl, cost::roofline_model{}, config);
    CHECK(t.heuristic_decision().placement == msct);  // the mode keeps anchor_strength
    std::mt19937_64 rng(1);
    const auto& obs = t.observe(rng);
    const auto zero = joint_zero_logits(g.num_ops(), t.num_choices());
    std::size_t near = 0, far = 0, near_moved = 0;
    for (std::uint64_t seed = 0; seed < 24; ++seed) {
        const auto x = t.decode(obs, zero, seed, false, 0);
        CHECK(t.decode(obs, zero, seed, false, 0).actions == x.actions);  // the seed decides the rung too
        REQUIRE(x.stratum < 2);
        const auto placed = t.decide(x.actions).placement;
        std::size_t moved = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o) moved += placed[o] != msct[o] ? 1 : 0;
        if (x.stratum == 1) {
            CHECK(moved == 0);  // e^-40: no op leaves the anchor
            ++far;
        } else {
            near_moved += moved;
            ++near;
        }
    }
    CHECK(near > 3);
    CHECK(far > 3);
    CHECK(near_moved > 0);
    // a second ladder, of level priors: its rung joins the stratum (anchor rung x 2 + prior rung); at a prior
    // of 40 no op leaves the middle levels, at 0.5 many do
    tasks::joint_config both = config;
    both.level_priors = {40.0, 0.5};
    tasks::joint_task t2(g, cl, cost::roofline_model{}, both);
    CHECK(t2.heuristic_actions() == t.heuristic_actions());  // the mode keeps level_prior
    const std::size_t levels = t2.num_choices() / cl.num_devices(), middle = levels / 2;
    std::array<std::size_t, 4> seen{};
    for (std::uint64_t seed = 0; seed < 32; ++seed) {
        const auto x = t2.decode(obs, zero, seed, false, 0);
        REQUIRE(x.stratum < 4);
        ++seen[x.stratum];
        const auto placed = t2.decide(x.actions).placement;
        std::size_t off_middle = 0, moved = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            off_middle += static_cast<std::size_t>(x.actions[o]) % levels != middle ? 1 : 0;
            moved += placed[o] != msct[o] ? 1 : 0;
        }
        if (x.stratum % 2 == 0) CHECK(off_middle == 0);
        else CHECK(off_middle > g.num_ops() / 10);
        if (x.stratum / 2 == 1) CHECK(moved == 0);
    }
    for (std::size_t v : seen) CHECK(v > 2);
    CHECK_THROWS_WITH_AS(tasks::joint_task(g, cl, cost::roofline_model{}, {.level_priors = {-1.0}}),
                         doctest::Contains("level_priors"), error);
    // the first stage of the curriculum fixes the placement: no ladder, every sample in stratum 0
    tasks::joint_task fixed(g, cl, cost::roofline_model{}, tasks::levels_at_anchor(config));
    const auto zero_levels = joint_zero_logits(g.num_ops(), fixed.num_choices());
    for (std::uint64_t seed = 0; seed < 4; ++seed) CHECK(fixed.decode(obs, zero_levels, seed, false, 0).stratum == 0);
    auto make = [&](std::vector<double> ladder) {
        return tasks::joint_task(g, cl, cost::roofline_model{},
                                 {.anchor = msct, .anchor_strengths = std::move(ladder)});
    };
    CHECK_THROWS_WITH_AS(make({2.0, 0.0}), doctest::Contains("anchor_strengths"), error);
    CHECK_THROWS_WITH_AS(make({std::numeric_limits<double>::infinity()}), doctest::Contains("anchor_strengths"), error);
}

TEST_CASE("joint task: bad input gets a clear error") {
    const auto g = models::find_workload("transformer_xl2").build();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    using cfg = tasks::joint_config;
    auto make = [&](cfg c) { return tasks::joint_task(g, cl, cost::roofline_model{}, std::move(c)); };
    CHECK_THROWS_WITH_AS(make({.tasks = {false, false, false}}), doctest::Contains("no task to decide"), error);
    CHECK_THROWS_WITH_AS(make({.scheduling_levels = 4}), doctest::Contains("an odd number"), error);
    CHECK_THROWS_WITH_AS(make({.fusion_levels = 1}), doctest::Contains("an odd number >= 3"), error);
    CHECK_THROWS_WITH_AS(make({.fusion_step = 0}), doctest::Contains("fusion_step"), error);
    CHECK_THROWS_WITH_AS(make({.tasks = {.placement = false}, .placement = sim::placement(3, 0)}),
                         doctest::Contains("3"), error);
    CHECK_THROWS_WITH_AS(make({.anchor = sim::placement(3, 0)}), doctest::Contains("3"), error);
    CHECK_THROWS_WITH_AS(make({.tasks = {.placement = false}, .anchor = sim::placement(g.num_ops(), 0)}),
                         doctest::Contains("anchor"), error);
    CHECK_THROWS_WITH_AS(make({.anchor_strength = -1}), doctest::Contains("anchor_strength"), error);
    CHECK_THROWS_WITH_AS(make({.priorities = std::vector<double>(3, 1.0)}), doctest::Contains("one finite priority"),
                         error);
    // a chain of matmuls: two contractions never share a kernel, so there is nothing to fuse
    graph::computation_graph chain("matmul_chain");
    auto x = chain.input("x", {64, 64});
    for (int i = 0; i < 3; ++i)
        x = chain.add1(ops::op_kind::matmul, {x, chain.weight("w" + std::to_string(i), {64, 64})});
    chain.mark_output(x);
    CHECK_THROWS_WITH_AS(tasks::joint_task(chain, cl), doctest::Contains("no producer/consumer pair"),
                         tasks::nothing_to_decide);
    CHECK_NOTHROW(tasks::joint_task(chain, cl, cost::roofline_model{}, {.tasks = {.fusion = false}}));
    tasks::joint_task t(g, cl);
    std::mt19937_64 rng(1);
    CHECK_THROWS_WITH_AS(t.decode(t.observe(rng), joint_zero_logits(g.num_ops(), 3), 1, false, 0),
                         doctest::Contains("ops x devices x levels"), error);
    CHECK_THROWS_AS(t.decide(std::vector<int>(3, 0)), error);
    std::vector<int> bad = t.heuristic_actions();
    bad.back() = static_cast<int>(t.num_choices());
    CHECK_FALSE(t.evaluate(t.observe(rng), bad, 0).valid);  // a choice out of range is refused, not a crash
}

TEST_CASE("joint task: PPO on placement + fusion finds the brute-force optimum the heuristic pipeline misses") {
    // seed 5: under FIFO, m-ETF's placement with priority fusion is about 30 % above the optimum on two V100s
    const auto g = test::random_dag(5, 5);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    tasks::joint_task task(g, cl, cost::roofline_model{},
                           {.tasks = {.placement = true, .scheduling = false, .fusion = true}, .fusion_levels = 3});
    REQUIRE(task.num_choices() == 6);
    const double optimum = joint_brute_force_optimum(task, g);
    CHECK(task.reference().step_time > optimum * 1.2);  // the heuristic pipeline leaves something to learn

    std::mt19937_64 rng(1);
    (void)task.observe(rng);  // the generator's state as the brute force left it
    auto net = test::small_policy(task.num_choices(), rng);
    tasks::start_from_heuristic(net);
    const tasks::train_config tc{
        .ppo = {.updates = 30, .samples_per_update = 64, .minibatch = 64, .epochs = 4, .learning_rate = 1e-2}};
    const auto r = tasks::train(task, net, tc, rng);
    CHECK(r.best_from != tasks::best_source::incumbent);  // none given: learned
    CHECK(r.best.result.step_time <= optimum * (1 + 1e-9));
}

TEST_CASE(
    "joint task: anchored on a pipeline with greedy fusion, zero logits are that pipeline; a widened policy keeps the "
    "levels") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto metf = baselines::m_etf(s);
    sim::decision pipeline = metf;
    pipeline.fusion = baselines::greedy_fusion(g, metf.placement);
    const tasks::joint_config config{
        .anchor = metf.placement, .priorities = metf.priorities, .anchor_fusion = tasks::fusion_anchor::greedy};
    tasks::joint_task all(g, cl, cost::roofline_model{}, config);
    CHECK(all.reference().step_time == sim::run(s, pipeline).step_time);
    CHECK(all.heuristic_decision().placement == metf.placement);
    // the levels alone on the anchor's placement, then widened to every device block
    tasks::joint_task levels_task(g, cl, cost::roofline_model{}, tasks::levels_at_anchor(config));
    CHECK(levels_task.heuristic_decision().placement == metf.placement);
    CHECK_THROWS_WITH_AS(tasks::levels_at_anchor({}), doctest::Contains("an anchor placement"), error);
    CHECK(levels_task.reference().step_time == all.reference().step_time);
    std::mt19937_64 rng(2);
    nn::policy_config pc{.hidden = 16,
                         .sage_layers = 1,
                         .shared_attention_layers = 1,
                         .heads = 2,
                         .segment = 16,
                         .task_choices = {levels_task.num_choices()}};
    nn::go_policy<float> levels(pc, rng);
    pc.task_choices = {all.num_choices()};
    nn::go_policy<float> joint(pc, rng);
    tasks::widen_to_placement(levels, joint, cl.num_devices());
    const auto& obs = all.observe(rng);
    const auto a = levels.evaluate(obs, {}).logits[0];
    const auto b = joint.evaluate(obs, {}).logits[0];
    REQUIRE(b.cols() == 2 * a.cols());
    CHECK((b.leftCols(a.cols()) - a).cwiseAbs().maxCoeff() < 1e-5f);  // one product of another width: rounding
    CHECK((b.rightCols(a.cols()) - a).cwiseAbs().maxCoeff() < 1e-5f);
    nn::go_policy<float> wrong(pc, rng);
    CHECK_THROWS_WITH_AS(tasks::widen_to_placement(levels, wrong, 3), doctest::Contains("one block of level choices"),
                         error);
}

TEST_CASE("joint curriculum: train_joint's two stages are the trainings it names, and reach the brute-force optimum") {
    const auto g = test::random_dag(5, 5);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto config = placement_fusion_at_m_etf(s);
    tasks::joint_task task(g, cl, cost::roofline_model{}, config);
    const double optimum = joint_brute_force_optimum(task, g);
    REQUIRE(task.reference().step_time > optimum * 1.1);
    const auto fresh = fresh_small_policy{};
    const tasks::train_config tc{
        .ppo = {.updates = 30, .samples_per_update = 64, .minibatch = 64, .epochs = 4, .learning_rate = 1e-2}};
    const tasks::joint_curriculum_config halves{.first_stage_share = 0.5};
    REQUIRE(tasks::staged_curriculum(config, tc.ppo.updates, halves));
    // Three seeds per curriculum, one of which must reach it: in a seed sweep (offsets of 1,000 to
    // the seed, 60 of them) 3 runs of the even split settled above it, at 30 updates as at 60
    auto reaches = [&](const tasks::train_result& x) { return x.best.result.step_time <= optimum * (1 + 1e-9); };
    std::mt19937_64 rng(3);
    const auto r =
        tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, rng, rl::null_visitor{}, halves);
    CHECK(r.updates == 30);
    CHECK(r.samples == 30 * 64);
    CHECK(r.best_from != tasks::best_source::incumbent);
    std::size_t even = reaches(r), quarters = 0;
    for (std::uint64_t seed : {4, 5}) {
        std::mt19937_64 more(seed);
        const auto x =
            tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, more, rl::null_visitor{}, halves);
        CHECK(x.best_from != tasks::best_source::incumbent);
        even += reaches(x);
    }
    CHECK(even >= 1);
    // the default curriculum (a quarter of the updates on the levels) reaches it too
    for (std::uint64_t seed : {3, 4, 5}) {
        std::mt19937_64 quarter(seed);
        const auto d = tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, quarter);
        CHECK(d.best_from != tasks::best_source::incumbent);
        quarters += reaches(d);
    }
    CHECK(quarters >= 1);

    // the same draws by hand: the levels at the anchor for 15 updates, widened, then the whole task for 15
    std::mt19937_64 by_hand(3);
    tasks::joint_task levels_task(g, cl, cost::roofline_model{}, tasks::levels_at_anchor(config));
    auto levels = fresh(levels_task, by_hand);
    tasks::train_config half = tc;
    half.ppo.updates = 15;
    const auto a = tasks::train(levels_task, levels, half, by_hand);
    auto joint = fresh(task, by_hand);
    tasks::widen_to_placement(levels, joint, cl.num_devices());
    const auto b = tasks::train(task, joint, half, by_hand);
    CHECK(r.best.result.step_time == std::min(a.best.result.step_time, b.best.result.step_time));
    CHECK(r.samples == a.samples + b.samples);

    // one stage: exactly tasks::train on the joint task
    std::mt19937_64 one(4), plain(4);
    const auto single = tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, one, rl::null_visitor{},
                                           {.first_stage_share = 0});
    auto net = fresh(task, plain);
    CHECK(single.best.result.step_time == tasks::train(task, net, tc, plain).best.result.step_time);

    CHECK_THROWS_WITH_AS(tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, rng, rl::null_visitor{},
                                            {.first_stage_share = 1}),
                         doctest::Contains("a share in [0, 1)"), error);
    tasks::train_config resume = tc;
    resume.resume = true;
    resume.checkpoint = "joint_curriculum_none.ckpt";
    CHECK_THROWS_WITH_AS(tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, resume, rng),
                         doctest::Contains("fresh weights"), error);
}

TEST_CASE("joint task: anchored on a decision of its own (tasks::anchored_on), zero logits decode that decision") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto msct = baselines::m_sct(s).placement;
    const tasks::joint_config config{.anchor = msct, .anchor_fusion = tasks::fusion_anchor::greedy};
    tasks::joint_task t(g, cl, cost::roofline_model{}, config);
    // a sampled decision: some ops moved, levels off the middle
    std::mt19937_64 rng(1);
    const auto& obs = t.observe(rng);
    const auto zero = joint_zero_logits(g.num_ops(), t.num_choices());
    const auto x = t.decode(obs, zero, 11, false, 0);
    const auto sampled = t.decide(x.actions);
    REQUIRE(sampled.placement != msct);
    REQUIRE(sampled.fusion != t.heuristic_decision().fusion);
    tasks::joint_task around(g, cl, cost::roofline_model{}, tasks::anchored_on(config, sampled));
    const auto& h = around.heuristic_decision();
    CHECK(h.placement == sampled.placement);
    CHECK(h.priorities == sampled.priorities);
    CHECK(same_partition(h.fusion, sampled.fusion));
    CHECK(around.reference().step_time == sim::run(s, sampled).step_time);

    // given groups: greedy fusion's own decode the same as the greedy anchor's, at any placement
    const tasks::joint_config given{.anchor = msct,
                                    .anchor_fusion = tasks::fusion_anchor::given,
                                    .fusion_groups = baselines::greedy_fusion(g, msct)};
    tasks::joint_task with_given(g, cl, cost::roofline_model{}, given);
    CHECK(same_partition(with_given.heuristic_decision().fusion, t.heuristic_decision().fusion));
    // on another placement a given group split across devices starts as its legal parts, never as one
    const auto parts = with_given.decide(x.actions).fusion;
    const auto& p = with_given.decide(x.actions).placement;
    for (graph::op_id a = 0; a < g.num_ops(); ++a)
        for (const auto& u : g.get_tensor(g.get_op(a).outputs[0]).uses)
            if (parts[a] != sim::no_group && parts[a] == parts[u.op]) CHECK(p[a] == p[u.op]);
    CHECK(sim::run(s, with_given.decide(x.actions)).step_time > 0);

    // the fusion task takes given groups the same way
    const tasks::fusion_decider greedy_anchor(s, msct, {}, {.anchor = tasks::fusion_anchor::greedy});
    const tasks::fusion_decider given_anchor(s, msct, {},
                                             {.anchor = tasks::fusion_anchor::given, .groups = given.fusion_groups});
    CHECK(same_partition(given_anchor.heuristic_decision().fusion, greedy_anchor.heuristic_decision().fusion));
    CHECK_THROWS_WITH_AS(tasks::fusion_decider(s, msct, {}, {.anchor = tasks::fusion_anchor::given}),
                         doctest::Contains("one group id per op"), error);

    // bad input
    tasks::joint_config short_groups = given;
    short_groups.fusion_groups.pop_back();
    CHECK_THROWS_WITH_AS(tasks::joint_task(g, cl, cost::roofline_model{}, short_groups),
                         doctest::Contains("one group id per op"), error);
    tasks::joint_config stray = config;
    stray.fusion_groups = given.fusion_groups;
    CHECK_THROWS_WITH_AS(tasks::joint_task(g, cl, cost::roofline_model{}, stray),
                         doctest::Contains("fusion_anchor::given"), error);
    sim::decision unscheduled = sampled;  // FIFO: equal priorities, which decode to FIFO
    unscheduled.priorities.clear();
    CHECK(tasks::anchored_on(config, unscheduled).priorities == std::vector<double>(g.num_ops(), 0.0));
    tasks::joint_task fifo_around(g, cl, cost::roofline_model{}, tasks::anchored_on(config, unscheduled));
    CHECK(fifo_around.reference().step_time == sim::run(s, unscheduled).step_time);
    unscheduled.priorities.assign(3, 1.0);
    CHECK_THROWS_WITH_AS(tasks::anchored_on(config, unscheduled), doctest::Contains("or none"), error);
}

TEST_CASE("joint task: FIFO's base (equal priorities) decodes to FIFO, and its levels step as on the critical path") {
    const auto g = models::find_workload("transformer_xl2").build();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto heft = baselines::heft(s).placement;
    const tasks::joint_config fifo{.tasks = {.placement = false, .scheduling = true, .fusion = false},
                                   .placement = heft,
                                   .priorities = std::vector<double>(g.num_ops(), 0.0)};
    tasks::joint_task t(g, cl, cost::roofline_model{}, fifo);
    CHECK(t.reference().step_time == s.run(heft, {}).step_time);
    // one op a level up: its priority is one step of the largest critical-path priority above the rest
    auto acts = t.heuristic_actions();
    graph::op_id moved = 0;
    while (g.get_op(moved).spec().has(ops::source)) ++moved;
    acts[moved] += 1;  // one scheduling level up (no fusion levels: one choice per level)
    const auto d = t.decide(acts);
    const auto cp = baselines::critical_path_priorities(s, heft);
    const double largest = *std::max_element(cp.begin(), cp.end());
    CHECK(d.priorities[moved] == doctest::Approx(0.1 * largest));
}

TEST_CASE("joint curriculum: the second stage in rounds, each anchored on the best decision so far") {
    const auto g = test::random_dag(5, 5);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto config = placement_fusion_at_m_etf(s);
    tasks::joint_task task(g, cl, cost::roofline_model{}, config);
    const double optimum = joint_brute_force_optimum(task, g);
    const auto fresh = fresh_small_policy{};
    const tasks::train_config tc{
        .ppo = {.updates = 31, .samples_per_update = 64, .minibatch = 64, .epochs = 4, .learning_rate = 1e-2}};
    std::mt19937_64 rng(3);
    const auto r = tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, rng, rl::null_visitor{},
                                      {.first_stage_share = 0.5, .rounds = 2});
    CHECK(r.updates == 31);
    CHECK(r.samples == 31 * 64);
    CHECK(r.best.result.step_time <= optimum * (1 + 1e-9));

    // the same draws by hand: 15 updates of the levels, then rounds of 8 and 8, each anchored on the best so far
    std::mt19937_64 by_hand(3);
    tasks::joint_task levels_task(g, cl, cost::roofline_model{}, tasks::levels_at_anchor(config));
    auto levels = fresh(levels_task, by_hand);
    tasks::train_config part = tc;
    part.ppo.updates = 15;
    auto best = tasks::train(levels_task, levels, part, by_hand).best;
    part.ppo.updates = 8;
    for (int k = 0; k < 2; ++k) {
        tasks::joint_task around(g, cl, cost::roofline_model{}, tasks::anchored_on(config, best.decision));
        CHECK(around.reference().step_time == sim::run(s, best.decision).step_time);
        auto net = fresh(around, by_hand);
        const auto b = tasks::train(around, net, part, by_hand).best;
        if (b.result.step_time < best.result.step_time) best = b;
    }
    CHECK(r.best.result.step_time == best.result.step_time);

    // determinism, and bad input
    std::mt19937_64 again(3);
    const auto twice = tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, again, rl::null_visitor{},
                                          {.first_stage_share = 0.5, .rounds = 2});
    CHECK(twice.best.decision.placement == r.best.decision.placement);
    CHECK(twice.best.decision.fusion == r.best.decision.fusion);
    CHECK(twice.best_index == r.best_index);
    CHECK_THROWS_WITH_AS(
        tasks::train_joint(g, cl, cost::roofline_model{}, config, fresh, tc, rng, rl::null_visitor{}, {.rounds = 0}),
        doctest::Contains("at least one round"), error);
}

TEST_CASE("joint bases: the scheduling base and fusion anchor give the decoder's pipeline its shortest step") {
    std::size_t priority_fusion_chosen = 0;
    for (const char* name : {"transformer_xl2", "wavenet_2x18"})
        for (const char* spec : {"2xV100:nvlink", "4xV100:nvlink"}) {
            CAPTURE(name);
            CAPTURE(spec);
            const auto g = models::find_workload(name).build();
            const auto cl = device::parse_cluster(spec);
            sim::simulator s(g, cl);
            const auto heft = baselines::heft(s).decision();
            const std::vector<double> fifo(g.num_ops(), 0.0);
            auto step = [&](const std::vector<double>& q, bool priority_fusion) {
                return sim::run(s, {.placement = heft.placement,
                                    .priorities = q,
                                    .fusion = priority_fusion ? baselines::priority_fusion(s, heft.placement)
                                                              : baselines::greedy_fusion(g, heft.placement)})
                    .step_time;
            };
            // the heuristic's own order where it is no slower than its critical path's, else none
            const auto greedy = baselines::greedy_fusion(g, heft.placement);
            const auto own = tasks::own_or_critical_path(s, heft.placement, heft.priorities, greedy);
            const double cp_step = sim::run(s, {.placement = heft.placement,
                                                .priorities = baselines::critical_path_priorities(s, heft.placement),
                                                .fusion = greedy})
                                       .step_time;
            CHECK((step(heft.priorities, false) <= cp_step ? own == heft.priorities : own.empty()));
            CHECK(tasks::own_or_critical_path(s, heft.placement, {}, greedy).empty());
            const auto b = tasks::pipeline_bases(s, heft.placement, heft.priorities, true);
            CHECK((b.priorities == heft.priorities || b.priorities == fifo));
            // the order first, under greedy fusion; then the fusion, under that order
            CHECK(step(b.priorities, false) == std::min(step(heft.priorities, false), step(fifo, false)));
            const bool pf = b.fusion == tasks::fusion_anchor::priority;
            priority_fusion_chosen += pf ? 1 : 0;
            const double chosen = step(b.priorities, pf);
            CHECK(chosen == std::min(step(b.priorities, false), step(b.priorities, true)));
            // the joint task anchored there decodes exactly that pipeline
            tasks::joint_task t(g, cl, cost::roofline_model{},
                                {.anchor = heft.placement, .priorities = b.priorities, .anchor_fusion = b.fusion});
            CHECK(t.reference().step_time == doctest::Approx(chosen).epsilon(1e-12));
            // without fusion decided, the anchor stays greedy and the order is the faster of the two
            const auto u = tasks::pipeline_bases(s, heft.placement, {}, false);
            CHECK(u.fusion == tasks::fusion_anchor::greedy);
            const double cp =
                s.run(heft.placement, {.priorities = baselines::critical_path_priorities(s, heft.placement)}).step_time;
            CHECK(s.run(heft.placement,
                        {.priorities = u.priorities.empty() ? baselines::critical_path_priorities(s, heft.placement)
                                                            : u.priorities})
                      .step_time <= std::min(cp, s.run(heft.placement, {}).step_time));
        }
    CHECK(priority_fusion_chosen > 0);  // transformer_xl2 on HEFT's placement: priority fusion's groups are faster
}
