// Hook of `--tasks placement`: the GO policy trained by PPO on this graph (GO-one, NeurIPS'20 §4),
// a device per op scored with critical-path list scheduling, warm-started by imitating Baechi's
// m-ETF placement (memory-aware, so the policy starts from a decision that fits).
#include "optimizer.hpp"

#include <goopt/baselines/baechi.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/train_placement.hpp>

#include <filesystem>
#include <random>

namespace goopt::cli {

task_status placement_status() { return {true, "the PPO-trained placement policy (rl/, tasks/)"}; }

method_result optimize_placement(const optimize_context& ctx) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    tasks::placement_config config{
        // settings of benchmarks/placement (README "Learned placement"): a narrower network than
        // GO's, a larger learning rate, 16 samples per update on both cores
        .ppo = {.updates = ctx.limits.steps,
                .samples_per_update = 16,
                .learning_rate = 1e-3,
                .threads = 2,
                .imitation_steps = 100},
        .policy = {.hidden = 64, .shared_attention_layers = 1, .heads = 4},
        .task = {.schedule = tasks::ready_order::critical_path},
        .warm_start = baselines::m_etf(s).placement,
        .checkpoint = ctx.checkpoint,
        .resume = !ctx.checkpoint.empty() && std::filesystem::exists(ctx.checkpoint)};
    method_result out{"ppo_placement",
                      "GO policy trained by PPO on this graph (warm start: m-ETF), critical-path priorities",
                      {},
                      {},
                      0,
                      {},
                      "PPO update (16 samples)"};
    struct visitor {
        const optimize_context& ctx;
        method_result& out;
        double best = 0, sum = 0;
        std::size_t in_update = 0;
        void on_sample(std::span<const int>,
                       const tasks::placement_task<device::device_spec, cost::roofline_model>::outcome& o) {
            if (o.valid && !o.oom && (best == 0 || o.step_time < best)) best = o.step_time;
            sum += o.step_time;
            ++in_update;
        }
        bool on_update(const rl::update_stats& st) {
            out.curve.push_back({st.update, st.samples, best, in_update ? sum / static_cast<double>(in_update) : 0});
            sum = 0;
            in_update = 0;
            ctx.progress.update("ppo_placement", st.update, ctx.limits.steps, "updates");
            return ctx.limits.time_left();
        }
    } v{ctx, out};
    std::mt19937_64 rng(ctx.seed);
    const auto r = tasks::train_placement(s.graph(), s.cluster(), cost::roofline_model{}, config, rng, v);
    ctx.progress.clear();
    out.chosen = r.best.decision;
    out.result = r.best.result;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace goopt::cli
