#pragma once
/// @file
/// @brief The error of a decision the simulator refuses, a type of its own so that whoever turns
/// refusals into a penalty (a search, a trainer's reward) never absorbs a bug or bad input with them.

#include <goopt/error.hpp>

namespace goopt::sim {

/// @brief Raised when the decision's content is at fault, not the graph, the cluster, the cost model
/// or the code that built the decision: a placement that names a device the cluster lacks, splits a
/// colocation group or sends a tensor between unconnected devices; a fusion group id out of range, a
/// fusion group on two devices, fusion groups that form a cycle; a priority that is not finite.
/// A policy can make such a decision, so tasks::placement_task rewards it with invalid_reward; every
/// other goopt::error (a decision of the wrong length, a cost model's non-finite time, a cyclic
/// graph) says the caller is wrong and propagates. The message has goopt::error's one form.
class decision_refused : public error {
public:
    using error::error;
};

}  // namespace goopt::sim
