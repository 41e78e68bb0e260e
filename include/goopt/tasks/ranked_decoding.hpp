#pragma once
/// @file
/// @brief A guided placement decoder that walks the ops in HEFT's order (decreasing upward rank,
/// Topcuoglu et al., TPDS'02) instead of m-ETF's: each op in turn is offered every device where it
/// fits in m-ETF's memory estimate, scored by its finish there. One pass costs O(ops x devices),
/// where m-ETF's ready heap re-examines every waiting op after each placement: on an 82,000-op GNMT
/// training graph thousands of ready ops wait for a device and one m-ETF pass costs about a minute
/// of CPU, which is what one PPO update of 16 samples must fit in ten seconds.

#include <goopt/baselines/baechi.hpp>
#include <goopt/baselines/heft.hpp>
#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace goopt::tasks {

/// The computing ops (sources left out) by decreasing HEFT upward rank, ties in topological order:
/// every op comes after its producers (a rank is at least its consumers' ranks).
template <device::DeviceModel D, cost::CostModel<D> Cost>
std::vector<graph::op_id> ranked_order(const sim::simulator<D, Cost>& s) {
    namespace steps = baselines::detail::heft_steps;
    auto order = steps::by_decreasing_rank(s.graph(), steps::heft_ranks(s));
    std::erase_if(order, [&](graph::op_id o) { return steps::is_source(s.graph(), o); });
    return order;
}

/// @brief List scheduling in the fixed `order` (ranked_order) under m-ETF's memory estimate
/// (baselines::baechi_memory with `guide`), each op appended to a device's queue: its device drawn
/// by `draw(o, score, best)` as guided_earliest_task_first draws it, with `score[q]` = -(finish on q
/// - earliest finish) / tau where o fits (0 at `best`, the device where it finishes first, lowest
/// index on ties), -infinity elsewhere, rounded to float. Ops whose device is forced (a colocation
/// group placed before; no device with room: the roomiest) are not drawn. The estimate's clock
/// (what the plan has freed) is each op's earliest start over the devices. `budget`: per-device
/// multipliers of the memory budget (as baselines::detail::verified shrinks m-ETF's), empty: 1.
/// `pinned` (empty, or a device per op: an anchor placement) puts the sources where it says before
/// the walk and keeps each op's pinned device open where the estimate would close it, as
/// guided_earliest_task_first does: the anchor is known to fit, and an estimate planned in this
/// order can overflow first elsewhere (on GNMT-8 with 4 devices an anchored decode left the anchor
/// and ran out of memory where the anchor fits).
/// @return the placement, and the planned starts as priorities (earlier first), as m-ETF's.
/// @throws goopt::error when `order` places an op before a producer, or an op's inputs reach no device.
template <device::DeviceModel D, cost::CostModel<D> Cost, class Draw>
sim::decision guided_ranked_list(const sim::simulator<D, Cost>& s, const baselines::baechi_config& guide,
                                 std::span<const graph::op_id> order, double tau, Draw&& draw,
                                 std::span<const double> budget = {}, std::span<const sim::device_id> pinned = {}) {
    using baselines::baechi_memory;
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops();
    const auto nd = static_cast<sim::device_id>(c.num_devices());
    if (!budget.empty() && budget.size() != nd)
        throw error("tasks::guided_ranked_list", concat(budget.size(), " budget multipliers"),
                    concat("one per device (", nd, ") or none"));
    const std::vector<double> ones(nd, 1.0);
    baechi_memory m(s, guide, guide.memory, budget.empty() ? std::span<const double>(ones) : budget);
    m.pin_sources(pinned, "tasks::guided_ranked_list");
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<double> finish(n, 0), start(n, 0), free_at(nd, 0), arrive(nd), eft(nd), score(nd);
    std::vector<sim::device_id> dev(n, baechi_memory::unplaced);
    const baselines::detail::input_arrival inputs(c);
    // arrive[d]: when o's inputs are all on d (its computing producers are placed)
    auto fill_arrival = [&](graph::op_id o) {
        for (graph::tensor_id t : g.get_op(o).inputs)
            if (!m.is_source(g.producer(t)) && dev[g.producer(t)] == baechi_memory::unplaced)
                throw error("tasks::guided_ranked_list", concat("op ", g.describe(o), " before its producer"),
                            "an order in which every op follows its producers");
        std::fill(arrive.begin(), arrive.end(), 0.0);
        inputs.add(g, m, o, dev, finish, arrive.data());
    };
    for (graph::op_id o : order) {
        fill_arrival(o);
        double clock = inf;
        for (sim::device_id d = 0; d < nd; ++d) {
            const double st = std::max(free_at[d], arrive[d]);
            clock = std::min(clock, st);
            eft[d] = st < inf ? st + s.op_time(o, d) : inf;
        }
        if (clock < inf) m.advance(clock);
        sim::device_id at = m.device_of(o);
        if (at == baechi_memory::unplaced) {
            const double shared = m.need(o);
            sim::device_id best = baechi_memory::unplaced;
            for (sim::device_id q = 0; q < nd; ++q) {
                score[q] = -inf;
                const bool open = m.fits_bytes(m.need(o, q, shared), q) || (!pinned.empty() && pinned[o] == q);
                if (eft[q] < inf && open) {
                    score[q] = 0;  // open; its value follows once the best is known
                    if (best == baechi_memory::unplaced || eft[q] < eft[best]) best = q;
                }
            }
            if (best == baechi_memory::unplaced) {
                at = m.roomiest();  // fits nowhere: the roomiest device, as m-ETF
            } else {
                for (sim::device_id q = 0; q < nd; ++q)
                    if (score[q] == 0 && q != best)
                        score[q] = static_cast<double>(static_cast<float>(-(eft[q] - eft[best]) / tau));
                at = draw(o, std::span<const double>(score), best);
                if (at >= nd || score[at] == -inf)
                    throw error("tasks::guided_ranked_list", concat("a draw of device ", at, " for ", g.describe(o)),
                                "a device whose score is finite");
            }
        }
        if (!(eft[at] < inf))
            throw error("tasks::guided_ranked_list",
                        concat("op ", g.describe(o), " has no device its inputs can reach"),
                        "a cluster whose links reach every device");
        dev[o] = at;
        start[o] = std::max(free_at[at], arrive[at]);
        finish[o] = eft[at];
        m.place(o, at, finish[o]);
        free_at[at] = finish[o];
    }
    sim::decision r{.placement = m.placement(), .priorities = std::vector<double>(n, 0.0), .fusion = {}};
    for (graph::op_id o = 0; o < n; ++o)
        if (!m.is_source(o)) r.priorities[o] = -start[o];
    return r;
}

}  // namespace goopt::tasks
