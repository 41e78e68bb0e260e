#pragma once
/// @file
/// @brief Numerical re-check of a rewrite with the float reference interpreter: both sides run on
/// the same random inputs and must agree output by output. A check, not a proof: it catches a
/// fingerprint collision or a rule that holds only at the shapes it was found at.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>

namespace goopt::subst {
inline namespace generation {

/// @brief Runs `source` and `target` on the same random inputs (uniform in [-1, 1), drawn from
/// `rng`; an input both graphs have gets one value) in double precision.
/// @param tolerance allowed |a - b| relative to 1 + |a| + |b| per element.
/// @return nullopt when every output agrees, else a one-line description of the first mismatch.
template <std::uniform_random_bit_generator Rng>
std::optional<std::string> float_mismatch(const graph::computation_graph& source,
                                          const graph::computation_graph& target, Rng& rng, double tolerance = 1e-9) {
    interp::feed_map<double> feeds = interp::random_feeds<double>(source, rng);
    for (auto& [name, v] : interp::random_feeds<double>(target, rng)) feeds.emplace(name, std::move(v));
    const auto a = interp::run<double>(source, feeds);
    const auto b = interp::run<double>(target, feeds);
    if (a.size() != b.size())
        return "source has " + std::to_string(a.size()) + " outputs, target " + std::to_string(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].shape() != b[i].shape()) return "output " + std::to_string(i) + ": shapes differ";
        const double* x = a[i].data();
        const double* y = b[i].data();
        for (std::size_t e = 0; e < a[i].size(); ++e)
            if (!(std::abs(x[e] - y[e]) <= tolerance * (1 + std::abs(x[e]) + std::abs(y[e]))))
                return "output " + std::to_string(i) + " element " + std::to_string(e) + ": " + std::to_string(x[e]) +
                       " vs " + std::to_string(y[e]);
    }
    return std::nullopt;
}

/// @brief float_mismatch of a rule's two sides at its variables' recorded shapes, `trials` times.
/// @return nullopt when the rule holds numerically; a one-line reason (also for a side that does not
/// build) otherwise.
template <std::uniform_random_bit_generator Rng>
std::optional<std::string> check_rule(const rule& r, Rng& rng, int trials = 2, double tolerance = 1e-9) {
    try {
        const auto s = to_graph(r, r.source);
        const auto t = to_graph(r, r.target);
        for (int i = 0; i < trials; ++i)
            if (auto m = float_mismatch(s, t, rng, tolerance)) return m;
    } catch (const error& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

}  // namespace generation
}  // namespace goopt::subst
