#pragma once
/// @file
/// @brief HEFT: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri, Wu, IEEE TPDS 2002, §4.1):
/// ops in decreasing upward rank, each on the device where it finishes earliest, inserted into the
/// earliest idle gap of that device that fits it.

#include <goopt/baselines/upward_rank.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>

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
template <device::DeviceModel D, cost::CostModel<D> Cost> heft_result heft(const sim::simulator<D, Cost>& s);

// ---- implementation ----

namespace detail::heft_steps {

/// Mean communication cost over ordered device pairs with a link: latency + bytes * inv_bandwidth.
struct mean_communication {
    double latency = 0, inv_bandwidth = 0;
    std::size_t pairs = 0;  ///< 0: no links, communication is free in the ranks
};

template <device::DeviceModel D> mean_communication mean_link_cost(const device::cluster<D>& c) {
    mean_communication m;
    const std::size_t nd = c.num_devices();
    for (std::size_t a = 0; a < nd; ++a)
        for (std::size_t b = 0; b < nd; ++b)
            if (a != b && c.route(a, b) != device::no_link) {
                m.latency += c.get_link(c.route(a, b)).latency;
                m.inv_bandwidth += 1.0 / c.get_link(c.route(a, b)).bandwidth;
                ++m.pairs;
            }
    if (m.pairs > 0) {
        m.latency /= static_cast<double>(m.pairs);
        m.inv_bandwidth /= static_cast<double>(m.pairs);
    }
    return m;
}

inline bool is_source(const graph::computation_graph& g, graph::op_id o) { return g.get_op(o).spec().has(ops::source); }

/// HEFT's upward ranks: mean op time over devices, mean communication for edges between timed ops.
template <device::DeviceModel D, cost::CostModel<D> Cost>
std::vector<double> heft_ranks(const sim::simulator<D, Cost>& s) {
    const auto& g = s.graph();
    const std::size_t nd = s.cluster().num_devices();
    const mean_communication comm = mean_link_cost(s.cluster());
    return upward_rank(
        g,
        [&](graph::op_id o) {
            double w = 0;
            for (std::size_t d = 0; d < nd; ++d) w += s.op_time(o, static_cast<sim::device_id>(d));
            return w / static_cast<double>(nd);
        },
        [&](graph::tensor_id t, graph::op_id from, graph::op_id) {
            return is_source(g, from) || comm.pairs == 0
                       ? 0.0
                       : comm.latency + static_cast<double>(g.type_of(t).bytes()) * comm.inv_bandwidth;
        });
}

/// Ops by decreasing rank, ties in topological order.
inline std::vector<graph::op_id> by_decreasing_rank(const graph::computation_graph& g,
                                                    const std::vector<double>& rank) {
    const std::size_t n = g.num_ops();
    const auto topo = graph::topological_order(g);
    std::vector<std::size_t> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[topo[i]] = i;
    std::vector<graph::op_id> order(n);
    std::iota(order.begin(), order.end(), graph::op_id{0});
    std::sort(order.begin(), order.end(),
              [&](graph::op_id a, graph::op_id b) { return rank[a] != rank[b] ? rank[a] > rank[b] : pos[a] < pos[b]; });
    return order;
}

/// One device's busy intervals, sorted and disjoint [start, end), with HEFT's insertion policy.
class device_timeline {
public:
    /// A slot of length w starting at or after `ready`: the earliest gap that fits among the next 64
    /// gaps, else after the last interval. `at` is where the slot's interval goes.
    double earliest_slot(double ready, double w, std::size_t& at) const {
        std::size_t i = static_cast<std::size_t>(
            std::lower_bound(busy_.begin(), busy_.end(), ready, [](const auto& x, double t) { return x.second <= t; }) -
            busy_.begin());
        double start = ready;
        for (std::size_t scanned = 0; i < busy_.size(); ++i, ++scanned) {
            if (scanned == 64) {
                start = std::max(ready, busy_.back().second);
                i = busy_.size();
                break;
            }
            if (busy_[i].first >= start + w) break;  // the gap before interval i fits
            start = std::max(start, busy_[i].second);
        }
        at = i;
        return start;
    }
    void reserve(std::size_t at, double start, double end) {
        if (end > start) busy_.insert(busy_.begin() + static_cast<std::ptrdiff_t>(at), {start, end});
    }

private:
    std::vector<std::pair<double, double>> busy_;
};

inline constexpr auto unplaced = ~sim::device_id{0};

/// When all of o's inputs from timed ops can be on device d (infinite when a producer cannot reach d).
template <device::DeviceModel D>
double data_ready_time(const graph::computation_graph& g, const device::cluster<D>& c, const sim::placement& placement,
                       const std::vector<double>& finish, graph::op_id o, std::size_t d) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    double ready = 0;
    for (graph::tensor_id t : g.get_op(o).inputs) {
        const graph::op_id q = g.producer(t);
        if (is_source(g, q)) continue;
        double arrive = finish[q];
        if (placement[q] != d) {
            const auto l = c.route(placement[q], d);
            arrive = l == device::no_link
                         ? inf
                         : arrive + c.get_link(l).transfer_time(static_cast<double>(g.type_of(t).bytes()));
        }
        ready = std::max(ready, arrive);
    }
    return ready;
}

/// Sources go to their colocation group's device, else to their first placed consumer's (device 0
/// when none).
inline void place_sources(const graph::computation_graph& g, sim::placement& placement,
                          std::unordered_map<std::int32_t, sim::device_id>& group_device) {
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        if (!is_source(g, o)) continue;
        const auto grp = g.get_op(o).colocation;
        if (grp >= 0 && group_device.count(grp)) {
            placement[o] = group_device[grp];
            continue;
        }
        auto first_consumer_device = [&]() -> sim::device_id {
            for (graph::tensor_id t : g.get_op(o).outputs)
                for (const graph::use& u : g.get_tensor(t).uses)
                    if (placement[u.op] != unplaced) return placement[u.op];
            return 0;
        };
        const sim::device_id d = first_consumer_device();
        placement[o] = d;
        if (grp >= 0) group_device.emplace(grp, d);
    }
}

}  // namespace detail::heft_steps

template <device::DeviceModel D, cost::CostModel<D> Cost> heft_result heft(const sim::simulator<D, Cost>& s) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops(), nd = c.num_devices();
    namespace steps = detail::heft_steps;
    heft_result r;
    r.priorities = steps::heft_ranks(s);
    r.placement.assign(n, steps::unplaced);
    std::vector<double> finish(n, 0.0);
    std::vector<steps::device_timeline> timeline(nd);
    std::unordered_map<std::int32_t, sim::device_id> group_device;
    // each timed op, by decreasing rank, on the device where it finishes earliest
    for (graph::op_id o : steps::by_decreasing_rank(g, r.priorities)) {
        if (steps::is_source(g, o)) continue;
        const auto grp = g.get_op(o).colocation;
        const auto fixed = grp >= 0 && group_device.count(grp) ? group_device[grp] : steps::unplaced;
        double best_eft = std::numeric_limits<double>::infinity(), best_start = 0;
        sim::device_id best = steps::unplaced;
        std::size_t best_at = 0;
        for (std::size_t d = 0; d < nd; ++d) {
            if (fixed != steps::unplaced && d != fixed) continue;
            const double ready = steps::data_ready_time(g, c, r.placement, finish, o, d);
            if (ready == std::numeric_limits<double>::infinity()) continue;
            const double w = s.op_time(o, static_cast<sim::device_id>(d));
            std::size_t at = 0;
            const double start = timeline[d].earliest_slot(ready, w, at);
            if (start + w < best_eft) {
                best_eft = start + w;
                best_start = start;
                best = static_cast<sim::device_id>(d);
                best_at = at;
            }
        }
        if (best == steps::unplaced)
            throw error("heft", concat("op ", g.describe(o), " has no device its inputs can reach"),
                        "a cluster whose links reach every device");
        r.placement[o] = best;
        finish[o] = best_eft;
        r.schedule_length = std::max(r.schedule_length, best_eft);
        timeline[best].reserve(best_at, best_start, best_eft);
        if (grp >= 0) group_device.emplace(grp, best);
    }
    steps::place_sources(g, r.placement, group_device);
    return r;
}

}  // namespace goopt::baselines
