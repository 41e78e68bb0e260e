#pragma once
// Shared by the simulator's property test (tests/sim/) and the decisions fuzz harness (tests/fuzz/):
// the promises a traced simulation keeps, checked in one place.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace goopt::test {

/// @brief The first promise that traced run `r` of `g` under `placement` and fusion groups `fusion`
/// (empty: none) on `devices` devices breaks, or "" when it keeps them all: a finite step holding
/// every event; every op once, on its placed device; each op after its inputs (on its device, or copied
/// there after the producer ended), members of one fused group excepted; one kernel at a time per
/// device, a fused group counting as one kernel.
inline std::string trace_problem(const graph::computation_graph& g, std::span<const sim::device_id> placement,
                                 std::span<const std::int32_t> fusion, std::size_t devices,
                                 const sim::simulation_result& r) {
    const std::size_t n = g.num_ops();
    const double last = r.step_time * (1 + 1e-12);
    constexpr double slack = 1e-15;
    if (!std::isfinite(r.step_time) || r.step_time < 0) return "a step time that is not a finite time";
    if (r.ops.size() != n) return "the trace does not hold every op once";
    std::vector<sim::op_event> at(n);
    std::vector<int> seen(n, 0);
    for (const auto& e : r.ops) {
        if (e.op >= n || seen[e.op]++) return "the trace holds an op twice or one the graph lacks";
        if (e.device != placement[e.op]) return "an op ran on a device other than its placement's";
        if (!(e.start >= 0 && e.end >= e.start && e.end <= last)) return "an op's interval is outside the step";
        at[e.op] = e;
    }
    const auto group = [&](graph::op_id o) { return fusion.empty() ? -1 : fusion[o]; };
    for (graph::op_id o = 0; o < n; ++o)
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id p = g.producer(t);
            if (group(o) >= 0 && group(o) == group(p)) continue;  // one kernel: no order inside it
            if (placement[p] == placement[o]) {
                if (at[o].start < at[p].end - slack) return "an op started before its producer ended";
                continue;
            }
            const auto copy = std::find_if(r.transfers.begin(), r.transfers.end(), [&](const sim::transfer_event& x) {
                return x.tensor == t && x.to == placement[o];
            });
            if (copy == r.transfers.end()) return "an input on another device was never copied";
            if (copy->start < at[p].end - slack || at[o].start < copy->end - slack || copy->end > last)
                return "a copy out of order with its producer, its consumer or the step";
        }
    // one kernel at a time per device: an op alone, or a fused group spanning its members' events
    std::map<std::pair<std::uint32_t, std::int64_t>, std::pair<double, double>> kernels;  // (device, unit)
    for (const auto& e : r.ops) {
        if (!(e.end > e.start)) continue;
        const std::int64_t unit = group(e.op) >= 0 ? group(e.op) : -1 - static_cast<std::int64_t>(e.op);
        const auto [it, fresh] = kernels.try_emplace({e.device, unit}, e.start, e.end);
        if (!fresh) it->second = {std::min(it->second.first, e.start), std::max(it->second.second, e.end)};
    }
    std::vector<std::vector<std::pair<double, double>>> runs(devices);
    for (const auto& [key, interval] : kernels) {
        if (key.first >= devices) return "an op ran on a device the cluster lacks";
        runs[key.first].push_back(interval);
    }
    for (auto& device_runs : runs) {
        std::sort(device_runs.begin(), device_runs.end());
        for (std::size_t i = 1; i < device_runs.size(); ++i)
            if (device_runs[i].first < device_runs[i - 1].second - slack) return "two kernels overlap on one device";
    }
    return {};
}

}  // namespace goopt::test
