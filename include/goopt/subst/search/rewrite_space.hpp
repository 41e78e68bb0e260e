#pragma once
/// @file
/// @brief What every substitution search draws its rewrites from and the limits on each graph it
/// builds: one object, given to whichever search runs, so that a program sets each limit once.
/// The budgets that stop a search are counts of its own (greedy_config::max_steps,
/// taso_config::budget, eqsat_config::iterations ...), so that a search's result does not depend on
/// how fast or loaded the machine is; a wall-clock limit is opt-in (`seconds`).

#include <goopt/subst/rewriting/builtin_rules.hpp>

#include <chrono>
#include <cstddef>

namespace goopt::subst {
inline namespace search {

/// The rewrites a search may make and the limits on the graphs it builds.
struct rewrite_space {
    double max_ops_factor = 2;          ///< drop graphs with more ops than this x the input's (TASO: 2)
    std::size_t matches_per_rule = 64;  ///< matches tried per rule and graph (greedy, TASO)
    bool both_directions = true;        ///< use each generated rule in reverse too
    bool use_builtins = true;           ///< add builtin_rules() of each graph expanded
    builtin_options builtins = {};
    /// A built-in rule (made for the graph at hand) the axioms cannot decide may pass on numeric
    /// evidence at the match, if both sides' evaluation costs at most this many FLOPs (0: proofs only;
    /// generated rules are always proven): see soundness_options::numeric_fallback_flops.
    double check_flops = 2e7;
    /// Opt-in wall-clock limit of the search in seconds; 0 (the default): none, the search's count
    /// budgets alone stop it, and the same input gives the same graph on any load.
    double seconds = 0;
};

/// The opt-in wall-clock limit of one search run.
class wall_clock_limit {
public:
    explicit wall_clock_limit(double seconds) : seconds_(seconds) {}
    /// Seconds since the search started.
    double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
    /// Whether a limit is set and `share` of it has passed.
    bool over(double share = 1.0) const { return seconds_ > 0 && elapsed() > share * seconds_; }
    /// The time point at `share` of the limit; the clock's end of time when there is no limit.
    std::chrono::steady_clock::time_point at(double share) const {
        if (!(seconds_ > 0)) return std::chrono::steady_clock::time_point::max();
        return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(share * seconds_));
    }

private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    double seconds_;
};

}  // namespace search
}  // namespace goopt::subst
