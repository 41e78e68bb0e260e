// Transfer of one pre-trained placement policy to graphs and device counts it never saw (GO,
// NeurIPS'20 §5.3; GiPH, MLSys'23 and WeCAN, 2025, for unseen device counts), on the same simulator
// (n x V100 with NVLink, roofline costs) as benchmarks/decisions.
//
//   transfer [--quick] [--out FILE] [--policy FILE] [--train-graphs a,b] [--graphs a,onnx:PATH,...] [--devices 2,4,8]
//            [--train-devices 2,4,8] [--unseen-devices 3,6] [--pretrain-updates N] [--updates-per-pair N]
//            [--anchored-pretraining] [--no-anchor] [--anchor-strength 2] [--methods zero_shot,finetune,scratch,go_one]
//            [--go-one-updates 200] [--finetune-updates 50] [--samples 16] [--seeds 1,2,3] [--threads 1]
//            [--experiments generalization,convergence,scale] [--convergence-graphs a,b] [--convergence-devices 2,4]
//            [--convergence-seeds 1,2,3] [--hdp-factor 20] [--hdp-learning-rate 0.1] [--hdp-groups 64]
//            [--scale-graphs gnmt8_long] [--scale-epochs 4,2]
//
// One policy with the device-count-free pair head (nn::first_head::pair) is pre-trained across the
// training graphs x training device counts (tasks::pretrain_placement_policy, seed --pretrain-seed;
// with --anchored-pretraining each pair's decoder anchored on its best heuristic's decision), or read
// from --policy (e.g. share/goopt/placement_policy.ckpt). A graph is a zoo workload or an ONNX model,
// onnx:PATH (through goopt::onnx, where the build has it), imported at the file's shapes.
// Every row uses the guided decoder and no incumbent: each figure is the best of the policy's own
// samples and modes (a best decision from anywhere else stops the program). By default the decoder is
// anchored on the best placement heuristic's decision for that (graph, device count), as
// benchmarks/decisions' placement rows are (tasks/anchored_decoding.hpp; scored with the heuristic's
// own priorities where they beat critical-path ones), so zero logits decode to that heuristic's
// decision; --no-anchor decodes around m-ETF's placement instead (the rows before the anchor).
// Per held-out (graph, device count) and seed:
// - zero_shot: the pre-trained policy, no update: the best of one update's samples and its mode, all
//   drawn from the pre-trained weights;
// - finetune: the pre-trained policy trained --finetune-updates (<= 50) more updates on that graph,
//   by default with its output zeroed first (--finetune-from heuristic: its first mode is the
//   decoder's own decision, on the pre-trained trunk, as goopt optimize fine-tunes the shipped
//   policy), or as it is (--finetune-from policy); the row says which ("finetune_start");
// - scratch: the same network, fresh, trained as many updates as fine-tuning: the control that says
//   what the pre-training itself is worth (fine-tuning below scratch is transfer; equal to it is not);
// - go_one: the same network, fresh (its output layer at zero: the decoder's own decision first),
//   trained on that graph alone for --go-one-updates (>= 200);
// against the best placement heuristic that fits. Rows report the mean over the seeds and the spread.
// Rows with "device_count_seen": false place on a device count the policy was not pre-trained on,
// against GO-one trained for that count.
// JSON list, one object per row: {"experiment": "generalization", "graph", "devices", "ops",
// "device_count_seen", "best_heuristic", "best_heuristic_ms", "anchor", "go_one_ms", "zero_shot_ms",
// "finetune_ms", "finetune_updates", "finetune_seconds", "scratch_ms", "go_one_updates", "go_one_seconds", "seeds",
// "<each>_seeds_ms", "<each>_spread_ms", "<each>_from", "pretrain": {...}} (a method not run: null).
// Convergence rows (issue #28 §4, benchmarks/transfer_convergence.hpp): GO-one against the HDP-style
// placer (baselines::hdp_placement) given --hdp-factor x GO-one's simulated decisions, per graph of
// --convergence-graphs and device count: {"experiment": "convergence", "graph", "devices",
// "go_samples_to_target", "hdp_samples_to_target", "ratio", "hdp_final_ms", "go_best_ms", budgets, seconds}.
// GO-one there decodes around m-ETF, unanchored.
// Scale rows (issue #28 §3, benchmarks/scale_rows.hpp, as benchmarks/scale writes them): seconds per PPO
// update of --samples samples and peak memory of GO's network placing each --scale-graphs graph on 8 x
// V100:nvlink with the guided decoder on max(2, --threads) threads (samples and the network's passes),
// one row per --scale-epochs setting (2 timed updates; --quick: 1), each in a child process, after
// every graph is loaded and before any training: {"experiment": "scale", "graph", "ops", "epochs",
// "seconds_per_update", "cpu_seconds_per_update", "peak_memory_bytes", and the update's parts}.
#include "benchmark_main.hpp"
#include "placement_heuristics.hpp"
#include "scale_rows.hpp"
#include "seed_figures.hpp"
#include "transfer_convergence.hpp"

#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>
#if defined(GOOPT_HAS_ONNX)
#include <goopt/io/onnx.hpp>
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace goopt;
using cluster_type = device::cluster<device::device_spec>;

struct settings {
    std::size_t go_one_updates = 200, finetune_updates = 50, samples = 16, threads = 1;
    bool finetune_from_heuristic = true;  ///< placement_config::pretrained_from_heuristic when fine-tuning
    std::vector<std::uint64_t> seeds{1, 2, 3};
};

/// A graph of the rows or of the pre-training: a zoo workload, or an ONNX model given as onnx:PATH.
struct workload_graph {
    std::string name;    ///< as the rows spell it: the zoo's name, or onnx:<the file's stem>
    std::string family;  ///< the expert placement's convention (baselines::family_convention)
    graph::computation_graph graph;
};

/// The graph `spec` names on the command line (`flag`): a zoo workload, or onnx:PATH imported at the
/// file's own shapes; an ONNX model's family is its file name's leading letters (resnet50 ->
/// resnet, inception_v3 -> inception), which only the expert heuristic reads.
workload_graph load_graph(const std::string& spec, std::string_view flag) {
    constexpr std::string_view prefix = "onnx:";
    if (!spec.starts_with(prefix)) {
        const auto w = models::find_workload(spec);
        return {spec, w.family, w.build()};
    }
#if defined(GOOPT_HAS_ONNX)
    const std::filesystem::path file = spec.substr(prefix.size());
    if (!std::filesystem::is_regular_file(file))
        throw error(concat("flag ", flag), concat("'", spec, "': no file ", file.string()),
                    "onnx:PATH of an ONNX model file (e.g. onnx:tests/data/onnx/resnet50.onnx)");
    auto model = io::import_onnx(file);
    const std::string stem = file.stem().string();
    std::string family;
    for (const char c : stem) {
        if (std::isalpha(static_cast<unsigned char>(c)) == 0) break;
        family += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return {concat("onnx:", stem), family, std::move(model.graph)};
#else
    throw error(concat("flag ", flag), concat("'", spec, "'"),
                "a zoo workload: this build has no ONNX import (goopt::onnx, Debian's libonnx-dev)");
#endif
}

using bench::best_heuristic;

/// The best placement heuristic that fits on a (graph, cluster), which anchored rows decode around.
best_heuristic best_heuristic_of(const workload_graph& w, const cluster_type& cl) {
    sim::simulator s(w.graph, cl);
    return bench::best_fitting_heuristic(s, w.family);
}

sim::decision anchor_of(const best_heuristic& b) {
    return {.placement = b.decision.placement, .priorities = b.own_order, .fusion = {}};
}

/// The placement task of every row: the guided decoder with critical-path priorities, or, anchored,
/// around `b`'s decision (and its own priorities where they are better).
tasks::placement_task_config task_of(const best_heuristic& b, bool anchored, double strength) {
    tasks::placement_task_config t{.schedule = tasks::ready_order::critical_path,
                                   .decoder = tasks::placement_decoder::guided};
    if (!anchored || b.name.empty()) return t;
    t.anchor = b.decision.placement;
    t.anchor_strength = strength;
    if (!b.own_order.empty()) {
        t.schedule = tasks::ready_order::given;
        t.priorities = b.own_order;
    }
    return t;
}

/// The network and PPO settings of every training here (`goopt optimize`'s, with the pair head).
tasks::placement_config config_of(const settings& st, std::size_t updates, tasks::placement_task_config task) {
    return {.ppo = {.updates = updates,
                    .samples_per_update = st.samples,
                    .minibatch = st.samples,
                    .learning_rate = 1e-3,
                    .threads = st.threads},
            .policy = {.hidden = 64, .shared_attention_layers = 1, .heads = 4, .head = nn::first_head::pair},
            .task = std::move(task),
            .progress = {.status = rl::status_mode::never}};
}

/// Step times (ms) per seed, their mean and spread, the training's budget, and where each seed's
/// best decision came from (a sample or an update's mode: never an incumbent).
struct per_seed : bench::seed_figures {
    std::size_t updates = 0;
    double seconds = 0;
    std::vector<std::string> from;
    bool ran = false;
    void write(nlohmann::ordered_json& row, const std::string& key) const {
        if (!ran) {
            row[key + "_ms"] = nullptr;
            return;
        }
        seed_figures::write(row, key);
        row[key + "_from"] = from;
    }
    double shown() const { return ran ? mean() : std::numeric_limits<double>::quiet_NaN(); }
};

/// One training per seed on (g, cl): `updates` PPO updates, from `pretrained` (empty: fresh weights).
per_seed learn(const graph::computation_graph& g, const cluster_type& cl, const settings& st, std::size_t updates,
               const std::filesystem::path& pretrained, const tasks::placement_task_config& task,
               bool from_heuristic = false) {
    per_seed r;
    r.ran = true;
    for (std::uint64_t seed : st.seeds) {
        auto c = config_of(st, updates, task);
        c.pretrained = pretrained;
        c.pretrained_from_heuristic = from_heuristic;
        std::mt19937_64 rng(seed);
        const auto t = tasks::train_placement(g, cl, cost::roofline_model{}, c, rng);
        // the rows are the policy's own decisions: nothing scored but its samples and modes
        if (t.best_from != tasks::best_source::sample && t.best_from != tasks::best_source::mode)
            throw error("benchmarks/transfer", concat("a row's best decision from ", bench::source_name(t.best_from)),
                        "the policy's own sample or mode (no incumbent)");
        r.from.emplace_back(bench::source_name(t.best_from));
        r.ms.push_back(t.best.result.oom ? std::numeric_limits<double>::infinity() : t.best.result.step_time * 1e3);
        r.updates = updates;
        r.seconds += t.seconds / static_cast<double>(st.seeds.size());
    }
    return r;
}

int run(int argc, char** argv) {
    std::string out, policy;
    std::vector<std::string> train_names, names;
    std::vector<std::size_t> counts, train_counts, unseen;
    std::size_t pretrain_updates = 0, per_pair = 4;
    std::uint64_t pretrain_seed = 1;
    settings st;
    bool quick = false, anchored = true, anchored_pretraining = false;
    double anchor_strength = 2.0;
    std::vector<std::string> methods, experiments, conv_names;
    std::vector<std::size_t> conv_counts;
    std::vector<std::uint64_t> conv_seeds;
    bench::convergence_settings conv;
    bench::command_line cli("transfer",
                            "One placement policy pre-trained on some graph families and device counts, zero-shot "
                            "and fine-tuned on held-out graphs and device counts, against GO-one and the heuristics.");
    cli.add_flag("--quick", quick,
                 "Small graphs, 2 and 4 devices, 40 pre-training updates, GO-one 200, fine-tuning 20; convergence on "
                 "bert_taso, seeds 1,2 (flags given win)");
    cli.add_option("--out", out, "Write the rows as a JSON list (after every row)")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_option("--policy", policy, "A pre-trained pair-head checkpoint to use instead of pre-training here")
        ->type_name("FILE");
    auto list = [&](const char* flag, std::vector<std::string>& v, const char* what) {
        cli.add_option(flag, v, what)->delimiter(',')->allow_extra_args(false)->type_name("NAME,...");
    };
    list("--train-graphs", train_names, "Pre-training graphs (default: README's training split)");
    list("--graphs", names,
         "Held-out graphs: zoo workloads or onnx:PATH of an ONNX model (default: README's held-out split)");
    auto counts_flag = [&](const char* flag, std::vector<std::size_t>& v, const char* what) {
        cli.add_option(flag, v, what)
            ->delimiter(',')
            ->allow_extra_args(false)
            ->transform(bench::count(2, 1024))
            ->type_name("N,...");
    };
    counts_flag("--devices", counts, "Held-out rows' device counts (default 2,4,8)");
    counts_flag("--train-devices", train_counts, "Pre-training device counts (default 2,4,8)");
    counts_flag("--unseen-devices", unseen,
                "Device counts never pre-trained on, one row per held-out graph (default 3; a count of --devices "
                "is not repeated)");
    auto* pu = cli.add_option("--pretrain-updates", pretrain_updates, "Pre-training PPO updates in all (default 240)")
                   ->transform(bench::count(1, 1000000))
                   ->type_name("N");
    cli.add_option("--updates-per-pair", per_pair, "Pre-training updates on a (graph, device count) before the next")
        ->transform(bench::count(1, 1000000))
        ->capture_default_str();
    cli.add_option("--pretrain-seed", pretrain_seed, "Seed of the pre-training")->capture_default_str();
    cli.add_flag("--anchored-pretraining", anchored_pretraining,
                 "Pre-train with each (graph, device count)'s decoder anchored on its best heuristic's decision "
                 "(tasks::pretrain_schedule::anchors); default: around m-ETF, as the shipped policy was");
    cli.add_flag("!--no-anchor", anchored,
                 "The rows' guided decoder follows m-ETF alone, not anchored on the best placement heuristic's "
                 "decision for the (graph, device count)");
    cli.add_option("--anchor-strength", anchor_strength,
                   "Anchored decoders: the score a device other than the anchor's starts from (> 0)")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_option("--methods", methods,
                   "Which learned figures: zero_shot, finetune, scratch (fresh weights, fine-tuning's updates), "
                   "go_one (default all; scratch and GO-one do not depend on the pre-trained policy, so a run "
                   "comparing two policies may leave them out)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::IsMember({"zero_shot", "finetune", "scratch", "go_one"}))
        ->type_name("NAME,...");
    auto* go = cli.add_option("--go-one-updates", st.go_one_updates, "GO-one's updates (at least 200)")
                   ->transform(bench::count(200, 1000000))
                   ->capture_default_str();
    auto* ft = cli.add_option("--finetune-updates", st.finetune_updates, "Fine-tuning updates (at most 50)")
                   ->transform(bench::count(1, 50))
                   ->capture_default_str();
    std::string finetune_from = "heuristic";
    cli.add_option("--finetune-from", finetune_from,
                   "Fine-tuning's start: heuristic (the pre-trained policy's output zeroed: its first mode is the "
                   "decoder's decision) or policy (as it is)")
        ->check(CLI::IsMember({"heuristic", "policy"}))
        ->capture_default_str();
    cli.add_option("--samples", st.samples, "Decisions sampled per update")
        ->transform(bench::count(1, 4096))
        ->capture_default_str();
    cli.add_option("--seeds", st.seeds, "One training per seed; rows report the mean and the spread")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->transform(bench::count())
        ->type_name("N,...");
    cli.add_option("--threads", st.threads, "Threads decoding and scoring the samples")
        ->transform(bench::count(1, 256))
        ->capture_default_str();
    cli.add_option("--experiments", experiments, "Which rows: generalization, convergence, scale (default all three)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::IsMember({"generalization", "convergence", "scale"}))
        ->type_name("NAME,...");
    list("--convergence-graphs", conv_names,
         "Convergence rows' graphs (default bert_taso; without --quick also nasnet_a_taso, resnet50_taso)");
    counts_flag("--convergence-devices", conv_counts, "Convergence rows' device counts (default 2,4)");
    cli.add_option("--convergence-seeds", conv_seeds, "Convergence rows' seeds (default: --seeds; --quick: 1,2)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->transform(bench::count())
        ->type_name("N,...");
    cli.add_option("--hdp-factor", conv.hdp_factor, "HDP's sample budget in GO-one's simulated decisions")
        ->transform(bench::count(20, 100000))
        ->capture_default_str();
    cli.add_option("--hdp-learning-rate", conv.hdp.learning_rate, "HDP's Adam learning rate (the paper's 0.1)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cli.add_option("--hdp-groups", conv.hdp.groups, "HDP's groups (the grouper's softmax width)")
        ->transform(bench::count(1, 100000))
        ->capture_default_str();
    std::vector<std::string> scale_names{"gnmt8_long"};
    std::vector<std::size_t> scale_epochs{rl::ppo_config{}.epochs, 2};
    list("--scale-graphs", scale_names, "Scale rows' graphs (zoo workloads; default gnmt8_long, 82,370 ops)");
    cli.add_option("--scale-epochs", scale_epochs, "Scale rows' PPO epochs per update, one row each (default 4,2)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::Range(std::size_t{1}, std::size_t{64}))
        ->type_name("N,...");
    if (!cli.parse_flags(argc, argv)) return 0;
    if (st.seeds.empty()) throw error("flag --seeds", "an empty list", "a list such as 1,2,3");
    if (!(anchor_strength > 0)) throw error("flag --anchor-strength", concat(anchor_strength), "a number > 0");
    (void)go;
    std::erase(names, std::string{});
    std::erase(train_names, std::string{});
    // README's split: pre-train on Inception, RNNLM, Transformer-XL, WaveNet, AmoebaNet; hold out GNMT,
    // NasNet-A, ResNet/ResNeXt, BERT and ONNX imports (--graphs onnx:PATH)
    if (train_names.empty())
        train_names = quick ? std::vector<std::string>{"transformer_xl2", "wavenet_2x18", "inception_v3_taso"}
                            : std::vector<std::string>{"transformer_xl2", "wavenet_2x18", "inception_v3_taso",
                                                       "transformer_xl4", "rnnlm2"};
    if (names.empty())
        names = quick ? std::vector<std::string>{"resnet50_taso", "bert_taso"}
                      : std::vector<std::string>{"resnet50_taso", "bert_taso", "nasnet_a_taso", "resnext50_taso"};
    if (counts.empty()) counts = quick ? std::vector<std::size_t>{2, 4} : std::vector<std::size_t>{2, 4, 8};
    if (train_counts.empty()) train_counts = quick ? std::vector<std::size_t>{2, 4} : std::vector<std::size_t>{2, 4, 8};
    if (unseen.empty()) unseen = {3};
    if (pu->count() == 0) pretrain_updates = quick ? 40 : 240;
    if (quick && ft->count() == 0) st.finetune_updates = 20;
    st.finetune_from_heuristic = finetune_from == "heuristic";
    std::erase(conv_names, std::string{});
    if (experiments.empty()) experiments = {"generalization", "convergence", "scale"};
    auto wanted = [&](const char* e) {
        return std::find(experiments.begin(), experiments.end(), e) != experiments.end();
    };
    if (conv_names.empty())
        conv_names = quick ? std::vector<std::string>{"bert_taso"}
                           : std::vector<std::string>{"bert_taso", "nasnet_a_taso", "resnet50_taso"};
    if (conv_counts.empty()) conv_counts = {2, 4};
    if (conv_seeds.empty()) conv_seeds = quick ? std::vector<std::uint64_t>{1, 2} : st.seeds;
    if (methods.empty()) methods = {"zero_shot", "finetune", "scratch", "go_one"};
    auto method = [&](const char* m) { return std::find(methods.begin(), methods.end(), m) != methods.end(); };

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    // every graph first, held-out then training: a bad name or file stops the run before any training
    std::vector<workload_graph> held_out, training;
    if (wanted("generalization")) {
        for (const auto& n : names) held_out.push_back(load_graph(n, "--graphs"));
        if (policy.empty())
            for (const auto& n : train_names) training.push_back(load_graph(n, "--train-graphs"));
    }

    // ---- scale (issue #28 §3): one child process per row, so that its peak memory is its own; before
    // the pre-training starts OpenMP's threads (libgomp's pool does not survive a fork)
    if (wanted("scale")) {
        std::erase(scale_names, std::string{});
        if (scale_names.empty() || scale_epochs.empty())
            throw error("flags --scale-graphs and --scale-epochs", "an empty list", "at least one graph and one count");
        bench::scale::require_workloads(scale_names, "--scale-graphs");
        bench::scale::settings sc{.updates = quick ? std::size_t{1} : std::size_t{2},
                                  .samples = st.samples,
                                  .threads = std::max<std::size_t>(2, st.threads)};
        std::printf(
            "scale: one PPO update of %zu samples on %zu x V100:nvlink, guided decoder, GO's network, %zu "
            "threads\n",
            sc.samples, sc.devices, sc.threads);
        std::printf("%-16s %6s %6s %9s %9s %9s\n", "graph", "ops", "epochs", "s/update", "cpu s", "peak MiB");
        for (const auto& name : scale_names)
            for (const std::size_t e : scale_epochs) {
                sc.epochs = e;
                auto row = bench::scale::measure_apart(name, tasks::placement_decoder::guided, sc);
                std::printf("%-16s %6zu %6zu %9.2f %9.2f %9.0f\n", name.c_str(), row["ops"].get<std::size_t>(), e,
                            row["seconds_per_update"].get<double>(), row["cpu_seconds_per_update"].get<double>(),
                            static_cast<double>(row["peak_memory_bytes"].get<std::size_t>()) / (1 << 20));
                std::fflush(stdout);
                results.push_back(row);
                if (!out.empty()) bench::write_results(out, results.dump(1) + "\n");
            }
    }

    nlohmann::ordered_json pre_info;
    std::filesystem::path ckpt = policy;
    if (policy.empty() && wanted("generalization")) {
        ckpt = std::filesystem::temp_directory_path() / concat("goopt_transfer_", pretrain_seed, ".ckpt");
        std::vector<graph::computation_graph> graphs;
        for (const auto& w : training) graphs.push_back(w.graph);
        std::vector<cluster_type> clusters;
        for (std::size_t n : train_counts) clusters.push_back(device::parse_cluster(concat(n, "xV100:nvlink")));
        auto c = config_of(st, pretrain_updates, task_of({}, false, anchor_strength));
        c.checkpoint = ckpt;
        tasks::pretrain_schedule schedule{.updates_per_pair = per_pair};
        nlohmann::ordered_json anchors = nlohmann::ordered_json::array();
        if (anchored_pretraining)
            for (const auto& w : training)  // graph-major, as the pairs are
                for (const auto& cl : clusters) {
                    const auto b = best_heuristic_of(w, cl);
                    if (b.name.empty())
                        throw error(
                            "flag --anchored-pretraining",
                            concat("no placement heuristic fits ", w.name, " on ", cl.num_devices(), " devices"),
                            "a heuristic's decision to anchor on");
                    schedule.anchors.push_back(anchor_of(b));
                    anchors.push_back(b.name);
                }
        std::mt19937_64 rng(pretrain_seed);
        const auto r = tasks::pretrain_placement_policy(std::span<const graph::computation_graph>(graphs),
                                                        std::span<const cluster_type>(clusters), cost::roofline_model{},
                                                        c, schedule, rng);
        pre_info = {{"graphs", train_names},
                    {"devices", train_counts},
                    {"updates", r.updates},
                    {"updates_per_pair", per_pair},
                    {"seed", pretrain_seed},
                    {"seconds", r.seconds},
                    {"anchors", anchored_pretraining ? anchors : nlohmann::ordered_json()}};
        std::printf("pre-trained on %zu graphs x %zu device counts: %zu updates, %.1f s\n", graphs.size(),
                    clusters.size(), r.updates, r.seconds);
    } else {
        pre_info = {{"policy", policy}};
    }

    if (wanted("generalization")) {
        std::printf(
            "simulated step time in ms on n x V100:nvlink; mean of %zu seeds; guided decoder %s, no incumbent\n",
            st.seeds.size(), anchored ? "anchored on the best heuristic" : "around m-ETF");
        std::printf("%-24s %2s %4s %6s %-14s %9s %9s %9s %9s %9s %7s %7s\n", "graph", "n", "seen", "ops", "best_heur",
                    "best_ms", "go_one", "zero_shot", "finetune", "scratch", "ft_s", "go1_s");
    }
    auto row_of = [&](const workload_graph& w, std::size_t n, bool seen) {
        const auto& g = w.graph;
        const auto cl = device::parse_cluster(concat(n, "xV100:nvlink"));
        const auto best = best_heuristic_of(w, cl);
        const std::string& best_name = best.name;
        const double best_ms = best.ms;
        const auto task = task_of(best, anchored, anchor_strength);
        const auto zero = method("zero_shot") ? learn(g, cl, st, 1, ckpt, task) : per_seed{};
        const auto fine = method("finetune")
                              ? learn(g, cl, st, st.finetune_updates, ckpt, task, st.finetune_from_heuristic)
                              : per_seed{};
        const auto scratch = method("scratch") ? learn(g, cl, st, st.finetune_updates, {}, task) : per_seed{};
        const auto one = method("go_one") ? learn(g, cl, st, st.go_one_updates, {}, task) : per_seed{};
        const std::string& name = w.name;
        nlohmann::ordered_json row{
            {"experiment", "generalization"},
            {"graph", name},
            {"devices", n},
            {"ops", g.num_ops()},
            {"device_count_seen", seen},
            {"best_heuristic", best_name},
            {"best_heuristic_ms", best_ms},
            {"anchor", anchored && !best_name.empty() ? nlohmann::ordered_json(best_name) : nlohmann::ordered_json()},
            {"anchor_priorities", !anchored || best_name.empty() ? "none"
                                  : best.own_order.empty()       ? "critical_path"
                                                                 : "own"},
            {"anchor_strength", anchor_strength}};
        one.write(row, "go_one");
        zero.write(row, "zero_shot");
        fine.write(row, "finetune");
        scratch.write(row, "scratch");
        row["finetune_updates"] = fine.updates;
        row["finetune_start"] = st.finetune_from_heuristic ? "heuristic" : "policy";
        row["finetune_seconds"] = fine.seconds;
        row["go_one_updates"] = one.updates;
        row["go_one_seconds"] = one.seconds;
        row["seeds"] = st.seeds;
        row["samples_per_update"] = st.samples;
        row["pretrain"] = pre_info;
        row["peak_memory_bytes"] = bench::peak_memory_bytes();
        std::printf("%-24s %2zu %4s %6zu %-14s %9.3f %9.3f %9.3f %9.3f %9.3f %7.1f %7.1f\n", name.c_str(), n,
                    seen ? "yes" : "no", g.num_ops(), best_name.c_str(), best_ms, one.shown(), zero.shown(),
                    fine.shown(), scratch.shown(), fine.seconds, one.seconds);
        std::fflush(stdout);
        results.push_back(row);
        if (!out.empty()) bench::write_results(out, results.dump(1) + "\n");  // after every row
    };
    if (wanted("generalization")) {
        auto seen = [&](std::size_t n) {
            return std::find(train_counts.begin(), train_counts.end(), n) != train_counts.end();
        };
        for (const auto& w : held_out)
            for (std::size_t n : counts) row_of(w, n, seen(n));
        for (const auto& w : held_out)
            for (std::size_t n : unseen)
                if (std::find(counts.begin(), counts.end(), n) == counts.end()) row_of(w, n, seen(n));
    }

    // ---- convergence (issue #28 §4)
    if (wanted("convergence")) {
        std::printf(
            "convergence: GO-one (%zu updates x %zu samples, no incumbent) against HDP with %zux GO's "
            "simulated decisions; %zu seeds\n",
            st.go_one_updates, st.samples, conv.hdp_factor, conv_seeds.size());
        std::printf("%-16s %2s %6s %9s %9s %10s %10s %8s %7s %7s\n", "graph", "n", "ops", "hdp_ms", "go_best", "go_to",
                    "hdp_to", "ratio", "go_s", "hdp_s");
        for (const auto& name : conv_names)
            for (std::size_t n : conv_counts) {
                const auto g = models::find_workload(name).build();
                const auto cl = device::parse_cluster(concat(n, "xV100:nvlink"));
                auto row = bench::convergence_row(name, g, cl, config_of(st, st.go_one_updates, task_of({}, false, 1)),
                                                  conv, std::span<const std::uint64_t>(conv_seeds));
                std::printf("%-16s %2zu %6zu %9.3f %9.3f %10s %10s %8s %7.1f %7.1f\n", name.c_str(), n, g.num_ops(),
                            row["hdp_final_ms"].get<double>(), row["go_best_ms"].get<double>(),
                            row["go_samples_to_target"].dump().c_str(), row["hdp_samples_to_target"].dump().c_str(),
                            row["ratio"].dump().c_str(), row["go_seconds"].get<double>(),
                            row["hdp_seconds"].get<double>());
                std::fflush(stdout);
                row["peak_memory_bytes"] = bench::peak_memory_bytes();
                results.push_back(row);
                if (!out.empty()) bench::write_results(out, results.dump(1) + "\n");
            }
    }

    if (policy.empty() && wanted("generalization")) std::filesystem::remove(ckpt);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("transfer", [&] { return run(argc, argv); });
}
