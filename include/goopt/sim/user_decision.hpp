#pragma once
/// @file
/// @brief A decision taken on an imported graph (graph::import), read back in the user's op ids.

#include <goopt/graph/import.hpp>
#include <goopt/sim/decision.hpp>

#include <span>

namespace goopt::sim {

/// @brief `d` (indexed by imported op id) with its placement, priorities and fusion groups indexed by
/// the user's op index instead. Fusion group ids are labels and stay as they are.
/// @throws goopt::error if a non-empty field does not have one entry per op.
inline decision to_user_ids(const decision& d, const graph::id_map& ids) {
    return {.placement = graph::to_user_order(ids, std::span<const device_id>(d.placement)),
            .priorities = graph::to_user_order(ids, std::span<const double>(d.priorities)),
            .fusion = graph::to_user_order(ids, std::span<const std::int32_t>(d.fusion)),
            .transfers = d.transfers,
            .dispatch = d.dispatch};
}

}  // namespace goopt::sim
