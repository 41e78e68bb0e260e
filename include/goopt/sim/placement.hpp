#pragma once
/// @file
/// @brief Decisions the simulator takes as input: which device runs each op, and fusion groups.

#include <cstdint>
#include <limits>
#include <vector>

namespace goopt::sim {

using device_id = std::uint32_t;
/// Device of every op, indexed by op id.
using placement = std::vector<device_id>;
/// Fusion group of every op, indexed by op id: ops with the same id >= 0 run as one kernel; -1 (or any
/// negative id) runs alone. Ids must be smaller than the number of ops.
using fusion_groups = std::vector<std::int32_t>;

inline constexpr std::int32_t no_group = -1;

}  // namespace goopt::sim
