#pragma once
/// @file
/// @brief TASO's cost-based backtracking search: a priority queue of graphs ordered by cost; the
/// cheapest is expanded by applying every rule at every match; a new graph joins the queue when
/// it is unseen (structural hash), not too large, and cheaper than alpha x the best cost so far;
/// the search stops after `budget` expansions. TASO (SOSP'19) §5, Algorithm 2.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/structural_hash.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/rewriting/builtin_rules.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search/concepts.hpp>
#include <goopt/subst/search/match_applier.hpp>
#include <goopt/subst/search/rewrite_space.hpp>
#include <goopt/subst/search/rule_library.hpp>
#include <goopt/subst/search/search_result.hpp>

#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// Why taso_search() stopped.
enum class taso_bound {
    converged,   ///< the queue ran empty within every limit
    budget,      ///< taso_config::budget graphs were expanded
    time,        ///< the opt-in wall-clock limit (rewrite_space::seconds)
    stopped,     ///< the visitor asked to stop
    graph_size,  ///< the queue ran empty, but candidates were dropped for having too many ops
    queue_size,  ///< the queue ran empty, but its worst candidates were dropped to keep it within max_queue
};

inline constexpr std::string_view name(taso_bound b) noexcept {
    switch (b) {
        case taso_bound::converged:
            return "converged";
        case taso_bound::budget:
            return "budget";
        case taso_bound::time:
            return "time";
        case taso_bound::stopped:
            return "stopped";
        case taso_bound::graph_size:
            return "graph_size";
        case taso_bound::queue_size:
            return "queue_size";
    }
    return "?";
}

/// Knobs of taso_search(); TASO's defaults where it has them. Its budget is a count of expansions.
struct taso_config {
    double alpha = 1.0;            ///< keep graphs cheaper than alpha x best (TASO: 1.0-1.05)
    std::size_t budget = 100;      ///< graphs expanded (TASO's evaluation: 100)
    std::size_t max_queue = 2000;  ///< candidates kept; the worst are dropped beyond it
};

/// @brief TASO's search for the cheapest graph equivalent to `g` under `rules` (and the built-ins).
/// @param cost the cost model (subst::inference_cost of its op times is what is minimized).
/// @param visitor shown the progress after each expansion; returning false stops the search.
/// @return the cheapest graph seen (g itself when nothing is cheaper) and the statistics, with the
/// taso_bound it stopped at.
template <class Cost, device::DeviceModel Device, SearchVisitor Visitor = null_search_visitor>
requires cost::CostModel<Cost, Device> search_result<taso_bound> taso_search(
    const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
    const rewrite_space& space = {}, const taso_config& config = {}, Visitor&& visitor = {});

/// taso_search() as a subst::SubstitutionSearch, for optimize().
struct taso_method {
    taso_config config = {};
    template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
    requires cost::CostModel<Cost, Device> search_result<taso_bound>
    operator()(const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
               const rewrite_space& space, Visitor&& visitor) const {
        return taso_search(g, rules, cost, device, space, config, std::forward<Visitor>(visitor));
    }
};

// ---- implementation ----

template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
requires cost::CostModel<Cost, Device> search_result<taso_bound> taso_search(
    const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
    const rewrite_space& space, const taso_config& config, Visitor&& visitor) {
    const wall_clock_limit clock(space.seconds);
    const rule_library library(rules, space.both_directions);
    match_applier applier(space.check_flops);

    struct node {
        std::optional<graph::computation_graph> graph;
        double cost;
        std::int64_t parent;
        std::string rule;
        bool expanded = false;
    };
    std::vector<node> nodes;
    std::multimap<double, std::size_t> queue;  // cost -> node
    std::unordered_set<std::uint64_t> seen;
    const std::size_t max_ops = static_cast<std::size_t>(space.max_ops_factor * static_cast<double>(g.num_ops()));

    search_stats<taso_bound> stats;
    stats.cost_before = inference_cost(g, cost, device);
    nodes.push_back({g, stats.cost_before, -1, {}});
    queue.emplace(stats.cost_before, 0);
    seen.insert(graph::structural_hash(g));
    std::size_t best = 0;
    bool dropped_size = false, dropped_queue = false;
    std::optional<taso_bound> bound;

    while (!queue.empty() && !bound) {
        const auto [c, id] = *queue.begin();
        queue.erase(queue.begin());
        (void)c;
        if (stats.steps >= config.budget) {
            bound = taso_bound::budget;
            break;
        }
        ++stats.steps;
        const graph::computation_graph current = *nodes[id].graph;
        nodes[id].expanded = true;
        if (id != best) nodes[id].graph.reset();  // expanded: of those, only the best graph is kept
        const auto present = rule_library::kinds_in(current);
        // a rewritten graph: into the queue when unseen, small enough and cheap enough
        auto consider = [&](std::optional<graph::computation_graph>&& next, const rule& r) {
            if (!next) {
                ++stats.refused;
                return;
            }
            if (next->num_ops() > max_ops) {
                dropped_size = true;
                return;
            }
            if (!seen.insert(graph::structural_hash(*next)).second) return;
            ++stats.graphs_seen;
            const double nc = inference_cost(*next, cost, device);
            if (!(nc < config.alpha * nodes[best].cost)) return;
            nodes.push_back({std::move(next), nc, static_cast<std::int64_t>(id), to_string(r)});
            queue.emplace(nc, nodes.size() - 1);
            if (nc < nodes[best].cost) {
                // the best graph is the cheapest seen, expanded or not (TASO updates it on pop;
                // keeping it here too means a budget stop never loses a cheaper candidate)
                if (nodes[best].expanded && best != id) nodes[best].graph.reset();
                best = nodes.size() - 1;
            }
            if (queue.size() > config.max_queue) {
                auto worst = std::prev(queue.end());
                if (worst->second != best) nodes[worst->second].graph.reset();
                queue.erase(worst);
                dropped_queue = true;
            }
        };
        auto timed_out = [&] {
            if (clock.over()) bound = taso_bound::time;
            return bound.has_value();
        };
        if (space.use_builtins)
            for (const auto& b : builtin_rules(current, space.builtins)) {
                if (timed_out()) break;
                consider(applier(current, b.rule, b.where, false), b.rule);
            }
        for (std::size_t k = 0; k < library.size() && !bound; ++k) {
            if (!library.may_match(k, present)) continue;
            const rule& r = library[k];
            for (const auto& m : distinct_placements(find_matches(current, r, space.matches_per_rule))) {
                if (timed_out()) break;
                consider(applier(current, r, m, true), r);
            }
        }
        if (!visitor.progress(search_progress{stats.steps, stats.graphs_seen, nodes[best].cost, clock.elapsed()}))
            bound = bound.value_or(taso_bound::stopped);
    }
    if (!bound)
        bound = dropped_size ? taso_bound::graph_size : dropped_queue ? taso_bound::queue_size : taso_bound::converged;
    stats.bound = *bound;
    for (std::int64_t n = static_cast<std::int64_t>(best); n > 0; n = nodes[static_cast<std::size_t>(n)].parent)
        stats.applied.insert(stats.applied.begin(), nodes[static_cast<std::size_t>(n)].rule);
    stats.rules_applied = stats.applied.size();
    stats.cost_after = nodes[best].cost;
    stats.seconds = clock.elapsed();
    return {std::move(*nodes[best].graph), std::move(stats)};
}

}  // namespace search
}  // namespace goopt::subst
