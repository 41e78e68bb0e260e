#pragma once
/// @file
/// @brief A lower bound on the step time any placement and schedule can reach, so that a table of
/// decisions shows its headroom: how far the best heuristic is from anything possible.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/critical_path.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <vector>

namespace goopt::sim {

/// @brief The longer of (a) the critical path with every op at its fastest device and free
/// communication, and (b) the total work, every op at its fastest device, spread evenly over the
/// devices. No placement and schedule of `s`'s graph on `s`'s cluster, without fusion, takes less
/// (a device runs one op at a time; transfers only add). Seconds.
template <device::DeviceModel D, cost::CostModel<D> Cost> double step_time_lower_bound(const simulator<D, Cost>& s) {
    const auto& g = s.graph();
    const std::size_t n = g.num_ops(), k = s.cluster().num_devices();
    std::vector<double> fastest(n, 0.0);
    double work = 0;
    for (graph::op_id o = 0; o < n; ++o) {
        double t = s.op_time(o, 0);
        for (device_id d = 1; d < k; ++d) t = std::min(t, s.op_time(o, d));
        fastest[o] = t;
        work += t;
    }
    const double path = graph::critical_path(g, [&](std::size_t v) { return fastest[v]; }).length;
    return std::max(path, work / static_cast<double>(k));
}

}  // namespace goopt::sim
