#pragma once
/// @file
/// @brief Random search over placements with a fixed budget of simulator calls: the baseline a
/// learned placer must beat with the same number of samples.

#include <goopt/error.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>

#include <cstdint>
#include <random>
#include <unordered_map>

namespace goopt::baselines {

struct search_result {
    sim::placement placement;
    sim::simulation_result result;
    std::size_t calls = 0;
};

/// Better of two results (one that fits in memory, then the shorter step); defined with sim::decision.
using sim::better_result;

/// @brief Samples `calls` placements (each op, or each colocation group, on a uniformly random
/// device), simulates each with `options` and returns the best.
/// @param rng the only source of randomness: the same seed gives the same answer.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng>
search_result random_search(sim::simulator<D, Cost>& s, std::size_t calls, Rng& rng,
                            const sim::simulation_options& options = {}) {
    if (calls == 0) throw error("random_search", "calls is 0", "at least 1");
    const auto& g = s.graph();
    const std::size_t n = g.num_ops();
    const auto nd = static_cast<sim::device_id>(s.cluster().num_devices());
    std::uniform_int_distribution<sim::device_id> pick(0, nd - 1);
    sim::simulation_options opt = options;
    opt.record_trace = false;
    search_result best;
    sim::placement p(n);
    sim::simulation_result r;
    std::unordered_map<std::int32_t, sim::device_id> group;
    for (std::size_t call = 0; call < calls; ++call) {
        group.clear();
        for (graph::op_id o = 0; o < n; ++o) {
            const auto grp = g.get_op(o).colocation;
            p[o] = grp < 0 ? pick(rng) : group.try_emplace(grp, pick(rng)).first->second;
        }
        s.run(p, opt, r);
        if (call == 0 || better_result(r, best.result)) {
            best.placement = p;
            best.result = r;
        }
    }
    best.calls = calls;
    return best;
}

}  // namespace goopt::baselines
