#pragma once
/// @file
/// @brief Whether a rewritten graph still computes what the original does: both run on the
/// interpreter in double on the same random feeds, compared output by output.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace goopt::subst {
inline namespace rewriting {

/// @brief Random feeds of `g` (interp::random_feeds) in which every batchnorm variance that is
/// fed (a source op read as a batchnorm's 5th input) is |v| + 0.5, as a trained model's are, so
/// that inference-form batchnorm stays finite.
template <std::uniform_random_bit_generator Rng>
interp::feed_map<double> model_feeds(const graph::computation_graph& g, Rng& rng);

/// @brief The largest difference between the outputs of `a` and `b` on the same feeds
/// (model_feeds of `a`, seeded by `seed`): per output, max |a - b| over its elements divided by
/// max |a| over its finite elements (1 where that is 0), and the largest of these. An element that
/// is NaN in both, or the same infinity, agrees; NaN or infinity in one only is an infinite difference. Both graphs
/// must read the same inputs and weights by name and have as many outputs, of equal shapes.
/// @throws goopt::error when the outputs differ in number or shape.
inline double max_relative_difference(const graph::computation_graph& a, const graph::computation_graph& b,
                                      std::uint64_t seed = 0x5eed);

// ---- implementation ----

template <std::uniform_random_bit_generator Rng>
interp::feed_map<double> model_feeds(const graph::computation_graph& g, Rng& rng) {
    auto feeds = interp::random_feeds<double>(g, rng);
    for (const auto& op : g.ops()) {
        if (op.kind != ops::op_kind::batchnorm) continue;
        const auto& var = g.get_op(g.producer(op.inputs[4]));
        if (auto it = feeds.find(var.name); it != feeds.end() && var.inputs.empty())
            for (auto& v : it->second.storage()) v = std::abs(v) + 0.5;
    }
    return feeds;
}

inline double max_relative_difference(const graph::computation_graph& a, const graph::computation_graph& b,
                                      std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto feeds = model_feeds(a, rng);
    const auto x = interp::run<double>(a, feeds);
    const auto y = interp::run<double>(b, feeds);
    if (x.size() != y.size())
        throw error(concat("comparing graphs '", a.name(), "' and '", b.name(), "'"),
                    concat(x.size(), " vs ", y.size(), " outputs"), "as many outputs");
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i].shape() != y[i].shape())
            throw error(concat("comparing graphs '", a.name(), "' and '", b.name(), "'"),
                        concat("output ", i, " has another shape"), "equal output shapes");
        double diff = 0, scale = 0;
        for (std::size_t e = 0; e < x[i].size(); ++e) {
            const double u = x[i].data()[e], v = y[i].data()[e];
            if (std::isfinite(u)) scale = std::max(scale, std::abs(u));
            // the same value, the same infinity, or NaN in both (random feeds can take an op out of its
            // domain, e.g. a square root of a negative constant): the rewrite changed nothing there
            if (u == v || (std::isnan(u) && std::isnan(v))) continue;
            diff = std::isfinite(u - v) ? std::max(diff, std::abs(u - v)) : INFINITY;
            if (std::isinf(diff)) break;
        }
        worst = std::max(worst, diff / (scale > 0 ? scale : 1.0));
    }
    return worst;
}

}  // namespace rewriting
}  // namespace goopt::subst
