#pragma once
/// @file
/// @brief What every substitution search shares: the inference cost of a graph, the rule library it
/// draws from (generated rules in both directions, plus the built-ins instantiated per graph), the
/// bound a search stopped at, its statistics, and the visitor that watches and stops it.
/// TASO (SOSP'19) §5.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/rewriting/builtin_rules.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <bitset>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// Why a search stopped.
enum class search_bound {
    converged,     ///< nothing left to try: the search ran to its end within every bound
    budget,        ///< the budget of expanded graphs (TASO) or steps was spent
    time,          ///< the wall-clock limit
    graph_size,    ///< a candidate was dropped for having too many ops (the search still ran to its end)
    queue_size,    ///< the worst candidates were dropped to keep the queue within its limit
    stopped,       ///< the visitor asked to stop
    iterations,    ///< equality saturation ran its rounds without saturating
    e_graph_size,  ///< equality saturation stopped adding at the e-graph's node limit
    plateau,       ///< equality saturation stopped: a round made the extracted graph too little cheaper
};

inline constexpr std::string_view name(search_bound b) noexcept {
    switch (b) {
        case search_bound::converged:
            return "converged";
        case search_bound::budget:
            return "budget";
        case search_bound::time:
            return "time";
        case search_bound::graph_size:
            return "graph_size";
        case search_bound::queue_size:
            return "queue_size";
        case search_bound::stopped:
            return "stopped";
        case search_bound::iterations:
            return "iterations";
        case search_bound::e_graph_size:
            return "e_graph_size";
        case search_bound::plateau:
            return "plateau";
    }
    return "?";
}

/// What a visitor is shown after each step of a search.
struct search_progress {
    std::size_t step = 0;         ///< graphs expanded (TASO) or rewrites accepted (greedy)
    std::size_t graphs_seen = 0;  ///< distinct graphs costed
    double best_cost = 0;         ///< seconds, inference_cost of the best graph so far
    double seconds = 0;           ///< since the search started
};

/// @brief Watches a search: `progress` is called after every step; returning false stops it.
/// Models: subst::null_search_visitor.
/// @code
///   v.progress(p) -> bool   // p: const search_progress&; false: stop now, keep the best so far
/// @endcode
template <class V>
concept SearchVisitor = requires(V& v, const search_progress& p) {
    { v.progress(p) } -> std::convertible_to<bool>;
};

/// The visitor that watches nothing and never stops a search.
struct null_search_visitor {
    bool progress(const search_progress&) const noexcept { return true; }
};
static_assert(SearchVisitor<null_search_visitor>);

/// Statistics of one search.
struct search_stats {
    double cost_before = 0;  ///< seconds, inference_cost of the input graph
    double cost_after = 0;   ///< seconds, of the returned graph
    std::size_t steps = 0;
    std::size_t graphs_seen = 0;
    std::size_t rules_applied = 0;  ///< rewrites between the input and the returned graph
    std::size_t refused = 0;        ///< matches apply() or the shape check refused
    double seconds = 0;
    search_bound bound = search_bound::converged;
    std::vector<std::string> applied;  ///< the rules applied, in order (their text)
};

/// A search's answer: the best graph found and how it was found.
struct search_result {
    graph::computation_graph graph;
    search_stats stats;
};

/// @brief Rules a search draws from: every rule of `rules` (and, with both_directions, its reverse
/// where the reverse has an op on its source side), each with the op kinds its source needs.
class rule_library {
public:
    explicit rule_library(std::span<const rule> rules, bool both_directions = true);
    std::size_t size() const noexcept { return rules_.size(); }
    const rule& operator[](std::size_t i) const { return rules_[i]; }
    /// Whether every op kind of rule i's source occurs in a graph of kinds `present`.
    bool may_match(std::size_t i, const std::bitset<ops::num_op_kinds>& present) const {
        return (kinds_[i] & ~present).none();
    }
    /// Op kinds occurring in `g`.
    static std::bitset<ops::num_op_kinds> kinds_in(const graph::computation_graph& g);

private:
    void add(rule r);
    std::vector<rule> rules_;
    std::vector<std::bitset<ops::num_op_kinds>> kinds_;
};

/// @brief Applies rules at matches, refusing what is unsound: apply() proves every rule again at the
/// matched shapes (subst/rewriting/instantiate.hpp), remembering each proof per rule and shape signature, and
/// refuses it where it is not a theorem. Built-in rules, made for the graph at hand, may also pass on
/// numeric evidence where the axioms do not cover their ops (batchnorm, sigmoid, filled constants):
/// both sides agree on the interpreter at the match, if that costs at most `check_flops`.
class match_applier {
public:
    explicit match_applier(double check_flops) : check_flops_(check_flops) {}
    /// `g` rewritten, or nullopt when the match is refused.
    std::optional<graph::computation_graph> operator()(const graph::computation_graph& g, const rule& r, const match& m,
                                                       bool generated);
    /// Proofs at a match run so far (the cache's misses).
    std::size_t checks() const { return cache_.size(); }

private:
    double check_flops_;
    instantiation_cache cache_;
};

/// @brief `ms` without the matches that bind the same set of graph ops as an earlier one (the
/// permutations of a symmetric rule: they give graphs of one cost), in their order.
inline std::vector<match> distinct_placements(std::vector<match> ms);

/// What both searches draw their rewrites from, and the limits on each graph they build.
struct rewrite_space {
    double seconds = 10;                ///< wall-clock limit of the search
    double max_ops_factor = 2;          ///< drop graphs with more ops than this x the input's (TASO: 2)
    std::size_t matches_per_rule = 64;  ///< matches tried per rule and graph
    bool both_directions = true;        ///< use each generated rule in reverse too
    bool use_builtins = true;           ///< add builtin_rules() of each graph expanded
    builtin_options builtins = {};
    double check_flops = 2e7;  ///< see match_applier
};

/// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- implementation ----

inline std::vector<match> distinct_placements(std::vector<match> ms) {
    std::vector<std::vector<graph::op_id>> seen;
    std::vector<match> out;
    for (auto& m : ms) {
        auto ops = m.ops;
        std::sort(ops.begin(), ops.end());
        if (std::find(seen.begin(), seen.end(), ops) != seen.end()) continue;
        seen.push_back(std::move(ops));
        out.push_back(std::move(m));
    }
    return out;
}

inline rule_library::rule_library(std::span<const rule> rules, bool both_directions) {
    for (const auto& r : rules) {
        add(r);
        if (!both_directions) continue;
        if (auto rev = reversed(r); rev && to_string(*rev) != to_string(r)) add(std::move(*rev));
    }
}

inline void rule_library::add(rule r) {
    std::bitset<ops::num_op_kinds> k;
    for (const auto& o : r.source.ops) k.set(static_cast<std::size_t>(o.kind));
    kinds_.push_back(k);
    rules_.push_back(std::move(r));
}

inline std::bitset<ops::num_op_kinds> rule_library::kinds_in(const graph::computation_graph& g) {
    std::bitset<ops::num_op_kinds> k;
    for (const auto& o : g.ops()) k.set(static_cast<std::size_t>(o.kind));
    return k;
}

inline std::optional<graph::computation_graph> match_applier::operator()(const graph::computation_graph& g,
                                                                         const rule& r, const match& m,
                                                                         bool generated) {
    try {
        return apply(g, r, m,
                     rewrite_options{.cache = &cache_, .numeric_fallback_flops = generated ? 0.0 : check_flops_});
    } catch (const error&) {
        return std::nullopt;
    }
}

}  // namespace search
}  // namespace goopt::subst
