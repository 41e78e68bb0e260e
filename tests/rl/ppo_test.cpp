#include <goopt/nn/heads.hpp>
#include <goopt/nn/linear.hpp>
#include <goopt/nn/sgd.hpp>
#include <goopt/rl.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>

using namespace goopt;

namespace {
/// A contextual bandit: each of 8 nodes shows one of 4 contexts (one-hot), drawn anew every episode;
/// arm (context mod 3) pays 1, the others 0.2. The reward is the mean payoff over the nodes, so the
/// known optimum is 1 (every node pulls its context's arm).
struct bandit {
    struct observation {
        nn::matrix<double> x;
        std::vector<int> context;
    };
    struct outcome {
        double reward = 0;
    };
    static constexpr int nodes = 8, contexts = 4, arms = 3;
    observation obs;
    std::vector<std::uint8_t> on = std::vector<std::uint8_t>(nodes, 1);
    template <class Rng> const observation& observe(Rng& rng) {
        obs.x = nn::matrix<double>::Zero(nodes, contexts);
        obs.context.resize(nodes);
        for (int i = 0; i < nodes; ++i) {
            obs.context[i] = std::uniform_int_distribution<int>(0, contexts - 1)(rng);
            obs.x(i, obs.context[i]) = 1;
        }
        return obs;
    }
    std::size_t num_choices() const { return arms; }
    std::span<const std::uint8_t> active() const { return on; }
    void set_workers(std::size_t) {}
    outcome evaluate(const observation& o, std::span<const int> a, std::size_t) const {
        double r = 0;
        for (int i = 0; i < nodes; ++i) r += a[i] == o.context[i] % arms ? 1.0 : 0.2;
        return {r / nodes};
    }
};
/// Linear logits of the context and a linear value: the smallest actor-critic.
struct linear_net {
    using scalar = double;
    nn::linear<double> fc;
    nn::value_head<double> v;
    template <class Rng>
    explicit linear_net(Rng& rng) : fc(bandit::contexts, bandit::arms, rng, "fc"), v(bandit::contexts, rng) {}
    nn::policy_output<double> evaluate(const bandit::observation& o, const std::vector<std::vector<int>>&) {
        nn::policy_output<double> out;
        out.logits.push_back(fc.forward(o.x));
        out.value = v.forward(o.x);
        return out;
    }
    void backward(const std::vector<nn::matrix<double>>& d, double dv) {
        fc.backward(d[0]);
        v.backward(dv);
    }
    nn::parameter_list<double> parameters() {
        nn::parameter_list<double> ps;
        fc.collect(ps);
        v.collect(ps);
        return ps;
    }
};
static_assert(rl::Environment<bandit>);
static_assert(rl::ActorCritic<linear_net, bandit::observation>);
static_assert(!rl::ActorCritic<bandit, bandit::observation>);
using bandit_ppo = rl::ppo<bandit, linear_net>;

std::vector<double> flat(linear_net& n) {
    std::vector<double> v;
    for (auto* p : n.parameters()) v.insert(v.end(), p->value.data(), p->value.data() + p->value.size());
    return v;
}
const rl::ppo_config bandit_config{
    .updates = 120, .samples_per_update = 16, .minibatch = 8, .learning_rate = 0.03, .max_grad_norm = 5.0};
}  // namespace

TEST_CASE("PPO reaches the optimum of a contextual bandit from a fixed seed (both baselines)") {
    for (auto base : {rl::baseline_kind::value_head, rl::baseline_kind::moving_average}) {
        std::mt19937_64 rng(5);
        bandit env;
        linear_net net(rng);
        auto cfg = bandit_config;
        cfg.baseline = base;
        rl::ppo<bandit, linear_net> trainer(env, net, cfg);
        double last = 0, mode = 0, stats_mode = 0;
        std::size_t modes = 0;
        struct v_t {
            double &last, &mode, &stats_mode;
            std::size_t& modes;
            void on_sample(std::span<const int>, const bandit::outcome&) {}
            void on_mode(std::span<const int> a, const bandit::outcome& o) {
                CHECK(a.size() == bandit::nodes);
                mode = o.reward;
                ++modes;
            }
            bool on_update(const rl::update_stats& s) {
                last = s.mean_reward;
                stats_mode = s.mode_reward;
                return true;
            }
        } v{last, mode, stats_mode, modes};
        trainer.train(rng, v);
        CHECK(trainer.updates_done() == 120);
        CHECK(trainer.samples_done() == 120 * 16);  // the modes are evaluated, not counted as samples
        CHECK(last > 0.95);                         // a uniform policy earns 0.47
        CHECK(modes == 120);                        // the mode is evaluated once per update
        CHECK(mode == 1.0);                         // and is the optimum at the end
        CHECK(stats_mode == mode);
        bandit::observation all;
        all.x = nn::matrix<double>::Identity(bandit::contexts, bandit::contexts);
        const auto greedy = nn::argmax_rows(net.evaluate(all, {}).logits[0]);
        for (int c = 0; c < bandit::contexts; ++c) CHECK(greedy[c] == c % bandit::arms);
    }
}

TEST_CASE("PPO: the same numbers on 1 and 3 worker threads; a resumed run equals an uninterrupted one") {
    const test::temp_dir dir("goopt_ppo_");
    const auto ckpt = dir.path / "stopped.ckpt";
    auto run = [&](std::size_t threads, std::size_t stop_at, const std::filesystem::path& resume_from) {
        std::mt19937_64 rng(8);
        bandit env;
        linear_net net(rng);
        auto cfg = bandit_config;
        cfg.updates = 10;
        cfg.threads = threads;
        rl::ppo<bandit, linear_net> trainer(env, net, cfg);
        if (!resume_from.empty()) CHECK(trainer.load_checkpoint(resume_from, rng) == "state");
        if (stop_at) trainer.set_updates(stop_at);
        trainer.train(rng);
        if (stop_at) trainer.save_checkpoint(ckpt, rng, "state");
        return flat(net);
    };
    const auto one = run(1, 0, {});
    CHECK(run(3, 0, {}) == one);
    run(1, 4, {});
    CHECK(run(2, 0, ckpt) == one);
}

TEST_CASE("PPO: bad settings and bad checkpoints are errors") {
    std::mt19937_64 rng(1);
    bandit env;
    linear_net net(rng);
    CHECK_THROWS_AS(bandit_ppo(env, net, {.samples_per_update = 0}), error);
    CHECK_THROWS_AS(bandit_ppo(env, net, {.clip = 1.5}), error);
    rl::ppo<bandit, linear_net> trainer(env, net, {});
    CHECK_THROWS_WITH_AS(trainer.load_checkpoint("/nonexistent/goopt.ckpt", rng), doctest::Contains("cannot open"),
                         error);
    CHECK_THROWS_AS(trainer.set_imitation_target({0, 1, 7}), error);

    // checkpoints: every refusal names the file and what it found; a refused one changes nothing
    const test::temp_dir dir("goopt_ppo_refusals_");
    const auto file = dir.path / "state.ckpt";
    trainer.save_checkpoint(file, rng, "state");
    const std::string good = [&] {
        std::ifstream in(file, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    const auto before = flat(net);
    auto refused = [&](const std::string& bytes, const char* why) {
        CAPTURE(why);
        std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
        CHECK_THROWS_WITH_AS(trainer.load_checkpoint(file, rng), doctest::Contains(why), error);
        CHECK(flat(net) == before);
    };
    // the format before the one binary record: "goopt-ppo", u32 version 1 in host order, raw fields
    refused(std::string("goopt-ppo\x01\x00\x00\x00\x08\x00\x00\x00", 17) + std::string(64, '\0'),
            "format version 1 (an older format, no longer read)");
    refused("goopt-nn" + good.substr(8), "not a 'goopt-ppo' record");
    // version 2 held Adam's moments without naming the optimizer
    refused(io::record_bytes(rl::checkpoint_tag, 2, "x"), "format version 2 (an older format, no longer read)");
    refused(good.substr(0, good.size() - 1), "truncated");
    std::string flipped = good;
    flipped[flipped.size() / 2] ^= 0x5a;
    refused(flipped, "checksum mismatch (the file is corrupt)");
    // signed again after a change, as a crafted file would be: the values are checked, not only the checksum
    auto resigned = [&](std::size_t at, const std::string& bytes) {
        std::string out = good;
        out.replace(at, bytes.size(), bytes);
        const std::size_t header = rl::checkpoint_tag.size() + 12;
        return io::record_bytes(rl::checkpoint_tag, rl::checkpoint_format_version,
                                std::string_view(out).substr(header, out.size() - header - 8));
    };
    auto f64_bytes = [](double v) {
        std::string b(8, '\0');
        io::detail::store_le(b.data(), std::bit_cast<std::uint64_t>(v), 8);
        return b;
    };
    // the body's sixth field is the baseline (5 counters of 9 bytes before it, each a type byte and a u64)
    const std::size_t baseline = rl::checkpoint_tag.size() + 12 + 5 * 9 + 1;
    refused(resigned(baseline, f64_bytes(std::numeric_limits<double>::quiet_NaN())), "a baseline of nan");
    // the first parameter's name, then its values, first and second moments: rows, cols, then the numbers
    const std::size_t name = good.find(net.parameters()[0]->name);
    REQUIRE(name != std::string::npos);
    const std::size_t values = name + net.parameters()[0]->name.size() + 1 + 16;
    const std::size_t count = static_cast<std::size_t>(net.parameters()[0]->value.size());
    refused(resigned(values, f64_bytes(std::numeric_limits<double>::infinity())),
            "the values of parameter 'fc.w' hold a non-finite number");
    refused(resigned(values + 2 * (8 * count + 17), f64_bytes(-1.0)),
            "the second moments of parameter 'fc.w' hold a non-finite or negative number");
    struct fewer_arms : bandit {
        std::size_t num_choices() const { return 2; }
    } other;
    rl::ppo<fewer_arms, linear_net> elsewhere(other, net, {});
    std::ofstream(file, std::ios::binary | std::ios::trunc) << good;
    CHECK_THROWS_WITH_AS(elsewhere.load_checkpoint(file, rng),
                         doctest::Contains("made for 3 choices per node (devices): expected 2"), error);
    CHECK(trainer.load_checkpoint(file, rng) == "state");
    // the warm start needs a target for every node
    rl::ppo<bandit, linear_net> warm(env, net, {.imitation_steps = 2});
    CHECK_THROWS_AS(warm.train(rng), error);
}

TEST_CASE(
    "PPO with another optimizer (nn::sgd): the bandit's optimum, an exact resume, and each refuses the other's "
    "checkpoint") {
    using sgd_ppo = rl::ppo<bandit, linear_net, nn::sgd<double>>;
    auto cfg = bandit_config;
    cfg.learning_rate = 0.1;
    {
        std::mt19937_64 rng(5);
        bandit env;
        linear_net net(rng);
        sgd_ppo trainer(env, net, cfg);
        double last = 0;
        struct v_t {
            double& last;
            void on_sample(std::span<const int>, const bandit::outcome&) {}
            bool on_update(const rl::update_stats& s) {
                last = s.mean_reward;
                return true;
            }
        } v{last};
        trainer.train(rng, v);
        CHECK(last > 0.95);  // a uniform policy earns 0.47
        bandit::observation all;
        all.x = nn::matrix<double>::Identity(bandit::contexts, bandit::contexts);
        const auto greedy = nn::argmax_rows(net.evaluate(all, {}).logits[0]);
        for (int c = 0; c < bandit::contexts; ++c) CHECK(greedy[c] == c % bandit::arms);
    }
    const test::temp_dir dir("goopt_ppo_sgd_");
    const auto ckpt = dir.path / "stopped.ckpt";
    cfg.updates = 10;
    auto run = [&](std::size_t stop_at, bool resume) {
        std::mt19937_64 rng(8);
        bandit env;
        linear_net net(rng);
        sgd_ppo trainer(env, net, cfg);
        if (resume) CHECK(trainer.load_checkpoint(ckpt, rng) == "state");
        if (stop_at) trainer.set_updates(stop_at);
        trainer.train(rng);
        if (stop_at) trainer.save_checkpoint(ckpt, rng, "state");
        return flat(net);
    };
    const auto whole = run(0, false);
    run(4, false);
    CHECK(run(0, true) == whole);  // the velocity is in the checkpoint: without it the resumed steps differ
    std::mt19937_64 rng(1);
    bandit env;
    linear_net net(rng);
    bandit_ppo adam(env, net, {});
    const auto before = flat(net);
    CHECK_THROWS_WITH_AS(adam.load_checkpoint(ckpt, rng),
                         doctest::Contains("the state of optimizer 'sgd': expected 'adam', this trainer's optimizer"),
                         error);
    CHECK(flat(net) == before);
    adam.save_checkpoint(ckpt, rng);
    CHECK_THROWS_WITH_AS(sgd_ppo(env, net, cfg).load_checkpoint(ckpt, rng),
                         doctest::Contains("the state of optimizer 'adam': expected 'sgd'"), error);
}

TEST_CASE("PPO: an environment's error leaves train() as it was thrown, on one thread or several") {
    // a bandit that fails on its 20th evaluation: the trainer must not turn that into a reward
    struct failing : bandit {
        std::atomic<int> calls{0};
        outcome evaluate(const observation& o, std::span<const int> a, std::size_t w) {
            if (++calls == 20) throw error("failing_env", "evaluation 20 fails", "no failure");
            return bandit::evaluate(o, a, w);
        }
    };
    static_assert(rl::Environment<failing>);
    for (std::size_t threads : {std::size_t{1}, std::size_t{3}}) {
        CAPTURE(threads);
        std::mt19937_64 rng(2);
        failing env;
        linear_net net(rng);
        auto cfg = bandit_config;
        cfg.updates = 5;
        cfg.threads = threads;
        rl::ppo<failing, linear_net> trainer(env, net, cfg);
        CHECK_THROWS_WITH_AS(trainer.train(rng), "failing_env: evaluation 20 fails: expected no failure", error);
        CHECK(trainer.updates_done() == 1);  // 17 evaluations per update: the second update failed
    }
}

namespace {
/// A guided environment whose decoder spreads the load: node i's bias on arm j is -2 x the number of
/// earlier nodes on j. Every node shows the same context, so the logits are one row for all, and only
/// the decoder's bias can give the nodes different arms. `guided` off: plain sampling from the logits.
struct spreading {
    using observation = bandit::observation;
    struct outcome {
        double reward = 0;
    };
    static constexpr int nodes = 6;
    bool decodes = true;
    observation obs;
    std::vector<std::uint8_t> on = std::vector<std::uint8_t>(nodes, 1);
    spreading() {
        obs.x = nn::matrix<double>::Zero(nodes, bandit::contexts);
        obs.x.col(0).setOnes();
        obs.context.assign(nodes, 0);
    }
    template <class Rng> const observation& observe(Rng&) const { return obs; }
    std::size_t num_choices() const { return bandit::arms; }
    std::span<const std::uint8_t> active() const { return on; }
    void set_workers(std::size_t) {}
    outcome evaluate(const observation&, std::span<const int>, std::size_t) const { return {0}; }
    bool guided() const { return decodes; }
    rl::guided_sample decode(const observation&, const nn::matrix<double>& logits, std::uint64_t seed, bool greedy,
                             std::size_t) const {
        rl::guided_sample g{.actions = std::vector<int>(nodes), .bias = nn::matrix<float>::Zero(nodes, bandit::arms)};
        std::vector<int> load(bandit::arms, 0);
        std::mt19937_64 rng(seed);
        for (int i = 0; i < nodes; ++i) {
            nn::matrix<double> total(1, bandit::arms);
            for (int j = 0; j < bandit::arms; ++j) {
                g.bias(i, j) = static_cast<float>(-2 * load[j]);
                total(0, j) = logits(i, j) + g.bias(i, j);
            }
            const int pick = greedy ? nn::argmax_rows(total)[0] : nn::sample_rows(total, rng)[0];
            g.actions[i] = pick;
            ++load[pick];
        }
        return g;
    }
};
static_assert(rl::GuidedEnvironment<spreading>);
}  // namespace

TEST_CASE("PPO warm start through a guided decoder: imitating the decoder's distribution reproduces the target") {
    // the target 2, 1, 0, 2, 1, 0: one row of logits l decodes to it where l2 > l1 > l0 > l2 - 2
    const std::vector<int> target{2, 1, 0, 2, 1, 0};
    const rl::ppo_config cfg{.updates = 0,
                             .imitation_steps = 300,
                             .imitation_learning_rate = 0.05,
                             .imitation_min_agreement = 1.0,
                             .imitation_max_steps = 1000};
    spreading env;
    std::mt19937_64 rng(3);
    linear_net net(rng);
    rl::ppo<spreading, linear_net> trainer(env, net, cfg);
    trainer.set_imitation_target(target);
    trainer.train(rng);
    CHECK(trainer.imitation_agreement() == 1.0);
    CHECK(trainer.imitation_steps_done() == 300);  // reached after the first steps, none more
    CHECK(trainer.imitation_reach().diverged == 0);
    const auto out = net.evaluate(env.obs, {});
    CHECK(env.decode(env.obs, out.logits[0], 0, true, 0).actions == target);

    // the plain cross-entropy of softmax(logits) towards the same target makes the one row uniform
    // over the arms (each is the target of two nodes): its mode gives every node the same arm, a
    // third of the target, and which arm (and so the decoding) is left to the row's rounding
    spreading plain_env;
    plain_env.decodes = false;
    std::mt19937_64 rng2(3);
    linear_net plain_net(rng2);
    auto plain_cfg = cfg;
    plain_cfg.imitation_min_agreement = 0;
    rl::ppo<spreading, linear_net> plain(plain_env, plain_net, plain_cfg);
    plain.set_imitation_target(target);
    plain.train(rng2);
    const auto plain_out = plain_net.evaluate(env.obs, {});
    const auto row = plain_out.logits[0].row(0);
    CHECK(row.maxCoeff() - row.minCoeff() < 0.05);
    CHECK(plain.imitation_agreement() == doctest::Approx(1.0 / 3));
    const auto guided_row = out.logits[0].row(0);
    CHECK(guided_row(2) - guided_row(0) > 0.5);    // the guided row keeps its order, l2 > l1 > l0
    CHECK(plain.imitation_reach().diverged == 0);  // no decoder walked: nothing counted
}

TEST_CASE("PPO: advantages are measured within each stratum of samples a guided decoder reports") {
    // two strata far apart: every sample of the worse one would be below an update-wide mean; within
    // its stratum its better half is above
    const std::vector<double> r{1.0, 3.0, -10.0, -14.0, 2.0, -12.0};
    const std::vector<std::uint32_t> stratum{0, 0, 1, 1, 0, 1};
    const auto adv = rl::detail::stratified_advantages(r, stratum, true);
    REQUIRE(adv.size() == r.size());
    // stratum 0: mean 2, spread sqrt(2/3); stratum 1: mean -12, spread sqrt(8/3)
    CHECK(adv[0] == doctest::Approx(-1 / std::sqrt(2.0 / 3)));
    CHECK(adv[1] == doctest::Approx(1 / std::sqrt(2.0 / 3)));
    CHECK(adv[4] == doctest::Approx(0.0));
    CHECK(adv[2] == doctest::Approx(2 / std::sqrt(8.0 / 3)));
    CHECK(adv[3] == doctest::Approx(-2 / std::sqrt(8.0 / 3)));
    CHECK(adv[5] == doctest::Approx(0.0));
    const auto raw = rl::detail::stratified_advantages(r, stratum, false);
    CHECK(raw[2] == doctest::Approx(2.0));
    CHECK(rl::detail::stratified_advantages(std::vector<double>{5.0}, std::vector<std::uint32_t>{3}, true)[0] == 0.0);
    CHECK_THROWS_AS(rl::detail::stratified_advantages(r, std::vector<std::uint32_t>{0}, true), error);
}
