#pragma once
/// @file
/// @brief The pieces of a heuristic-guided decoder (the heuristic as the decoder, the policy's
/// logits as learned residuals on its scores: PPO-BiHyb, NeurIPS'21; Jeon et al., ICLR'23) that the
/// placement and joint tasks share: m-ETF's list scheduler asking a callback for each op's device,
/// with each device's start-time score, and a draw from softmax(scores).

#include <goopt/baselines/baechi.hpp>
#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/rl/concepts.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

namespace goopt::tasks {

/// @brief m-ETF (baselines::detail::earliest_task_first) with the device of every op it places by
/// choice drawn by `draw(o, score, best)`: `score[q]` is -(start on q - earliest start) / tau for the
/// devices where o fits (0 at `best`, the earliest), -infinity elsewhere, rounded to float (a decoder
/// stores it as a float bias and must add the same value when it recomputes probabilities). draw
/// returns a device whose score is finite. Ops m-ETF forces (a colocation group placed before, no
/// device with room) are not drawn. `pinned` (empty, or a device per op: an anchor placement) puts
/// the sources where it says before planning (baselines::detail::earliest_task_first) and keeps each
/// op's pinned device open where m-ETF's memory estimate would close it: the anchor is known to fit,
/// and without this an anchored decode leaves the anchor wherever the estimate, planned in m-ETF's
/// order, overflows first. @return m-ETF's decision under those draws.
template <device::DeviceModel D, cost::CostModel<D> Cost, class Draw>
sim::decision guided_earliest_task_first(const sim::simulator<D, Cost>& s, const baselines::baechi_config& guide,
                                         double tau, Draw&& draw, std::span<const sim::device_id> pinned = {}) {
    const std::size_t k = s.cluster().num_devices();
    std::vector<double> score(k);
    const std::vector<double> scale(k, 1.0);
    auto prefer = [&](graph::op_id o, sim::device_id best, double best_start, const auto&, auto&& arrival,
                      const auto& free_at, auto&& fits) {
        std::size_t open = 0;
        for (sim::device_id q = 0; q < k; ++q) {
            score[q] = -std::numeric_limits<double>::infinity();
            if (!fits(q) && (pinned.empty() || pinned[o] != q)) continue;
            ++open;
            const double b = q == best ? 0.0 : -(std::max(free_at[q], arrival(o, q)) - best_start) / tau;
            score[q] = static_cast<double>(static_cast<float>(b));
        }
        if (open == 0) return baselines::baechi_memory::unplaced;  // fits nowhere: m-ETF forces the roomiest
        const sim::device_id pick = draw(o, std::span<const double>(score), best);
        return pick == best ? baselines::baechi_memory::unplaced : pick;
    };
    return baselines::detail::earliest_task_first(s, guide, std::span<const double>(scale), prefer, pinned);
}

/// @brief An index drawn from softmax(score) (entries of -infinity are never drawn), or with
/// `greedy` the first index of the largest score. At least one score must be finite.
inline std::size_t draw_from_scores(std::span<const double> score, bool greedy, std::mt19937_64& rng) {
    const double top = *std::max_element(score.begin(), score.end());
    std::size_t pick = 0;
    if (greedy) {
        while (score[pick] != top) ++pick;
        return pick;
    }
    double z = 0;
    for (double x : score) z += std::exp(x - top);
    double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * z;
    for (std::size_t q = 0; q < score.size(); ++q) {
        if (score[q] == -std::numeric_limits<double>::infinity()) continue;
        pick = q;
        r -= std::exp(score[q] - top);
        if (r < 0) break;
    }
    return pick;
}

/// The guided decoders' time unit: `temperature` x the mean over computing ops of their time on
/// their fastest device (seconds, at least 1e-12).
template <device::DeviceModel D, cost::CostModel<D> Cost>
double mean_fastest_op_time(const sim::simulator<D, Cost>& s, double temperature) {
    const auto& g = s.graph();
    double sum = 0;
    std::size_t count = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        if (g.get_op(o).spec().has(ops::source)) continue;
        double t = s.op_time(o, 0);
        for (sim::device_id d = 1; d < s.cluster().num_devices(); ++d) t = std::min(t, s.op_time(o, d));
        sum += t;
        ++count;
    }
    return temperature * std::max(count ? sum / static_cast<double>(count) : 0.0, 1e-12);
}

/// A guided sample of `n` nodes with `k` choices each, before decoding: every action 0, every choice
/// forbidden (bias -infinity) until the decoder opens it.
inline rl::guided_sample unopened_sample(std::size_t n, std::size_t k) {
    return {.actions = std::vector<int>(n, 0),
            .bias = nn::matrix<float>::Constant(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k),
                                                -std::numeric_limits<float>::infinity())};
}

/// @brief Zeroes the first task head of a fresh GO policy: a guided decoder's logits are residuals
/// on the heuristic's scores, so that the first samples are drawn around the heuristic (zero logits
/// decoded greedily are the heuristic's decision) instead of around a random initial preference.
template <class Net> void start_from_heuristic(Net& net) {
    for (auto* p : net.parameters())
        if (p->name.starts_with("task0.head")) p->value.setZero();
}

}  // namespace goopt::tasks
