// Hook of `--tasks placement`: the GO policy trained by PPO on this graph (GO-one, NeurIPS'20 §4),
// a device per op drawn by the guided decoder (m-ETF's list scheduler, the policy's logits as
// residuals on its earliest-start scores: tasks::placement_decoder::guided), scored with
// critical-path list scheduling; or started from a pre-trained policy (--checkpoint). A fresh
// policy's logits are zero, so its first mode is m-ETF's placement; m-ETF's own decision is the
// incumbent either way.
#include "optimizer.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/train_placement.hpp>

#include <filesystem>
#include <random>

namespace goopt::cli {

task_status placement_status() { return {true, "the PPO-trained placement policy (rl/, tasks/)"}; }

namespace {

/// The settings of benchmarks/placement (README "Learned placement"): a narrower network than GO's,
/// a larger learning rate, 16 samples per update on both cores. `goopt train` uses the same network,
/// so that its checkpoints fit.
tasks::placement_config settings(std::size_t updates) {
    return {.ppo = {.updates = updates,
                    .samples_per_update = 16,
                    .learning_rate = 1e-3,
                    .threads = 2,
                    .sharding = ranks().sharding},
            .policy = {.hidden = 64, .shared_attention_layers = 1, .heads = 4},
            .task = {.schedule = tasks::ready_order::critical_path, .decoder = tasks::placement_decoder::guided},
            .progress = {.status = rl::status_mode::never}};
}

}  // namespace

method_result optimize_placement(const optimize_context& ctx, const decisions& metf) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    auto config = settings(ctx.limits.steps);
    // a pre-trained policy is the start itself (read only: the file stays as it is); a fresh one
    // needs no warm start: its zero logits decode to m-ETF's placement
    if (!ctx.checkpoint.empty()) config.pretrained = ctx.checkpoint;
    // m-ETF's own decision is kept until PPO beats it: never worse than it
    config.incumbents = {metf};
    method_result out{"ppo_placement",
                      ctx.checkpoint.empty()
                          ? "GO policy trained by PPO on this graph, m-ETF as the decoder, critical-path priorities"
                          : "GO policy pre-trained, then trained by PPO on this graph, m-ETF as the decoder, "
                            "critical-path priorities",
                      {},
                      {},
                      0,
                      {},
                      "PPO update (16 samples)"};
    training_curve v{ctx, out, "ppo_placement"};
    std::mt19937_64 rng(ctx.seed);
    const auto r = tasks::train_placement(s.graph(), s.cluster(), s.cost_model(), config, rng, v);
    ctx.progress.clear();
    out.chosen = r.best.decision;
    out.result = r.best.result;
    if (r.best_from == tasks::best_source::incumbent)
        out.note = "no placement PPO sampled beat m-ETF's decision, so ppo_placement is that decision";
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

pretrain_summary pretrain_placement(std::span<const loaded_graph> inputs, const cluster_type& cluster,
                                    const budget& limits, std::uint64_t seed, const std::string& checkpoint,
                                    std::size_t updates_per_graph, progress_line& progress) {
    auto config = settings(limits.steps);
    config.checkpoint = checkpoint;
    std::vector<graph::computation_graph> graphs;
    for (const auto& in : inputs) graphs.push_back(in.graph);
    struct visitor {
        const budget& limits;
        progress_line& line;
        std::size_t updates = 0;
        void on_sample(std::span<const int>,
                       const tasks::placement_task<device::device_spec, cost::roofline_model>::outcome&) {}
        bool on_update(const rl::update_stats& st) {
            line.update("train", st.update, limits.steps, "updates");
            return limits.time_left();
        }
    } v{limits, progress};
    std::mt19937_64 rng(seed);
    const auto r = tasks::pretrain_placement(std::span<const graph::computation_graph>(graphs), cluster,
                                             cost::roofline_model{}, config, updates_per_graph, rng, v);
    progress.clear();
    pretrain_summary out{{}, r.updates, r.samples, r.seconds};
    for (const auto& b : r.best) out.best.push_back(b.result);
    return out;
}

}  // namespace goopt::cli
