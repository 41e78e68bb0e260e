// The heuristic baselines of `goopt optimize`, every one scored by the same simulator. This is the
// only file of the program that uses the heuristics' namespace (goopt::baselines).
#include "optimizer.hpp"

#include <goopt/baselines.hpp>
#if defined(GOOPT_HAS_METIS)
#include <goopt/baselines/metis_placement.hpp>
#endif

#include <chrono>
#include <random>

namespace goopt::cli {

namespace {

/// Samples per random-search round: as many as GO's rollouts per PPO update, so that a curve's
/// rounds and a policy's updates cost the same number of simulations.
constexpr std::size_t samples_per_round = 16;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Random placements in rounds of samples_per_round; the curve records each round.
method_result random_search_rounds(const optimize_context& ctx) {
    const auto t0 = std::chrono::steady_clock::now();
    method_result best{"random_search",
                       "best of uniformly random placements, FIFO, no fusion",
                       {},
                       {},
                       0,
                       {},
                       "round (" + std::to_string(samples_per_round) + " samples each)"};
    std::mt19937_64 rng(ctx.seed);
    bool have = false;
    std::size_t samples = 0;
    for (std::size_t round = 1; round <= ctx.limits.steps && (round == 1 || ctx.limits.time_left()); ++round) {
        double sum = 0;
        for (std::size_t k = 0; k < samples_per_round; ++k) {
            auto r = baselines::random_search(ctx.simulator, 1, rng);
            sum += r.result.step_time;
            if (!have || baselines::better_result(r.result, best.result)) {
                best.chosen.placement = std::move(r.placement);
                best.result = std::move(r.result);
                have = true;
            }
        }
        samples += samples_per_round;
        best.curve.push_back({round, samples, best.result.step_time, sum / samples_per_round});
        ctx.progress.update("random_search", round, ctx.limits.steps, "rounds");
    }
    best.seconds = seconds_since(t0);
    return best;
}

}  // namespace

std::vector<std::string> baseline_names() {
    std::vector<std::string> names{"single_device", "expert"};
#if defined(GOOPT_HAS_METIS)
    names.push_back("metis");
#endif
    for (const char* n : {"heft", "critical_path", "m_topo", "m_etf", "m_sct", "greedy_fusion", "priority_fusion",
                          "heft_fusion", "random_search"})
        names.push_back(n);
    return names;
}

std::vector<method_result> run_baselines(const optimize_context& ctx) {
    auto& s = ctx.simulator;
    const auto& g = s.graph();
    const std::size_t n = s.cluster().num_devices();
    std::vector<method_result> out;
    auto add = [&](std::string name, std::string description, auto&& decide) {
        ctx.progress.update(name, out.size(), baseline_names().size(), "baselines");
        const auto t0 = std::chrono::steady_clock::now();
        decisions d = decide();
        const double seconds = seconds_since(t0);
        auto r = s.run(d.placement, {.priorities = d.priorities, .fusion = d.fusion, .record_trace = false});
        out.push_back({std::move(name), std::move(description), std::move(d), std::move(r), seconds, {}, {}});
    };
    add("single_device", "every op on device 0, FIFO (TensorFlow's default)", [&] {
        return decisions{baselines::single_device_placement(g), {}, {}};
    });
    const auto family = baselines::family_convention(ctx.input.family);
    add("expert", "human-expert placement of the model family, FIFO", [&] {
        return decisions{baselines::expert_placement(g, n, family), {}, {}};
    });
#if defined(GOOPT_HAS_METIS)
    add("metis", "METIS partition: balanced compute, least bytes cut; FIFO", [&] {
        return decisions{baselines::metis_placement(s, static_cast<int>(ctx.seed % 1000000)), {}, {}};
    });
#endif
    add("heft", "HEFT placement with upward-rank priorities", [&] {
        auto h = baselines::heft(s);
        return decisions{std::move(h.placement), std::move(h.priorities), {}};
    });
    add("critical_path", "expert placement, critical-path (upward rank) priorities", [&] {
        auto p = baselines::expert_placement(g, n, family);
        auto pr = baselines::critical_path_priorities(s, p);
        return decisions{std::move(p), std::move(pr), {}};
    });
    add("m_topo", "Baechi's m-TOPO: topological order, each device filled up to its memory share",
        [&] { return baselines::m_topo(s); });
    add("m_etf", "Baechi's m-ETF: earliest task first where it fits in memory", [&] { return baselines::m_etf(s); });
    add("m_sct", "Baechi's m-SCT: m-ETF keeping a favourite child with its parent",
        [&] { return baselines::m_sct(s); });
    add("greedy_fusion", "one device, elementwise ops fused into producers (XLA-style)", [&] {
        auto p = baselines::single_device_placement(g);
        auto f = baselines::greedy_fusion(g, p);
        return decisions{std::move(p), {}, std::move(f)};
    });
    add("priority_fusion", "one device, XLA-style priority fusion: the merges that save most time first", [&] {
        auto p = baselines::single_device_placement(g);
        auto f = baselines::priority_fusion(s, p);
        return decisions{std::move(p), {}, std::move(f)};
    });
    add("heft_fusion", "HEFT placement and priorities, then greedy fusion on that placement", [&] {
        auto h = baselines::heft(s);
        auto f = baselines::greedy_fusion(g, h.placement);
        return decisions{std::move(h.placement), std::move(h.priorities), std::move(f)};
    });
    out.push_back(random_search_rounds(ctx));
    ctx.progress.clear();
    return out;
}

}  // namespace goopt::cli

namespace goopt::cli {

bool better_method(const method_result& a, const method_result& b) {
    return baselines::better_result(a.result, b.result);
}

}  // namespace goopt::cli
