#pragma once
/// @file
/// @brief First-improvement local search with a one-step lookahead: apply any rewrite that makes
/// the graph cheaper, at once, until none does; then try the few cheapest rewrites that make it
/// no more than alpha x dearer and keep one whose best follow-up rewrite beats the current graph.
/// It explores one graph's neighbourhood per accepted rewrite instead of TASO's queue of graphs
/// (TASO, SOSP'19 §5), which is what makes it faster; benchmarks/superopt.cpp measures both.

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

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// Why greedy_search() stopped.
enum class greedy_bound {
    converged,  ///< a local optimum, lookahead included
    budget,     ///< greedy_config::max_steps rewrites were accepted
    time,       ///< the opt-in wall-clock limit (rewrite_space::seconds)
    stopped,    ///< the visitor asked to stop
};

inline constexpr std::string_view name(greedy_bound b) noexcept {
    switch (b) {
        case greedy_bound::converged:
            return "converged";
        case greedy_bound::budget:
            return "budget";
        case greedy_bound::time:
            return "time";
        case greedy_bound::stopped:
            return "stopped";
    }
    return "?";
}

/// Knobs of greedy_search(); its budget is a count (max_steps), never the clock.
struct greedy_config {
    std::size_t max_steps = 10000;  ///< rewrites accepted
    double alpha = 1.05;            ///< lookahead: first steps may cost up to alpha x the current graph
    std::size_t lookahead = 8;      ///< lookahead: how many such first steps are followed up
};

/// @brief Rewrites `g` into a cheaper equivalent graph by first-improvement local search with a
/// one-step lookahead (see the file comment).
/// @return the final graph and the statistics, with the greedy_bound it stopped at.
template <class Cost, device::DeviceModel Device, SearchVisitor Visitor = null_search_visitor>
requires cost::CostModel<Cost, Device> search_result<greedy_bound> greedy_search(
    const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
    const rewrite_space& space = {}, const greedy_config& config = {}, Visitor&& visitor = {});

/// greedy_search() as a subst::SubstitutionSearch, for optimize().
struct greedy_method {
    greedy_config config = {};
    template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
    requires cost::CostModel<Cost, Device> search_result<greedy_bound>
    operator()(const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
               const rewrite_space& space, Visitor&& visitor) const {
        return greedy_search(g, rules, cost, device, space, config, std::forward<Visitor>(visitor));
    }
};

// ---- implementation ----

template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
requires cost::CostModel<Cost, Device> search_result<greedy_bound> greedy_search(
    const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
    const rewrite_space& space, const greedy_config& config, Visitor&& visitor) {
    const wall_clock_limit clock(space.seconds);
    const rule_library library(rules, space.both_directions);
    match_applier applier(space.check_flops);
    const std::size_t max_ops = static_cast<std::size_t>(space.max_ops_factor * static_cast<double>(g.num_ops()));
    std::unordered_set<std::uint64_t> seen{graph::structural_hash(g)};

    search_stats<greedy_bound> stats;
    stats.cost_before = inference_cost(g, cost, device);
    graph::computation_graph current = g;
    double current_cost = stats.cost_before;
    std::optional<greedy_bound> bound;
    auto out_of_time = [&] {
        if (!bound && clock.over()) bound = greedy_bound::time;
        return bound.has_value();
    };

    struct candidate {
        graph::computation_graph graph;
        double cost;
        std::string rule;
        std::string where;  ///< the rewritten ops' names (rewrite_site::where)
    };
    // Every rewrite of `from` by the rules from `first` on (the library's, then the built-ins of
    // `from`), in rule order; `visit(candidate&&, hash)` returns true to stop there.
    // @return the rule index it stopped at, or nullopt when it ran through.
    std::unordered_set<std::string> no_gain;  // built-in instances that made no graph cheaper
    bool full_pass = false;                   // also try those
    auto for_each_rewrite = [&](const graph::computation_graph& from, std::size_t first,
                                auto&& visit) -> std::optional<std::size_t> {
        const auto present = rule_library::kinds_in(from);
        // a rewritten graph, or nothing when refused, too large or seen
        auto consider = [&](std::optional<graph::computation_graph>&& next, const rule& r, const match& m,
                            auto&& to) -> bool {
            if (!next) {
                ++stats.refused;
                return false;
            }
            if (next->num_ops() > max_ops) return false;
            const auto h = graph::structural_hash(*next);
            if (seen.contains(h)) return false;
            ++stats.graphs_seen;
            const double c = inference_cost(*next, cost, device);
            std::string where;
            for (auto o : m.ops) where += (where.empty() ? "" : ",") + from.get_op(o).name;
            return to(candidate{std::move(*next), c, to_string(r), std::move(where)}, h);
        };
        const double from_cost = inference_cost(from, cost, device);
        // A rewrite is named by its rule and the names of the ops it rewrites; one that did not
        // make an earlier graph cheaper is skipped until a full pass (`full_pass`): the graphs a
        // descent visits differ only where it rewrote, and rewritten ops get new names.
        auto name_of = [&](std::string key, const match& m) {
            for (auto o : m.ops) {
                key += '|';
                key += from.get_op(o).name;
            }
            return key;
        };
        for (std::size_t k = first; k < library.size(); ++k) {
            if (!library.may_match(k, present)) continue;
            const rule& r = library[k];
            for (const auto& m : distinct_placements(find_matches(from, r, space.matches_per_rule))) {
                if (out_of_time()) return k;
                auto key = name_of(std::to_string(k), m);
                if (!full_pass && no_gain.contains(key)) continue;
                bool gains = false;
                const bool stop = consider(applier(from, r, m, true), r, m, [&](candidate&& c, std::uint64_t h) {
                    gains = c.cost < from_cost;
                    return visit(std::move(c), h);
                });
                if (!gains) no_gain.insert(std::move(key));
                if (stop) return k;
            }
        }
        if (!space.use_builtins) return std::nullopt;
        // the built-ins of `from` overlap (merge two convs, or sum them; fold a batchnorm, or fuse
        // the relu): they are visited cheapest first, so the best of them is the one taken
        std::vector<std::pair<candidate, std::uint64_t>> found;
        for (const auto& b : builtin_rules(from, space.builtins)) {
            if (out_of_time()) return library.size();
            auto key = name_of(to_string(b.rule), b.where);
            if (!full_pass && no_gain.contains(key)) continue;
            bool gains = false;
            consider(applier(from, b.rule, b.where, false), b.rule, b.where, [&](candidate&& c, std::uint64_t h) {
                gains = c.cost < from_cost;
                found.emplace_back(std::move(c), h);
                return false;
            });
            if (!gains) no_gain.insert(std::move(key));
        }
        std::stable_sort(found.begin(), found.end(),
                         [](const auto& a, const auto& b) { return a.first.cost < b.first.cost; });
        for (auto& [c, h] : found)
            if (visit(std::move(c), h)) return library.size();
        return std::nullopt;
    };
    auto accept = [&](candidate&& c, std::uint64_t h) {
        seen.insert(h);
        stats.sites.push_back({std::move(c.where), current_cost, c.cost});
        current = std::move(c.graph);
        current_cost = c.cost;
        stats.applied.push_back(std::move(c.rule));
        ++stats.steps;
        if (!visitor.progress(search_progress{stats.steps, stats.graphs_seen, current_cost, clock.elapsed()}))
            bound = greedy_bound::stopped;
        else if (stats.steps >= config.max_steps) bound = greedy_bound::budget;
    };

    // passes over the rules: an improving rewrite is taken at once and its rule tried again on the
    // new graph (the built-ins are instantiated again from it); a pass without one ends the descent
    std::size_t resume = 0;
    bool improved_in_pass = false;
    std::vector<std::pair<candidate, std::uint64_t>> near;  // lookahead material of the last pass
    while (!bound) {
        const auto stopped = for_each_rewrite(current, resume, [&](candidate&& c, std::uint64_t h) {
            if (c.cost < current_cost) {
                accept(std::move(c), h);
                return true;
            }
            if (c.cost <= config.alpha * current_cost) {
                near.emplace_back(std::move(c), h);
                std::sort(near.begin(), near.end(),
                          [](const auto& a, const auto& b) { return a.first.cost < b.first.cost; });
                if (near.size() > config.lookahead) near.pop_back();
            }
            return false;
        });
        if (bound || out_of_time()) break;
        if (stopped) {  // improved by rule *stopped: try it again, then the rest of the pass
            resume = *stopped;
            improved_in_pass = true;
            full_pass = false;
            near.clear();
            continue;
        }
        if (improved_in_pass || !full_pass) {  // a new pass over every rule; the last one is full
            full_pass = !improved_in_pass;
            resume = 0;
            improved_in_pass = false;
            near.clear();
            continue;
        }
        // a local optimum: a dearer first step whose best follow-up beats the current graph
        bool found = false;
        for (auto& [step, h1] : near) {
            std::optional<std::pair<candidate, std::uint64_t>> second;
            for_each_rewrite(step.graph, 0, [&](candidate&& c, std::uint64_t h) {
                if (c.cost < current_cost && (!second || c.cost < second->first.cost)) second.emplace(std::move(c), h);
                return false;
            });
            seen.insert(h1);  // explored: never followed up again
            if (second) {
                accept(std::move(step), h1);
                if (!bound) accept(std::move(second->first), second->second);
                found = true;
                break;
            }
            if (out_of_time()) break;
        }
        near.clear();
        resume = 0;
        if (!found && !bound && !out_of_time()) bound = greedy_bound::converged;
    }
    stats.bound = *bound;
    stats.rules_applied = stats.applied.size();
    stats.cost_after = current_cost;
    stats.seconds = clock.elapsed();
    return {std::move(current), std::move(stats)};
}

}  // namespace search
}  // namespace goopt::subst
