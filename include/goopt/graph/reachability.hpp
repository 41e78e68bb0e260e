#pragma once
/// @file
/// @brief Reachability queries on a DAG. A rewrite that replaces a matched subgraph creates a cycle
/// exactly when some output of the match reaches one of its inputs outside the match (TASO §5), so the
/// substitution search asks this many times on one graph: topological positions prune each search to
/// the ops that can lie between the two ends.

#include <goopt/graph/concepts.hpp>
#include <goopt/graph/topological_order.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace goopt::graph {

/// Answers "is there a path from u to v?" on a fixed acyclic graph. Construction is O(V + E) (a
/// topological order; throws goopt::error on a cycle); a query explores forward from the sources
/// only through ops whose position does not exceed the latest target's.
template <ComputationGraph G> class reachability {
public:
    explicit reachability(const G& g) : g_(&g), position_(computation_graph_traits<G>::num_ops(g)) {
        const auto order = topological_order(g);
        for (std::size_t i = 0; i < order.size(); ++i) position_[order[i]] = i;
        mark_.assign(position_.size(), 0);
    }

    /// Position of op v in the topological order used for pruning.
    std::size_t position(std::size_t v) const { return position_[v]; }

    /// True when some op in `from` has a path (of zero or more edges) to some op in `to`.
    bool reaches(std::span<const std::size_t> from, std::span<const std::size_t> to) const {
        if (from.empty() || to.empty()) return false;
        std::size_t horizon = 0;
        for (auto t : to) horizon = std::max(horizon, position_[t]);
        ++epoch_;
        if (epoch_ == 0) {  // wrapped: clear the marks once every 2^32 queries
            std::fill(mark_.begin(), mark_.end(), 0);
            epoch_ = 1;
        }
        for (auto t : to) mark_[t] = target_epoch();
        stack_.clear();
        for (auto f : from) {
            if (mark_[f] == target_epoch()) return true;
            if (position_[f] <= horizon && mark_[f] != epoch_) {
                mark_[f] = epoch_;
                stack_.push_back(f);
            }
        }
        while (!stack_.empty()) {
            const std::size_t v = stack_.back();
            stack_.pop_back();
            for (auto s : computation_graph_traits<G>::successors(*g_, v)) {
                const auto w = static_cast<std::size_t>(s);
                if (mark_[w] == target_epoch()) return true;
                if (position_[w] <= horizon && mark_[w] != epoch_) {
                    mark_[w] = epoch_;
                    stack_.push_back(w);
                }
            }
        }
        return false;
    }

    bool reaches(std::size_t u, std::size_t v) const {
        return reaches(std::span<const std::size_t>(&u, 1), std::span<const std::size_t>(&v, 1));
    }

private:
    // targets are marked with the complement of the epoch so one array serves both marks
    std::uint32_t target_epoch() const { return ~epoch_; }

    const G* g_;
    std::vector<std::size_t> position_;
    mutable std::vector<std::uint32_t> mark_;
    mutable std::vector<std::size_t> stack_;
    mutable std::uint32_t epoch_ = 0;
};

}  // namespace goopt::graph
