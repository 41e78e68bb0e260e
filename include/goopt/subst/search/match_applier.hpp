#pragma once
/// @file
/// @brief How the graph-at-a-time searches (greedy, TASO) rewrite at a match: through apply(),
/// with one soundness_cache for the whole search, so that each rule is decided once per matched
/// signature; a refused match (subst::rewrite_refused) is an answer, any other error propagates.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rewriting/soundness_cache.hpp>
#include <goopt/subst/rule.hpp>

#include <optional>

namespace goopt::subst {
inline namespace search {

/// @brief Applies rules at matches, refusing what is unsound: a generated rule must be proven again
/// at the matched shapes (subst/rewriting/instantiate.hpp); a built-in rule, made for the graph at
/// hand, may also pass on numeric evidence where the axioms do not cover its ops (batchnorm,
/// sigmoid, filled constants), if that evaluation costs at most `check_flops`.
class match_applier {
public:
    explicit match_applier(double check_flops) : check_flops_(check_flops) {}
    /// `g` rewritten, or nullopt when the match is refused.
    std::optional<graph::computation_graph> operator()(const graph::computation_graph& g, const rule& r, const match& m,
                                                       bool generated) {
        try {
            return apply(g, r, m,
                         rewrite_options{.cache = &cache_,
                                         .soundness = {.numeric_fallback_flops = generated ? 0.0 : check_flops_}});
        } catch (const rewrite_refused&) {
            return std::nullopt;
        }
    }
    /// Decisions made so far (the cache's misses).
    std::size_t checks() const { return cache_.size(); }

private:
    double check_flops_;
    soundness_cache cache_;
};

}  // namespace search
}  // namespace goopt::subst
