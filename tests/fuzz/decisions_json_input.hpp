#pragma once
/// @file
/// @brief One fuzz input for the decisions reader and the simulator behind `goopt simulate`
/// (io::decisions_from_json, then sim::run on a fixed 9-op graph and two V100s): a goopt::error is a
/// clean rejection, by the reader or by the simulator (sim::decision_refused: a device the cluster
/// lacks, illegal fusion groups); an accepted decision must reproduce itself through the writer, and
/// its simulated step must respect what the simulator promises: every op once on its placed device,
/// after its inputs (on its device, or copied there), one kernel at a time per device, a finite step
/// that contains every event.

#include "fuzz_input.hpp"

#include <goopt/device/cluster_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/io/decisions_json.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::fuzz {

/// The graph every fuzzed decision is for: a product by a weight, two elementwise branches that
/// meet again, and a second product, so that fusion groups can be legal, illegal or cyclic.
inline const graph::computation_graph& decisions_fuzz_graph() {
    static const graph::computation_graph g = [] {
        using ops::op_kind;
        graph::computation_graph h("decisions_fuzz");
        const auto x = h.input("x", {64, 128});
        const auto w = h.weight("w", {128, 128});
        const auto y = h.add1(op_kind::matmul, {x, w});
        const auto a = h.add1(op_kind::relu, {y});
        const auto b = h.add1(op_kind::sigmoid, {y});
        const auto c = h.add1(op_kind::ewadd, {a, b});
        const auto v = h.weight("v", {128, 128});
        const auto z = h.add1(op_kind::matmul, {c, v});
        h.mark_output(h.add1(op_kind::tanh, {z}));
        return h;
    }();
    return g;
}

/// @return true when the reader and the simulator accepted the input. @throws fuzz::finding for a
/// broken promise; any exception other than goopt::error escapes (a finding too).
inline bool decisions_json_input(std::string_view bytes) {
    const auto& g = decisions_fuzz_graph();
    static const auto cluster = device::parse_cluster("2xV100:nvlink");
    const std::size_t n = g.num_ops();
    io::decisions_document doc;
    sim::simulation_result r;
    try {
        doc = io::decisions_from_json(io::detail::parse_json_text(bytes, "<fuzz>"), n, "<fuzz>");
        sim::simulator s(g, cluster);
        r = sim::run(s, doc.decision, true);
    } catch (const error&) {
        return false;
    }
    const sim::decision& d = doc.decision;
    // the writer's document reads back as the same decision
    std::string text;
    try {
        text = io::decisions_to_json(doc).dump();
    } catch (const nlohmann::json::exception&) {
        return true;  // a method name that is not valid UTF-8 cannot be written back
    }
    try {
        const auto again =
            io::decisions_from_json(io::detail::parse_json_text(text, "<round trip>"), n, "<round trip>");
        const sim::decision& e = again.decision;
        if (e.placement != d.placement || e.priorities != d.priorities || e.fusion != d.fusion ||
            e.transfers != d.transfers || e.dispatch != d.dispatch || again.method != doc.method)
            throw finding("write/read changed the decision: " + excerpt(text));
    } catch (const error& x) {
        throw finding(std::string("the reader rejects what the writer wrote: ") + x.what());
    }
    // the simulated step
    if (!std::isfinite(r.step_time) || r.step_time < 0) throw finding("a step time that is not a finite time");
    if (r.ops.size() != n) throw finding("the trace does not hold every op once");
    std::vector<sim::op_event> at(n);
    std::vector<int> seen(n, 0);
    for (const auto& e : r.ops) {
        if (e.op >= n || seen[e.op]++) throw finding("the trace holds an op twice or one the graph lacks");
        if (e.device != d.placement[e.op]) throw finding("an op ran on a device other than its placement's");
        if (!(e.start >= 0 && e.end >= e.start && e.end <= r.step_time * (1 + 1e-12)))
            throw finding("an op's interval is outside the step");
        at[e.op] = e;
    }
    const auto group = [&](graph::op_id o) { return d.fusion.empty() ? -1 : d.fusion[o]; };
    constexpr double slack = 1e-15;
    for (graph::op_id o = 0; o < n; ++o)
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id p = g.producer(t);
            if (group(o) >= 0 && group(o) == group(p)) continue;  // one kernel: no order inside it
            if (d.placement[p] == d.placement[o]) {
                if (at[o].start < at[p].end - slack) throw finding("an op started before its producer ended");
                continue;
            }
            const auto copy = std::find_if(r.transfers.begin(), r.transfers.end(), [&](const sim::transfer_event& x) {
                return x.tensor == t && x.to == d.placement[o];
            });
            if (copy == r.transfers.end()) throw finding("an input on another device was never copied");
            if (copy->start < at[p].end - slack || at[o].start < copy->end - slack ||
                copy->end > r.step_time * (1 + 1e-12))
                throw finding("a copy out of order with its producer, its consumer or the step");
        }
    // one kernel at a time per device: an op alone, or a fused group spanning its members' events
    std::map<std::pair<std::uint32_t, std::int64_t>, std::pair<double, double>> kernels;  // (device, unit)
    for (const auto& e : r.ops) {
        if (!(e.end > e.start)) continue;
        const std::int64_t unit = group(e.op) >= 0 ? group(e.op) : -1 - static_cast<std::int64_t>(e.op);
        const auto [it, fresh] = kernels.try_emplace({e.device, unit}, e.start, e.end);
        if (!fresh) it->second = {std::min(it->second.first, e.start), std::max(it->second.second, e.end)};
    }
    std::vector<std::vector<std::pair<double, double>>> runs(cluster.num_devices());
    for (const auto& [key, interval] : kernels) runs[key.first].push_back(interval);
    for (auto& device_runs : runs) {
        std::sort(device_runs.begin(), device_runs.end());
        for (std::size_t i = 1; i < device_runs.size(); ++i)
            if (device_runs[i].first < device_runs[i - 1].second - slack)
                throw finding("two kernels overlap on one device");
    }
    return true;
}

}  // namespace goopt::fuzz
