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
#include <span>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::baselines {

/// How m-ETF and m-SCT estimate the memory a device holds while they place ops.
enum class baechi_memory_model : std::uint8_t {
    /// Baechi's own: every output held for the whole step. Safe, but on a training graph whose
    /// activations do not all fit at once (GNMT: 101 GB of outputs against 4 x 16 GB) every op
    /// soon fits nowhere, and the fallback to the roomiest device ignores memory.
    whole_step,
    /// The lifetimes of the schedule being planned, as the simulator counts them: weights from the
    /// start; an output from its op's start until its last consumer's planned finish; a copy of a
    /// tensor on each other device that reads it, for as long. Graph outputs stay to the end.
    planned,
};

/// Knobs shared by the three placers.
struct baechi_config {
    /// Share of each device's capacity the placers may fill with their memory estimate. Baechi
    /// reserves headroom the same way (its estimate leaves out allocator fragmentation).
    double memory_fraction = 1.0;
    /// The estimate of m-ETF and m-SCT. m-TOPO plans no start times and always uses whole_step.
    baechi_memory_model memory = baechi_memory_model::planned;
    /// The simulator checks each placement; where a device overflows (the run departs from the
    /// plan, or the estimate misses), the placer plans again with that device's budget shrunk by
    /// the overflow's ratio, this many times at most, and returns the best plan (within memory
    /// first, then the faster step).
    std::size_t verify_rounds = 3;
};

/// @brief Baechi's memory estimate and the units it places: an op's memory is the bytes of its
/// outputs (a weight's are persistent), all counted as held for the whole step (Baechi's
/// conservative training-graph assumption: activations live until the backward pass). A unit is a
/// colocation group, or an op outside every group; source ops (inputs, weights) are placed with the
/// first op that reads them, as the other baselines do, and count against that device then.
/// With baechi_memory_model::planned, a unit's bytes are its weights only (persistent), and the
/// other outputs and the copies of tensors read on other devices live from the op's placement
/// until the planned finish of the tensor's last consumer (advance() moves the planning clock).
class baechi_memory {
public:
    template <device::DeviceModel D, cost::CostModel<D> Cost>
    baechi_memory(const sim::simulator<D, Cost>& s, const baechi_config& c,
                  baechi_memory_model model = baechi_memory_model::whole_step, std::span<const double> scale = {})
        : g_(&s.graph()), planned_(model == baechi_memory_model::planned) {
        const auto& g = s.graph();
        const std::size_t n = g.num_ops(), nd = s.cluster().num_devices();
        if (!(c.memory_fraction > 0)) throw error("baechi", concat("memory_fraction is ", c.memory_fraction), "> 0");
        tensor_bytes_.resize(g.num_tensors());
        weight_.resize(g.num_tensors());
        for (graph::tensor_id t = 0; t < g.num_tensors(); ++t) {
            tensor_bytes_[t] = static_cast<double>(g.type_of(t).bytes());
            weight_[t] = g.get_op(g.producer(t)).kind == ops::op_kind::weight;
        }
        source_.resize(n);
        for (graph::op_id o = 0; o < n; ++o) source_[o] = g.get_op(o).spec().has(ops::source);
        unit_.resize(n);
        std::unordered_map<std::int32_t, std::uint32_t> group;
        for (graph::op_id o = 0; o < n; ++o) {
            const auto grp = g.get_op(o).colocation;
            if (grp < 0) unit_[o] = static_cast<std::uint32_t>(bytes_.size());
            else unit_[o] = group.try_emplace(grp, static_cast<std::uint32_t>(bytes_.size())).first->second;
            if (unit_[o] == bytes_.size()) bytes_.push_back(0);
            double b = 0;
            for (graph::tensor_id t : g.get_op(o).outputs) b += static_cast<double>(g.type_of(t).bytes());
            bytes_[unit_[o]] += !planned_ || g.get_op(o).kind == ops::op_kind::weight ? b : 0;
            total_ += b;
        }
        index_inputs();
        unit_ops_.assign(bytes_.size(), 0);
        for (graph::op_id o = 0; o < n; ++o) ++unit_ops_[unit_[o]];
        device_.assign(bytes_.size(), unplaced);
        for (std::size_t d = 0; d < nd; ++d)
            capacity_.push_back(c.memory_fraction * (scale.empty() ? 1.0 : scale[d]) *
                                static_cast<double>(s.cluster().device(d).mem_capacity()));
        used_.assign(nd, 0);
        live_.assign(nd, 0);
        if (!planned_) return;
        const std::size_t nt = g.num_tensors();
        pending_.assign(nt, 0);
        last_use_.assign(nt, 0);
        holders_.assign(nt, {});
        keep_.assign(nt, 0);
        for (graph::tensor_id t : g.outputs()) keep_[t] = 1;
        for (graph::tensor_id t = 0; t < nt; ++t) for_inputs_once(t, [&](graph::op_id) { ++pending_[t]; });
        reserve_.assign(bytes_.size(), 0);
        members_left_.assign(bytes_.size(), 0);
        reserved_.assign(nd, 0);
        for (graph::op_id o = 0; o < n; ++o) {
            if (is_source(o)) continue;
            double working = 0;  // what o holds while it runs: its inputs and its outputs
            for_distinct_inputs(o, [&](graph::tensor_id t) { working += bytes_of(t); });
            for (graph::tensor_id t : g.get_op(o).outputs) working += bytes_of(t);
            reserve_[unit_[o]] = std::max(reserve_[unit_[o]], working);
            ++members_left_[unit_[o]];
        }
    }

    static constexpr sim::device_id unplaced = ~sim::device_id{0};
    bool is_source(graph::op_id o) const { return source_[o] != 0; }
    /// The device of o's unit, or unplaced.
    sim::device_id device_of(graph::op_id o) const { return device_[unit_[o]]; }
    /// Bytes that placing `o` now would add to any device: its unit and its unplaced source inputs'
    /// units (with the planned model, what placing it on a given device adds on top: see need(o, d)).
    double need(graph::op_id o) const {
        double b = device_of(o) == unplaced ? unit_need(unit_[o]) : 0;
        for_new_sources(o, [&](std::uint32_t u) { b += unit_need(u); });
        return b;
    }
    /// Bytes that placing `o` on `d` now would add there, given `shared` = need(o) (the same on
    /// every device: a caller trying every device computes it once).
    double need(graph::op_id o, sim::device_id d, double shared) const {
        return shared + (planned_ ? transient(o, d) : 0);
    }
    double need(graph::op_id o, sim::device_id d) const { return need(o, d, need(o)); }
    /// A bound on need(o, d) on every device, now and later: need(o) only falls as units are placed,
    /// and the transient part is at most o's outputs and all its inputs.
    double need_bound(graph::op_id o) const { return need(o) + own_transient_[o] + input_bytes_[o]; }
    /// Whether o is the only op of its unit (no other placement can fix its device).
    bool alone(graph::op_id o) const { return unit_ops_[unit_[o]] == 1; }
    bool fits(graph::op_id o, sim::device_id d) const { return fits_bytes(need(o, d), d); }
    /// Whether `bytes` more fit on d.
    bool fits_bytes(double bytes, sim::device_id d) const { return in_use(d) + bytes <= capacity_[d]; }
    /// The device with the most room left (the fallback when `o` fits nowhere).
    sim::device_id roomiest() const {
        sim::device_id best = 0;
        for (sim::device_id d = 1; d < used_.size(); ++d)
            if (capacity_[d] - in_use(d) > capacity_[best] - in_use(best)) best = d;
        return best;
    }
    /// Puts o's unit and its unplaced source inputs' units on d; with the planned model, o's outputs
    /// and its inputs' copies on d live until their last consumer's `finish`.
    void place(graph::op_id o, sim::device_id d, double finish = 0) {
        if (planned_) hold(o, d, finish);
        for_new_sources(o, [&](std::uint32_t u) { take(u, d); });
        if (device_of(o) == unplaced) take(unit_[o], d);
        if (planned_ && --members_left_[unit_[o]] == 0) reserved_[d] -= reserve_[unit_[o]];
    }
    /// Puts source op `o`'s unit on `d` before any op is placed (a source otherwise goes with the first
    /// op that reads it); its bytes count there from the start, as a weight's do. No-op where the unit
    /// is placed already.
    void pin(graph::op_id o, sim::device_id d) {
        if (device_of(o) == unplaced) take(unit_[o], d);
    }
    /// Pins every source op to its device in `pinned` (empty: none; else one device per op, an
    /// anchor placement; a device past the cluster's leaves that source to its first reader). A
    /// source that no op reads (an unused input) has no reader to go with: unless pinned, it goes to
    /// device 0 now, so that the estimate counts it while the ops are placed, not after.
    /// @throws goopt::error, naming `who`, when `pinned` has another length.
    void pin_sources(std::span<const sim::device_id> pinned, std::string_view who) {
        const std::size_t n = source_.size();
        if (!pinned.empty() && pinned.size() != n)
            throw error(who, concat(pinned.size(), " pinned devices"), concat("one per op (", n, ") or none"));
        for (graph::op_id o = 0; o < n; ++o)
            if (is_source(o) && !pinned.empty() && pinned[o] < capacity_.size()) pin(o, pinned[o]);
        for (graph::op_id o = 0; o < n; ++o)
            if (is_source(o) && g_->successors(o).empty()) pin(o, 0);
    }
    /// Moves the planning clock to `now`: tensors whose last consumer finishes by then are freed.
    void advance(double now) {
        while (!frees_.empty() && frees_.top().time <= now) {
            live_[frees_.top().device] -= frees_.top().bytes;
            frees_.pop();
        }
    }
    /// The bytes the estimate holds on `d` now.
    double in_use(sim::device_id d) const { return used_[d] + (planned_ ? live_[d] + reserved_[d] : 0); }
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
    double bytes_of(graph::tensor_id t) const { return tensor_bytes_[t]; }
    bool is_weight(graph::tensor_id t) const { return weight_[t] != 0; }
    bool holds(graph::tensor_id t, sim::device_id d) const {
        return std::find(holders_[t].begin(), holders_[t].end(), d) != holders_[t].end();
    }
    /// Calls f(consumer) once per distinct op reading t.
    template <class F> void for_inputs_once(graph::tensor_id t, F&& f) const {
        const auto& uses = g_->get_tensor(t).uses;
        for (std::size_t i = 0; i < uses.size(); ++i) {
            bool seen = false;
            for (std::size_t j = 0; j < i && !seen; ++j) seen = uses[j].op == uses[i].op;
            if (!seen) f(uses[i].op);
        }
    }
    /// Calls f(t) once per distinct input tensor of o, in the order of first use.
    template <class F> void for_distinct_inputs(graph::op_id o, F&& f) const {
        for (std::uint32_t i = distinct_at_[o]; i < distinct_at_[o + 1]; ++i) f(distinct_[i]);
    }
    /// The tables of for_distinct_inputs and for_new_sources, and each op's own transient bytes (its
    /// non-weight outputs): placers look at an op many times, each time these would cost O(inputs^2).
    void index_inputs() {
        const std::size_t n = g_->num_ops();
        distinct_at_.assign(n + 1, 0);
        sources_at_.assign(n + 1, 0);
        own_transient_.assign(n, 0);
        input_bytes_.assign(n, 0);
        for (graph::op_id o = 0; o < n; ++o) {
            const auto& in = g_->get_op(o).inputs;
            for (std::size_t i = 0; i < in.size(); ++i)
                if (std::find(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(i), in[i]) ==
                    in.begin() + static_cast<std::ptrdiff_t>(i))
                    distinct_.push_back(in[i]);
            distinct_at_[o + 1] = static_cast<std::uint32_t>(distinct_.size());
            for (std::uint32_t i = distinct_at_[o]; i < distinct_at_[o + 1]; ++i)
                input_bytes_[o] += bytes_of(distinct_[i]);
            // a source read twice (or two sources of one group) counts once; the op's own unit never
            const auto own = unit_[o];
            const auto first = source_units_.size();
            for (graph::tensor_id t : in) {
                const graph::op_id q = g_->producer(t);
                const auto u = unit_[q];
                if (!is_source(q) || u == own) continue;
                if (std::find(source_units_.begin() + static_cast<std::ptrdiff_t>(first), source_units_.end(), u) ==
                    source_units_.end())
                    source_units_.push_back(u);
            }
            sources_at_[o + 1] = static_cast<std::uint32_t>(source_units_.size());
            double b = 0;
            for (graph::tensor_id t : g_->get_op(o).outputs)
                if (!is_weight(t)) b += bytes_of(t);
            own_transient_[o] = b;
        }
    }
    /// Planned model: the non-persistent bytes placing o on d adds there (its outputs, the sources it
    /// brings along, copies of inputs that live on other devices).
    double transient(graph::op_id o, sim::device_id d) const {
        double b = own_transient_[o];
        for_distinct_inputs(o, [&](graph::tensor_id t) {
            const sim::device_id home = device_of(g_->producer(t));
            if (home == unplaced ? !is_weight(t) : home != d && !holds(t, d)) b += bytes_of(t);
        });
        return b;
    }
    void hold(graph::op_id o, sim::device_id d, double finish) {
        for (graph::tensor_id t : g_->get_op(o).outputs)
            if (!is_weight(t) && !holds(t, d)) {
                live_[d] += bytes_of(t);
                holders_[t].push_back(d);
                if (pending_[t] == 0 && !keep_[t]) release(t, finish);
            }
        for_distinct_inputs(o, [&](graph::tensor_id t) {
            const sim::device_id home = device_of(g_->producer(t));
            if ((home == unplaced ? !is_weight(t) : home != d) && !holds(t, d)) {
                live_[d] += bytes_of(t);
                holders_[t].push_back(d);
            }
            last_use_[t] = std::max(last_use_[t], finish);
            if (--pending_[t] == 0 && !keep_[t]) release(t, last_use_[t]);
        });
    }
    /// Every copy of t is freed at `time` (a weight's own copy is persistent and not among them).
    void release(graph::tensor_id t, double time) {
        for (sim::device_id h : holders_[t]) frees_.push({time, h, bytes_of(t)});
    }

    /// Calls f(u) once per unit of o's source inputs (other than o's own) that is not placed yet.
    template <class F> void for_new_sources(graph::op_id o, F&& f) const {
        for (std::uint32_t i = sources_at_[o]; i < sources_at_[o + 1]; ++i)
            if (device_[source_units_[i]] == unplaced) f(source_units_[i]);
    }
    double unit_need(std::uint32_t u) const { return bytes_[u] + (planned_ ? reserve_[u] : 0); }
    void take(std::uint32_t u, sim::device_id d) {
        device_[u] = d;
        used_[d] += bytes_[u];
        if (planned_) reserved_[d] += reserve_[u];
    }

    const graph::computation_graph* g_;
    std::vector<double> tensor_bytes_;                      // per tensor
    std::vector<std::uint8_t> weight_;                      // per tensor: a weight's output
    std::vector<std::uint8_t> source_;                      // per op: a source (input, weight)
    std::vector<std::uint32_t> distinct_at_, distinct_;     // per op: its distinct inputs
    std::vector<std::uint32_t> sources_at_, source_units_;  // per op: its source inputs' units
    std::vector<double> own_transient_;                     // per op: its non-weight outputs' bytes
    std::vector<double> input_bytes_;                       // per op: its distinct inputs' bytes
    std::vector<std::uint32_t> unit_ops_;                   // per unit: its ops
    std::vector<std::uint32_t> unit_;
    std::vector<double> bytes_;
    std::vector<sim::device_id> device_;
    std::vector<double> capacity_, used_;
    double total_ = 0;
    // the planned model's lifetimes
    struct freeing {
        double time;
        sim::device_id device;
        double bytes;
        bool operator>(const freeing& b) const { return time > b.time; }
    };
    bool planned_ = false;
    std::vector<std::uint32_t> pending_;                // per tensor: consumers not placed yet
    std::vector<double> last_use_;                      // per tensor: latest planned finish of a placed consumer
    std::vector<std::vector<sim::device_id>> holders_;  // per tensor: devices holding a transient copy
    std::vector<std::uint8_t> keep_;                    // per tensor: a graph output (stays to the end)
    std::vector<double> live_;
    // A unit placed with its first op fixes the device of its later members (a weight's gradient
    // sum and update): it reserves there the largest working set (inputs and outputs) among its
    // ops until the last of them is placed. GNMT's softmax weight gradient sums one partial
    // gradient per decoder step (80 x 1024 x 32000 floats, 10.5 GB at once), which must not find
    // its device full.
    std::vector<double> reserve_, reserved_;
    std::vector<std::uint32_t> members_left_;
    std::priority_queue<freeing, std::vector<freeing>, std::greater<>> frees_;
};

namespace detail {

/// @brief When an op's inputs are all on each device, for list schedulers that place ops one by one:
/// a computing producer's output is on its own device at its finish and on another after the
/// transfer over the cluster's route (infinity where no link reaches); sources are everywhere at 0.
template <class Cluster> class input_arrival {
public:
    explicit input_arrival(const Cluster& c) : c_(&c), nd_(c.num_devices()), route_(nd_ * nd_) {
        for (std::size_t a = 0; a < nd_; ++a)
            for (std::size_t b = 0; b < nd_; ++b)
                route_[a * nd_ + b] =
                    a == b ? device::no_link : c.route(static_cast<sim::device_id>(a), static_cast<sim::device_id>(b));
    }
    /// out[d] = max(out[d], when o's inputs are on d), for d < the device count; `dev` and `finish`
    /// give each placed op's device and finish (every computing producer of o must be placed).
    void add(const graph::computation_graph& g, const baechi_memory& m, graph::op_id o,
             std::span<const sim::device_id> dev, std::span<const double> finish, double* out) const {
        constexpr double inf = std::numeric_limits<double>::infinity();
        for (graph::tensor_id t : g.get_op(o).inputs) {
            const graph::op_id q = g.producer(t);
            if (m.is_source(q)) continue;
            const double bytes = static_cast<double>(g.type_of(t).bytes());
            for (std::size_t d = 0; d < nd_; ++d) {
                double x = finish[q];
                if (dev[q] != d) {
                    const auto l = route_[std::size_t{dev[q]} * nd_ + d];
                    x = l == device::no_link ? inf : x + c_->get_link(l).transfer_time(bytes);
                }
                out[d] = std::max(out[d], x);
            }
        }
    }

private:
    const Cluster* c_;
    std::size_t nd_;
    std::vector<std::uint32_t> route_;
};

/// Plans with `plan(scale)` (per-device budget multipliers, 1 to start) and scores each plan with
/// `run(plan)` (a sim::simulation_result); where a device overflows, shrinks its multiplier by
/// capacity / peak and plans again, `rounds` times at most. Returns the best plan seen (within
/// memory first, then the shorter step) and the multipliers it was planned under.
template <class Cluster, class Plan, class Run>
std::pair<sim::decision, std::vector<double>> shrink_until_fits(const Cluster& c, std::size_t rounds, Plan&& plan,
                                                                Run&& run) {
    const std::size_t nd = c.num_devices();
    std::vector<double> scale(nd, 1.0), best_scale = scale;
    sim::decision best;
    bool best_oom = true;
    double best_step = 0;
    for (std::size_t round = 0; round <= rounds; ++round) {
        sim::decision d = plan(std::span<const double>(scale));
        const auto r = run(d);
        if (round == 0 || (best_oom && !r.oom) || (best_oom == r.oom && r.step_time < best_step)) {
            best = std::move(d);
            best_scale = scale;
            best_oom = r.oom;
            best_step = r.step_time;
        }
        if (!r.oom) break;
        for (std::size_t k = 0; k < nd; ++k) {
            const double cap = static_cast<double>(c.device(k).mem_capacity());
            if (static_cast<double>(r.peak_memory[k]) > cap) scale[k] *= cap / static_cast<double>(r.peak_memory[k]);
        }
    }
    return {std::move(best), std::move(best_scale)};
}

/// Plans a placement with `plan(scale)` and checks it on the simulator, re-planning where a device
/// overflows (shrink_until_fits), config.verify_rounds times at most; 0: the first plan, unchecked.
template <device::DeviceModel D, cost::CostModel<D> Cost, class Plan>
sim::decision verified(const sim::simulator<D, Cost>& s, const baechi_config& config, Plan&& plan) {
    if (config.verify_rounds == 0) {
        const std::vector<double> scale(s.cluster().num_devices(), 1.0);
        return plan(std::span<const double>(scale));  // unchecked
    }
    sim::simulator<D, Cost> check(s.graph(), s.cluster(), s.cost_model());  // run() is not const
    return shrink_until_fits(s.cluster(), config.verify_rounds, plan,
                             [&](const sim::decision& d) { return sim::run(check, d); })
        .first;
}

/// One m-TOPO plan under per-device budget multipliers `scale`.
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::decision m_topo_plan(const sim::simulator<D, Cost>& s, const baechi_config& config,
                          std::span<const double> scale) {
    const auto& g = s.graph();
    baechi_memory m(s, config, baechi_memory_model::whole_step, scale);
    m.pin_sources({}, "baechi");
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

/// The list scheduler behind m-ETF and m-SCT: repeatedly the ready op that can start earliest goes
/// to the device where it starts earliest, among the devices where it fits (its unit's device when
/// that is already placed; the roomiest device when it fits nowhere). `prefer(o, d, start, dev,
/// arrival, free_at, fits)` may name a device to take instead of the earliest one (m-SCT's favourite
/// parent; a sample of the guided placement decoder, tasks::placement_task), or unplaced; `fits(q)`
/// says whether o fits on q now, and a device where it does not fit is never taken. `pinned`, when
/// not empty (one device per op, e.g. an anchor placement), puts each source op's unit on its device
/// before planning, instead of with the first op that reads it: a placement that keeps a weight
/// apart from its readers (HEFT's, a user's) can then be reproduced. `prefer` may also name an op's
/// pinned device where the memory estimate says it does not fit: the pinned placement (an anchor)
/// is one the caller knows fits, and the estimate, planned in another order, can be wrong about it.
/// Ready ops sit in a heap keyed by their earliest start, recomputed lazily when popped (device free
/// times only grow, so a popped key that grew goes back). A look at an op is O(devices) plus one
/// memory check: its inputs' arrival on every device is fixed once it is ready (its producers are
/// placed) and kept from then on, and the devices are tried for memory in the order of their start
/// only until one fits, which gives the same device as trying all of them in index order.
template <device::DeviceModel D, cost::CostModel<D> Cost, class Prefer>
sim::decision earliest_task_first(const sim::simulator<D, Cost>& s, const baechi_config& config,
                                  std::span<const double> scale, Prefer&& prefer,
                                  std::span<const sim::device_id> pinned = {}) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops();
    const auto nd = static_cast<sim::device_id>(c.num_devices());
    baechi_memory m(s, config, config.memory, scale);
    m.pin_sources(pinned, "baechi");
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
    // arrive[o * nd + d]: when o's inputs are all on d, filled when o becomes ready
    const input_arrival inputs(c);
    std::vector<double> arrive(n * nd, 0);
    auto fill_arrival = [&](graph::op_id o) { inputs.add(g, m, o, dev, finish, &arrive[std::size_t{o} * nd]); };
    auto arrival = [&](graph::op_id o, sim::device_id d) { return arrive[std::size_t{o} * nd + d]; };
    // earliest start of o and the device giving it: the first device, by (start, index), where o
    // fits; devices where o's inputs never arrive are not candidates
    std::vector<double> cand(nd);
    auto best_start = [&](graph::op_id o) -> std::pair<double, sim::device_id> {
        const auto fixed = m.device_of(o);
        const double* a = &arrive[std::size_t{o} * nd];
        if (fixed != baechi_memory::unplaced) {
            const double st = std::max(free_at[fixed], a[fixed]);
            if (st < inf) return {st, fixed};
        } else {
            for (sim::device_id d = 0; d < nd; ++d) cand[d] = std::max(free_at[d], a[d]);
            double shared = -1;  // m.need(o), computed at the first memory check
            for (;;) {
                sim::device_id at = 0;
                for (sim::device_id d = 1; d < nd; ++d)
                    if (cand[d] < cand[at]) at = d;
                if (!(cand[at] < inf)) break;
                if (shared < 0) shared = m.need(o);
                if (m.fits_bytes(m.need(o, at, shared), at)) return {cand[at], at};
                cand[at] = inf;
            }
        }
        const sim::device_id at = m.roomiest();  // fits nowhere: the roomiest device
        return {std::max(free_at[at], a[at]), at};
    };
    using entry = std::tuple<double, std::uint32_t, graph::op_id>;  // (key, topological position, op)
    std::priority_queue<entry, std::vector<entry>, std::greater<>> ready;
    // The pool: ready ops that all share the key `pool_key`, each alone in its unit and with its
    // inputs on every device by that device's free time, so that its start is the earliest free
    // time F of the devices and its device the first that is free then, as long as it fits there.
    // Their heap entries would all be popped and pushed back each time a placement moves F (a GNMT
    // training graph holds thousands of such ops: 160 million pops at 82k ops); the pool re-keys
    // them at once where bound_max (the largest need_bound of a member) certifies that each fits.
    // Pool members are ordered by topological position like the heap's ties.
    using member = std::pair<std::uint32_t, graph::op_id>;
    std::priority_queue<member, std::vector<member>, std::greater<>> pool;
    double pool_key = 0, bound_max = 0;
    auto saturated = [&](graph::op_id o) {
        const double* a = &arrive[std::size_t{o} * nd];
        for (sim::device_id d = 0; d < nd; ++d)
            if (!(a[d] <= free_at[d])) return false;
        return true;
    };
    auto enqueue = [&](double key, graph::op_id o) {
        if (m.device_of(o) == baechi_memory::unplaced && m.alone(o) && (pool.empty() || key == pool_key) &&
            saturated(o)) {
            if (pool.empty()) pool_key = key, bound_max = 0;
            bound_max = std::max(bound_max, m.need_bound(o));
            pool.emplace(pos[o], o);
        } else {
            ready.emplace(key, pos[o], o);
        }
    };
    auto release = [&](graph::op_id o) {
        fill_arrival(o);
        enqueue(best_start(o).first, o);
    };
    for (graph::op_id o = 0; o < n; ++o)
        if (!m.is_source(o) && waiting[o] == 0) release(o);
    while (!ready.empty() || !pool.empty()) {
        graph::op_id o;
        double key;
        if (!pool.empty() && (ready.empty() || std::pair(pool_key, pool.top().first) <
                                                   std::pair(std::get<0>(ready.top()), std::get<1>(ready.top())))) {
            // the pool's first member is next; every member's start now is F on `first` if the bound fits there
            key = pool_key;
            m.advance(key);
            sim::device_id first = 0;
            for (sim::device_id d = 1; d < nd; ++d)
                if (free_at[d] < free_at[first]) first = d;
            if (!m.fits_bytes(bound_max, first)) {  // not certain: the members go back to the heap
                for (; !pool.empty(); pool.pop()) ready.emplace(pool_key, pool.top().first, pool.top().second);
                continue;
            }
            if (free_at[first] > key) {  // every member would be popped and pushed back with F
                pool_key = free_at[first];
                continue;
            }
            o = pool.top().second;
            pool.pop();
        } else {
            key = std::get<0>(ready.top());
            o = std::get<2>(ready.top());
            ready.pop();
            m.advance(key);  // what the plan frees before o can start (key <= its start)
        }
        auto [st, d] = best_start(o);
        if (st == inf)
            throw error("baechi", concat("op ", g.describe(o), " has no device its inputs can reach"),
                        "a cluster whose links reach every device");
        if (st > key) {
            enqueue(st, o);
            continue;
        }
        if (m.device_of(o) == baechi_memory::unplaced)
            if (const sim::device_id q =
                    prefer(o, d, st, dev, arrival, free_at, [&](sim::device_id x) { return m.fits(o, x); });
                q != baechi_memory::unplaced && (m.fits(o, q) || (!pinned.empty() && pinned[o] == q))) {
                d = q;
                st = std::max(free_at[q], arrival(o, q));
            }
        dev[o] = d;
        start[o] = st;
        finish[o] = st + s.op_time(o, d);
        m.place(o, d, finish[o]);
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

/// @brief m-TOPO: ops in topological order fill device 0 up to an even share of the graph's memory
/// estimate (never past its capacity), then device 1, and so on; an op whose unit is already placed
/// follows it. Baechi §4.1. FIFO scheduling (no priorities), as Baechi measures it on TensorFlow.
/// Checked on the simulator (baechi_config::verify_rounds).
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::decision m_topo(const sim::simulator<D, Cost>& s, const baechi_config& config = {}) {
    return detail::verified(s, config,
                            [&](std::span<const double> scale) { return detail::m_topo_plan(s, config, scale); });
}

/// @brief m-ETF: earliest task first under memory limits (Baechi §4.2; ETF is Hwang et al., SIAM J.
/// Comput. 1989). Priorities are the planned start times (earlier first), so the simulator's ready
/// queues follow the plan. Memory as baechi_config::memory says, checked on the simulator
/// (baechi_config::verify_rounds).
template <device::DeviceModel D, cost::CostModel<D> Cost>
sim::decision m_etf(const sim::simulator<D, Cost>& s, const baechi_config& config = {}) {
    return detail::verified(s, config, [&](std::span<const double> scale) {
        return detail::earliest_task_first(s, config, scale, [](auto...) { return baechi_memory::unplaced; });
    });
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
    return detail::verified(s, config, [&](std::span<const double> scale) {
        return detail::earliest_task_first(
            s, config, scale,
            [&](graph::op_id o, sim::device_id best, double best_st, const auto& dev, auto&& arrival,
                const auto& free_at, auto&&) {
                const graph::op_id p = fav_parent[o];
                if (p == none || dev[p] == baechi_memory::unplaced || dev[p] == best) return baechi_memory::unplaced;
                const sim::device_id d = dev[p];
                return std::max(free_at[d], arrival(o, d)) <= best_st + saved[o] ? d : baechi_memory::unplaced;
            });
    });
}

}  // namespace goopt::baselines
