// Hook of `--tasks placement`: the GO policy trained by PPO on this graph (GO-one, NeurIPS'20 §4),
// a device per op drawn by the guided decoder (m-ETF's list scheduler, the policy's logits as
// residuals on its earliest-start scores: tasks::placement_decoder::guided), scored with
// critical-path list scheduling, started from the policy shipped in share/goopt/ (pre-trained across
// graph families and 2, 4 and 8 devices: docs/transfer.md; the default where the build knows one),
// from --checkpoint FILE, or from fresh weights with --checkpoint none. The shipped policy is
// fine-tuned from zero logits (its output zeroed, its trunk and hidden layer kept), so its first mode
// is m-ETF's placement, as a fresh policy's is; m-ETF's own decision is the incumbent either way.
#include "optimizer.hpp"

#include <goopt/cost/roofline_model.hpp>
#include <goopt/tasks/pretrain.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <string_view>

namespace goopt::cli {

task_status placement_status() { return {true, "the PPO-trained placement policy (rl/, tasks/)"}; }

namespace {

/// The settings of benchmarks/placement (README "Learned placement"): a narrower network than GO's,
/// a larger learning rate, 16 samples per update on both cores, and the pair head (one network for
/// any device count: nn::first_head::pair) unless a per-device checkpoint is given. `goopt train`
/// uses the same network, so that its checkpoints fit.
tasks::placement_config settings(std::size_t updates, nn::first_head head = nn::first_head::pair) {
    auto c = tasks::shipped_placement_config(updates);
    c.ppo.threads = 2;
    c.ppo.sharding = ranks().sharding;
    c.policy.head = head;
    return c;
}

}  // namespace

method_result optimize_placement(const optimize_context& ctx, const decisions& metf) {
    const auto t0 = std::chrono::steady_clock::now();
    auto& s = ctx.simulator;
    // the start: the shipped pre-trained policy (the default where this build knows one, or
    // --checkpoint shipped; a file that no longer fits the network is an error naming how to remake
    // it, never a silent fresh start), --checkpoint FILE (that policy as it is), or fresh weights with
    // GO's per-device head (--checkpoint none, or the default where the build knows no shipped
    // policy). The shipped policy is the default because it measured better: on the demo
    // (wavenet_2x18, 2xV100, 300 updates, seeds 1-3) 7.179, 7.173 and 7.312 ms against 7.431, 7.380
    // and 8.010 ms from fresh weights (docs/transfer.md). That gain is the pair head's and its reference
    // features', not the pre-training's: a near-fresh pair head measured within noise of it there, and
    // on held-out graphs fine-tuning ends where fresh weights do (docs/transfer.md, session 37).
    std::string start = ctx.checkpoint;
    bool shipped = false;
    if (start.empty() || start == "shipped") {
        const auto file = tasks::default_placement_policy_file();
        if (file.empty() && start == "shipped")
            throw error("--checkpoint shipped", "this build knows no shipped placement policy",
                        "a build whose share/goopt/placement_policy.ckpt exists, or GOOPT_PLACEMENT_POLICY=FILE");
        shipped = !file.empty();
        start = file.string();
    }
    if (start == "none") start.clear();
    auto config = settings(ctx.limits.steps, !start.empty() && tasks::checkpoint_any_device_count(start)
                                                 ? nn::first_head::pair
                                                 : nn::first_head::per_choice);
    // a pre-trained policy is the start itself (read only: the file stays as it is); a fresh one
    // needs no warm start: its zero logits decode to m-ETF's placement
    config.pretrained = start;
    // the shipped policy's output was pre-trained to stay with the heuristic on other graphs: zeroed,
    // the first mode is m-ETF's placement and samples explore around it as a fresh policy's do
    config.pretrained_from_heuristic = shipped;
    // m-ETF's own decision is kept until PPO beats it: never worse than it
    config.incumbents = {metf};
    method_result out{
        "ppo_placement",
        start.empty()
            ? "GO policy trained by PPO on this graph, m-ETF as the decoder, critical-path priorities"
            : std::string(shipped ? "GO policy pre-trained (shipped), its output zeroed" : "GO policy pre-trained") +
                  ", then trained by PPO on this graph, m-ETF as the decoder, critical-path priorities",
        {},
        {},
        0,
        {},
        "PPO update (16 samples)"};
    training_curve v{ctx, out, "ppo_placement"};
    std::mt19937_64 rng(ctx.seed);
    const auto r = [&] {
        try {
            return tasks::train_placement(s.graph(), s.cluster(), s.cost_model(), config, rng, v);
        } catch (const error& e) {
            // the shipped file no longer fits this build's network (e.g. an op kind was added)
            if (!shipped || std::string_view(e.what()).find(start) == std::string_view::npos) throw;
            throw error(concat("the shipped placement policy '", start, "'"), e.what(),
                        concat(tasks::remake_placement_policy, ", or --checkpoint none for fresh weights"));
        }
    }();
    ctx.progress.clear();
    out.chosen = r.best.decision;
    out.result = r.best.result;
    if (r.best_from == tasks::best_source::incumbent)
        out.note = "no placement PPO sampled beat m-ETF's decision, so ppo_placement is that decision";
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

pretrain_summary pretrain_placement(std::span<const loaded_graph> inputs, std::span<const cluster_type> clusters,
                                    nn::first_head head, const budget& limits, std::uint64_t seed,
                                    const std::string& checkpoint, std::size_t updates_per_graph, bool mixed,
                                    progress_line& progress) {
    auto config = settings(limits.steps, head);
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
    const auto r = tasks::pretrain_placement_policy(std::span<const graph::computation_graph>(graphs), clusters,
                                                    cost::roofline_model{}, config,
                                                    {.updates_per_pair = updates_per_graph, .mixed = mixed}, rng, v);
    progress.clear();
    pretrain_summary out{{}, r.updates, r.samples, r.seconds};
    for (const auto& b : r.best) out.best.push_back(b.result);
    return out;
}

}  // namespace goopt::cli
