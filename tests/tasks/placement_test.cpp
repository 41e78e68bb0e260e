#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include "../test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

using namespace goopt;
using ops::op_kind;

namespace {
struct no_reward {  // an environment with everything a Task needs but reward()
    using observation = int;
    struct outcome {
        double reward;
    };
    const int& observe(std::mt19937_64&);
    std::size_t num_choices() const;
    std::span<const std::uint8_t> active() const;
    void set_workers(std::size_t);
    outcome evaluate(const int&, std::span<const int>, std::size_t);
    std::size_t num_nodes() const;
    sim::decision decide(std::span<const int>) const;
    sim::simulation_result score(const sim::decision&, std::size_t);
};
static_assert(rl::Environment<no_reward>);
static_assert(!tasks::Task<no_reward>);
static_assert(tasks::Task<tasks::placement_task<device::device_spec>>);

/// Three independent chains of two matmuls on a shared input, summed: the best placement spreads
/// the chains over the devices, which a brute force over every deciding op finds.
graph::computation_graph branches() {
    graph::computation_graph g("branches");
    const auto x = g.input("x", {256, 256});
    std::vector<graph::tensor_id> ends;
    for (int b = 0; b < 3; ++b) {
        auto t = x;
        for (int k = 0; k < 2; ++k) {
            const auto w = g.weight(concat("w", b, k), {256, 256});
            t = g.add1(op_kind::matmul, {t, w});
            g.set_colocation(g.producer(w), b * 2 + k);
            g.set_colocation(g.producer(t), b * 2 + k);
        }
        ends.push_back(t);
    }
    g.mark_output(g.add1(op_kind::ewadd, {g.add1(op_kind::ewadd, {ends[0], ends[1]}), ends[2]}));
    return g;
}
tasks::placement_config small(std::size_t updates) {
    return {.ppo = {.updates = updates, .samples_per_update = 8, .minibatch = 8, .epochs = 2, .learning_rate = 3e-3},
            .policy = {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8},
            .progress = {.status = rl::status_mode::never}};
}
std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("placement task: deciding ops, colocation groups on one device, sources with their consumers, reward") {
    const auto g = branches();
    const auto cl = device::parse_cluster("3xV100:nvlink");
    tasks::placement_task task(g, cl);
    std::size_t deciding = 0;
    for (auto a : task.active()) deciding += a;
    CHECK(deciding == 8);  // 6 matmuls (each anchoring its group) and 2 adds
    std::vector<int> acts(g.num_ops());
    std::mt19937_64 rng(2);
    for (int trial = 0; trial < 20; ++trial) {
        for (auto& a : acts) a = std::uniform_int_distribution<int>(0, 2)(rng);
        const auto d = task.decide(acts);
        CHECK_NOTHROW(task.simulator().check_placement(d.placement));
        for (graph::op_id o = 0; o < g.num_ops(); ++o)
            if (task.active()[o]) CHECK(d.placement[o] == static_cast<sim::device_id>(acts[o]));
        CHECK(d.placement[0] ==
              d.placement[g.get_tensor(g.get_op(0).outputs[0]).uses[0].op]);  // x with its first reader
    }
    const auto single = task.simulator().run(sim::placement(g.num_ops(), 0));
    CHECK(task.reward(single) == doctest::Approx(-1.0));
    auto oom = single;
    oom.oom = true;
    CHECK(task.reward(oom) == doctest::Approx(-2.0));  // -sqrt(1) - penalty x (1 + no overflow)
    // scored with critical-path priorities: the decision carries the placement's upward ranks
    tasks::placement_task ranked(g, cl, cost::roofline_model{}, {.schedule = tasks::ready_order::critical_path});
    const auto dr = ranked.decide(acts);
    CHECK(dr.priorities == baselines::critical_path_priorities(ranked.simulator(), dr.placement));
    acts.assign(g.num_ops(), 5);
    CHECK_THROWS_AS(task.decide(acts), error);
    CHECK(task.evaluate(task.observe(rng), acts, 0).valid == false);
    // a graph whose step takes no time (an input passed through) leaves nothing to place
    graph::computation_graph idle("pass_through");
    idle.mark_output(idle.input("x", {8, 8}));
    CHECK_THROWS_WITH_AS(tasks::placement_task(idle, cl), doctest::Contains("step takes no time"),
                         tasks::nothing_to_decide);
}

TEST_CASE("placement task: a refused decision gets the penalty reward; any other error propagates") {
    const auto g = branches();
    device::cluster<device::device_spec> unlinked;  // two devices and no link: every transfer is refused
    unlinked.add_device(device::describe(device::v100));
    unlinked.add_device(device::describe(device::v100));
    tasks::placement_task task(g, unlinked, cost::roofline_model{}, {.invalid_reward = -7.5});
    std::mt19937_64 rng(1);
    const auto& obs = task.observe(rng);
    std::vector<int> acts(g.num_ops(), 0);
    const auto local = task.evaluate(obs, acts, 0);  // everything on device 0: nothing to move
    CHECK(local.valid);
    CHECK(local.reward == doctest::Approx(-1.0));
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (task.active()[o] && g.get_op(o).kind == op_kind::matmul) {
            acts[o] = 1;  // one chain's first matmul on device 1: x must cross between the devices
            break;
        }
    CHECK_THROWS_WITH_AS(task.score(task.decide(acts), 0), doctest::Contains("no link between them"),
                         sim::decision_refused);
    const auto refused = task.evaluate(obs, acts, 0);
    CHECK_FALSE(refused.valid);
    CHECK(refused.reward == -7.5);
    CHECK(refused.step_time == 0);
    // an action naming no device is refused by decide(), with the same reward
    acts.assign(g.num_ops(), 2);
    CHECK(test::thrown_by([&] { (void)task.decide(acts); }) == "refused");
    CHECK(task.evaluate(obs, acts, 0).reward == -7.5);
    // not a decision: too few actions, or a worker never set up, is the caller's bug and leaves evaluate()
    acts.assign(g.num_ops() - 1, 0);
    CHECK(test::thrown_by([&] { (void)task.evaluate(obs, acts, 0); }) == "error");
    CHECK_THROWS_WITH_AS(task.evaluate(obs, acts, 0), doctest::Contains("expected one per op"), error);
    acts.assign(g.num_ops(), 0);
    CHECK(test::thrown_by([&] { (void)task.evaluate(obs, acts, 1); }) == "error");
    task.set_workers(2);
    CHECK(task.evaluate(obs, acts, 1).valid);
}

TEST_CASE("learned placement of a small graph reaches the brute-force optimum, the same on 1 and 2 threads") {
    const auto g = branches();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    tasks::placement_task task(g, cl);
    std::vector<graph::op_id> deciding;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (task.active()[o]) deciding.push_back(o);
    double optimum = 1e300;
    std::vector<int> acts(g.num_ops(), 0);
    for (std::size_t mask = 0; mask < (std::size_t{1} << deciding.size()); ++mask) {
        for (std::size_t i = 0; i < deciding.size(); ++i) acts[deciding[i]] = static_cast<int>((mask >> i) & 1);
        optimum = std::min(optimum, task.score(task.decide(acts), 0).step_time);
    }
    CHECK(optimum < task.reference().step_time * 0.8);  // spreading the chains pays
    // 80 updates at 1e-3, two seeds, one of which must reach it: in seed sweeps, 7 of 60 policies
    // settled above the optimum at small()'s 3e-3 and 40 updates, 2 of 300 here (up to 1.19x it)
    auto one = small(80);
    one.ppo.learning_rate = 1e-3;
    auto two = one;
    two.ppo.threads = 2;
    std::size_t optimal = 0;
    for (std::uint64_t seed : {4, 1005}) {
        CAPTURE(seed);
        std::mt19937_64 r1(seed), r2(seed);
        const auto a = tasks::train_placement(g, cl, cost::roofline_model{}, one, r1);
        const auto b = tasks::train_placement(g, cl, cost::roofline_model{}, two, r2);
        optimal += a.best.result.step_time == doctest::Approx(optimum).epsilon(1e-12);
        CHECK(a.best.decision.placement == b.best.decision.placement);
        CHECK(a.best_sample == b.best_sample);
        CHECK(a.best_from == b.best_from);
        CHECK(a.samples == 80 * 8);
        CHECK(r1() == r2());
    }
    CHECK(optimal >= 1);
}

TEST_CASE("train_placement: warm start, resume bit for bit, and checkpoints refused with the reason") {
    const auto g = branches();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    const test::temp_dir dir("goopt_place_");
    const auto full = dir.path / "full.ckpt", part = dir.path / "part.ckpt";
    auto cfg = small(6);
    cfg.checkpoint = full;
    cfg.progress.metrics = dir.path / "metrics.jsonl";
    std::mt19937_64 r1(9);
    const auto a = tasks::train_placement(g, cl, cost::roofline_model{}, cfg, r1);
    {  // one JSON object per update, with the best step time
        std::ifstream in(cfg.progress.metrics);
        std::string line;
        int lines = 0;
        while (std::getline(in, line)) {
            ++lines;
            CHECK(line.front() == '{');
            CHECK(line.find("\"update\": " + std::to_string(lines) + ",") != std::string::npos);
            CHECK(line.find("\"best_ms\": ") != std::string::npos);
        }
        CHECK(lines == 6);
        std::filesystem::remove(cfg.progress.metrics);
    }
    auto first = small(3);
    first.checkpoint = part;
    std::mt19937_64 r2(9);
    tasks::train_placement(g, cl, cost::roofline_model{}, first, r2);
    auto rest = small(6);
    rest.checkpoint = part;
    rest.resume = true;
    std::mt19937_64 r3(12345);  // the checkpoint restores the generator
    const auto b = tasks::train_placement(g, cl, cost::roofline_model{}, rest, r3);
    CHECK(b.updates == 6);
    CHECK(b.best.decision.placement == a.best.decision.placement);
    CHECK(b.best.result.step_time == a.best.result.step_time);
    CHECK(slurp(full) == slurp(part));  // parameters, Adam moments, generator, best decision

    std::mt19937_64 r(1);
    const auto three = device::parse_cluster("3xV100:nvlink");
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, three, cost::roofline_model{}, rest, r),
                         doctest::Contains("devices"), error);
    auto wide = rest;
    wide.policy.hidden = 32;
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, wide, r),
                         doctest::Contains("network shape"), error);
    std::string bytes = slurp(part);
    bytes[bytes.size() / 2] ^= 0x5a;
    std::ofstream(part, std::ios::binary | std::ios::trunc) << bytes;
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, rest, r), doctest::Contains("corrupt"),
                         error);
    bytes = slurp(full);
    bytes[9] = 7;  // format version
    std::ofstream(part, std::ios::binary | std::ios::trunc) << bytes;
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, rest, r),
                         doctest::Contains("format version"), error);
    std::filesystem::remove(part);
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, rest, r),
                         doctest::Contains("cannot open"), error);
    std::filesystem::remove(full);

    // warm start from HEFT: the policy's first samples are close to the imitated decision
    sim::simulator s(g, cl);
    auto warm = small(2);
    warm.warm_start = baselines::heft(s).placement;
    warm.ppo.imitation_steps = 30;
    warm.ppo.imitation_learning_rate = 1e-2;
    warm.ppo.imitation_min_agreement = 0.95;  // imitate until the policy's mode is (nearly) HEFT's placement
    std::mt19937_64 rw(3);
    const auto w = tasks::train_placement(g, cl, cost::roofline_model{}, warm, rw);
    CHECK(w.best.result.step_time <= s.run(warm.warm_start).step_time * 1.05);
    CHECK(w.imitation_agreement >= 0.95);
    CHECK(w.imitation_agreement <= 1.0);
    // and the mode reproduces HEFT's step: within ppo.imitation_max_mode_gap (2 %) after the warm start
    REQUIRE_FALSE(std::isnan(w.imitation_mode_gap));
    CHECK(w.imitation_mode_gap <= 0.02);
    CHECK(w.imitation_steps >= 30);
    CHECK(w.imitation_steps < warm.ppo.imitation_max_steps);  // stopped by the criteria, not the cap
    // the step criterion alone keeps the warm start going: an agreement of 1 % is met after the
    // first step, and only the mode's gap to HEFT's step asks for more
    auto loose = warm;
    loose.ppo.imitation_steps = 1;
    loose.ppo.imitation_min_agreement = 0.01;
    loose.ppo.imitation_max_mode_gap = std::numeric_limits<double>::infinity();
    // The first of seeds 3, 4, 5 whose one step does not reproduce HEFT's step (a seed sweep found 1
    // in 40 whose first mode is already within 2 % of it, 2 % faster)
    std::uint64_t seed = 3;
    for (; seed <= 5; ++seed) {
        std::mt19937_64 rl1(seed);
        const auto one_step_warm = tasks::train_placement(g, cl, cost::roofline_model{}, loose, rl1);
        CHECK(one_step_warm.imitation_steps == 1);
        if (one_step_warm.imitation_mode_gap > 0.02) break;
    }
    REQUIRE(seed <= 5);
    loose.ppo.imitation_max_mode_gap = 0.02;
    std::mt19937_64 rl2(seed);
    const auto kept = tasks::train_placement(g, cl, cost::roofline_model{}, loose, rl2);
    CHECK(kept.imitation_steps > 1);
    CHECK(kept.imitation_mode_gap <= 0.02);
    auto cold = warm;  // no warm start: nothing imitated, nothing to report
    cold.warm_start.clear();
    cold.ppo.imitation_steps = 0;
    std::mt19937_64 rc(3);
    const auto c0 = tasks::train_placement(g, cl, cost::roofline_model{}, cold, rc);
    CHECK(c0.imitation_agreement == -1);
    CHECK(std::isnan(c0.imitation_mode_gap));
    CHECK(c0.imitation_steps == 0);
    auto bad = small(2);
    bad.warm_start = baselines::heft(s).placement;
    CHECK_THROWS_AS(tasks::train_placement(g, cl, cost::roofline_model{}, bad, rw), error);
}

TEST_CASE("warm start: the imitated decision is the first incumbent, never returned worse; modes are scored") {
    const auto g = branches();
    const auto cl = device::parse_cluster("3xV100:nvlink");
    sim::simulator s(g, cl);
    // m-ETF's decision with its own priorities (its start order), imitated by one negligible step:
    // the policy stays near uniform, so its samples and modes are near random
    const sim::decision imitated = baselines::m_etf(s);
    const double heuristic = sim::run(s, imitated).step_time;
    auto cfg = small(2);
    cfg.warm_start = imitated.placement;
    cfg.incumbents = {imitated};
    cfg.ppo.imitation_steps = 1;
    cfg.ppo.imitation_learning_rate = 1e-6;
    using outcome = tasks::placement_task<device::device_spec>::outcome;
    struct seen_t {
        double best = 1e300;
        std::size_t samples = 0, modes = 0;
        void on_sample(std::span<const int>, const outcome& o) {
            ++samples;
            if (o.valid && !o.oom) best = std::min(best, o.step_time);
        }
        void on_mode(std::span<const int>, const outcome& o) {
            ++modes;
            if (o.valid && !o.oom) best = std::min(best, o.step_time);
        }
        bool on_update(const rl::update_stats&) { return true; }
    } seen;
    std::mt19937_64 rng(6);
    const auto r = tasks::train_placement(g, cl, cost::roofline_model{}, cfg, rng, seen);
    CHECK(seen.samples == 2 * 8);
    CHECK(seen.modes == 2);                       // one mode per update, beside the samples
    CHECK(seen.best >= heuristic);                // nothing the policy made beats m-ETF here (a tie keeps it)...
    CHECK(r.best.result.step_time == heuristic);  // ...so m-ETF's decision itself comes back
    CHECK(r.best_from == tasks::best_source::incumbent);
    CHECK(r.best.decision.placement == imitated.placement);
    CHECK(r.best.decision.priorities == imitated.priorities);

    // without an explicit incumbent: the warm-start placement under the task's schedule
    auto plain = cfg;
    plain.incumbents.clear();
    std::mt19937_64 r2(6);
    const auto p = tasks::train_placement(g, cl, cost::roofline_model{}, plain, r2);
    tasks::placement_task task(g, cl);
    CHECK(p.best.result.step_time <= task.score(task.decision_of(imitated.placement), 0).step_time);

    // the incumbent survives a resume: 1 + 1 updates end as 2 uninterrupted ones
    const test::temp_dir dir("goopt_incumbent_");
    const auto full = dir.path / "full.ckpt", part = dir.path / "part.ckpt";
    auto whole = cfg;
    whole.checkpoint = full;
    std::mt19937_64 r3(6);
    const auto w = tasks::train_placement(g, cl, cost::roofline_model{}, whole, r3);
    auto half = cfg;
    half.checkpoint = part;
    half.ppo.updates = 1;
    std::mt19937_64 r4(6);
    tasks::train_placement(g, cl, cost::roofline_model{}, half, r4);
    half.ppo.updates = 2;
    half.resume = true;
    const auto h = tasks::train_placement(g, cl, cost::roofline_model{}, half, r4);
    CHECK(h.best_from == w.best_from);
    CHECK(h.best.decision.priorities == w.best.decision.priorities);
    CHECK(slurp(full) == slurp(part));
    half.incumbents.clear();  // resumed without the incumbent its record names
    half.warm_start.clear();
    half.ppo.imitation_steps = 0;
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, half, r4),
                         doctest::Contains("incumbent"), error);
}

TEST_CASE("warm start through the guided decoder: its greedy decision becomes the imitated one, step and all") {
    const auto g = branches();
    const auto cl = device::parse_cluster("3xV100:nvlink");
    sim::simulator s(g, cl);
    // the target: m-ETF's placement with the devices renamed (d -> d + 1 mod 3): as fast on three
    // equal devices and reachable through the decoder, but not what it decodes from zero logits
    sim::placement target = baselines::m_etf(s).placement;
    for (auto& d : target) d = static_cast<sim::device_id>((d + 1) % 3);
    auto cfg = small(1);
    cfg.task.decoder = tasks::placement_decoder::guided;

    tasks::placement_task task(g, cl, cost::roofline_model{}, cfg.task);
    std::mt19937_64 ro(1);
    const auto& obs = task.observe(ro);
    const std::vector<int> wanted = task.actions_of(target);
    const auto active = task.active();
    const nn::matrix<double> zero = nn::matrix<double>::Zero(static_cast<Eigen::Index>(g.num_ops()), 3);
    const std::vector<int> heuristic = task.decode(obs, zero, 0, true, 0).actions;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < active.size(); ++i) differ += active[i] && heuristic[i] != wanted[i];
    REQUIRE(differ > 0);  // something to learn
    // the target walked through the decoder: every op follows it, and the walk is the same each time
    const auto walk = rl::detail::walk_target(task, obs, wanted, active);
    CHECK(walk.reach.closed == 0);
    CHECK(walk.reach.forced == 0);
    CHECK(walk.reach.diverged == 0);
    CHECK(rl::detail::walk_target(task, obs, wanted, active).bias == walk.bias);
    std::size_t learnable = 0;
    for (auto l : walk.learnable) learnable += l;
    CHECK(learnable > 0);
    CHECK(learnable < g.num_ops());  // sources and the colocated members the decoder forces are not

    cfg.warm_start = target;
    cfg.ppo.imitation_steps = 10;
    cfg.ppo.imitation_learning_rate = 1e-2;
    cfg.ppo.imitation_min_agreement = 1.0;
    cfg.ppo.imitation_max_steps = 500;
    std::mt19937_64 rng(4);
    const auto r = tasks::train_placement(g, cl, cost::roofline_model{}, cfg, rng);
    CHECK(r.imitation_agreement == 1.0);
    REQUIRE_FALSE(std::isnan(r.imitation_mode_gap));
    CHECK(r.imitation_mode_gap <= 0.02);
    CHECK(r.imitation_steps < cfg.ppo.imitation_max_steps);  // reached, not capped
    CHECK(r.imitation_reach.closed == 0);                    // the walk's counts, handed on
    CHECK(r.imitation_reach.forced == 0);
    CHECK(r.imitation_reach.diverged == 0);

    // imitating m-ETF's own placement, which the zero head already decodes to: the warm start ends
    // after its first steps with the target reproduced (kept as it was if the steps had lost it)
    cfg.warm_start = baselines::m_etf(s).placement;
    std::mt19937_64 rng2(4);
    const auto own = tasks::train_placement(g, cl, cost::roofline_model{}, cfg, rng2);
    CHECK(own.imitation_agreement == 1.0);
    CHECK(own.imitation_mode_gap == 0.0);
    CHECK(own.imitation_steps == cfg.ppo.imitation_steps);
}

TEST_CASE("warm start through the guided decoder: a target the decoder cannot reproduce is counted, not learned") {
    // three devices of 1.5 MiB, a graph of fifteen 256 KiB tensors: a target with every op on device
    // 0 does not fit, so the decoder closes device 0 once it is full, whatever the policy's logits
    const auto g = branches();
    auto v100 = device::describe(device::v100);
    v100.capacity = 1.5 * 1024 * 1024;
    const auto cl = device::cluster<device::device_spec>::all_to_all(v100, 3, 25e9, 5e-6);
    auto cfg = small(1);
    cfg.task.decoder = tasks::placement_decoder::guided;
    cfg.warm_start = sim::placement(g.num_ops(), 0);
    cfg.ppo.imitation_steps = 10;
    cfg.ppo.imitation_min_agreement = 0.5;
    cfg.ppo.imitation_max_steps = 20;
    std::mt19937_64 rng(4);
    const auto r = tasks::train_placement(g, cl, cost::roofline_model{}, cfg, rng);
    CHECK(r.imitation_reach.closed >= 1);
    CHECK(r.imitation_reach.diverged >= r.imitation_reach.closed);
    CHECK(r.imitation_agreement < 1.0);
}

TEST_CASE("pretrain_placement: one policy across graphs; train_placement starts from it, refused elsewhere") {
    const auto g = branches();
    graph::computation_graph pair("pair");  // two chains of three matmuls
    {
        const auto x = pair.input("x", {256, 256});
        std::vector<graph::tensor_id> ends;
        for (int b = 0; b < 2; ++b) {
            auto t = x;
            for (int k = 0; k < 3; ++k)
                t = pair.add1(op_kind::matmul,
                              {t, pair.weight("w" + std::to_string(b) + std::to_string(k), {256, 256})});
            ends.push_back(t);
        }
        pair.mark_output(pair.add1(op_kind::ewadd, {ends[0], ends[1]}));
    }
    const std::vector<graph::computation_graph> graphs{g, pair};
    const auto cl = device::parse_cluster("2xV100:nvlink");
    const goopt::test::temp_dir dir("goopt_pretrain_");
    const auto ckpt = dir.path / "pretrain.ckpt";
    // 120 updates at 1e-3: at small()'s 3e-3 many seeds settle on a poor placement of either graph
    auto cfg = small(120);
    cfg.ppo.learning_rate = 1e-3;
    cfg.checkpoint = ckpt;
    {  // a graph among them that does no work is named: of several, which one has nothing to place
        graph::computation_graph idle("pass_through");
        idle.mark_output(idle.input("x", {8, 8}));
        const std::vector<graph::computation_graph> with_idle{g, idle};
        std::mt19937_64 r0(1);
        auto one = small(1);
        one.checkpoint = dir.path / "never_written.ckpt";
        CHECK_THROWS_WITH_AS(tasks::pretrain_placement(std::span<const graph::computation_graph>(with_idle), cl,
                                                       cost::roofline_model{}, one, 1, r0),
                             doctest::Contains("graph 'pass_through' on 2xV100:nvlink: tasks::placement_task: the "
                                               "reference placement's step takes no time"),
                             tasks::nothing_to_decide);
        CHECK_FALSE(std::filesystem::exists(one.checkpoint));
    }
    sim::simulator s(g, cl), sp(pair, cl);
    const double one_device = s.run(sim::placement(g.num_ops(), 0)).step_time,
                 pair_one_device = sp.run(sim::placement(pair.num_ops(), 0)).step_time;

    // the first update from the pre-trained policy samples better placements than from fresh weights
    struct mean_of_first {
        double sum = 0;
        std::size_t n = 0;
        void on_sample(std::span<const int>, const tasks::placement_task<device::device_spec>::outcome& o) {
            sum += o.step_time;
            ++n;
        }
        double mean() const { return sum / static_cast<double>(n); }
        bool on_update(const rl::update_stats&) { return false; }
    };
    auto fine = small(1), fresh = small(1);
    fine.ppo.samples_per_update = fine.ppo.minibatch = fresh.ppo.samples_per_update = fresh.ppo.minibatch = 64;
    fine.pretrained = ckpt;
    // Three pre-trainings, compared on their sum: a seed sweep (offsets of 1,000 to every seed here,
    // 100 of them) found about 3 in 100 pre-trained policies that sample no better than fresh weights
    double pre_sum = 0, fresh_sum = 0;
    for (std::uint64_t seed : {5, 6, 7}) {
        CAPTURE(seed);
        std::mt19937_64 r1(seed);
        const auto pre = tasks::pretrain_placement(std::span<const graph::computation_graph>(graphs), cl,
                                                   cost::roofline_model{}, cfg, 1, r1);
        CHECK(pre.updates == 120);
        CHECK(pre.samples == 120 * 8);
        REQUIRE(pre.best.size() == 2);
        // spreading the chains pays on both graphs, and the policy found a spread on both (the optima
        // are 0.73 and 0.70 of one device, by brute force; spreading half of `pair` gives 0.84)
        CHECK(pre.best[0].result.step_time < one_device * 0.9);
        CHECK(pre.best[1].result.step_time < pair_one_device * 0.9);

        mean_of_first from_pre, from_fresh;
        std::mt19937_64 r2(seed + 3), r3(seed + 3);
        const auto a = tasks::train_placement(g, cl, cost::roofline_model{}, fine, r2, from_pre);
        tasks::train_placement(g, cl, cost::roofline_model{}, fresh, r3, from_fresh);
        CHECK(a.updates == 121);  // the pre-trained policy's counters go on
        pre_sum += from_pre.mean();
        fresh_sum += from_fresh.mean();
    }
    CHECK(pre_sum < fresh_sum);

    std::mt19937_64 r(1);
    CHECK_THROWS_WITH_AS(
        tasks::train_placement(g, device::parse_cluster("3xV100:nvlink"), cost::roofline_model{}, fine, r),
        doctest::Contains("devices"), error);
    auto wide = fine;
    wide.policy.hidden = 32;
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, wide, r),
                         doctest::Contains("network shape"), error);
    auto no_file = small(1);
    CHECK_THROWS_WITH_AS(tasks::pretrain_placement(std::span<const graph::computation_graph>(graphs), cl,
                                                   cost::roofline_model{}, no_file, 1, r),
                         doctest::Contains("no checkpoint path"), error);
    CHECK_THROWS_AS(
        tasks::pretrain_placement(std::span<const graph::computation_graph>(), cl, cost::roofline_model{}, cfg, 1, r),
        error);
}
