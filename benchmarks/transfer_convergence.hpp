#pragma once
// Issue #28 §4: sample efficiency of GO-one against the HDP-style hierarchical placer
// (baselines::hdp_placement, Mirhoseini et al., ICLR'18) on one graph and cluster, the rows
// "experiment": "convergence" of benchmarks/transfer.
//
// Per seed: GO-one (the caller's trainer config, fresh weights, no incumbent) records the step time
// of every decision it simulates, samples and per-update modes alike, in order. HDP then gets a budget
// of `hdp_factor` x that many samples (at least 20x) and its final step time is the best it reaches
// within it; hdp_samples_to_target is the sample that reached it, go_samples_to_target the first of
// GO's decisions at or below it (counted from GO's first sample; none: GO never got there), and the
// ratio is hdp / go; hdp_samples_to_go_best is the reverse question (when HDP first matched GO's
// best decision; null: never within its budget). Both are scored with the same schedule (critical-path priorities per
// placement, GO's placement task's ready order).
#include "seed_figures.hpp"

#include <goopt/baselines/hdp_placement.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::bench {

/// HDP's side of the convergence rows.
struct convergence_settings {
    std::size_t hdp_factor = 20;  ///< HDP's budget in GO-one's simulated decisions (>= 20)
    baselines::hdp_config hdp = {.critical_path = true};
};

/// Every decision GO's trainer simulates, in order: samples and the mode of each update.
struct go_trace {
    std::vector<double> step;  ///< seconds; +inf for one out of memory or refused
    void add(const tasks::step_outcome& o) {
        step.push_back(o.valid && !o.oom ? o.step_time : std::numeric_limits<double>::infinity());
    }
    void on_sample(std::span<const int>, const tasks::step_outcome& o) { add(o); }
    void on_mode(std::span<const int>, const tasks::step_outcome& o) { add(o); }
    bool on_update(const rl::update_stats&) { return true; }
};

/// One convergence row for (g, cl): GO-one with `go` per seed, then HDP with `cs.hdp_factor` x GO's
/// simulated decisions. Ratio: the smallest over the seeds of hdp_samples_to_target / go_samples_to_target
/// (null where GO never reached HDP's final step time on some seed).
inline nlohmann::ordered_json convergence_row(const std::string& name, const graph::computation_graph& g,
                                              const device::cluster<device::device_spec>& cl,
                                              const tasks::placement_config& go, const convergence_settings& cs,
                                              std::span<const std::uint64_t> seeds) {
    if (cs.hdp_factor < 20) throw error("convergence_row", concat("an HDP budget factor of ", cs.hdp_factor), ">= 20");
    sim::simulator s(g, cl);
    seed_figures go_best, hdp_final;
    std::vector<std::size_t> go_samples, hdp_budget, hdp_to, hdp_updates;
    std::vector<nlohmann::json> go_to, ratio, hdp_to_go;
    double go_seconds = 0, hdp_seconds = 0;
    std::optional<double> worst;
    bool all = true;
    for (std::uint64_t seed : seeds) {
        go_trace trace;
        std::mt19937_64 grng(seed);
        const auto t = tasks::train_placement(g, cl, cost::roofline_model{}, go, grng, trace);
        go_seconds += t.seconds / static_cast<double>(seeds.size());
        go_best.ms.push_back(*std::min_element(trace.step.begin(), trace.step.end()) * 1e3);
        go_samples.push_back(trace.step.size());
        auto hc = cs.hdp;
        hc.samples = cs.hdp_factor * trace.step.size();
        std::mt19937_64 hrng(seed);
        const auto h = baselines::hdp_placement(s, hc, hrng);
        hdp_seconds += h.seconds / static_cast<double>(seeds.size());
        const double target = h.result.oom ? std::numeric_limits<double>::infinity() : h.result.step_time;
        hdp_final.ms.push_back(target * 1e3);
        hdp_budget.push_back(h.samples);
        hdp_to.push_back(h.best_sample);
        hdp_updates.push_back(h.updates);
        // and the other way round: the sample at which HDP first matched GO's best (null: never)
        const double go_min = go_best.ms.back() / 1e3;
        const auto met = std::find_if(h.improvements.begin(), h.improvements.end(),
                                      [&](const auto& e) { return !h.result.oom && e.second <= go_min * (1 + 1e-12); });
        hdp_to_go.push_back(met == h.improvements.end() ? nlohmann::json(nullptr) : nlohmann::json(met->first));
        const auto hit =
            std::find_if(trace.step.begin(), trace.step.end(), [&](double x) { return x <= target * (1 + 1e-12); });
        if (hit == trace.step.end()) {
            go_to.emplace_back(nullptr);
            ratio.emplace_back(nullptr);
            all = false;
        } else {
            const auto k = static_cast<std::size_t>(hit - trace.step.begin()) + 1;
            const double r = static_cast<double>(h.best_sample) / static_cast<double>(k);
            go_to.emplace_back(k);
            ratio.emplace_back(r);
            worst = worst ? std::min(*worst, r) : r;
        }
    }
    nlohmann::ordered_json row{
        {"experiment", "convergence"}, {"graph", name}, {"devices", cl.num_devices()}, {"ops", g.num_ops()}};
    row["go_samples_to_target"] = go_to.size() == 1 ? go_to[0] : nlohmann::json(go_to);
    row["hdp_samples_to_target"] = hdp_to.size() == 1 ? nlohmann::json(hdp_to[0]) : nlohmann::json(hdp_to);
    row["ratio"] = all && worst ? nlohmann::json(*worst) : nlohmann::json(nullptr);
    row["ratio_seeds"] = ratio;
    row["hdp_samples_to_go_best"] = hdp_to_go;
    hdp_final.write(row, "hdp_final");
    go_best.write(row, "go_best");
    row["go_samples"] = go_samples;
    row["hdp_budget_samples"] = hdp_budget;
    row["hdp_updates"] = hdp_updates;
    row["hdp_factor"] = cs.hdp_factor;
    row["go_updates"] = go.ppo.updates;
    row["go_samples_per_update"] = go.ppo.samples_per_update;
    row["go_seconds"] = go_seconds;
    row["hdp_seconds"] = hdp_seconds;
    row["hdp"] = {{"groups", cs.hdp.groups},
                  {"grouper_hidden", cs.hdp.grouper_hidden},
                  {"placer_hidden", cs.hdp.placer_hidden},
                  {"groupings_per_update", cs.hdp.groupings_per_update},
                  {"placements_per_grouping", cs.hdp.placements_per_grouping},
                  {"learning_rate", cs.hdp.learning_rate},
                  {"tanh_constant", cs.hdp.tanh_constant},
                  {"temperature", cs.hdp.temperature},
                  {"baseline_decay", cs.hdp.baseline_decay},
                  {"critical_path", cs.hdp.critical_path}};
    row["seeds"] = std::vector<std::uint64_t>(seeds.begin(), seeds.end());
    return row;
}

}  // namespace goopt::bench
