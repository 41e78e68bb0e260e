#pragma once
/// @file
/// @brief A lower bound on the step time of any schedule of one fixed placement (no fusion), so that
/// a scheduling table shows where a better order can help at all: a row whose best heuristic order
/// is within 1 % of it leaves nothing to learn.
///
/// Each device and each link is a one-machine problem whose jobs have release times (the longest
/// path to the op, ops timed on their devices, each cross-device tensor paying its transfer) and
/// tails (the longest path after it). Even run preemptively, such a machine cannot finish before
/// the optimum of Jackson's preemptive schedule (largest tail first; Carlier, EJOR 1982), which is
/// at least the machine's total work and at least the longest path through any of its jobs.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cstddef>
#include <queue>
#include <span>
#include <vector>

namespace goopt::sim {

/// The bound and what it is made of (seconds).
struct schedule_bound {
    double step = 0;            ///< the largest of the three below: no schedule is faster
    double path = 0;            ///< longest path, ops on their devices, transfers at their link's time
    double device = 0;          ///< the tightest device (its busy time at least)
    double link = 0;            ///< the tightest link (its transfers' total time at least)
    double busiest_device = 0;  ///< the largest total busy time of a device (schedule-independent)
};

namespace detail {

/// A job of a one-machine problem: released at `release`, runs `length`, then `tail` must follow.
struct machine_job {
    double release, length, tail;
};

/// @brief The optimal max(completion + tail) of one machine's jobs with preemption: Jackson's
/// rule (at every release or completion, run the released job with the largest tail). Sorts `jobs`.
inline double jackson_preemptive_bound(std::vector<machine_job>& jobs) {
    std::sort(jobs.begin(), jobs.end(),
              [](const machine_job& a, const machine_job& b) { return a.release < b.release; });
    struct running {
        double tail, left;
        bool operator<(const running& o) const { return tail < o.tail; }
    };
    std::priority_queue<running> ready;
    double now = 0, bound = 0;
    std::size_t next = 0;
    while (next < jobs.size() || !ready.empty()) {
        if (ready.empty()) now = std::max(now, jobs[next].release);
        while (next < jobs.size() && jobs[next].release <= now) {
            ready.push({jobs[next].tail, jobs[next].length});
            ++next;
        }
        running j = ready.top();
        ready.pop();
        const double until = next < jobs.size() ? jobs[next].release : now + j.left;
        if (now + j.left <= until) {
            now += j.left;
            bound = std::max(bound, now + j.tail);
        } else {
            j.left -= until - now;
            now = until;
            ready.push(j);
        }
    }
    return bound;
}

}  // namespace detail

/// @brief The schedule lower bound of `placement` on `s`'s graph and cluster, as the simulator models
/// a step (sim::simulator): a device runs one op at a time, each link one transfer at a time, a tensor
/// read on another device is copied there once (latency + bytes / bandwidth on cluster.route) after
/// its producer finishes. No priorities (simulation_options::priorities) give a shorter step without
/// fusion. Sums are taken in another order than the simulator's, so a tight bound can exceed a
/// simulated step by rounding (relative 1e-12).
/// @throws sim::decision_refused or goopt::error for a placement the simulator refuses (check_placement).
template <device::DeviceModel D, cost::CostModel<D> Cost>
schedule_bound schedule_lower_bound(const simulator<D, Cost>& s, std::span<const device_id> placement) {
    s.check_placement(placement);
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops(), k = c.num_devices(), links = c.num_links();
    const auto order = graph::topological_order(g);
    auto time = [&](graph::op_id o) { return s.op_time(o, placement[o]); };
    auto transfer = [&](graph::tensor_id t, device_id from, device_id to) {
        const auto l = c.route(from, to);
        return l == device::no_link ? 0.0 : c.get_link(l).transfer_time(static_cast<double>(g.type_of(t).bytes()));
    };
    // head: earliest start with unlimited devices and links; tail: the longest path after the finish
    std::vector<double> head(n, 0.0), tail(n, 0.0);
    for (std::size_t v : order) {
        const auto o = static_cast<graph::op_id>(v);
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id p = g.get_tensor(t).producer;
            const double arrive =
                head[p] + time(p) + (placement[p] == placement[o] ? 0.0 : transfer(t, placement[p], placement[o]));
            head[o] = std::max(head[o], arrive);
        }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const auto o = static_cast<graph::op_id>(*it);
        for (graph::tensor_id t : g.get_op(o).outputs)
            for (const graph::use& u : g.get_tensor(t).uses) {
                const double after =
                    (placement[o] == placement[u.op] ? 0.0 : transfer(t, placement[o], placement[u.op])) + time(u.op) +
                    tail[u.op];
                tail[o] = std::max(tail[o], after);
            }
    }
    schedule_bound b;
    std::vector<std::vector<detail::machine_job>> device_jobs(k), link_jobs(links);
    std::vector<double> busy(k, 0.0);
    for (graph::op_id o = 0; o < n; ++o) {
        b.path = std::max(b.path, head[o] + time(o) + tail[o]);
        busy[placement[o]] += time(o);
        if (time(o) > 0) device_jobs[placement[o]].push_back({head[o], time(o), tail[o]});
    }
    // one transfer per (tensor, destination device), as the simulator copies it
    std::vector<double> after_arrival(k, -1.0);
    for (graph::tensor_id t = 0; t < g.num_tensors(); ++t) {
        const graph::op_id p = g.get_tensor(t).producer;
        const device_id from = placement[p];
        std::fill(after_arrival.begin(), after_arrival.end(), -1.0);
        for (const graph::use& u : g.get_tensor(t).uses)
            if (placement[u.op] != from)
                after_arrival[placement[u.op]] = std::max(after_arrival[placement[u.op]], time(u.op) + tail[u.op]);
        for (device_id to = 0; to < k; ++to) {
            if (after_arrival[to] < 0) continue;
            const auto l = c.route(from, to);
            if (l == device::no_link) continue;  // check_placement lets the simulator name it
            link_jobs[l].push_back({head[p] + time(p), transfer(t, from, to), after_arrival[to]});
        }
    }
    for (auto& jobs : device_jobs) b.device = std::max(b.device, detail::jackson_preemptive_bound(jobs));
    for (auto& jobs : link_jobs) b.link = std::max(b.link, detail::jackson_preemptive_bound(jobs));
    b.busiest_device = *std::max_element(busy.begin(), busy.end());
    b.step = std::max({b.path, b.device, b.link, b.busiest_device});
    return b;
}

}  // namespace goopt::sim
