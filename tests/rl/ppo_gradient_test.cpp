// rl::ppo's hand-derived gradient (rl::detail::ppo_minibatch_loss, the function update() calls for
// every minibatch) against central finite differences in double precision, like every nn layer's.

#include <goopt/nn/gradient_check.hpp>
#include <goopt/rl/ppo.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace goopt;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// One minibatch's inputs: 7 nodes (node 2 inactive), 4 choices, 6 samples of which 4 are in the
/// minibatch. The samples were drawn from older logits, so their ratios spread over and beyond the
/// clip window.
struct minibatch_case {
    static constexpr int nodes = 7, choices = 4, samples = 6;
    nn::matrix<double> logits;
    std::vector<std::size_t> batch{4, 0, 5, 2};
    std::vector<std::vector<int>> actions;
    std::vector<std::vector<double>> old_log_probs;
    std::vector<double> advantages, returns;
    std::vector<std::uint8_t> active = std::vector<std::uint8_t>(nodes, 1);
    std::vector<nn::matrix<double>> bias;  // empty: none
    rl::ppo_config config{.clip = 0.2, .value_coef = 0.5, .entropy_coef = 0.05};
    double value = 0.3;

    minibatch_case(std::uint64_t seed, bool biased) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<double> normal;
        std::uniform_real_distribution<double> uniform(-2, 2);
        logits = nn::matrix<double>(nodes, choices);
        for (Eigen::Index i = 0; i < logits.size(); ++i) logits.data()[i] = normal(rng);
        nn::matrix<double> old = logits;
        for (Eigen::Index i = 0; i < old.size(); ++i) old.data()[i] += 0.5 * normal(rng);
        active[2] = 0;
        for (int s = 0; s < samples; ++s) {
            nn::matrix<double> b = nn::matrix<double>::Zero(nodes, choices);
            if (biased) {
                for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = normal(rng);
                b(1, (s + 1) % choices) = -inf;  // an infeasible action
                b(3, 0) = b(3, 2) = -inf;
                for (int j = 1; j < choices; ++j) b(5, j) = -inf;  // node 5: one feasible action
                bias.push_back(b);
            }
            const nn::matrix<double> lp = nn::log_softmax<double>(old + b);
            std::vector<int> a = nn::sample_rows(nn::matrix<double>(old + b), rng);
            std::vector<double> olp(nodes);
            for (int i = 0; i < nodes; ++i) olp[i] = lp(i, a[i]);
            actions.push_back(a);
            old_log_probs.push_back(olp);
            advantages.push_back(uniform(rng));
            returns.push_back(uniform(rng));
        }
    }
    rl::detail::ppo_minibatch_result operator()(const nn::matrix<double>& l, double v) const {
        return rl::detail::ppo_minibatch_loss(l, batch, actions, old_log_probs, advantages, active, config, v, returns,
                                              bias);
    }
    /// Each node ratio's distance to the clip window's nearest edge: finite differences need the
    /// minimum in the surrogate to stay on one side.
    double closest_to_an_edge() const {
        double closest = inf;
        const nn::matrix<double> lp = nn::log_softmax<double>(logits);
        for (std::size_t b = 0; b < batch.size(); ++b) {
            const std::size_t s = batch[b];
            const nn::matrix<double> slp = bias.empty() ? lp : nn::log_softmax<double>(logits + bias[s]);
            for (int i = 0; i < nodes; ++i) {
                if (!active[i]) continue;
                const double ratio = std::exp(slp(i, actions[s][i]) - old_log_probs[s][i]);
                closest = std::min({closest, std::abs(ratio - (1 - config.clip)), std::abs(ratio - (1 + config.clip))});
            }
        }
        return closest;
    }
};

/// The loss's gradient in the logits and the value equals central differences, and the surrogate
/// had ratios both inside and outside the clip window.
void check_against_finite_differences(minibatch_case& c) {
    REQUIRE(c.closest_to_an_edge() > 1e-4);
    const auto r = c(c.logits, c.value);
    CHECK(r.counted == c.batch.size() * (minibatch_case::nodes - 1));
    CHECK(r.clipped > 0);          // some ratios outside the window ...
    CHECK(r.clipped < r.counted);  // ... and some inside
    CHECK(r.dlogits.allFinite());
    CHECK(std::isfinite(r.loss));
    const double err = nn::gradient_error(c.logits, r.dlogits, [&] { return c(c.logits, c.value).loss; });
    CHECK(err < 1e-7);
    // an inactive node takes no part: no gradient at all
    CHECK(r.dlogits.row(2).isZero(0));
    const double h = 1e-6;
    const double numeric = (c(c.logits, c.value + h).loss - c(c.logits, c.value - h).loss) / (2 * h);
    CHECK(r.dvalue == doctest::Approx(numeric).epsilon(1e-7));
    if (c.config.baseline == rl::baseline_kind::moving_average) {
        CHECK(r.dvalue == 0);
        CHECK(c(c.logits, c.value + 1).loss == r.loss);
    } else {
        CHECK(r.dvalue != 0);
    }
}

}  // namespace

TEST_CASE("PPO gradient: the clipped surrogate, entropy and value loss match finite differences") {
    for (const auto baseline : {rl::baseline_kind::value_head, rl::baseline_kind::moving_average}) {
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            CAPTURE(seed);
            CAPTURE(static_cast<int>(baseline));
            minibatch_case c(seed, false);
            c.config.baseline = baseline;
            check_against_finite_differences(c);
        }
    }
}

TEST_CASE("PPO gradient: with a per-sample bias and infeasible actions, it still matches finite differences") {
    for (const auto baseline : {rl::baseline_kind::value_head, rl::baseline_kind::moving_average}) {
        for (std::uint64_t seed : {4u, 5u, 6u}) {
            CAPTURE(seed);
            minibatch_case c(seed, true);
            c.config.baseline = baseline;
            check_against_finite_differences(c);
        }
    }
}

TEST_CASE("PPO gradient: a node with one feasible action gives no surrogate gradient; a forbidden action is an error") {
    minibatch_case c(7, true);
    c.config.entropy_coef = 0;  // the entropy bonus is on the unbiased logits: leave only the surrogate
    const auto r = c(c.logits, c.value);
    CHECK(r.dlogits.row(5).isZero(0));  // node 5 has one feasible action in every sample
    CHECK(!r.dlogits.row(1).isZero(0));
    // the infeasible choices of node 3 (in every sample) get no surrogate gradient either
    CHECK(r.dlogits(3, 0) == 0);
    CHECK(r.dlogits(3, 2) == 0);
    // a biased log-probability of -infinity in the entropy term adds nothing, never NaN
    c.config.entropy_coef = 0.05;
    c.logits(3, 0) = -inf;  // no sample takes it (its bias is -infinity too)
    const auto masked = c(c.logits, c.value);
    CHECK(std::isfinite(masked.loss));
    CHECK(masked.dlogits.row(3).allFinite());
    // a sample whose action its own bias forbids
    minibatch_case bad(8, true);
    bad.actions[bad.batch[0]][5] = 1;
    CHECK_THROWS_WITH_AS(bad(bad.logits, bad.value), doctest::Contains("which its bias forbids"), error);
}

TEST_CASE("PPO gradient: without a bias, the loss is the textbook one computed term by term") {
    // an independent evaluation of the same loss (no shared code beyond log_softmax)
    minibatch_case c(9, false);
    const auto r = c(c.logits, c.value);
    const nn::matrix<double> lp = nn::log_softmax<double>(c.logits);
    double surrogate = 0, entropy = 0, value_loss = 0;
    for (std::size_t s : c.batch)
        for (int i = 0; i < minibatch_case::nodes; ++i) {
            if (!c.active[i]) continue;
            const double ratio = std::exp(lp(i, c.actions[s][i]) - c.old_log_probs[s][i]);
            surrogate += std::min(ratio * c.advantages[s], std::clamp(ratio, 0.8, 1.2) * c.advantages[s]);
        }
    for (int i = 0; i < minibatch_case::nodes; ++i)
        if (c.active[i])
            for (int j = 0; j < minibatch_case::choices; ++j) entropy -= std::exp(lp(i, j)) * lp(i, j);
    for (std::size_t s : c.batch) value_loss += 0.5 * (c.value - c.returns[s]) * (c.value - c.returns[s]);
    const double active_nodes = minibatch_case::nodes - 1, m = static_cast<double>(c.batch.size());
    const double expected = -surrogate / (m * active_nodes) - 0.05 * entropy / active_nodes + 0.5 * value_loss / m;
    CHECK(r.loss == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("PPO gradient: blocks of the minibatch sum to the same loss and gradient, and one block to the same bits") {
    for (const bool biased : {false, true}) {
        CAPTURE(biased);
        minibatch_case c(10, biased);
        const auto whole = c(c.logits, c.value);  // the default block of 64 holds the minibatch of 4
        for (std::size_t block : {1, 3, 4}) {
            CAPTURE(block);
            c.config.gradient_block = block;
            const auto r = c(c.logits, c.value);
            CHECK(r.counted == whole.counted);
            CHECK(r.clipped == whole.clipped);
            CHECK(r.dvalue == whole.dvalue);
            CHECK(r.loss == doctest::Approx(whole.loss).epsilon(1e-12));
            CHECK((r.dlogits - whole.dlogits).cwiseAbs().maxCoeff() < 1e-12);
            // a block of the whole minibatch is the one loop over its samples: the same bits
            if (block >= c.batch.size()) CHECK(r.dlogits == whole.dlogits);
            // the blocks' sum is a gradient too
            CHECK(nn::gradient_error(c.logits, r.dlogits, [&] { return c(c.logits, c.value).loss; }) < 1e-7);
        }
        c.config.gradient_block = 0;
        CHECK_THROWS_WITH_AS(c(c.logits, c.value), doctest::Contains("gradient_block is 0"), error);
    }
}

TEST_CASE("PPO gradient: a bias in float gives the bits of the same bias copied to double") {
    minibatch_case c(11, true);
    std::vector<nn::matrix<float>> as_float;
    for (auto& b : c.bias) {
        as_float.push_back(b.cast<float>());
        b = as_float.back().cast<double>();
    }
    c.config.gradient_block = 3;  // two blocks
    const auto in_double = c(c.logits, c.value);
    const auto in_float =
        rl::detail::ppo_minibatch_loss(c.logits, c.batch, c.actions, c.old_log_probs, c.advantages, c.active, c.config,
                                       c.value, c.returns, std::span<const nn::matrix<float>>(as_float));
    CHECK(in_float.dlogits == in_double.dlogits);
    CHECK(in_float.loss == in_double.loss);
    CHECK(in_float.clipped == in_double.clipped);
}

TEST_CASE(
    "warm start through a guided decoder: the cross-entropy of softmax(logits + bias) matches finite differences") {
    // 6 nodes, 4 choices: node 1 has a forbidden choice, node 3 one open choice (not counted), node 4
    // is not counted, node 5's bias forbids all but two choices
    constexpr int nodes = 6, choices = 4;
    std::mt19937_64 rng(21);
    std::normal_distribution<double> normal;
    nn::matrix<double> logits(nodes, choices);
    for (Eigen::Index i = 0; i < logits.size(); ++i) logits.data()[i] = normal(rng);
    nn::matrix<float> bias(nodes, choices);
    for (Eigen::Index i = 0; i < bias.size(); ++i) bias.data()[i] = static_cast<float>(2 * normal(rng));
    constexpr float never = -std::numeric_limits<float>::infinity();
    bias(1, 2) = never;
    bias.row(3).setConstant(never);
    bias(3, 1) = 0;
    bias(5, 0) = bias(5, 3) = never;
    const std::vector<int> target{3, 0, 2, 1, 0, 1};
    const std::vector<std::uint8_t> rows{1, 1, 1, 0, 0, 1};
    nn::matrix<double> d;
    const double loss = rl::detail::decoder_cross_entropy(logits, bias, target, rows, d);
    CHECK(std::isfinite(loss));
    CHECK(loss > 0);
    CHECK(d.allFinite());
    nn::matrix<double> scratch;
    CHECK(nn::gradient_error(logits, d, [&] {
              return rl::detail::decoder_cross_entropy(logits, bias, target, rows, scratch);
          }) < 1e-7);
    CHECK(d.row(3).isZero(0));  // not counted
    CHECK(d.row(4).isZero(0));
    CHECK(d(1, 2) == 0);  // a forbidden choice has probability 0 and no gradient
    CHECK(d(5, 0) == 0);
    CHECK(d(5, 3) == 0);
    // the textbook value, term by term: the mean over the counted rows of -log softmax(l + b)[target]
    const nn::matrix<double> lp = nn::log_softmax<double>(nn::matrix<double>(logits + bias.cast<double>()));
    const double expected = -(lp(0, 3) + lp(1, 0) + lp(2, 2) + lp(5, 1)) / 4;
    CHECK(loss == doctest::Approx(expected).epsilon(1e-12));
    // a bias of zero is the plain cross-entropy of those rows
    const nn::matrix<float> zero = nn::matrix<float>::Zero(nodes, choices);
    const std::vector<std::uint8_t> all(nodes, 1);
    nn::matrix<double> d_plain, d_zero;
    const double plain = nn::cross_entropy<double>(logits, target, d_plain);
    CHECK(rl::detail::decoder_cross_entropy(logits, zero, target, all, d_zero) ==
          doctest::Approx(plain).epsilon(1e-12));
    CHECK((d_zero - d_plain).cwiseAbs().maxCoeff() < 1e-15);
    // a counted row whose target the bias forbids is an error, named
    auto closed = rows;
    closed[3] = 1;  // node 3's target 1 is its one open choice: fine
    CHECK_NOTHROW(rl::detail::decoder_cross_entropy(logits, bias, target, closed, d));
    auto wrong = target;
    wrong[1] = 2;
    CHECK_THROWS_WITH_AS(rl::detail::decoder_cross_entropy(logits, bias, wrong, rows, d),
                         doctest::Contains("which its bias forbids"), error);
    // nothing counted: no loss, no gradient
    CHECK(rl::detail::decoder_cross_entropy(logits, bias, target, std::vector<std::uint8_t>(nodes, 0), d) == 0);
    CHECK(d.isZero(0));
}

TEST_CASE("PPO gradient: on a graph of several node chunks, the surrogate is the term-by-term one") {
    // 9,000 nodes (three of ppo_surrogate_block's chunks of 4,096), 3 choices, a bias per sample: the
    // chunked loop gives the loss and gradient of a plain loop over samples and nodes
    constexpr int nodes = 9000, choices = 3, samples = 5;
    std::mt19937_64 rng(31);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(-2, 2);
    nn::matrix<double> logits(nodes, choices), old(nodes, choices);
    for (Eigen::Index i = 0; i < logits.size(); ++i) {
        logits.data()[i] = normal(rng);
        old.data()[i] = logits.data()[i] + 0.5 * normal(rng);
    }
    std::vector<nn::matrix<double>> bias;
    std::vector<std::vector<int>> actions;
    std::vector<std::vector<double>> old_log_probs;
    std::vector<double> advantages, returns;
    for (int s = 0; s < samples; ++s) {
        nn::matrix<double> b(nodes, choices);
        for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = normal(rng);
        const nn::matrix<double> lp = nn::log_softmax<double>(old + b);
        actions.push_back(nn::sample_rows(nn::matrix<double>(old + b), rng));
        std::vector<double> olp(nodes);
        for (int i = 0; i < nodes; ++i) olp[i] = lp(i, actions.back()[i]);
        old_log_probs.push_back(olp);
        bias.push_back(b);
        advantages.push_back(uniform(rng));
        returns.push_back(uniform(rng));
    }
    std::vector<std::uint8_t> active(nodes, 1);
    for (int i = 0; i < nodes; i += 7) active[i] = 0;
    const std::vector<std::size_t> batch{3, 1, 4, 0};
    const rl::ppo_config config{.clip = 0.2, .value_coef = 0.5, .entropy_coef = 0};
    const auto r = rl::detail::ppo_minibatch_loss(logits, batch, actions, old_log_probs, advantages, active, config,
                                                  0.0, returns, bias);
    double n_active = 0;
    for (auto a : active) n_active += a;
    const double w = 1.0 / (static_cast<double>(batch.size()) * n_active);
    double surrogate = 0;
    std::size_t clipped = 0;
    nn::matrix<double> d = nn::matrix<double>::Zero(nodes, choices);
    for (std::size_t s : batch) {
        const nn::matrix<double> lp = nn::log_softmax<double>(logits + bias[s]);
        for (int i = 0; i < nodes; ++i) {
            if (!active[i]) continue;
            const double ratio = std::exp(lp(i, actions[s][i]) - old_log_probs[s][i]), A = advantages[s];
            if (ratio < 0.8 || ratio > 1.2) ++clipped;
            surrogate += std::min(ratio * A, std::clamp(ratio, 0.8, 1.2) * A);
            if (ratio * A <= std::clamp(ratio, 0.8, 1.2) * A) {
                for (int j = 0; j < choices; ++j) d(i, j) += w * A * ratio * std::exp(lp(i, j));
                d(i, actions[s][i]) -= w * A * ratio;
            }
        }
    }
    double value_loss = 0;
    for (std::size_t s : batch) value_loss += 0.5 * returns[s] * returns[s];
    CHECK(r.counted == batch.size() * static_cast<std::size_t>(n_active));
    CHECK(r.clipped == clipped);
    CHECK(clipped > 0);
    CHECK(r.loss == doctest::Approx(-w * surrogate + 0.5 * value_loss / batch.size()).epsilon(1e-12));
    CHECK((r.dlogits - d).cwiseAbs().maxCoeff() < 1e-15);
    for (int i = 0; i < nodes; i += 7) CHECK(r.dlogits.row(i).isZero(0));
    // an action its bias forbids, in the last chunk, is named
    bias[batch[2]](8500, actions[batch[2]][8500]) = -std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(rl::detail::ppo_minibatch_loss(logits, batch, actions, old_log_probs, advantages, active,
                                                        config, 0.0, returns, bias),
                         doctest::Contains("at node 8500, which its bias forbids"), error);
}
