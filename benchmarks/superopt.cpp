// superopt: the substitution searches on TASO's inference workloads, side by side.
//
//   superopt [--out FILE] [--rules FILE] [--seconds 10] [--budget 100] [--model NAME]... [--search NAME]...
//            [--ilp-cycles part|cuts|order] [--check-flops 2e9]
//
// --search: taso, eqsat, greedy, or eqsat-ilp (equality saturation whose final extraction goes on
// with Tensat's ILP, solved by CBC, within the same time limit; only where built with goopt::cbc).
// --ilp-cycles: how the ILP keeps cycles out: part (default: an acyclic part of the e-graph), cuts
// (lazy cycle cuts) or order (Tensat's order variables for every class).
//
// For each model (ResNeXt-50, NasNet-A, NasRNN, BERT, Inception-v3, SqueezeNet, ResNet-50), each
// device preset (T4, V100) and each search (by default TASO's backtracking search: alpha 1.0,
// budget 100, as Tensat's TASO baseline; and equality saturation, eqsat_search's defaults; the
// greedy search with --search greedy): the inference cost (roofline cost model, weight
// preprocessing not counted) before and after, the search time, the bound it hit, the rewrites
// applied, and two checks on the interpreter (double): max_rel_diff, the largest relative output
// difference between the model and the row's result, where the model's interpreter FLOPs are at
// most --check-flops (null beyond it: full-size evaluation would take minutes), and
// max_rel_diff_small_instance, the same for a separate search on a small instance of the model.
// The table's max_rel column shows the first where it was measured, else the second, marked '*'.
// --seconds is the benchmark's opt-in wall-time limit of each search (0: none, only the searches'
// count budgets): Tensat's comparison is one of search time, and TASO's search on NasNet-A runs
// for many minutes without it.
// Model settings: the zoo's defaults (batch 1; NasRNN hidden 512, 5 steps), BERT at TASO's
// evaluation settings (8 layers, hidden 1024, 16 heads, 64 tokens, batch 16). The models named
// *_taso are the same networks as TASO's model files build them (models/taso_graphs.hpp: relu
// fused into the convs, no batchnorm, no biases; nasrnn_taso is nasrnn itself), the graphs
// Tensat's published T4 figures were measured on; each row carries that figure (tensat_t4_speedup,
// null for ResNet-50, which Tensat did not measure) and each row's gain over the model after the
// standard fusions alone (gain_over_standard).
// Two measures of one improvement: `gain` is 1 - after / before (the share of the cost removed);
// `speedup` is before / after - 1, Tensat's "speedup percentage" (its analysis/stats.py plots
// (original / optimized - 1) x 100), the measure its published figures are in. A row is compared
// with Tensat's by speedup: a 47.4 % gain is a 90.2 % speedup.
// --cost-table FILE (a goopt.cost_table of op times, e.g. benchmarks/data/h200_torch_cuda_graph.cost_table.json,
// measured on an H200 by tools/gpu/torch_runtime.py): one more row per model and search, costed by the
// table (what it lacks by --table-device's roofline scaled by the table's error, as goopt superopt
// --cost-table does), its device the table's machine; the row adds the table's coverage of the graph
// before and after (measured_configs_*, configs_*) and the environment it was measured in.

#include "benchmark_main.hpp"

#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/cost_table_json.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/models/bert.hpp>
#include <goopt/models/inception_v3.hpp>
#include <goopt/models/nasnet_a.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/resnet.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/models/taso_graphs.hpp>
#include <goopt/subst.hpp>
#if defined(GOOPT_HAS_CBC)
#include <goopt/subst/search/ilp_extraction.hpp>
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace goopt;

/// FLOPs of one interpreter run of `g` (its ops' own count).
double interpreter_flops(const graph::computation_graph& g) {
    double f = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) f += g.flops(o);
    return f;
}

/// A model at the benchmark's setting and a small instance of it for the interpreter check.
struct workload {
    std::string name;
    std::function<graph::computation_graph()> full;
    std::function<graph::computation_graph()> small;
    /// Tensat's published T4 speedup (MLSys'21: original / optimized - 1), where it has one
    std::optional<double> tensat_t4_speedup = {};
};

/// Tensat's published speedup as the table prints it ("-" where it has none: its figures are T4 ones).
std::string tensat_column(const std::optional<double>& speedup) {
    if (!speedup) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", 100 * *speedup);
    return text;
}

std::vector<workload> workloads() {
    using namespace goopt::models;
    return {
        {"resnext50", [] { return resnext50(); },
         [] {
             return resnext50({.image = 32, .num_classes = 10, .blocks = {1, 1, 1, 1}});
         },
         0.088},
        {"nasnet_a", [] { return nasnet_a(); },
         [] { return nasnet_a({.channels = 8, .image = 8, .stacks = 1, .cells = 1, .num_classes = 10}); }, 0.073},
        {"nasrnn", [] { return nasrnn(); }, [] { return nasrnn(); }, 0.689},
        {"bert",
         [] {
             return bert(
                 {.batch = 16, .seq_length = 64, .layers = 8, .hidden = 1024, .heads = 16, .intermediate = 4096});
         },
         [] {
             return bert({.batch = 2,
                          .seq_length = 8,
                          .layers = 2,
                          .hidden = 32,
                          .heads = 4,
                          .intermediate = 64,
                          .vocab = 50,
                          .max_positions = 16});
         },
         0.092},
        {"inception_v3", [] { return inception_v3(); },
         [] { return inception_v3({.image = 75, .num_classes = 10, .channel_divisor = 8}); }, 0.100},
        {"squeezenet", [] { return squeezenet(); },
         [] { return squeezenet({.image = 35, .num_classes = 10, .channel_divisor = 4}); }, 0.245},
        {"resnet50", [] { return resnet50(); },
         [] {
             return resnet50({.image = 32, .num_classes = 10, .blocks = {1, 1, 1, 1}});
         }},
        // the same models as TASO's files build them (models/taso_graphs.hpp), the graphs Tensat measured
        {"resnext50_taso", [] { return resnext50_taso(); },
         [] {
             return resnext50_taso({.image = 32, .blocks = {1, 1, 1, 1}, .width = 32});
         },
         0.088},
        {"nasnet_a_taso", [] { return nasnet_a_taso(); },
         [] { return nasnet_a_taso({.image = 32, .channels = 8, .stacks = 1, .cells = 1}); }, 0.073},
        {"nasrnn_taso", [] { return nasrnn(); }, [] { return nasrnn(); }, 0.689},
        {"bert_taso", [] { return bert_taso(); },
         [] { return bert_taso({.batch = 2, .seq_length = 8, .hidden = 32, .heads = 4, .layers = 2}); }, 0.092},
        {"inception_v3_taso", [] { return inception_v3_taso(); },
         [] { return inception_v3_taso({.image = 75, .channel_divisor = 8}); }, 0.100},
        // Tensat's own file of it (binary joins, its pools): the graph its 10.0 % was measured on
        {"inception_v3_tensat", [] { return inception_v3_tensat(); },
         [] { return inception_v3_tensat({.image = 75, .channel_divisor = 8}); }, 0.100},
        {"resnet50_taso", [] { return resnet50_taso(); },
         [] {
             return resnet50_taso({.image = 8, .blocks = {1, 1, 1, 1}, .width = 8});
         }},
    };
}

/// A search of the benchmark: greedy, taso, eqsat, or eqsat with the ILP extraction (eqsat-ilp).
struct search_choice {
    std::string name;
    bool ilp = false;
};

search_choice parse_search(const std::string& name) {
    if (name == "eqsat-ilp") {
#if defined(GOOPT_HAS_CBC)
        return {name, true};
#else
        throw error("flag --search", "'eqsat-ilp': this build has no CBC (goopt::cbc)",
                    "taso, eqsat or greedy, or a build with coinor-libcbc-dev");
#endif
    }
    if (name != "greedy" && name != "taso" && name != "eqsat")
        throw error("flag --search", concat("'", name, "'"), "taso, eqsat, greedy or eqsat-ilp");
    return {name, false};
}

/// --ilp-cycles: part, cuts or order (ilp_config's acyclic_part / order_every_class).
struct ilp_cycles {
    bool acyclic_part = true, order_every_class = false;
};

ilp_cycles parse_ilp_cycles(const std::string& v) {
    if (v == "part") return {};
    if (v == "cuts") return {false, false};
    if (v == "order") return {false, true};
    throw error("flag --ilp-cycles", concat("'", v, "'"), "part, cuts or order");
}

#if defined(GOOPT_HAS_CBC)
using ilp_report = subst::ilp_report;
#else
struct ilp_report {};  // this build has no ILP: no search is eqsat-ilp (parse_search)
#endif

/// The ILP solver of an eqsat-ilp search (none for the others); `report`, when given, gets what it did.
subst::extraction_solver ilp_solver(const search_choice& method, double seconds, ilp_cycles cycles,
                                    const std::shared_ptr<ilp_report>& report) {
#if defined(GOOPT_HAS_CBC)
    // the ILP gets what the eqsat deadline leaves, so the whole search stays within `seconds`
    if (method.ilp)
        return subst::cbc_extraction(
            {.seconds = seconds, .acyclic_part = cycles.acyclic_part, .order_every_class = cycles.order_every_class},
            report);
#else
    (void)method, (void)seconds, (void)cycles, (void)report;
#endif
    return {};
}

/// The search `method` names on `g`, within the benchmark's opt-in time limit (`seconds`, 0: none)
/// and TASO's expansion budget; its result with the bound as its name.
template <class Cost, class Device>
subst::search_result<std::string_view> search(const graph::computation_graph& g, const std::vector<subst::rule>& rules,
                                              const Cost& cost, const Device& d, const search_choice& method,
                                              double seconds, std::size_t budget,
                                              const subst::extraction_solver& final_solver) {
    const subst::rewrite_space space{.seconds = seconds};
    if (method.name == "greedy") return subst::named(subst::optimize(g, rules, cost, d, space, subst::greedy_method{}));
    if (method.name == "taso")
        return subst::named(
            subst::optimize(g, rules, cost, d, space, subst::taso_method{{.alpha = 1.0, .budget = budget}}));
    return subst::named(subst::optimize(g, rules, cost, d, space, subst::eqsat_method{{.final_solver = final_solver}}));
}

int run(int argc, char** argv) {
    std::string out, rules_file;
#if defined(GOOPT_RULES_FILE)
    rules_file = GOOPT_RULES_FILE;
#endif
    double seconds = 10;
    std::size_t budget = 100;
    double check_flops = 2e9;
    std::vector<std::string> only;
    std::vector<std::string> search_names;
    std::string cycles_name = "part";
    std::string table_file, table_device = "H100";
    bench::command_line cli("superopt",
                            "The substitution searches on TASO's inference workloads, side by side: cost before and "
                            "after on T4 and V100, search time, the bound hit, rewrites applied, and the "
                            "interpreter's check of each result.");
    cli.add_option("--out", out, "Write the rows as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_option("--rules", rules_file, "The rule library (default: this build's share/goopt/taso_rules_k3.json)")
        ->type_name("FILE");
    cli.add_option("--seconds", seconds,
                   "Opt-in wall-time limit of each search (eqsat-ilp: its ILP included); 0: none, only the "
                   "searches' count budgets")
        ->transform(bench::non_negative_real())
        ->type_name("SECONDS")
        ->capture_default_str();
    cli.add_option("--budget", budget, "TASO's search budget")->transform(bench::count())->capture_default_str();
    cli.add_option("--check-flops", check_flops,
                   "Check a full-size result on the interpreter when the model's FLOPs are at most this (else only "
                   "the small instance's, marked '*')")
        ->transform(bench::non_negative_real())
        ->capture_default_str();
    cli.add_option("--model", only, "A model of this benchmark (repeatable; default: all)")
        ->allow_extra_args(false)
        ->type_name("NAME");
    cli.add_option("--search", search_names,
                   "A search (repeatable; default: taso and eqsat); eqsat-ilp: eqsat whose final extraction goes on "
                   "with Tensat's ILP, solved by CBC (only in a build with goopt::cbc)")
        ->allow_extra_args(false)
        ->check(CLI::IsMember({"taso", "eqsat", "greedy", "eqsat-ilp"}))
        ->type_name("NAME");
    cli.add_option("--ilp-cycles", cycles_name,
                   "How the ILP keeps cycles out: part, an acyclic part of the e-graph; cuts, lazy cycle cuts; "
                   "order, Tensat's order variables for every class")
        ->check(CLI::IsMember({"part", "cuts", "order"}))
        ->capture_default_str();
    cli.add_option("--cost-table", table_file,
                   "Add a row per model and search costed by this table of measured op times (goopt.cost_table; "
                   "e.g. benchmarks/data/h200_torch_cuda_graph.cost_table.json)")
        ->type_name("FILE");
    cli.add_option("--table-device", table_device,
                   "With --cost-table: the preset whose roofline, scaled by the table's error, costs what the "
                   "table lacks")
        ->capture_default_str();
    if (!cli.parse_flags(argc, argv)) return 0;
    const auto fallback_preset = device::find_preset(table_device);
    if (!fallback_preset)
        throw error("flag --table-device", concat("unknown device '", table_device, "'"), "a preset name");
    std::optional<cost::cost_table> table;
    if (!table_file.empty()) table = io::read_measured_table_file(table_file);
    std::vector<search_choice> methods;
    for (const auto& name : search_names) methods.push_back(parse_search(name));
    const ilp_cycles cycles = parse_ilp_cycles(cycles_name);
    if (rules_file.empty())
        throw error("flag --rules", "no rule file", "--rules FILE (share/goopt/taso_rules_k3.json)");
    const auto rules = io::read_rules_file(rules_file);
    if (methods.empty()) methods = {parse_search("taso"), parse_search("eqsat")};
    auto models = workloads();
    for (const auto& name : only) {
        bool known = false;
        for (const auto& w : models) known = known || w.name == name;
        if (!known) throw error("flag --model", concat("unknown model '", name, "'"), "a model of this benchmark");
    }

    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::printf("%-13s %-5s %-9s %6s %6s %10s %10s %7s %8s %8s %10s %7s %8s %-12s %6s %10s\n", "model", "dev", "search",
                "ops", "after", "before_ms", "after_ms", "gain", "speedup", "tensat", "std_ms", "vs_std", "seconds",
                "bound", "rules", "max_rel");
    for (const auto& w : models) {
        if (!only.empty() && std::find(only.begin(), only.end(), w.name) == only.end()) continue;
        const auto g = w.full();
        const auto small = w.small();
        // the standard fusions alone (batchnorm fold, bias and activation epilogues: what a runtime
        // does without any search), the baseline of each row's gain_over_standard
        const auto fused = subst::standard_fusions(g);
        // `cost_of(graph)`: the row's cost model for a search from that graph (the roofline, or the
        // table's model fitted on that graph, `by_table`)
        auto row = [&](const auto& device, std::string_view device_name, const auto& cost_of, bool by_table) {
            const auto model = cost_of(g);  // fitted once per row: every search of the row starts from g
            const double standard = subst::inference_cost(fused, model, device);
            for (const auto& method : methods) {
                const std::string& method_name = method.name;
                const auto report = method.ilp ? std::make_shared<ilp_report>() : nullptr;
                const auto r = search(g, rules, model, device, method, seconds, budget,
                                      ilp_solver(method, seconds, cycles, report));
                graph::validate(r.graph);
                // the full-size result on the interpreter where that is affordable; else only a
                // separate search's result on the model's small instance, named as such
                std::optional<double> diff;
                if (interpreter_flops(g) <= check_flops) diff = subst::max_relative_difference(g, r.graph, 2019);
                const auto rs = search(small, rules, cost_of(small), device, method, seconds, budget,
                                       ilp_solver(method, seconds, cycles, nullptr));
                graph::validate(rs.graph);
                const double small_diff = subst::max_relative_difference(small, rs.graph, 2019);
                const double gain = 1 - r.stats.cost_after / r.stats.cost_before;
                const double speedup = r.stats.cost_before / r.stats.cost_after - 1;
                const double over_standard = 1 - r.stats.cost_after / standard;
                rows.push_back({{"model", w.name},
                                {"device", device_name},
                                {"ops_before", subst::inference_ops(g)},
                                {"ops_after", subst::inference_ops(r.graph)},
                                {"cost_before_ms", r.stats.cost_before * 1e3},
                                {"cost_after_ms", r.stats.cost_after * 1e3},
                                {"gain", gain},
                                {"standard_fusions_cost_ms", standard * 1e3},
                                {"gain_over_standard", over_standard},
                                {"speedup", speedup},
                                {"tensat_t4_speedup", w.tensat_t4_speedup ? nlohmann::ordered_json(*w.tensat_t4_speedup)
                                                                          : nlohmann::ordered_json()},
                                {"search", method_name},
                                {"seconds", r.stats.seconds},
                                {"bound_hit", std::string(r.stats.bound)},
                                {"rules_applied", r.stats.rules_applied},
                                {"max_rel_diff", diff ? nlohmann::ordered_json(*diff) : nlohmann::ordered_json()},
                                {"max_rel_diff_small_instance", small_diff}});
                if (by_table) {
                    const auto before = cost::coverage(*table, g, subst::runs_per_inference(g));
                    const auto after = cost::coverage(*table, r.graph, subst::runs_per_inference(r.graph));
                    auto& last = rows.back();
                    last["cost_table"] = {{"file", table_file},
                                          {"runtime", table->environment.runtime},
                                          {"version", table->environment.runtime_version},
                                          {"machine", table->environment.cpu},
                                          {"fallback_device", table_device}};
                    last["measured_configs_before"] = before.measured_configs;
                    last["configs_before"] = before.configs;
                    last["measured_configs_after"] = after.measured_configs;
                    last["configs_after"] = after.configs;
                    std::printf("  table: %zu of %zu op configurations measured before, %zu of %zu after\n",
                                before.measured_configs, before.configs, after.measured_configs, after.configs);
                }
                std::printf(
                    "%-13s %-5s %-9s %6zu %6zu %10.4f %10.4f %6.2f%% %7.2f%% %8s %10.4f %6.2f%% %8.3f %-12s %6zu "
                    "%10.2e%s\n",
                    w.name.c_str(), std::string(device_name).c_str(), method_name.c_str(), subst::inference_ops(g),
                    subst::inference_ops(r.graph), r.stats.cost_before * 1e3, r.stats.cost_after * 1e3, 100 * gain,
                    100 * speedup, tensat_column(device_name == "T4" ? w.tensat_t4_speedup : std::nullopt).c_str(),
                    standard * 1e3, 100 * over_standard, r.stats.seconds, std::string(r.stats.bound).c_str(),
                    r.stats.rules_applied, diff ? *diff : small_diff, diff ? "" : "*");
                std::fflush(stdout);
#if defined(GOOPT_HAS_CBC)
                if (report) {
                    // what the ILP did in the final extraction (0 solves: no time was left for it)
                    rows.back()["ilp"] = {{"solves", report->solves},
                                          {"variables", report->variables},
                                          {"constraints", report->constraints},
                                          {"found", report->found},
                                          {"optimal", report->optimal},
                                          {"time_limit", report->time_limit},
                                          {"lower_bound_ms", report->lower_bound * 1e3},
                                          {"seconds", report->seconds}};
                    std::printf("  ilp: %zu solves, %zu variables, %zu rows, %s, lower bound %.4f ms, %.2f s\n",
                                report->solves, report->variables, report->constraints,
                                !report->found    ? "no acyclic solution"
                                : report->optimal ? "proven optimal"
                                                  : "time limit",
                                report->lower_bound * 1e3, report->seconds);
                    std::fflush(stdout);
                }
#endif
            }
        };
        const auto roofline = [](const graph::computation_graph&) { return cost::roofline_model{}; };
        row(device::t4, "T4", roofline, false);
        row(device::v100, "V100", roofline, false);
        if (table) {
            const auto fallback = device::describe(*fallback_preset);
            const auto measured = [&](const graph::computation_graph& from) {
                return cost::unbiased_model(*table, from, subst::runs_per_inference(from), fallback);
            };
            row(fallback, table->environment.cpu, measured, true);
        }
    }
    if (!out.empty()) bench::write_results(out, rows.dump(1) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return goopt::bench::run_main("superopt", [&] { return run(argc, argv); });
}
