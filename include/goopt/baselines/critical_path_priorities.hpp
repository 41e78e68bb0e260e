#pragma once
/// @file
/// @brief Critical-path list scheduling: each device runs the ready op with the largest upward rank
/// (the longest remaining path, ops timed on their devices, transfers on their links), the classic
/// list-scheduling priority (Kwok and Ahmad, ACM Computing Surveys 1999, §4).

#include <goopt/baselines/upward_rank.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>

#include <span>
#include <vector>

namespace goopt::baselines {

/// Priorities for simulation_options::priorities under a given placement.
template <device::DeviceModel D, cost::CostModel<D> Cost>
std::vector<double> critical_path_priorities(const sim::simulator<D, Cost>& s,
                                             std::span<const sim::device_id> placement) {
    s.check_placement(placement);
    const auto& g = s.graph();
    const auto& c = s.cluster();
    return upward_rank(
        g, [&](graph::op_id o) { return s.op_time(o, placement[o]); },
        [&](graph::tensor_id t, graph::op_id from, graph::op_id to) {
            const auto a = placement[from], b = placement[to];
            if (a == b) return 0.0;
            const auto l = c.route(a, b);
            return l == device::no_link ? 0.0 : c.get_link(l).transfer_time(static_cast<double>(g.type_of(t).bytes()));
        });
}

}  // namespace goopt::baselines
