#pragma once
/// @file
/// @brief The reward of a simulated step that the placement and joint tasks share: GO's and HDP's
/// -sqrt(step time), relative to a reference step, with a penalty for a decision out of memory that
/// grows with the overflow, so that the policy still learns which OOM decisions are closer to fitting.

#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <algorithm>
#include <cmath>

namespace goopt::tasks {

/// -sqrt(r.step_time / reference_step), minus oom_penalty x (1 + the sum over devices of
/// max(0, peak / capacity - 1)) when `r` runs out of memory on `c`.
template <device::DeviceModel D>
double step_reward(const sim::simulation_result& r, double reference_step, const device::cluster<D>& c,
                   double oom_penalty) {
    double v = -std::sqrt(r.step_time / reference_step);
    if (r.oom) {
        double over = 0;
        for (std::size_t d = 0; d < r.peak_memory.size(); ++d)
            over += std::max(
                0.0, static_cast<double>(r.peak_memory[d]) / static_cast<double>(c.device(d).mem_capacity()) - 1);
        v -= oom_penalty * (1 + over);
    }
    return v;
}

}  // namespace goopt::tasks
