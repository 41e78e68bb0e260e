#pragma once
/// @file
/// @brief Whether applying a rule at a match would make a cycle. The target reads the tensors the
/// variables are bound to and replaces the source outputs, so a variable computed from a replaced
/// output would be read to compute itself (TASO §5). The matcher asks this of every match it finds
/// and the built-in families of every instance they make: one pruned reachability query each, on
/// topological positions built once per graph, at the first question.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/reachability.hpp>
#include <goopt/subst/rule.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace goopt::subst::detail {

/// Cycle checks of rule matches on one graph (which must outlive it).
class cycle_check {
public:
    explicit cycle_check(const graph::computation_graph& g) : g_(&g) {}

    /// Whether rule `r` applied where its source ops are graph ops `ops` (in rule order) and its
    /// variables graph tensors `variables` makes a cycle: some variable's producer is reached (in
    /// zero or more edges) from a reader of a replaced source output.
    bool cyclic_after_rewrite(const rule& r, std::span<const graph::op_id> ops,
                              std::span<const graph::tensor_id> variables) {
        from_.clear();
        to_.clear();
        for (const value_ref v : r.source.outputs)
            for (const graph::use u : g_->get_tensor(g_->get_op(ops[v.op]).outputs.at(v.index)).uses)
                from_.push_back(u.op);
        for (const graph::tensor_id t : variables)
            if (const auto p = g_->producer(t); p != graph::no_op) to_.push_back(p);
        if (from_.empty() || to_.empty()) return false;
        if (!reach_) reach_.emplace(*g_);
        return reach_->reaches(from_, to_);
    }

private:
    const graph::computation_graph* g_;
    std::optional<graph::reachability<graph::computation_graph>> reach_;  // built at the first question
    std::vector<std::size_t> from_, to_;
};

}  // namespace goopt::subst::detail
