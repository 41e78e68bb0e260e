// m-ETF's list scheduler (baselines::detail::earliest_task_first) against a straightforward
// reference: the lazy ready heap as it was before the scheduler cached arrivals and memory needs,
// every device's arrival and memory need recomputed at each look. Same placement, same planned
// starts (priorities) and the same draws, bit for bit, for m-ETF, m-SCT and guided samples.
#include "../sim/random_dag.hpp"

#include <goopt/baselines.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/models/rnnlm.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks/guided_decoding.hpp>

#include <doctest/doctest.h>

#include <queue>
#include <random>
#include <tuple>

using namespace goopt;
using baselines::baechi_memory;

namespace {

/// The reference: for each popped op, every device's start from the producers' finish times and
/// links, and its memory need, computed from scratch.
template <class S, class Prefer>
sim::decision reference_etf(const S& s, const baselines::baechi_config& config, std::span<const double> scale,
                            Prefer&& prefer) {
    const auto& g = s.graph();
    const auto& c = s.cluster();
    const std::size_t n = g.num_ops();
    const auto nd = static_cast<sim::device_id>(c.num_devices());
    baechi_memory m(s, config, config.memory, scale);
    m.pin_sources({}, "reference_etf");  // unread sources on device 0 from the start, as the scheduler has them
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
    auto best_start = [&](graph::op_id o) -> std::pair<double, sim::device_id> {
        const auto fixed = m.device_of(o);
        const double shared = fixed == baechi_memory::unplaced ? m.need(o) : 0;
        double best = inf;
        sim::device_id at = baechi_memory::unplaced;
        for (sim::device_id d = 0; d < nd; ++d) {
            if (fixed != baechi_memory::unplaced ? d != fixed : !m.fits_bytes(m.need(o, d, shared), d)) continue;
            const double st = std::max(free_at[d], arrival(o, d));
            if (st < best) best = st, at = d;
        }
        if (at == baechi_memory::unplaced) {
            at = m.roomiest();
            best = std::max(free_at[at], arrival(o, at));
        }
        return {best, at};
    };
    using entry = std::tuple<double, std::uint32_t, graph::op_id>;
    std::priority_queue<entry, std::vector<entry>, std::greater<>> ready;
    auto release = [&](graph::op_id o) { ready.emplace(best_start(o).first, pos[o], o); };
    for (graph::op_id o = 0; o < n; ++o)
        if (!m.is_source(o) && waiting[o] == 0) release(o);
    while (!ready.empty()) {
        const auto [key, p, o] = ready.top();
        ready.pop();
        m.advance(key);
        auto [st, d] = best_start(o);
        REQUIRE(st != inf);
        if (st > key) {
            ready.emplace(st, p, o);
            continue;
        }
        if (m.device_of(o) == baechi_memory::unplaced)
            if (const sim::device_id q =
                    prefer(o, d, st, dev, arrival, free_at, [&](sim::device_id x) { return m.fits(o, x); });
                q != baechi_memory::unplaced && m.fits(o, q)) {
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
        if (!m.is_source(o)) r.priorities[o] = -start[o];
    return r;
}

/// n V100s with `capacity` bytes each, all-to-all links of `bandwidth`.
device::cluster<device::device_spec> cluster_of(std::size_t n, double capacity, double bandwidth) {
    auto d = device::describe(device::v100);
    d.capacity = capacity;
    return device::cluster<device::device_spec>::all_to_all(d, n, bandwidth, 5e-6);
}

/// Bitwise equality of two decisions' placements and priorities.
void check_same(const sim::decision& a, const sim::decision& b) {
    REQUIRE(a.placement.size() == b.placement.size());
    std::size_t placement_diff = 0, priority_diff = 0;
    for (std::size_t o = 0; o < a.placement.size(); ++o) {
        placement_diff += a.placement[o] != b.placement[o];
        priority_diff += std::bit_cast<std::uint64_t>(a.priorities[o]) != std::bit_cast<std::uint64_t>(b.priorities[o]);
    }
    CHECK(placement_diff == 0);
    CHECK(priority_diff == 0);
}

/// A draw as the guided decoder makes one: softmax over the scores plus a fixed random logit per
/// (op, device), from a generator that both runs share; records every score it is shown.
struct recording_draw {
    std::mt19937_64 rng;
    std::vector<double> seen;
    sim::device_id operator()(graph::op_id o, std::span<const double> score, sim::device_id) {
        std::vector<double> total(score.size());
        for (std::size_t q = 0; q < score.size(); ++q) {
            total[q] = score[q] + std::sin(static_cast<double>(o * 7 + q * 3));
            seen.push_back(score[q]);
        }
        return static_cast<sim::device_id>(tasks::draw_from_scores(total, false, rng));
    }
};

}  // namespace

TEST_CASE("earliest_task_first: m-ETF, m-SCT and guided draws equal the straightforward reference bit for bit") {
    std::mt19937_64 rng(28);
    int trials = 0;
    for (int trial = 0; trial < 24; ++trial) {
        const auto g = goopt_test::random_dag(rng, 6 + trial % 5, 3 + trial % 6);
        double total = 0;
        for (graph::op_id o = 0; o < g.num_ops(); ++o)
            for (graph::tensor_id t : g.get_op(o).outputs) total += static_cast<double>(g.type_of(t).bytes());
        const std::size_t nd = 2 + static_cast<std::size_t>(trial % 4);
        // roomy, tight (ops fit on some devices only, memory freed as the plan advances) and too small
        const double share[] = {4.0, 0.6, 0.3, 0.05};
        const auto cl = cluster_of(nd, total / static_cast<double>(nd) * share[trial % 4], trial % 2 ? 25e9 : 1e9);
        sim::simulator s(g, cl);
        const std::vector<double> scale(nd, 1.0);
        for (const auto model : {baselines::baechi_memory_model::planned, baselines::baechi_memory_model::whole_step}) {
            const baselines::baechi_config config{.memory = model, .verify_rounds = 0};
            CAPTURE(trial);
            auto none = [](auto...) { return baechi_memory::unplaced; };
            check_same(baselines::detail::earliest_task_first(s, config, scale, none),
                       reference_etf(s, config, scale, none));
            // m-SCT's kind of preference: the device of the op's first computing parent, when it
            // starts there within a slack of the earliest start
            auto parent = [&](graph::op_id o, sim::device_id best, double best_start, const auto& dev, auto&& arrival,
                              const auto& free_at, auto&&) {
                for (graph::op_id p : g.predecessors(o)) {
                    if (g.get_op(p).spec().has(ops::source) || dev[p] == best) continue;
                    const sim::device_id d = dev[p];
                    return std::max(free_at[d], arrival(o, d)) <= best_start + 2e-6 ? d : baechi_memory::unplaced;
                }
                return baechi_memory::unplaced;
            };
            check_same(baselines::detail::earliest_task_first(s, config, scale, parent),
                       reference_etf(s, config, scale, parent));
            // guided: the scores each op is shown and the draws agree too
            recording_draw fast{std::mt19937_64(trial), {}}, slow{std::mt19937_64(trial), {}};
            const double tau = 1e-5;
            const auto a = tasks::guided_earliest_task_first(s, config, tau, std::ref(fast));
            std::vector<double> score(nd);
            auto prefer = [&](graph::op_id o, sim::device_id best, double best_start, const auto&, auto&& arrival,
                              const auto& free_at, auto&& fits) {
                std::size_t open = 0;
                for (sim::device_id q = 0; q < nd; ++q) {
                    score[q] = -std::numeric_limits<double>::infinity();
                    if (!fits(q)) continue;
                    ++open;
                    const double b = q == best ? 0.0 : -(std::max(free_at[q], arrival(o, q)) - best_start) / tau;
                    score[q] = static_cast<double>(static_cast<float>(b));
                }
                if (open == 0) return baechi_memory::unplaced;
                const sim::device_id pick = slow(o, std::span<const double>(score), best);
                return pick == best ? baechi_memory::unplaced : pick;
            };
            check_same(a, reference_etf(s, config, scale, prefer));
            CHECK(fast.seen.size() == slow.seen.size());
            CHECK(fast.seen == slow.seen);
            ++trials;
        }
    }
    CHECK(trials == 48);
}
