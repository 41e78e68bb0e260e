// Hook of `--tasks substitution`: the graph-to-graph stage before placement, scheduling and fusion
// (TASO SOSP'19 backtracking search / TENSAT MLSys'21 equality saturation over the generated rules).
// The search itself (subst/ search, issue 13) plugs in here: return the cheapest equivalent graph.
#include "optimizer.hpp"

namespace goopt::cli {

task_status substitution_status() { return {false, "the substitution search over the rule library (subst/, issue 13)"}; }

graph::computation_graph optimize_substitution(const optimize_context&) {
    throw missing_capability("substitution", substitution_status().capability);
}

}  // namespace goopt::cli
