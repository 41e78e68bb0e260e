#pragma once
/// @file
/// @brief The rules a search draws from: generated rules, each also in reverse where the reverse
/// has an op on its source side, with the op kinds each source needs (to skip rules that cannot
/// match a graph); and the removal of matches that only permute a symmetric rule's ops.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/subst/rewriting/pattern_matcher.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <bitset>
#include <span>
#include <vector>

namespace goopt::subst {
inline namespace search {

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

/// @brief `ms` without the matches that bind the same set of graph ops as an earlier one (the
/// permutations of a symmetric rule: they give graphs of one cost), in their order.
inline std::vector<match> distinct_placements(std::vector<match> ms);

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

}  // namespace search
}  // namespace goopt::subst
