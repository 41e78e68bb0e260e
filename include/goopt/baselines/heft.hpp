#pragma once
/// @file
/// @brief HEFT: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri, Wu, IEEE TPDS 2002, §4.1):
/// ops in decreasing upward rank, each on the device where it finishes earliest, inserted into the
/// earliest idle gap of that device that fits it.

#include <goopt/error.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/baselines/upward_rank.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::baselines {

struct heft_result {
    sim::placement placement;
    std::vector<double> priorities;  ///< upward ranks, for simulation_options::priorities
    double schedule_length = 0;      ///< HEFT's own estimate (no memory, no link contention)
    /// The placement and priorities as the decision type every method shares.
    sim::decision decision() const { return {.placement = placement, .priorities = priorities, .fusion = {}}; }
};

/// @brief Places and prioritizes every op with HEFT, using the simulator's op times per device and
/// its cluster's links for communication (mean over links for the ranks, as the paper does).
///
/// Source ops (inputs, weights, constants) take no time and are placed last: in their colocation
/// group's device, else their first consumer's, so that a parameter follows the ops that use it;
/// while placing, their outputs count as available everywhere at time 0. A colocation group goes where
/// its first timed member goes. Gap search scans at most 64 gaps per device and otherwise appends
/// (keeps 80k-op graphs fast; the gaps it skips are tiny).
template <device::DeviceModel D, cost::CostModel<D> Cost> heft_result heft(const sim::simulator<D, Cost>& s) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops(), nd = c.num_devices();
    // mean communication: latency + bytes * mean(1 / bandwidth) over ordered pairs with a link
    double lat = 0, inv_bw = 0;
    std::size_t pairs = 0;
    for (std::size_t a = 0; a < nd; ++a)
        for (std::size_t b = 0; b < nd; ++b)
            if (a != b && c.route(a, b) != device::no_link) {
                lat += c.get_link(c.route(a, b)).latency;
                inv_bw += 1.0 / c.get_link(c.route(a, b)).bandwidth;
                ++pairs;
            }
    if (pairs > 0) {
        lat /= static_cast<double>(pairs);
        inv_bw /= static_cast<double>(pairs);
    }
    auto is_source = [&](graph::op_id o) { return g.get_op(o).spec().has(ops::source); };
    heft_result r;
    r.priorities = upward_rank(
        g,
        [&](graph::op_id o) {
            double w = 0;
            for (std::size_t d = 0; d < nd; ++d) w += s.op_time(o, static_cast<sim::device_id>(d));
            return w / static_cast<double>(nd);
        },
        [&](graph::tensor_id t, graph::op_id from, graph::op_id) {
            return is_source(from) || pairs == 0 ? 0.0 : lat + static_cast<double>(g.type_of(t).bytes()) * inv_bw;
        });
    const auto topo = graph::topological_order(g);
    std::vector<std::size_t> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[topo[i]] = i;
    std::vector<graph::op_id> order(n);
    std::iota(order.begin(), order.end(), graph::op_id{0});
    std::sort(order.begin(), order.end(), [&](graph::op_id a, graph::op_id b) {
        return r.priorities[a] != r.priorities[b] ? r.priorities[a] > r.priorities[b] : pos[a] < pos[b];
    });

    constexpr auto unset = ~sim::device_id{0};
    r.placement.assign(n, unset);
    std::vector<double> finish(n, 0.0);
    std::vector<std::vector<std::pair<double, double>>> busy(nd);  // sorted, disjoint [start, end)
    std::unordered_map<std::int32_t, sim::device_id> group_device;
    constexpr double inf = std::numeric_limits<double>::infinity();
    auto earliest_slot = [&](std::size_t d, double ready, double w, std::size_t& at) {
        const auto& iv = busy[d];
        std::size_t i = static_cast<std::size_t>(
            std::lower_bound(iv.begin(), iv.end(), ready, [](const auto& x, double t) { return x.second <= t; }) -
            iv.begin());
        double start = ready;
        for (std::size_t scanned = 0; i < iv.size(); ++i, ++scanned) {
            if (scanned == 64) {
                start = std::max(ready, iv.back().second);
                i = iv.size();
                break;
            }
            if (iv[i].first >= start + w) break;  // the gap before interval i fits
            start = std::max(start, iv[i].second);
        }
        at = i;
        return start;
    };
    for (graph::op_id o : order) {
        if (is_source(o)) continue;
        const auto grp = g.get_op(o).colocation;
        const auto fixed = grp >= 0 && group_device.count(grp) ? group_device[grp] : unset;
        double best_eft = inf, best_start = 0;
        sim::device_id best = unset;
        std::size_t best_at = 0;
        for (std::size_t d = 0; d < nd; ++d) {
            if (fixed != unset && d != fixed) continue;
            double ready = 0;
            for (graph::tensor_id t : g.get_op(o).inputs) {
                const graph::op_id q = g.producer(t);
                if (is_source(q)) continue;
                double arrive = finish[q];
                if (r.placement[q] != d) {
                    const auto l = c.route(r.placement[q], d);
                    arrive = l == device::no_link ? inf
                                                  : arrive + c.get_link(l).transfer_time(static_cast<double>(g.type_of(t).bytes()));
                }
                ready = std::max(ready, arrive);
            }
            if (ready == inf) continue;
            const double w = s.op_time(o, static_cast<sim::device_id>(d));
            std::size_t at = 0;
            const double start = earliest_slot(d, ready, w, at);
            if (start + w < best_eft) {
                best_eft = start + w;
                best_start = start;
                best = static_cast<sim::device_id>(d);
                best_at = at;
            }
        }
        if (best == unset)
            throw error("heft: op " + g.describe(o) + " has no device its inputs can reach (the cluster lacks links)");
        r.placement[o] = best;
        finish[o] = best_eft;
        r.schedule_length = std::max(r.schedule_length, best_eft);
        if (best_eft > best_start) busy[best].insert(busy[best].begin() + static_cast<std::ptrdiff_t>(best_at), {best_start, best_eft});
        if (grp >= 0) group_device.emplace(grp, best);
    }
    for (graph::op_id o = 0; o < n; ++o) {
        if (!is_source(o)) continue;
        const auto grp = g.get_op(o).colocation;
        if (grp >= 0 && group_device.count(grp)) {
            r.placement[o] = group_device[grp];
            continue;
        }
        auto first_consumer_device = [&]() -> sim::device_id {
            for (graph::tensor_id t : g.get_op(o).outputs)
                for (const graph::use& u : g.get_tensor(t).uses)
                    if (r.placement[u.op] != unset) return r.placement[u.op];
            return 0;
        };
        const sim::device_id d = first_consumer_device();
        r.placement[o] = d;
        if (grp >= 0) group_device.emplace(grp, d);
    }
    return r;
}

}  // namespace goopt::baselines
