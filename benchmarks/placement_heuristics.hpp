#pragma once
/// @file
/// @brief The placement heuristics the placement benchmarks compare against, each as its own
/// decision (placement and priorities): single device, expert, METIS where built, HEFT, critical
/// path on the expert placement, Baechi's m-TOPO, m-ETF and m-SCT.

#include <goopt/baselines.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks/train.hpp>
#if defined(GOOPT_HAS_METIS)
#include <goopt/baselines/metis_placement.hpp>
#endif

#include <optional>
#include <string>
#include <vector>

namespace goopt::bench {

/// Where a training's best decision came from, as the results files spell it.
inline const char* source_name(tasks::best_source s) {
    switch (s) {
        case tasks::best_source::incumbent:
            return "incumbent";
        case tasks::best_source::sample:
            return "sample";
        case tasks::best_source::mode:
            return "mode";
        case tasks::best_source::none:
            break;
    }
    return "none";
}

/// One heuristic's decision; `decision` is empty where the build lacks the heuristic (METIS).
struct named_decision {
    std::string name;
    std::optional<sim::decision> decision;
};

/// Every placement heuristic's decision for `s`'s graph (a workload of `family`) on its cluster.
template <device::DeviceModel D, cost::CostModel<D> Cost>
std::vector<named_decision> placement_heuristics(sim::simulator<D, Cost>& s, const std::string& family) {
    const auto& g = s.graph();
    const auto expert = baselines::expert_placement(g, s.cluster().num_devices(), baselines::family_convention(family));
    std::vector<named_decision> r;
    r.push_back(
        {"single", sim::decision{.placement = baselines::single_device_placement(g), .priorities = {}, .fusion = {}}});
    r.push_back({"expert", sim::decision{.placement = expert, .priorities = {}, .fusion = {}}});
#if defined(GOOPT_HAS_METIS)
    r.push_back({"metis", sim::decision{.placement = baselines::metis_placement(s), .priorities = {}, .fusion = {}}});
#else
    r.push_back({"metis", std::nullopt});
#endif
    r.push_back({"heft", baselines::heft(s).decision()});
    r.push_back({"critical_path",
                 sim::decision{
                     .placement = expert, .priorities = baselines::critical_path_priorities(s, expert), .fusion = {}}});
    r.push_back({"m_topo", baselines::m_topo(s)});
    r.push_back({"m_etf", baselines::m_etf(s)});
    r.push_back({"m_sct", baselines::m_sct(s)});
    return r;
}

/// The best placement heuristic that fits in memory on `s`'s graph and cluster: what the anchored
/// rows of the learning benchmarks decode around.
struct best_heuristic {
    std::string name;  ///< empty: none fits
    double ms = 0;
    sim::decision decision;
    /// Its own priorities where they order its placement at least as well as critical-path
    /// priorities do (benchmarks/decisions' rule): anchored rows are scored with them, so that zero
    /// logits decode to the heuristic's decision exactly. Empty: critical-path priorities.
    std::vector<double> own_order;
};

template <device::DeviceModel D, cost::CostModel<D> Cost>
best_heuristic best_fitting_heuristic(sim::simulator<D, Cost>& s, const std::string& family) {
    best_heuristic b;
    for (const auto& h : placement_heuristics(s, family)) {
        if (!h.decision) continue;
        const auto r = sim::run(s, *h.decision);
        if (!r.oom && (b.name.empty() || r.step_time * 1e3 < b.ms)) {
            b.name = h.name;
            b.ms = r.step_time * 1e3;
            b.decision = *h.decision;
        }
    }
    if (!b.name.empty() && !b.decision.priorities.empty() &&
        sim::run(s, b.decision).step_time <=
            s.run(b.decision.placement, {.priorities = baselines::critical_path_priorities(s, b.decision.placement)})
                .step_time)
        b.own_order = b.decision.priorities;
    return b;
}

}  // namespace goopt::bench
