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
#include <goopt/subst/search/concepts.hpp>
#include <goopt/subst/search/greedy_search.hpp>
#include <goopt/subst/search/rewrite_space.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>

namespace goopt::subst {
inline namespace search {

/// @brief The cheapest graph equivalent to `g` that `search` finds with `rules` (used in both
/// directions) and the built-in rules, within `space`, costed by subst::inference_cost under
/// `cost` on `device`. The search is any subst::SubstitutionSearch: greedy_method (the default:
/// fastest, as good as TASO's on the zoo), taso_method, eqsat_method, or a user's own.
/// @return the graph and the statistics of the search, with its own bound type.
/// The returned graph's ops that a rewrite added without a layer get one: the latest layer of the
/// ops they read, else the earliest of the ops that read them (when `g` had every computing op in a
/// layer, so that layer-based placements still apply to the result).
template <class Cost, device::DeviceModel Device, class Search = greedy_method,
          SearchVisitor Visitor = null_search_visitor>
requires cost::CostModel<Cost, Device> && SubstitutionSearch<Search, Cost, Device>
auto optimize(const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
              const rewrite_space& space = {}, const Search& search = {}, Visitor&& visitor = {});

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

template <class Cost, device::DeviceModel Device, class Search, SearchVisitor Visitor>
requires cost::CostModel<Cost, Device> && SubstitutionSearch<Search, Cost, Device>
auto optimize(const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
              const rewrite_space& space, const Search& search, Visitor&& visitor) {
    auto r = search(g, rules, cost, device, space, visitor);
    bool all_layered = true;
    for (const auto& op : g.ops()) all_layered = all_layered && (op.spec().has(ops::source) || op.layer >= 0);
    if (all_layered) inherit_layers(r.graph);
    return r;
}

}  // namespace search
}  // namespace goopt::subst
