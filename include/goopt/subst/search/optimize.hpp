#pragma once
/// @file
/// @brief Substitution as a pipeline stage: a graph in, a cheaper equivalent graph out, with the
/// names, layers and colocation groups of the ops it keeps, so that placement, scheduling and
/// fusion run on it as on the original. One entry point over the searches of subst/.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search/eqsat_search.hpp>
#include <goopt/subst/search/greedy_search.hpp>
#include <goopt/subst/search/search.hpp>
#include <goopt/subst/search/taso_search.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>

namespace goopt::subst {
inline namespace search {

/// Which search optimize() runs.
enum class search_method {
    greedy,  ///< greedy_search: first improvement with lookahead (the default: fastest, as good on the zoo)
    taso,    ///< taso_search: TASO's cost-ordered backtracking search (the reference)
    eqsat,   ///< eqsat_search: equality saturation over an e-graph and extraction (Tensat)
};

/// The method named `text` ("greedy" or "taso"); goopt::error otherwise.
inline search_method parse_search_method(std::string_view text) {
    if (text == "greedy") return search_method::greedy;
    if (text == "taso") return search_method::taso;
    if (text == "eqsat") return search_method::eqsat;
    throw error("parse_search_method", concat("search method '", text, "'"), "'greedy', 'taso' or 'eqsat'");
}

/// Knobs of optimize(): the method and each method's own knobs.
struct optimize_config {
    search_method method = search_method::greedy;
    greedy_config greedy = {};
    taso_config taso = {};
    eqsat_config eqsat = {};
};

/// @brief The cheapest graph equivalent to `g` that the chosen search finds with `rules` (used in
/// both directions) and the built-in rules, costed by subst::inference_cost under `cost` on `device`.
/// @return the graph and the search statistics (costs, rewrites, seconds, which bound it hit).
/// The returned graph's ops that a rewrite added without a layer get one: the latest layer of the
/// ops they read, else the earliest of the ops that read them (when `g` had every computing op in a
/// layer, so that layer-based placements still apply to the result).
template <class Cost, device::DeviceModel Device, SearchVisitor Visitor = null_search_visitor>
requires cost::CostModel<Cost, Device> search_result optimize(const graph::computation_graph& g,
                                                              std::span<const rule> rules, const Cost& cost,
                                                              const Device& device, const optimize_config& config = {},
                                                              Visitor&& visitor = {});

/// @brief Gives every computing op of `g` without a layer (-1) the latest layer of the ops it reads,
/// else the earliest layer of the ops that read it; sources keep theirs.
inline void inherit_layers(graph::computation_graph& g);

// ---- implementation ----

inline void inherit_layers(graph::computation_graph& g) {
    const auto order = graph::topological_order(g);
    auto computing = [&](graph::op_id o) { return !g.get_op(o).spec().has(ops::source); };
    for (const auto i : order) {
        const auto o = static_cast<graph::op_id>(i);
        if (!computing(o) || g.get_op(o).layer >= 0) continue;
        std::int32_t layer = -1;
        for (auto t : g.get_op(o).inputs) layer = std::max(layer, g.get_op(g.producer(t)).layer);
        if (layer >= 0) g.set_layer(o, layer);
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const auto o = static_cast<graph::op_id>(*it);
        if (!computing(o) || g.get_op(o).layer >= 0) continue;
        std::int32_t layer = -1;
        for (auto t : g.get_op(o).outputs)
            for (const auto& u : g.get_tensor(t).uses) {
                const auto l = g.get_op(u.op).layer;
                if (l >= 0 && (layer < 0 || l < layer)) layer = l;
            }
        if (layer >= 0) g.set_layer(o, layer);
    }
}

template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
requires cost::CostModel<Cost, Device> search_result optimize(const graph::computation_graph& g,
                                                              std::span<const rule> rules, const Cost& cost,
                                                              const Device& device, const optimize_config& config,
                                                              Visitor&& visitor) {
    auto r = config.method == search_method::taso
                 ? taso_search(g, rules, cost, device, config.taso, std::forward<Visitor>(visitor))
             : config.method == search_method::eqsat
                 ? eqsat_search(g, rules, cost, device, config.eqsat, std::forward<Visitor>(visitor))
                 : greedy_search(g, rules, cost, device, config.greedy, std::forward<Visitor>(visitor));
    bool all_layered = true;
    for (const auto& op : g.ops()) all_layered = all_layered && (op.spec().has(ops::source) || op.layer >= 0);
    if (all_layered) inherit_layers(r.graph);
    return r;
}

}  // namespace search
}  // namespace goopt::subst
