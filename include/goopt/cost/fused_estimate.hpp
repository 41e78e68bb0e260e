#pragma once
/// @file
/// @brief The time of a fused group estimated from its members' measured times, for the measured
/// models (cost::table_model, cost::measured_model) when the group itself was not measured.

#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <algorithm>
#include <cstddef>
#include <span>

namespace goopt::cost {

/// @brief The members' summed time `sum` less what running them as one kernel saves: the launches
/// of all but one of its `kernels` kernels and the internal memory traffic (as the roofline counts
/// it), never less than the slowest member's time `slowest`.
template <device::DeviceModel D>
double fused_estimate(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d, double sum,
                      double slowest, std::size_t kernels) {
    const double saved =
        (kernels > 0 ? static_cast<double>(kernels - 1) : 0.0) * device::device_traits<D>::launch_overhead(d) +
        roofline_model::internal_bytes(g, group) / static_cast<double>(d.mem_bandwidth());
    return std::max(slowest, sum - saved);
}

}  // namespace goopt::cost
