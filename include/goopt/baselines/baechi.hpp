#pragma once
/// @file
/// @brief Baechi's memory-aware algorithmic placers m-TOPO, m-ETF and m-SCT (Jeon et al., SoCC'20,
/// §3-4): they place a graph in seconds and, unlike HEFT, only where each op fits in memory.

#include <goopt/error.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::baselines {

/// Knobs shared by the three placers.
struct baechi_config {
    /// Share of each device's capacity the placers may fill with their memory estimate. Baechi
    /// reserves headroom the same way (its estimate leaves out allocator fragmentation).
    double memory_fraction = 1.0;
};

/// @brief Baechi's memory estimate and the units it places: an op's memory is the bytes of its
/// outputs (a weight's are persistent), all counted as held for the whole step (Baechi's
/// conservative training-graph assumption: activations live until the backward pass). A unit is a
/// colocation group, or an op outside every group; source ops (inputs, weights) are placed with the
/// first op that reads them, as the other baselines do, and count against that device then.
class baechi_memory {
public:
    template <device::DeviceModel D, cost::CostModel<D> Cost>
    baechi_memory(const sim::simulator<D, Cost>& s, const baechi_config& c) : g_(&s.graph()) {
        const auto& g = s.graph();
        const std::size_t n = g.num_ops(), nd = s.cluster().num_devices();
        if (!(c.memory_fraction > 0)) throw error("baechi", concat("memory_fraction is ", c.memory_fraction), "> 0");
        unit_.resize(n);
        std::unordered_map<std::int32_t, std::uint32_t> group;
        for (graph::op_id o = 0; o < n; ++o) {
            const auto grp = g.get_op(o).colocation;
            if (grp < 0) unit_[o] = static_cast<std::uint32_t>(bytes_.size());
            else unit_[o] = group.try_emplace(grp, static_cast<std::uint32_t>(bytes_.size())).first->second;
            if (unit_[o] == bytes_.size()) bytes_.push_back(0);
            double b = 0;
            for (graph::tensor_id t : g.get_op(o).outputs) b += static_cast<double>(g.type_of(t).bytes());
            bytes_[unit_[o]] += b;
            total_ += b;
        }
        device_.assign(bytes_.size(), unplaced);
        for (std::size_t d = 0; d < nd; ++d)
            capacity_.push_back(c.memory_fraction * static_cast<double>(s.cluster().device(d).mem_capacity()));
        used_.assign(nd, 0);
    }

    static constexpr sim::device_id unplaced = ~sim::device_id{0};
    bool is_source(graph::op_id o) const { return g_->get_op(o).spec().has(ops::source); }
    /// The device of o's unit, or unplaced.
    sim::device_id device_of(graph::op_id o) const { return device_[unit_[o]]; }
    /// Bytes that placing `o` now would add to a device: its unit and its unplaced source inputs' units.
    double need(graph::op_id o) const {
        double b = device_of(o) == unplaced ? bytes_[unit_[o]] : 0;
        for_new_sources(o, [&](std::uint32_t u) { b += bytes_[u]; });
        return b;
    }
    bool fits(graph::op_id o, sim::device_id d) const { return fits_bytes(need(o), d); }
    /// Whether `bytes` more fit on d (need(o) is the same on every device: compute it once).
    bool fits_bytes(double bytes, sim::device_id d) const { return used_[d] + bytes <= capacity_[d]; }
    /// The device with the most room left (the fallback when `o` fits nowhere).
    sim::device_id roomiest() const {
        sim::device_id best = 0;
        for (sim::device_id d = 1; d < used_.size(); ++d)
            if (capacity_[d] - used_[d] > capacity_[best] - used_[best]) best = d;
        return best;
    }
    /// Puts o's unit and its unplaced source inputs' units on d.
    void place(graph::op_id o, sim::device_id d) {
        for_new_sources(o, [&](std::uint32_t u) { take(u, d); });
        if (device_of(o) == unplaced) take(unit_[o], d);
    }
    /// Sources no op reads (and any op left over) go to device 0; then the placement of every op.
    sim::placement placement() {
        sim::placement p(g_->num_ops());
        for (graph::op_id o = 0; o < p.size(); ++o) {
            if (device_of(o) == unplaced) take(unit_[o], 0);
            p[o] = device_of(o);
        }
        return p;
    }
    double total_bytes() const { return total_; }
    double used(sim::device_id d) const { return used_[d]; }
    double capacity(sim::device_id d) const { return capacity_[d]; }

private:
    template <class F> void for_new_sources(graph::op_id o, F&& f) const {
        const auto own = unit_[o];
        const auto& in = g_->get_op(o).inputs;
        for (std::size_t i = 0; i < in.size(); ++i) {
            const graph::op_id q = g_->producer(in[i]);
            const auto u = unit_[q];
            if (!is_source(q) || u == own || device_[u] != unplaced) continue;
            bool seen = false;  // a source read twice (or two sources of one group) counts once
            for (std::size_t j = 0; j < i && !seen; ++j)
                seen = is_source(g_->producer(in[j])) && unit_[g_->producer(in[j])] == u;
            if (!seen) f(u);
        }
    }
    void take(std::uint32_t u, sim::device_id d) {
        device_[u] = d;
        used_[d] += bytes_[u];
    }

    const graph::computation_graph* g_;
    std::vector<std::uint32_t> unit_;
    std::vector<double> bytes_;
    std::vector<sim::device_id> device_;
    std::vector<double> capacity_, used_;
    double total_ = 0;
};

/// @brief m-TOPO: ops in topological order fill device 0 up to an even share of the graph's memory
/// estimate (never past its capacity), then device 1, and so on; an op whose unit is already placed
/// follows it. Baechi §4.1. FIFO scheduling (no priorities), as Baechi measures it on TensorFlow.
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::decision m_topo(const sim::simulator<D, Cost>& s, const baechi_config& config = {}) {
    const auto& g = s.graph();
    baechi_memory m(s, config);
    const auto nd = static_cast<sim::device_id>(s.cluster().num_devices());
    const double share = m.total_bytes() / static_cast<double>(nd);
    sim::device_id d = 0;
    double filled = 0;  // on device d by this pass
    for (std::size_t v : graph::topological_order(g)) {
        const auto o = static_cast<graph::op_id>(v);
        if (m.is_source(o)) continue;
        if (m.device_of(o) != baechi_memory::unplaced) {
            m.place(o, m.device_of(o));
            continue;
        }
        const double need = m.need(o);
        while (d + 1 < nd && (filled + need > share || !m.fits(o, d))) {
            ++d;
            filled = 0;
        }
        const sim::device_id at = m.fits(o, d) ? d : m.roomiest();
        m.place(o, at);
        if (at == d) filled += need;
    }
    return {.placement = m.placement(), .priorities = {}, .fusion = {}};
}

namespace detail {

/// The list scheduler behind m-ETF and m-SCT: repeatedly the ready op that can start earliest goes
/// to the device where it starts earliest, among the devices where it fits (its unit's device when
/// that is already placed; the roomiest device when it fits nowhere). `prefer(o, d, start)` may name
/// a device to take instead of the earliest one (m-SCT's favourite parent), or unplaced.
/// Ready ops sit in a heap keyed by their earliest start, recomputed lazily when popped (device free
/// times only grow, so a popped key that grew goes back), which keeps 60k-op graphs to a second.
template <device::DeviceModel D, cost::CostModel<D> Cost, class Prefer>
sim::decision earliest_task_first(const sim::simulator<D, Cost>& s, const baechi_config& config, Prefer&& prefer) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops();
    const auto nd = static_cast<sim::device_id>(c.num_devices());
    baechi_memory m(s, config);
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<double> finish(n, 0), start(n, 0), free_at(nd, 0);
    std::vector<sim::device_id> dev(n, baechi_memory::unplaced);
    std::vector<std::uint32_t> waiting(n, 0);
    const auto topo = graph::topological_order(g);
    std::vector<std::uint32_t> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[topo[i]] = static_cast<std::uint32_t>(i);
    for (graph::op_id o = 0; o < n; ++o)
        for (graph::op_id p : g.predecessors(o))
            if (!m.is_source(p)) ++waiting[o];
    auto arrival = [&](graph::op_id o, sim::device_id d) {
        double ready = 0;
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id q = g.producer(t);
            if (m.is_source(q)) continue;
            double a = finish[q];
            if (dev[q] != d) {
                const auto l = c.route(dev[q], d);
                a = l == device::no_link ? inf
                                         : a + c.get_link(l).transfer_time(static_cast<double>(g.type_of(t).bytes()));
            }
            ready = std::max(ready, a);
        }
        return ready;
    };
    // earliest start of o and the device giving it
    auto best_start = [&](graph::op_id o) -> std::pair<double, sim::device_id> {
        const auto fixed = m.device_of(o);
        const double bytes = fixed == baechi_memory::unplaced ? m.need(o) : 0;
        double best = inf;
        sim::device_id at = baechi_memory::unplaced;
        for (sim::device_id d = 0; d < nd; ++d) {
            if (fixed != baechi_memory::unplaced ? d != fixed : !m.fits_bytes(bytes, d)) continue;
            const double st = std::max(free_at[d], arrival(o, d));
            if (st < best) best = st, at = d;
        }
        if (at == baechi_memory::unplaced) {  // fits nowhere: the roomiest device
            at = m.roomiest();
            best = std::max(free_at[at], arrival(o, at));
        }
        return {best, at};
    };
    using entry = std::tuple<double, std::uint32_t, graph::op_id>;  // (key, topological position, op)
    std::priority_queue<entry, std::vector<entry>, std::greater<>> ready;
    auto release = [&](graph::op_id o) { ready.emplace(best_start(o).first, pos[o], o); };
    for (graph::op_id o = 0; o < n; ++o)
        if (!m.is_source(o) && waiting[o] == 0) release(o);
    while (!ready.empty()) {
        const auto [key, p, o] = ready.top();
        ready.pop();
        auto [st, d] = best_start(o);
        if (st == inf)
            throw error("baechi", concat("op ", g.describe(o), " has no device its inputs can reach"),
                        "a cluster whose links reach every device");
        if (st > key) {
            ready.emplace(st, p, o);
            continue;
        }
        if (m.device_of(o) == baechi_memory::unplaced)
            if (const sim::device_id q = prefer(o, d, st, dev, arrival, free_at);
                q != baechi_memory::unplaced && m.fits(o, q)) {
                d = q;
                st = std::max(free_at[q], arrival(o, q));
            }
        m.place(o, d);
        dev[o] = d;
        start[o] = st;
        finish[o] = st + s.op_time(o, d);
        free_at[d] = finish[o];
        for (graph::op_id q : g.successors(o))
            if (!m.is_source(q) && --waiting[q] == 0) release(q);
    }
    sim::decision r{.placement = m.placement(), .priorities = std::vector<double>(n, 0.0), .fusion = {}};
    for (graph::op_id o = 0; o < n; ++o)
        if (!m.is_source(o)) r.priorities[o] = -start[o];  // the planned order: earlier start first
    return r;
}

}  // namespace detail

/// @brief m-ETF: earliest task first under memory limits (Baechi §4.2; ETF is Hwang et al., SIAM J.
/// Comput. 1989). Priorities are the planned start times (earlier first), so the simulator's ready
/// queues follow the plan.
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::decision m_etf(const sim::simulator<D, Cost>& s, const baechi_config& config = {}) {
    return detail::earliest_task_first(s, config, [](auto...) { return baechi_memory::unplaced; });
}

/// @brief m-SCT: ETF that keeps an op with its favourite parent (Baechi §4.3, after Hanen and
/// Munier's small-communication-time scheduling, 1995).
///
/// SCT chooses favourite children from the solution of a linear-programming relaxation: each op
/// has at most one favourite child and each at most one favourite parent, and the edges kept are
/// those whose communication the LP most wants to avoid. Approximation used here instead of an LP
/// solver (none is a dependency): the same one-to-one matching taken greedily, heaviest
/// communication first (transfer time over the slowest link, ties by op ids). An op whose favourite
/// parent is placed goes to the parent's device when it fits there and starts there no later than
/// on its earliest device plus that edge's transfer time (the time that keeping them together saves).
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::decision m_sct(const sim::simulator<D, Cost>& s, const baechi_config& config = {}) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops();
    double slowest = 0, latency = 0;  // transfer time bound over the cluster's links
    for (std::uint32_t l = 0; l < c.num_links(); ++l) {
        slowest = std::max(slowest, 1.0 / c.get_link(l).bandwidth);
        latency = std::max(latency, c.get_link(l).latency);
    }
    struct edge {
        double time;
        graph::op_id from, to;
    };
    std::vector<edge> edges;
    for (graph::op_id o = 0; o < n; ++o) {
        if (g.get_op(o).spec().has(ops::source)) continue;
        for (graph::tensor_id t : g.get_op(o).outputs)
            for (const graph::use& u : g.get_tensor(t).uses)
                edges.push_back({latency + static_cast<double>(g.type_of(t).bytes()) * slowest, o, u.op});
    }
    std::sort(edges.begin(), edges.end(), [](const edge& a, const edge& b) {
        return a.time != b.time ? a.time > b.time : std::tie(a.from, a.to) < std::tie(b.from, b.to);
    });
    constexpr graph::op_id none = graph::no_op;
    std::vector<graph::op_id> fav_child(n, none), fav_parent(n, none);
    std::vector<double> saved(n, 0);
    for (const edge& e : edges)
        if (fav_child[e.from] == none && fav_parent[e.to] == none) {
            fav_child[e.from] = e.to;
            fav_parent[e.to] = e.from;
            saved[e.to] = e.time;
        }
    return detail::earliest_task_first(
        s, config,
        [&](graph::op_id o, sim::device_id best, double best_st, const auto& dev, auto&& arrival, const auto& free_at) {
            const graph::op_id p = fav_parent[o];
            if (p == none || dev[p] == baechi_memory::unplaced || dev[p] == best) return baechi_memory::unplaced;
            const sim::device_id d = dev[p];
            return std::max(free_at[d], arrival(o, d)) <= best_st + saved[o] ? d : baechi_memory::unplaced;
        });
}

}  // namespace goopt::baselines
