#pragma once
/// @file
/// @brief The TensorFlow default: every op on one device, FIFO ready queue (the simulator's default
/// when no priorities are given), no fusion.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/sim/placement.hpp>

namespace goopt::baselines {

/// Every op on device `d`.
inline sim::placement single_device_placement(const graph::computation_graph& g, sim::device_id d = 0) {
    return sim::placement(g.num_ops(), d);
}

}  // namespace goopt::baselines
