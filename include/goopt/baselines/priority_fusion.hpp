#pragma once
/// @file
/// @brief Cost-driven priority fusion after XLA's PriorityFusion pass: producer/consumer merges
/// ordered by the time the cost model says they save (unfused time - fused time), best first, each
/// merge recomputing its neighbours' priorities, every group legal (sim/fusion_legality.hpp), on one
/// device, and the groups acyclic once contracted.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/fusion_legality.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <queue>
#include <span>
#include <utility>
#include <vector>

namespace goopt::baselines {

/// @brief Where priority fusion starts and which merges it may add: an anchored decoder starts from a
/// heuristic's groups (e.g. greedy fusion's) and learns departures from them, so that its zero-logit
/// decode is that heuristic's fusion exactly (tasks/fusion.hpp, tasks/joint.hpp).
struct fusion_start {
    /// Groups to start from (as sim::fusion_groups: a group id per op, sim::no_group alone; empty:
    /// every op alone). The kept members of a group that lie on one device and are joined by
    /// producer/consumer edges among them start as one group when sim::fusion_check allows it, else
    /// alone; groups whose contraction would be cyclic are dissolved (only departures split groups,
    /// so a valid fusion kept whole starts exactly as given).
    std::span<const std::int32_t> groups = {};
    /// Per op (empty: every op kept): 0 takes the op out of its starting group.
    std::span<const std::uint8_t> keep = {};
    /// Per op (empty: every op open): a new merge needs at least one open op in its pair.
    std::span<const std::uint8_t> open = {};
};

/// @brief Priority fusion on one graph, cluster and placement, built once and run many times (the
/// fusion task decodes every sample with it). Candidates are the producer/consumer pairs on one
/// device that sim::can_fuse allows. A merge's priority is the cost model's time of the two groups
/// apart minus their time as one kernel, plus the caller's per-op bias of both ops of the pair; the
/// best is merged while its priority is positive, if the merged group passes sim::fusion_check.
///
/// Acyclicity without reachability queries: every group has a rank (first: its op's topological
/// position) and every edge between groups goes from a smaller rank to a larger one. Merging
/// producer group P into consumer group C keeps that true with P's rank when every other producer
/// of C ranks below P, or with C's rank when every other consumer of P ranks above C; a merge that
/// allows neither is skipped. So the contracted graph stays acyclic and every group convex.
///
/// run() is const and thread-safe (its scratch is its own); the fuser keeps references to the graph
/// and the cluster.
template <device::DeviceModel D, cost::CostModel<D> Cost> class priority_fuser {
public:
    /// @throws goopt::error for a placement without one device per op, or a device out of range.
    priority_fuser(const graph::computation_graph& g, const device::cluster<D>& c, Cost cost, sim::placement placement);
    explicit priority_fuser(const sim::simulator<D, Cost>& s, sim::placement placement)
        : priority_fuser(s.graph(), s.cluster(), s.cost_model(), std::move(placement)) {}

    /// @param bias per op (empty: none), added to the priority of every merge of a pair it is in.
    /// @param frozen per op (empty: none), nonzero: the op is never merged (and leaves its starting group).
    /// @param start the groups to start from and the ops new merges may use (default: from scratch).
    /// @throws goopt::error for a bias, frozen, keep or open of neither one entry per op nor none, or
    /// starting groups of another length.
    sim::fusion_groups run(std::span<const double> bias = {}, std::span<const std::uint8_t> frozen = {},
                           const fusion_start& start = {}) const;

    /// Producer/consumer pairs that may fuse (same device, sim::can_fuse).
    std::size_t num_pairs() const noexcept { return pairs_.size(); }
    /// Per op, 1 when it is in at least one such pair.
    std::span<const std::uint8_t> fusible() const noexcept { return fusible_; }
    /// The largest time one merge of two single ops saves (seconds, >= 0).
    double max_benefit() const noexcept { return max_benefit_; }
    const sim::placement& placement() const noexcept { return placement_; }

private:
    /// Union-find parents, members, ranks and times of the starting groups (see fusion_start).
    void seed(const fusion_start& start, std::span<const std::uint8_t> frozen, std::vector<graph::op_id>& group,
              std::vector<std::vector<graph::op_id>>& members, std::vector<std::uint32_t>& rank,
              std::vector<double>& time, sim::fusion_check& check) const;
    double group_time(std::span<const graph::op_id> ops) const {
        if (ops.size() == 1) return op_time_[ops[0]];
        return static_cast<double>(cost_.group_time(*g_, ops, c_->device(placement_[ops[0]])));
    }

    const graph::computation_graph* g_;
    const device::cluster<D>* c_;
    Cost cost_;
    sim::placement placement_;
    std::vector<double> op_time_;
    std::vector<std::uint32_t> pos_;  // topological position
    std::vector<std::pair<graph::op_id, graph::op_id>> pairs_;
    std::vector<std::vector<graph::op_id>> preds_, succs_;  // distinct computing neighbours
    std::vector<std::vector<std::uint32_t>> pairs_of_;      // indices into pairs_, per op
    std::vector<std::uint8_t> fusible_;
    double max_benefit_ = 0;
};

template <device::DeviceModel D, cost::CostModel<D> Cost>
priority_fuser(const sim::simulator<D, Cost>&, sim::placement) -> priority_fuser<D, Cost>;

/// @brief XLA-style priority fusion of `placement`'s ops on simulator `s`'s graph, cluster and cost
/// model: fusion groups for sim::simulation_options::fusion.
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::fusion_groups priority_fusion(const sim::simulator<D, Cost>& s, std::span<const sim::device_id> placement) {
    return priority_fuser<D, Cost>(s, sim::placement(placement.begin(), placement.end())).run();
}

// ---- implementation ----

template <device::DeviceModel D, cost::CostModel<D> Cost>
priority_fuser<D, Cost>::priority_fuser(const graph::computation_graph& g, const device::cluster<D>& c, Cost cost,
                                        sim::placement placement)
    : g_(&g), c_(&c), cost_(std::move(cost)), placement_(std::move(placement)) {
    const std::size_t n = g.num_ops();
    if (placement_.size() != n)
        throw error("baselines::priority_fuser", concat("placement has ", placement_.size(), " entries"),
                    concat("one per op (", n, ")"));
    for (graph::op_id o = 0; o < n; ++o)
        if (placement_[o] >= c.num_devices())
            throw error("baselines::priority_fuser", concat("op ", g.describe(o), " on device ", placement_[o]),
                        concat("a device of the cluster, 0..", c.num_devices() - 1));
    const auto topo = graph::topological_order(g);
    pos_.resize(n);
    for (std::size_t i = 0; i < n; ++i) pos_[topo[i]] = static_cast<std::uint32_t>(i);
    op_time_.resize(n);
    for (graph::op_id o = 0; o < n; ++o)
        op_time_[o] = static_cast<double>(cost_.op_time(g, o, c.device(placement_[o])));
    preds_.assign(n, {});
    succs_.assign(n, {});
    pairs_of_.assign(n, {});
    fusible_.assign(n, 0);
    for (graph::op_id o = 0; o < n; ++o) {
        const auto& x = g.get_op(o);
        if (x.spec().has(ops::source)) continue;
        for (graph::tensor_id t : x.inputs) {
            const graph::op_id p = g.producer(t);
            if (g.get_op(p).spec().has(ops::source)) continue;
            if (std::find(preds_[o].begin(), preds_[o].end(), p) != preds_[o].end()) continue;
            preds_[o].push_back(p);
            succs_[p].push_back(o);
            if (placement_[p] != placement_[o] || !sim::can_fuse(g.get_op(p).spec(), x.spec())) continue;
            const auto k = static_cast<std::uint32_t>(pairs_.size());
            pairs_.emplace_back(p, o);
            pairs_of_[p].push_back(k);
            pairs_of_[o].push_back(k);
            fusible_[p] = fusible_[o] = 1;
            const graph::op_id both[2] = {p, o};
            max_benefit_ = std::max(max_benefit_, op_time_[p] + op_time_[o] - group_time(both));
        }
    }
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void priority_fuser<D, Cost>::seed(const fusion_start& start, std::span<const std::uint8_t> frozen,
                                   std::vector<graph::op_id>& group, std::vector<std::vector<graph::op_id>>& members,
                                   std::vector<std::uint32_t>& rank, std::vector<double>& time,
                                   sim::fusion_check& check) const {
    const std::size_t n = g_->num_ops();
    auto find = [&](graph::op_id o) {
        while (group[o] != o) o = group[o] = group[group[o]];
        return o;
    };
    auto kept = [&](graph::op_id o) {
        return start.groups[o] >= 0 && (start.keep.empty() || start.keep[o]) && (frozen.empty() || !frozen[o]) &&
               !g_->get_op(o).spec().has(ops::source);
    };
    // components of the kept members of each starting group, joined by edges inside it on one device
    for (graph::op_id o = 0; o < n; ++o) {
        if (!kept(o)) continue;
        for (graph::op_id q : preds_[o])
            if (kept(q) && start.groups[q] == start.groups[o] && placement_[q] == placement_[o]) {
                const graph::op_id a = find(q), b = find(o);
                if (a != b) group[std::max(a, b)] = std::min(a, b);
            }
    }
    for (graph::op_id o = 0; o < n; ++o)
        if (const graph::op_id r = find(o); r != o) members[r].push_back(o);  // members[r] starts as {r}
    auto dissolve = [&](graph::op_id r) {
        for (graph::op_id m : members[r]) {
            group[m] = m;
            members[m] = {m};
        }
    };
    for (graph::op_id o = 0; o < n; ++o)
        if (group[o] == o && members[o].size() > 1 && !check.legal(members[o])) dissolve(o);
    // ranks: a topological order of the contracted graph (Kahn); groups left on a cycle are dissolved
    // and the order recomputed, which ends at the latest when every op is alone (the graph is a DAG)
    std::vector<std::uint32_t> indegree(n);
    std::vector<graph::op_id> ready;
    for (;;) {
        std::fill(indegree.begin(), indegree.end(), 0u);
        for (graph::op_id o = 0; o < n; ++o)
            for (graph::op_id q : succs_[o])
                if (find(q) != find(o)) ++indegree[find(q)];
        ready.clear();
        for (graph::op_id o = 0; o < n; ++o)
            if (group[o] == o && indegree[o] == 0) ready.push_back(o);
        std::uint32_t next = 0;
        for (std::size_t i = 0; i < ready.size(); ++i) {
            const graph::op_id r = ready[i];
            rank[r] = next++;
            for (graph::op_id m : members[r])
                for (graph::op_id q : succs_[m])
                    if (const graph::op_id gq = find(q); gq != r && --indegree[gq] == 0) ready.push_back(gq);
        }
        std::size_t roots = 0;
        for (graph::op_id o = 0; o < n; ++o) roots += group[o] == o;
        if (next == roots) break;
        std::vector<std::uint8_t> placed(n, 0);
        for (graph::op_id r : ready) placed[r] = 1;
        for (graph::op_id o = 0; o < n; ++o)
            if (group[o] == o && !placed[o] && members[o].size() > 1) dissolve(o);
    }
    for (graph::op_id o = 0; o < n; ++o)
        if (group[o] == o && members[o].size() > 1) time[o] = group_time(members[o]);
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::fusion_groups priority_fuser<D, Cost>::run(std::span<const double> bias, std::span<const std::uint8_t> frozen,
                                                const fusion_start& start) const {
    const std::size_t n = g_->num_ops();
    auto sized = [n](std::size_t k) { return k == 0 || k == n; };
    if (!sized(bias.size()) || !sized(frozen.size()) || !sized(start.groups.size()) || !sized(start.keep.size()) ||
        !sized(start.open.size()))
        throw error(
            "baselines::priority_fuser",
            concat("bias of ", bias.size(), ", frozen of ", frozen.size(), ", starting groups of ", start.groups.size(),
                   ", keep of ", start.keep.size(), " and open of ", start.open.size(), " entries"),
            concat("one per op (", n, ") or none"));
    std::vector<graph::op_id> group(n);  // union-find parent; a root is its group's id
    for (graph::op_id o = 0; o < n; ++o) group[o] = o;
    auto find = [&](graph::op_id o) {
        while (group[o] != o) o = group[o] = group[group[o]];
        return o;
    };
    std::vector<std::vector<graph::op_id>> members(n);
    for (graph::op_id o = 0; o < n; ++o) members[o] = {o};
    std::vector<std::uint32_t> rank(pos_), version(n, 0);
    std::vector<double> time(op_time_);
    sim::fusion_check check(*g_);
    if (!start.groups.empty()) seed(start, frozen, group, members, rank, time, check);
    struct entry {
        double priority;
        std::uint32_t seq, pair, version_p, version_c;
    };
    auto lower = [](const entry& a, const entry& b) {
        return a.priority < b.priority || (a.priority == b.priority && a.seq > b.seq);
    };
    std::priority_queue<entry, std::vector<entry>, decltype(lower)> heap(lower);
    std::uint32_t seq = 0;
    std::vector<graph::op_id> merged;
    auto union_of = [&](graph::op_id a, graph::op_id b) {
        merged.assign(members[a].begin(), members[a].end());
        merged.insert(merged.end(), members[b].begin(), members[b].end());
    };
    auto push = [&](std::uint32_t k) {
        const auto [p, c] = pairs_[k];
        if (!frozen.empty() && (frozen[p] || frozen[c])) return;
        if (!start.open.empty() && !start.open[p] && !start.open[c]) return;
        const graph::op_id gp = find(p), gc = find(c);
        if (gp == gc) return;
        union_of(gp, gc);
        double priority = time[gp] + time[gc] - group_time(merged);
        if (!bias.empty()) priority += bias[p] + bias[c];
        if (!std::isfinite(priority))
            throw error("baselines::priority_fuser",
                        concat("merge of op ", g_->describe(p), " into ", g_->describe(c), " has priority ", priority),
                        "finite biases and cost-model times");
        heap.push({priority, seq++, k, version[gp], version[gc]});
    };
    for (std::uint32_t k = 0; k < pairs_.size(); ++k) push(k);
    while (!heap.empty()) {
        const entry e = heap.top();
        heap.pop();
        const auto [p, c] = pairs_[e.pair];
        const graph::op_id gp = find(p), gc = find(c);
        if (gp == gc || version[gp] != e.version_p || version[gc] != e.version_c) continue;  // stale
        if (!(e.priority > 0)) break;  // the best fresh merge saves nothing
        // keep the ranks a topological order of the contracted graph (see the class comment)
        const bool producer_side = [&] {
            for (graph::op_id m : members[gc])
                for (graph::op_id q : preds_[m])
                    if (const graph::op_id gq = find(q); gq != gp && gq != gc && rank[gq] > rank[gp]) return false;
            return true;
        }();
        const bool consumer_side = producer_side || [&] {
            for (graph::op_id m : members[gp])
                for (graph::op_id q : succs_[m])
                    if (const graph::op_id gq = find(q); gq != gp && gq != gc && rank[gq] < rank[gc]) return false;
            return true;
        }();
        if (!consumer_side) continue;
        union_of(gp, gc);
        if (!check.legal(merged)) continue;
        // merge C into P
        time[gp] = group_time(merged);
        if (!producer_side) rank[gp] = rank[gc];
        members[gp] = merged;
        members[gc].clear();
        members[gc].shrink_to_fit();
        group[gc] = gp;
        ++version[gp];
        for (graph::op_id m : members[gp])
            for (std::uint32_t k : pairs_of_[m]) push(k);
    }
    sim::fusion_groups out(n, sim::no_group);
    for (graph::op_id o = 0; o < n; ++o) {
        const graph::op_id r = find(o);
        if (members[r].size() > 1) out[o] = static_cast<std::int32_t>(r);
    }
    return out;
}

}  // namespace goopt::baselines
