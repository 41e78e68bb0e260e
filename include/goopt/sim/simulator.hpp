#pragma once
/// @file
/// @brief The event-driven execution simulator every placement, schedule and fusion decision is
/// scored on (the simulator of GO, NeurIPS'20 §4, and of Placeto/HDP before it).

#include <goopt/cost/concepts.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/reachability.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/decision_refused.hpp>
#include <goopt/sim/fusion_legality.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::sim {

/// In which order a link carries the tensors waiting for it.
enum class transfer_order : std::uint8_t {
    produced,  ///< first produced, first sent: one FIFO queue per link (TensorFlow's and GO's simulators)
    /// the waiting tensor whose most urgent consumer on the destination has the largest priority
    /// first (ties: the one produced first), so that a schedule's priorities order the links as they
    /// order the devices (communication scheduling: TicTac, MLSys'19; ByteScheduler, SOSP'19).
    /// Without priorities it is `produced`.
    priority,
};

/// How a device picks the next op (or fused group) to run, given priorities.
enum class dispatch_order : std::uint8_t {
    /// list scheduling: a free device runs its ready op of the largest priority, so it never idles
    /// while an op is ready (a non-delay schedule)
    ready,
    /// every device runs its ops in one global order and waits for its next op even while another
    /// is ready. The order is topological: next comes the op of the largest priority among those
    /// whose producers are all in it (ties: the smaller op id), an op's priority counting as the
    /// largest of its own and its consumers', so that a priority lifts the producers its op waits
    /// for; so no device waits for an op that waits for it. Every schedule is such an order, one that
    /// holds a device idle for an op about to arrive too (an optimal schedule need not be non-delay:
    /// the job shop's active schedules, Giffler & Thompson 1960): a `ready` schedule's start
    /// positions, negated, as priorities give that schedule again. Without priorities it is `ready`.
    sequence,
};

/// Optional inputs of one simulation, beside the placement.
struct simulation_options {
    /// Per op (indexed by op id): a device's compute stream runs the ready op with the largest priority
    /// first (ties: the one that became ready first). Empty: FIFO ready queue, as TensorFlow's executor.
    /// A fused group's priority is its members' largest.
    std::span<const double> priorities = {};
    /// Per op fusion group (see sim::fusion_groups); empty: no fusion.
    std::span<const std::int32_t> fusion = {};
    /// Fill simulation_result::ops and ::transfers.
    bool record_trace = true;
    /// The links' queues (see transfer_order).
    transfer_order transfers = transfer_order::produced;
    /// The devices' choice of their next op (see dispatch_order).
    dispatch_order dispatch = dispatch_order::ready;
};

/// @brief Simulates one step of a graph on a cluster under a placement.
///
/// Model: each device has one compute stream that runs one op (or fused group) at a time, for the
/// time the cost model gives (the next op chosen as dispatch_order says); each link has a transfer
/// queue (FIFO, or by priority: transfer_order); a tensor consumed on another device is copied there
/// once (one transfer per tensor per destination device) over the link
/// cluster.route(from, to), taking latency + bytes / bandwidth, after its producer finishes. An op
/// becomes ready when all its inputs are on its device.
///
/// Memory per device: an op's output is allocated when its producer starts and freed when its last
/// consumer on that device has finished and every copy of it to other devices is done; a copy
/// is allocated on the destination when its transfer starts and freed when its last consumer there
/// has finished; graph outputs stay until the end; weights' outputs are persistent (counted from the
/// start). Tensors that live only inside a fused group take no memory. A device whose peak exceeds
/// its capacity is flagged, and the step still runs to the end.
///
/// Built once per (graph, cluster, cost model): construction evaluates the cost model for every op
/// on every device; run() then allocates nothing per event (its work arrays are reused across
/// calls) and is O((ops + edges) log ops). The simulator keeps references to the graph and cluster.
/// @tparam D device type; @tparam Cost cost model.
template <device::DeviceModel D, cost::CostModel<D> Cost = cost::roofline_model> class simulator {
public:
    /// @throws goopt::error when the graph has a cycle or the cost model gives a negative or
    /// non-finite time (naming the op and device).
    simulator(const graph::computation_graph& g, const device::cluster<D>& c, Cost cost = Cost{});
    /// The simulator keeps references to the graph and the cluster, so a temporary of either would
    /// dangle (`simulator s(g, parse_cluster("2xV100"))`): refused at compile time.
    simulator(graph::computation_graph&&, const device::cluster<D>&, Cost = Cost{}) = delete;
    simulator(const graph::computation_graph&, device::cluster<D>&&, Cost = Cost{}) = delete;
    simulator(graph::computation_graph&&, device::cluster<D>&&, Cost = Cost{}) = delete;

    /// @brief Simulates one step.
    /// @param placement device of every op (sim::placement).
    /// @throws sim::decision_refused when the placement names a device the cluster lacks, splits a
    /// colocation group or routes a tensor between unconnected devices, or when a priority is not
    /// finite or the fusion groups are illegal (an id out of range, a group on two devices, a group
    /// that is not one kernel by sim::fusion_check's rule, groups that form a cycle); goopt::error when the placement,
    /// priorities or fusion groups do not have one entry per op (the caller's mistake, not a decision), or the cost
    /// model gives a fused group a negative or non-finite time.
    simulation_result run(std::span<const device_id> placement, const simulation_options& options = {}) {
        simulation_result r;
        run(placement, options, r);
        return r;
    }
    /// As above, reusing `out`'s storage.
    void run(std::span<const device_id> placement, const simulation_options& options, simulation_result& out);

    /// Throws when a placement is not valid for this graph and cluster: goopt::error for the wrong
    /// length, sim::decision_refused for a device out of range or a split colocation group (see run()).
    void check_placement(std::span<const device_id> placement) const;

    /// The cost model's time of op `o` on device `d`, as cached at construction.
    double op_time(graph::op_id o, device_id d) const { return op_time_[std::size_t{o} * num_devices_ + d]; }
    const graph::computation_graph& graph() const noexcept { return *g_; }
    const device::cluster<D>& cluster() const noexcept { return *c_; }
    const Cost& cost_model() const noexcept { return cost_; }

private:
    struct event {
        double time;
        std::uint32_t seq;
        std::uint32_t code;  // top bit set: transfer (delivery index); else unit index
    };
    struct queued {
        double priority;
        std::uint32_t seq;
        std::uint32_t unit;  // a unit in a ready queue, a delivery in a link's heap
    };
    static constexpr std::uint32_t transfer_bit = 0x80000000u;
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    void build_units(std::span<const device_id> placement, const simulation_options& options);
    void check_fusion_legal();
    void build_deliveries();
    void push_event(double t, std::uint32_t code) {
        events_.push_back({t, event_seq_++, code});
        std::push_heap(events_.begin(), events_.end(), later);
    }
    static bool later(const event& a, const event& b) noexcept {
        return a.time > b.time || (a.time == b.time && a.seq > b.seq);
    }
    static bool lower_priority(const queued& a, const queued& b) noexcept {
        return a.priority < b.priority || (a.priority == b.priority && a.seq > b.seq);
    }
    void make_ready(std::uint32_t u);
    void try_start(std::uint32_t d, double now, simulation_result& out, bool trace);
    void request_transfer(std::uint32_t k, double now, simulation_result& out, bool trace);
    void start_transfer(std::uint32_t k, double now, simulation_result& out, bool trace);
    std::uint32_t next_transfer(std::uint32_t l);  // the delivery link l carries next (none: idle)
    void build_sequences();                        // dispatch_order::sequence: each device's order
    void release(std::uint32_t copy) {
        copy_state& c = copies_[copy];
        if (--c.refs == 0) memory_in_use_[c.device] -= c.bytes;
        GOOPT_ASSERT(memory_in_use_[c.device] >= 0);
    }
    void allocate(std::uint32_t copy) {
        const auto d = copies_[copy].device;
        memory_in_use_[d] += copies_[copy].bytes;
        peak_memory_[d] = std::max(peak_memory_[d], memory_in_use_[d]);
    }

    const graph::computation_graph* g_;
    const device::cluster<D>* c_;
    Cost cost_;
    std::size_t num_ops_ = 0, num_tensors_ = 0, num_devices_ = 0;

    // ---- fixed per graph and cluster
    std::vector<double> op_time_;  // n x devices
    std::vector<std::int64_t> tensor_bytes_;
    std::vector<std::uint8_t> persistent_, is_output_;
    std::vector<graph::op_id> producer_;
    std::vector<std::uint32_t> consumers_begin_, consumers_;  // distinct consumer ops of each tensor
    std::vector<std::uint32_t> in_begin_, in_;                // distinct input tensors of each op
    std::vector<std::uint32_t> out_begin_, out_;              // outputs of each op (flat: ops are large structs)
    std::vector<std::int32_t> colocation_group_;              // dense colocation group per op, -1 none
    std::size_t num_colocation_groups_ = 0;
    std::unique_ptr<graph::reachability<graph::computation_graph>> reachability_;  // built on first fusion
    std::unique_ptr<fusion_check> fusion_check_;                                   // built on first fusion

    // ---- work arrays of one run, reused
    std::size_t num_units_ = 0;  // a unit: one op, or one fusion group run as one kernel
    std::vector<std::uint32_t> unit_of_, unit_device_, members_begin_, members_, pending_, stamp_;
    std::vector<double> unit_duration_, unit_priority_;
    // what the event loop needs of a unit, packed: one cache line holds two units
    struct unit_state {
        double duration;
        double priority;
        std::uint32_t device;
        std::uint32_t pending;  // inputs not yet on the device
        std::uint32_t first;    // members_[first, last)
        std::uint32_t last;
    };
    std::vector<unit_state> units_;
    // a delivery: one tensor to the units that read it on one device (by a transfer when remote);
    // deliveries_[k + 1].first_unit ends k's units (a sentinel closes the list)
    struct delivery {
        std::uint32_t device;
        std::uint32_t copy;
        std::uint32_t link;  // device::no_link when local
        std::uint32_t first_unit;
    };
    std::vector<std::uint32_t> deliveries_begin_, delivery_units_;
    std::vector<delivery> deliveries_;
    // a tensor's buffer on one device: index t is its producer's, then one per remote destination
    struct copy_state {
        std::int64_t bytes;  // 0: not materialized (persistent weights are counted apart)
        std::uint32_t refs;  // holders left: consumers on that device, outgoing transfers, the producer
        std::uint32_t device;
        std::uint32_t tensor;
    };
    std::vector<copy_state> copies_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs_;  // scratch (device, unit) / (unit, copy)
    // copies each unit releases when it finishes: released_copies_[released_begin_[u], released_begin_[u + 1])
    std::vector<std::uint32_t> released_begin_, released_copies_;
    // per link, the deliveries waiting for it (FIFO segment of link_queue_ from its begin), or with
    // transfer_order::priority a heap in the same segment of link_heap_ (priority, request order,
    // delivery), link_queue_tail_ its size
    std::vector<std::uint32_t> link_queue_begin_, link_queue_, link_queue_head_, link_queue_tail_;
    std::vector<queued> link_heap_;
    std::vector<double> delivery_priority_;  // per delivery, its units' largest priority
    std::uint32_t transfer_seq_ = 0;
    std::vector<std::uint8_t> link_busy_, device_busy_;
    // per device, the units ready to run (a heap by priority, or FIFO, in its segment of ready_queue_)
    std::vector<std::uint32_t> ready_queue_begin_, ready_queue_size_, ready_queue_head_;
    std::vector<queued> ready_queue_;
    std::vector<event> events_;
    std::vector<std::int64_t> memory_in_use_, peak_memory_;
    std::vector<std::int32_t> group_unit_;
    std::vector<std::size_t> scratch_a_, scratch_b_;
    std::uint32_t event_seq_ = 0, ready_seq_ = 0;
    bool use_priority_ = false;
    bool link_priority_ = false;  // transfer_order::priority with priorities given
    bool sequence_ = false;       // dispatch_order::sequence with priorities given
    // dispatch_order::sequence: per device its units in the global order (the segment of
    // device_sequence_ from ready_queue_begin_, sequence_size_ long), the position of its next one, and
    // which units are ready
    std::vector<std::uint32_t> device_sequence_, sequence_next_, sequence_size_, in_degree_, topological_;
    std::vector<double> effective_priority_;
    std::vector<std::uint8_t> unit_ready_;
    std::vector<queued> order_heap_;
};

/// @brief One simulation without keeping a simulator: builds one and runs it (the cost model is
/// evaluated for every op on every device, so score many decisions with one sim::simulator instead).
template <device::DeviceModel D, cost::CostModel<D> Cost>
simulation_result simulate(const graph::computation_graph& g, const device::cluster<D>& c, const Cost& cost,
                           std::span<const device_id> placement, const simulation_options& options = {}) {
    simulator<D, Cost> s(g, c, cost);
    return s.run(placement, options);
}

// ---- implementation ----

template <device::DeviceModel D, cost::CostModel<D> Cost>
simulator<D, Cost>::simulator(const graph::computation_graph& g, const device::cluster<D>& c, Cost cost)
    : g_(&g),
      c_(&c),
      cost_(std::move(cost)),
      num_ops_(g.num_ops()),
      num_tensors_(g.num_tensors()),
      num_devices_(c.num_devices()) {
    if (num_devices_ == 0) throw error("sim::simulator", "the cluster has no devices", "at least one device");
    if (num_ops_ >= transfer_bit || num_tensors_ >= transfer_bit)
        throw error("sim::simulator", concat("graph of ", num_ops_, " ops and ", num_tensors_, " tensors"),
                    "fewer than 2^31 of each");
    (void)graph::topological_order(g);  // a cyclic graph is an error here, not a hang later
    op_time_.resize(num_ops_ * num_devices_);
    for (std::size_t d = 0; d < num_devices_; ++d)
        for (graph::op_id o = 0; o < num_ops_; ++o) {
            const double t = static_cast<double>(cost_.op_time(g, o, c.device(d)));
            if (!std::isfinite(t) || t < 0)
                throw error("sim::simulator",
                            concat("cost model gives op ", g.describe(o), " on device ", d, " a time of ", t, " s"),
                            "a finite number >= 0");
            op_time_[o * num_devices_ + d] = t;
        }
    tensor_bytes_.resize(num_tensors_);
    producer_.resize(num_tensors_);
    persistent_.assign(num_tensors_, 0);
    is_output_.assign(num_tensors_, 0);
    for (graph::tensor_id t = 0; t < num_tensors_; ++t) {
        const auto& x = g.get_tensor(t);
        tensor_bytes_[t] = x.type.bytes();
        producer_[t] = x.producer;
        persistent_[t] = g.get_op(x.producer).kind == ops::op_kind::weight;
    }
    for (graph::tensor_id t : g.outputs()) is_output_[t] = 1;
    std::vector<std::uint32_t> seen(num_ops_ + num_tensors_, none);
    consumers_begin_.assign(num_tensors_ + 1, 0);
    consumers_.clear();
    for (graph::tensor_id t = 0; t < num_tensors_; ++t) {
        consumers_begin_[t] = static_cast<std::uint32_t>(consumers_.size());
        for (const graph::use& u : g.get_tensor(t).uses)
            if (seen[u.op] != t) {
                seen[u.op] = t;
                consumers_.push_back(u.op);
            }
    }
    consumers_begin_[num_tensors_] = static_cast<std::uint32_t>(consumers_.size());
    in_begin_.assign(num_ops_ + 1, 0);
    in_.clear();
    for (graph::op_id o = 0; o < num_ops_; ++o) {
        in_begin_[o] = static_cast<std::uint32_t>(in_.size());
        for (graph::tensor_id t : g.get_op(o).inputs)
            if (seen[num_ops_ + t] != o) {
                seen[num_ops_ + t] = o;
                in_.push_back(t);
            }
    }
    in_begin_[num_ops_] = static_cast<std::uint32_t>(in_.size());
    out_begin_.assign(num_ops_ + 1, 0);
    out_.clear();
    for (graph::op_id o = 0; o < num_ops_; ++o) {
        out_begin_[o] = static_cast<std::uint32_t>(out_.size());
        for (graph::tensor_id t : g.get_op(o).outputs) out_.push_back(t);
    }
    out_begin_[num_ops_] = static_cast<std::uint32_t>(out_.size());
    colocation_group_.assign(num_ops_, -1);
    std::unordered_map<std::int32_t, std::int32_t> dense;
    for (graph::op_id o = 0; o < num_ops_; ++o) {
        const auto grp = g.get_op(o).colocation;
        if (grp < 0) continue;
        colocation_group_[o] = dense.emplace(grp, static_cast<std::int32_t>(dense.size())).first->second;
    }
    num_colocation_groups_ = dense.size();
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void simulator<D, Cost>::check_placement(std::span<const device_id> placement) const {
    if (placement.size() != num_ops_)
        throw error("sim::simulator", concat("placement has ", placement.size(), " entries"),
                    concat("one per op (", num_ops_, ")"));
    std::vector<graph::op_id> first(num_colocation_groups_, graph::no_op);
    for (graph::op_id o = 0; o < num_ops_; ++o) {
        if (placement[o] >= num_devices_)
            throw decision_refused("sim::simulator",
                                   concat("placement puts op ", g_->describe(o), " on device ", placement[o]),
                                   concat("a device of the cluster, 0..", num_devices_ - 1));
        if (colocation_group_[o] < 0) continue;
        auto& f = first[static_cast<std::size_t>(colocation_group_[o])];
        if (f == graph::no_op) f = o;
        else if (placement[f] != placement[o])
            throw decision_refused(
                "sim::simulator",
                concat("placement breaks colocation group ", g_->get_op(o).colocation, ": op ", g_->describe(f),
                       " is on device ", placement[f], " but op ", g_->describe(o), " is on device ", placement[o]),
                "every op of a colocation group on one device");
    }
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void simulator<D, Cost>::build_units(std::span<const device_id> placement, const simulation_options& options) {
    unit_of_.resize(num_ops_);
    const bool fused = !options.fusion.empty();
    if (fused && options.fusion.size() != num_ops_)
        throw error("sim::simulator", concat("fusion groups have ", options.fusion.size(), " entries"),
                    concat("one per op (", num_ops_, ") or none"));
    num_units_ = 0;
    if (!fused) {
        for (graph::op_id o = 0; o < num_ops_; ++o) unit_of_[o] = o;
        num_units_ = num_ops_;
    } else {
        group_unit_.assign(num_ops_, -1);
        for (graph::op_id o = 0; o < num_ops_; ++o) {
            const std::int32_t grp = options.fusion[o];
            if (grp < 0) {
                unit_of_[o] = static_cast<std::uint32_t>(num_units_++);
                continue;
            }
            if (static_cast<std::size_t>(grp) >= num_ops_)
                throw decision_refused("sim::simulator",
                                       concat("fusion group id ", grp, " of op ", g_->describe(o), " is out of range"),
                                       concat("-1 or 0..", num_ops_ - 1));
            if (group_unit_[grp] < 0) group_unit_[grp] = static_cast<std::int32_t>(num_units_++);
            unit_of_[o] = static_cast<std::uint32_t>(group_unit_[grp]);
        }
    }
    // members of each unit (op id order)
    members_begin_.assign(num_units_ + 1, 0);
    for (graph::op_id o = 0; o < num_ops_; ++o) ++members_begin_[unit_of_[o] + 1];
    for (std::size_t u = 0; u < num_units_; ++u) members_begin_[u + 1] += members_begin_[u];
    members_.resize(num_ops_);
    pending_.assign(num_units_, 0);  // used as fill cursor first
    for (graph::op_id o = 0; o < num_ops_; ++o) members_[members_begin_[unit_of_[o]] + pending_[unit_of_[o]]++] = o;
    unit_device_.resize(num_units_);
    unit_duration_.resize(num_units_);
    unit_priority_.assign(num_units_, -std::numeric_limits<double>::infinity());
    use_priority_ = !options.priorities.empty();
    link_priority_ = use_priority_ && options.transfers == transfer_order::priority;
    sequence_ = use_priority_ && options.dispatch == dispatch_order::sequence;
    if (use_priority_ && options.priorities.size() != num_ops_)
        throw error("sim::simulator", concat("priorities have ", options.priorities.size(), " entries"),
                    concat("one per op (", num_ops_, ") or none"));
    for (std::size_t u = 0; u < num_units_; ++u) {
        const graph::op_id first = members_[members_begin_[u]];
        unit_device_[u] = placement[first];
        const std::span<const graph::op_id> ms(members_.data() + members_begin_[u],
                                               members_begin_[u + 1] - members_begin_[u]);
        for (graph::op_id o : ms) {
            if (placement[o] != unit_device_[u])
                throw decision_refused(
                    "sim::simulator",
                    concat("fusion group ", options.fusion[o], " spans two devices: op ", g_->describe(first),
                           " on device ", unit_device_[u], " and op ", g_->describe(o), " on device ", placement[o]),
                    "one device per fusion group (a fused kernel runs on one device)");
            if (use_priority_) {
                const double p = options.priorities[o];
                if (!std::isfinite(p))
                    throw decision_refused("sim::simulator", concat("priority of op ", g_->describe(o), " is ", p),
                                           "a finite number");
                unit_priority_[u] = std::max(unit_priority_[u], p);
            }
        }
        if (ms.size() == 1) {
            unit_duration_[u] = op_time_[std::size_t{first} * num_devices_ + unit_device_[u]];
        } else {
            const double t = static_cast<double>(cost_.group_time(*g_, ms, c_->device(unit_device_[u])));
            if (!std::isfinite(t) || t < 0)
                throw error(
                    "sim::simulator",
                    concat("cost model gives the fusion group of op ", g_->describe(first), " a time of ", t, " s"),
                    "a finite number >= 0");
            unit_duration_[u] = t;
        }
    }
    if (fused && num_units_ < num_ops_) check_fusion_legal();
}

template <device::DeviceModel D, cost::CostModel<D> Cost> void simulator<D, Cost>::check_fusion_legal() {
    // A group is legal only if no path leaves it and comes back: such a path would make the fused
    // kernel wait for its own output. Groups that are each convex can still form a cycle together;
    // run() detects that as a deadlock.
    if (!reachability_) reachability_ = std::make_unique<graph::reachability<graph::computation_graph>>(*g_);
    for (std::size_t u = 0; u < num_units_; ++u) {
        if (members_begin_[u + 1] - members_begin_[u] < 2) continue;
        scratch_a_.clear();
        scratch_b_.clear();
        for (std::uint32_t i = members_begin_[u]; i < members_begin_[u + 1]; ++i) {
            const graph::op_id o = members_[i];
            scratch_b_.push_back(o);
            for (std::uint32_t m = out_begin_[o]; m < out_begin_[o + 1]; ++m)
                for (std::uint32_t j = consumers_begin_[out_[m]]; j < consumers_begin_[out_[m] + 1]; ++j)
                    if (unit_of_[consumers_[j]] != u) scratch_a_.push_back(consumers_[j]);
        }
        if (reachability_->reaches(scratch_a_, scratch_b_)) {
            graph::op_id culprit = graph::no_op;
            for (std::size_t s : scratch_a_)
                if (reachability_->reaches(std::span<const std::size_t>(&s, 1), scratch_b_)) {
                    culprit = static_cast<graph::op_id>(s);
                    break;
                }
            throw decision_refused(
                "sim::simulator",
                concat("fusion group of op ", g_->describe(members_[members_begin_[u]]), " is illegal: op ",
                       g_->describe(culprit), " outside the group depends on it and feeds it (a cycle)"),
                "convex fusion groups");
        }
    }
    // Then what a group may hold (sim/fusion_legality.hpp): the same rule as every fuser's.
    if (!fusion_check_) fusion_check_ = std::make_unique<fusion_check>(*g_);
    for (std::size_t u = 0; u < num_units_; ++u) {
        const std::span<const graph::op_id> ms(members_.data() + members_begin_[u],
                                               members_begin_[u + 1] - members_begin_[u]);
        if (const auto v = fusion_check_->violation(ms))
            throw decision_refused(
                "sim::simulator",
                concat("fusion group of op ", g_->describe(ms[0]), " is not one kernel: ", fusion_check_->why(*v)),
                fusion_rule_text);
    }
}

template <device::DeviceModel D, cost::CostModel<D> Cost> void simulator<D, Cost>::build_deliveries() {
    const std::size_t nl = c_->num_links();
    pending_.assign(num_units_, 0);
    stamp_.assign(num_units_, none);
    deliveries_begin_.resize(num_tensors_ + 1);
    deliveries_.clear();
    delivery_units_.clear();
    copies_.resize(num_tensors_);
    link_queue_begin_.assign(nl + 1, 0);
    std::vector<std::pair<std::uint32_t, std::uint32_t>>& released_pairs = pairs_;
    released_pairs.clear();
    scratch_a_.clear();  // (device << 32 | unit) of one tensor's consumers
    for (graph::tensor_id t = 0; t < num_tensors_; ++t) {
        deliveries_begin_[t] = static_cast<std::uint32_t>(deliveries_.size());
        const graph::op_id p = producer_[t];
        const std::uint32_t pu = unit_of_[p], pd = unit_device_[pu];
        scratch_a_.clear();
        for (std::uint32_t j = consumers_begin_[t]; j < consumers_begin_[t + 1]; ++j) {
            const std::uint32_t u = unit_of_[consumers_[j]];
            if (u == pu || stamp_[u] == t) continue;
            stamp_[u] = t;
            scratch_a_.push_back((std::size_t{unit_device_[u]} << 32) | u);
        }
        if (scratch_a_.size() > 1) std::sort(scratch_a_.begin(), scratch_a_.end());
        const bool fused_internal =
            scratch_a_.empty() && !is_output_[t] && members_begin_[pu + 1] - members_begin_[pu] > 1;
        copies_[t] = {persistent_[t] || fused_internal ? 0 : tensor_bytes_[t], 1u + is_output_[t], pd, t};
        for (std::size_t i = 0; i < scratch_a_.size();) {
            const auto dev = static_cast<std::uint32_t>(scratch_a_[i] >> 32);
            const auto first_unit = static_cast<std::uint32_t>(delivery_units_.size());
            std::uint32_t copy = t, l = device::no_link;
            if (dev != pd) {
                l = c_->route(pd, dev);
                if (l == device::no_link)
                    throw decision_refused("sim::simulator",
                                           concat("tensor ", t, " of op ", g_->describe(p), " must go from device ", pd,
                                                  " to device ", dev, ", but the cluster has no link between them"),
                                           "a placement whose transfers the cluster's links can carry");
                copy = static_cast<std::uint32_t>(copies_.size());
                copies_.push_back({tensor_bytes_[t], 0, dev, t});
                ++copies_[t].refs;  // the transfer reads the source buffer
                ++link_queue_begin_[l + 1];
            }
            deliveries_.push_back({dev, copy, l, first_unit});
            for (; i < scratch_a_.size() && (scratch_a_[i] >> 32) == dev; ++i) {
                const auto u = static_cast<std::uint32_t>(scratch_a_[i] & 0xffffffffu);
                delivery_units_.push_back(u);
                ++pending_[u];
                ++copies_[copy].refs;
                released_pairs.emplace_back(u, copy);
            }
        }
    }
    deliveries_begin_[num_tensors_] = static_cast<std::uint32_t>(deliveries_.size());
    deliveries_.push_back({0, 0, device::no_link, static_cast<std::uint32_t>(delivery_units_.size())});  // sentinel
    // inputs each unit releases when it finishes (counting sort by unit)
    released_begin_.assign(num_units_ + 1, 0);
    for (const auto& [u, c] : released_pairs) ++released_begin_[u + 1];
    for (std::size_t u = 0; u < num_units_; ++u) released_begin_[u + 1] += released_begin_[u];
    released_copies_.resize(released_pairs.size());
    stamp_.assign(num_units_, 0);
    for (const auto& [u, c] : released_pairs) released_copies_[released_begin_[u] + stamp_[u]++] = c;
    units_.resize(num_units_);
    for (std::size_t u = 0; u < num_units_; ++u)
        units_[u] = {unit_duration_[u], unit_priority_[u], unit_device_[u],
                     pending_[u],       members_begin_[u], members_begin_[u + 1]};
    // per-link FIFO segments
    for (std::size_t l = 0; l < nl; ++l) link_queue_begin_[l + 1] += link_queue_begin_[l];
    link_queue_.resize(link_queue_begin_[nl]);
    if (link_priority_) {
        link_heap_.resize(link_queue_begin_[nl]);
        delivery_priority_.assign(deliveries_.size(), 0.0);
        for (std::size_t k = 0; k + 1 < deliveries_.size(); ++k) {
            if (deliveries_[k].link == device::no_link) continue;
            double p = -std::numeric_limits<double>::infinity();
            for (std::uint32_t i = deliveries_[k].first_unit; i < deliveries_[k + 1].first_unit; ++i)
                p = std::max(p, unit_priority_[delivery_units_[i]]);
            delivery_priority_[k] = p;
        }
    }
    link_queue_head_.assign(nl, 0);
    link_queue_tail_.assign(nl, 0);
    link_busy_.assign(nl, 0);
}

template <device::DeviceModel D, cost::CostModel<D> Cost> void simulator<D, Cost>::make_ready(std::uint32_t u) {
    const unit_state& x = units_[u];
    const std::uint32_t d = x.device;
    if (sequence_) {
        unit_ready_[u] = 1;
        return;
    }
    queued* base = ready_queue_.data() + ready_queue_begin_[d] + ready_queue_head_[d];
    base[ready_queue_size_[d]] = {x.priority, ready_seq_++, u};
    ++ready_queue_size_[d];
    if (use_priority_) std::push_heap(base, base + ready_queue_size_[d], lower_priority);
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void simulator<D, Cost>::try_start(std::uint32_t d, double now, simulation_result& out, bool trace) {
    if (device_busy_[d]) return;
    std::uint32_t u;
    if (sequence_) {  // the device's next unit in the global order, once it is ready
        const std::uint32_t at = ready_queue_begin_[d] + sequence_next_[d];
        if (sequence_next_[d] == sequence_size_[d] || !unit_ready_[device_sequence_[at]]) return;
        u = device_sequence_[at];
        ++sequence_next_[d];
    } else {
        if (ready_queue_size_[d] == 0) return;
        queued* base = ready_queue_.data() + ready_queue_begin_[d] + ready_queue_head_[d];
        if (use_priority_) {
            std::pop_heap(base, base + ready_queue_size_[d], lower_priority);
            u = base[ready_queue_size_[d] - 1].unit;
        } else {
            u = base[0].unit;
            ++ready_queue_head_[d];  // FIFO: each unit enters once, so the segment never wraps
        }
        --ready_queue_size_[d];
    }
    device_busy_[d] = 1;
    const unit_state& x = units_[u];
    const double end = now + x.duration;
    out.busy_time[d] += x.duration;
    for (std::uint32_t i = x.first; i < x.last; ++i) {
        const graph::op_id o = members_[i];
        for (std::uint32_t k = out_begin_[o]; k < out_begin_[o + 1]; ++k) allocate(out_[k]);
        if (trace) out.ops.push_back({o, d, now, end});
    }
    push_event(end, u);
}

template <device::DeviceModel D, cost::CostModel<D> Cost> void simulator<D, Cost>::build_sequences() {
    // a unit's successors: the units its outputs are delivered to (units_[v].pending counts them)
    auto for_each_successor = [&](std::uint32_t u, auto&& f) {
        for (std::uint32_t i = units_[u].first; i < units_[u].last; ++i)
            for (std::uint32_t m = out_begin_[members_[i]]; m < out_begin_[members_[i] + 1]; ++m)
                for (std::uint32_t k = deliveries_begin_[out_[m]]; k < deliveries_begin_[out_[m] + 1]; ++k)
                    for (std::uint32_t j = deliveries_[k].first_unit; j < deliveries_[k + 1].first_unit; ++j)
                        f(delivery_units_[j]);
    };
    // 1. any topological order (Kahn, FIFO), then each unit's effective priority: the largest of its
    // own and its successors' effective ones, so that an op's priority lifts its producers with it and
    // the effective priorities never rise along an edge
    in_degree_.resize(num_units_);
    for (std::size_t u = 0; u < num_units_; ++u) in_degree_[u] = units_[u].pending;
    topological_.clear();
    for (std::uint32_t u = 0; u < num_units_; ++u)
        if (in_degree_[u] == 0) topological_.push_back(u);
    for (std::size_t i = 0; i < topological_.size(); ++i)
        for_each_successor(topological_[i], [&](std::uint32_t v) {
            if (--in_degree_[v] == 0) topological_.push_back(v);
        });
    effective_priority_.resize(num_units_);
    for (std::uint32_t u = 0; u < num_units_; ++u) effective_priority_[u] = units_[u].priority;
    for (std::size_t i = topological_.size(); i-- > 0;) {
        const std::uint32_t u = topological_[i];
        for_each_successor(u, [&](std::uint32_t v) {
            effective_priority_[u] = std::max(effective_priority_[u], effective_priority_[v]);
        });
    }
    // 2. Kahn again, the largest effective priority first (ties: the smaller unit, whose first op has
    // the smaller id); each device's units in that order
    for (std::size_t u = 0; u < num_units_; ++u) in_degree_[u] = units_[u].pending;
    order_heap_.clear();
    for (std::uint32_t u = 0; u < num_units_; ++u)
        if (in_degree_[u] == 0) order_heap_.push_back({effective_priority_[u], u, u});
    std::make_heap(order_heap_.begin(), order_heap_.end(), lower_priority);
    device_sequence_.resize(num_units_);
    sequence_next_.assign(num_devices_, 0);  // fill cursors first, then each device's next position
    while (!order_heap_.empty()) {
        std::pop_heap(order_heap_.begin(), order_heap_.end(), lower_priority);
        const std::uint32_t u = order_heap_.back().unit;
        order_heap_.pop_back();
        const std::uint32_t d = units_[u].device;
        device_sequence_[ready_queue_begin_[d] + sequence_next_[d]++] = u;
        for_each_successor(u, [&](std::uint32_t v) {
            if (--in_degree_[v] != 0) return;
            order_heap_.push_back({effective_priority_[v], v, v});
            std::push_heap(order_heap_.begin(), order_heap_.end(), lower_priority);
        });
    }
    // units left out wait for each other (fusion groups that form a cycle): run() reports them
    sequence_size_ = sequence_next_;
    sequence_next_.assign(num_devices_, 0);
    unit_ready_.assign(num_units_, 0);
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void simulator<D, Cost>::request_transfer(std::uint32_t k, double now, simulation_result& out, bool trace) {
    const std::uint32_t l = deliveries_[k].link;
    if (!link_busy_[l]) {
        start_transfer(k, now, out, trace);
    } else if (link_priority_) {
        queued* base = link_heap_.data() + link_queue_begin_[l];
        base[link_queue_tail_[l]++] = {delivery_priority_[k], transfer_seq_++, k};
        std::push_heap(base, base + link_queue_tail_[l], lower_priority);
    } else {
        link_queue_[link_queue_begin_[l] + link_queue_tail_[l]++] = k;
    }
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
std::uint32_t simulator<D, Cost>::next_transfer(std::uint32_t l) {
    if (link_priority_) {
        if (link_queue_tail_[l] == 0) return none;
        queued* base = link_heap_.data() + link_queue_begin_[l];
        std::pop_heap(base, base + link_queue_tail_[l], lower_priority);
        return base[--link_queue_tail_[l]].unit;
    }
    if (link_queue_head_[l] == link_queue_tail_[l]) return none;
    return link_queue_[link_queue_begin_[l] + link_queue_head_[l]++];
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void simulator<D, Cost>::start_transfer(std::uint32_t k, double now, simulation_result& out, bool trace) {
    const delivery& x = deliveries_[k];
    const std::uint32_t l = x.link, t = copies_[x.copy].tensor;
    link_busy_[l] = 1;
    allocate(x.copy);
    const double end = now + c_->get_link(l).transfer_time(static_cast<double>(tensor_bytes_[t]));
    out.bytes_moved += tensor_bytes_[t];
    ++out.num_transfers;
    if (trace) out.transfers.push_back({t, copies_[t].device, x.device, l, now, end, tensor_bytes_[t]});
    push_event(end, transfer_bit | k);
}

template <device::DeviceModel D, cost::CostModel<D> Cost>
void simulator<D, Cost>::run(std::span<const device_id> placement, const simulation_options& options,
                             simulation_result& out) {
    check_placement(placement);
    build_units(placement, options);
    build_deliveries();
    const bool trace = options.record_trace;
    out.step_time = 0;
    out.busy_time.assign(num_devices_, 0.0);
    out.out_of_memory.assign(num_devices_, 0);
    out.oom = false;
    out.bytes_moved = 0;
    out.num_transfers = 0;
    out.ops.clear();
    out.transfers.clear();
    if (trace) {
        out.ops.reserve(num_ops_);
        out.transfers.reserve(copies_.size() - num_tensors_);
    }
    memory_in_use_.assign(num_devices_, 0);
    for (graph::tensor_id t = 0; t < num_tensors_; ++t)
        if (persistent_[t]) memory_in_use_[copies_[t].device] += tensor_bytes_[t];
    peak_memory_ = memory_in_use_;
    // per-device ready queues: one segment per device, sized by its number of units
    ready_queue_begin_.assign(num_devices_ + 1, 0);
    for (std::size_t u = 0; u < num_units_; ++u) ++ready_queue_begin_[unit_device_[u] + 1];
    for (std::size_t d = 0; d < num_devices_; ++d) ready_queue_begin_[d + 1] += ready_queue_begin_[d];
    ready_queue_.resize(num_units_);
    ready_queue_size_.assign(num_devices_, 0);
    ready_queue_head_.assign(num_devices_, 0);
    device_busy_.assign(num_devices_, 0);
    events_.clear();
    events_.reserve(num_units_ + deliveries_.size() + 1);
    event_seq_ = ready_seq_ = transfer_seq_ = 0;
    if (sequence_) build_sequences();

    for (std::uint32_t u = 0; u < num_units_; ++u)
        if (units_[u].pending == 0) make_ready(u);
    for (std::uint32_t d = 0; d < num_devices_; ++d) try_start(d, 0.0, out, trace);

    std::size_t done = 0;
    double now = 0;
    while (!events_.empty()) {
        std::pop_heap(events_.begin(), events_.end(), later);
        const event e = events_.back();
        events_.pop_back();
        now = e.time;
        if (e.code & transfer_bit) {
            const std::uint32_t k = e.code & ~transfer_bit, l = deliveries_[k].link, dst = deliveries_[k].device;
            link_busy_[l] = 0;
            if (const std::uint32_t next = next_transfer(l); next != none) start_transfer(next, now, out, trace);
            release(copies_[deliveries_[k].copy].tensor);
            for (std::uint32_t i = deliveries_[k].first_unit; i < deliveries_[k + 1].first_unit; ++i)
                if (--units_[delivery_units_[i]].pending == 0) make_ready(delivery_units_[i]);
            try_start(dst, now, out, trace);
            continue;
        }
        const std::uint32_t u = e.code, d = units_[u].device;
        ++done;
        device_busy_[d] = 0;
        for (std::uint32_t i = released_begin_[u]; i < released_begin_[u + 1]; ++i) release(released_copies_[i]);
        for (std::uint32_t i = units_[u].first; i < units_[u].last; ++i)
            for (std::uint32_t m = out_begin_[members_[i]]; m < out_begin_[members_[i] + 1]; ++m) {
                const graph::tensor_id t = out_[m];
                release(t);  // the producer's own hold
                for (std::uint32_t k = deliveries_begin_[t]; k < deliveries_begin_[t + 1]; ++k) {
                    if (deliveries_[k].device == d) {
                        for (std::uint32_t j = deliveries_[k].first_unit; j < deliveries_[k + 1].first_unit; ++j)
                            if (--units_[delivery_units_[j]].pending == 0) make_ready(delivery_units_[j]);
                    } else {
                        request_transfer(k, now, out, trace);
                    }
                }
            }
        try_start(d, now, out, trace);
    }
    if (done != num_units_) {
        for (std::uint32_t u = 0; u < num_units_; ++u)
            if (units_[u].pending != 0)
                throw decision_refused(
                    "sim::simulator",
                    concat("fusion groups form a cycle once contracted: the group of op ",
                           g_->describe(members_[members_begin_[u]]), " waits for its own output through other groups"),
                    "fusion groups whose contraction is acyclic");
        GOOPT_ASSERT(done == num_units_);  // every unit still pending was reported above
    }
    out.step_time = now;
    out.peak_memory = peak_memory_;
    for (std::size_t d = 0; d < num_devices_; ++d)
        if (static_cast<double>(peak_memory_[d]) > static_cast<double>(c_->device(d).mem_capacity())) {
            out.out_of_memory[d] = 1;
            out.oom = true;
        }
}

}  // namespace goopt::sim
