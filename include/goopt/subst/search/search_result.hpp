#pragma once
/// @file
/// @brief What a substitution search reports: its progress after each step (shown to a visitor),
/// and its answer, the best graph found with the statistics of the search and the bound it stopped
/// at, each search with bounds of its own kind (greedy_bound, taso_bound, eqsat_bound).

#include <goopt/graph/computation_graph.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// What a visitor is shown after each step of a search.
struct search_progress {
    std::size_t step = 0;         ///< graphs expanded (TASO), rewrites accepted (greedy), rounds (eqsat)
    std::size_t graphs_seen = 0;  ///< distinct graphs costed (eqsat: the e-graph's e-nodes)
    double best_cost = 0;         ///< seconds, inference_cost of the best graph so far
    double seconds = 0;           ///< since the search started
};

/// Where a rewrite was made and what it did to the cost: what `goopt superopt --explain` shows, so
/// that a user can find the rewrite behind a bad result.
struct rewrite_site {
    std::string where;       ///< the names of the ops it rewrote, comma-separated, in the graph it rewrote
    double cost_before = 0;  ///< seconds, inference_cost of the graph it rewrote
    double cost_after = 0;   ///< seconds, of the graph it made
};

/// Statistics of one search; `Bound` is the search's own enumeration of why it stopped.
template <class Bound> struct search_stats {
    double cost_before = 0;  ///< seconds, inference_cost of the input graph
    double cost_after = 0;   ///< seconds, of the returned graph
    std::size_t steps = 0;
    std::size_t graphs_seen = 0;
    std::size_t rules_applied = 0;  ///< rewrites between the input and the returned graph
    std::size_t refused = 0;        ///< matches refused as unsound there (subst::rewrite_refused)
    double seconds = 0;
    Bound bound{};
    std::vector<std::string> applied;  ///< the rules applied, in order (their text)
    /// One per entry of `applied` where the search records them (greedy_search), else empty.
    std::vector<rewrite_site> sites;
};

/// A search's answer: the best graph found and how it was found.
template <class Bound> struct search_result {
    graph::computation_graph graph;
    search_stats<Bound> stats;
};

/// @brief `r` with its bound as the bound's name (`name(bound)`, found by ADL): one type for
/// reports, tables and files over searches of several kinds.
template <class Bound> search_result<std::string_view> named(search_result<Bound>&& r) {
    search_result<std::string_view> out{std::move(r.graph), {}};
    auto& s = out.stats;
    s.cost_before = r.stats.cost_before;
    s.cost_after = r.stats.cost_after;
    s.steps = r.stats.steps;
    s.graphs_seen = r.stats.graphs_seen;
    s.rules_applied = r.stats.rules_applied;
    s.refused = r.stats.refused;
    s.seconds = r.stats.seconds;
    s.bound = name(r.stats.bound);
    s.applied = std::move(r.stats.applied);
    s.sites = std::move(r.stats.sites);
    return out;
}

}  // namespace search
}  // namespace goopt::subst
