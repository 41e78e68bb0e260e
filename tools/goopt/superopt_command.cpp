// `goopt superopt`: substitution search alone (TASO SOSP'19, TENSAT MLSys'21). A graph and a rule
// library in, the cheapest equivalent graph the search finds out, costed by the roofline model of
// one device preset; the result is checked on the interpreter against the original where that is
// cheap enough.
#include "cli.hpp"

#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/recording_model.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/cost_table_json.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/subst/rewriting/builtin_rules.hpp>
#include <goopt/subst/rewriting/equivalence.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search/eqsat_search.hpp>
#include <goopt/subst/search/optimize.hpp>
#include <goopt/subst/search/taso_search.hpp>
#if defined(GOOPT_PROGRAM_HAS_CBC)
#include <goopt/subst/search/ilp_extraction.hpp>
#endif

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>

namespace goopt::cli {

namespace {

struct superopt_flags {
    graph_source source;
    std::string rules, device = "V100", method = "greedy", out, format;
    double seconds = 0;  // opt-in: the searches' count budgets alone make the result reproducible
    double check_flops = 2e9;
    bool quiet = false;
    bool ilp = false;
    cost_table_flags measured;  // --cost-table (calibrate_command.cpp)
    std::int64_t calibrate_rounds =
        0;                // --calibrate-rounds: measure the result's unmeasured configurations, search again
    double min_gain = 0;  // --min-gain: a result predicted to gain less is not worth a slowdown's risk
    // --runtime-gate: a result onnxruntime does not run at least this much faster is not written
    std::optional<double> runtime_gate;
    std::int64_t gate_rounds = 30;  // --runtime-gate-rounds
    bool device_given = false;      // with --cost-table the fallback's device is the CPU unless --device names one
    // --explain and --disable-rule (issue #26): which rewrites made the result, and leaving rules out
    bool explain = false;
    std::vector<std::string> disabled;
};

// ---- --explain and --disable-rule ----

/// The built-in rule families (subst::builtin_options), as --disable-rule names them.
struct builtin_family {
    std::string_view name;
    bool subst::builtin_options::*enabled;
};
constexpr std::array<builtin_family, 14> builtin_families{{
    {"activation_fusion", &subst::builtin_options::activation_fusion},
    {"batchnorm_fold", &subst::builtin_options::batchnorm_fold},
    {"addend_fusion", &subst::builtin_options::addend_fusion},
    {"merge_convs", &subst::builtin_options::merge_convs},
    {"sum_convs", &subst::builtin_options::sum_convs},
    {"merge_matmuls", &subst::builtin_options::merge_matmuls},
    {"batch_matmuls", &subst::builtin_options::batch_matmuls},
    {"merge_elementwise", &subst::builtin_options::merge_elementwise},
    {"split_elementwise", &subst::builtin_options::split_elementwise},
    {"concat_of_split", &subst::builtin_options::concat_of_split},
    {"flatten_concats", &subst::builtin_options::flatten_concats},
    {"pool_conv_commute", &subst::builtin_options::pool_conv_commute},
    {"identity_pool", &subst::builtin_options::identity_pool},
    {"sum_of_products", &subst::builtin_options::sum_of_products},
}};

/// Leaves out of `rules` (the rule file's, in its order) and `builtins` what each --disable-rule ID
/// names: a rule's index in the file (both directions of it) or a built-in family.
std::vector<subst::rule> without_disabled(const std::vector<subst::rule>& rules, const std::vector<std::string>& ids,
                                          subst::builtin_options& builtins) {
    std::vector<bool> off(rules.size(), false);
    for (const auto& id : ids) {
        const bool index = !id.empty() && id.find_first_not_of("0123456789") == std::string::npos;
        if (index && id.size() < 10 && std::stoull(id) < rules.size()) {
            off[std::stoull(id)] = true;
            continue;
        }
        const auto* family = std::find_if(builtin_families.begin(), builtin_families.end(),
                                          [&](const builtin_family& f) { return f.name == id; });
        if (family != builtin_families.end()) {
            builtins.*(family->enabled) = false;
            continue;
        }
        std::string names;
        for (const auto& f : builtin_families) names += concat(names.empty() ? "" : ", ", f.name);
        throw error("--disable-rule",
                    concat("'", id, "'", index ? concat(": the rule file has ", rules.size(), " rules") : ""),
                    concat("a rule's index in the rule file (0-", rules.size() - 1,
                           ", as --explain shows it) or a built-in family (", names, ")"));
    }
    std::vector<subst::rule> kept;
    for (std::size_t i = 0; i < rules.size(); ++i)
        if (!off[i]) kept.push_back(rules[i]);
    return kept;
}

/// Prints the rewrites between the input and the result, in order: the rule's ID (its index in
/// the rule file, or "built-in"), its text, and where the search records it, the ops it rewrote and
/// the cost before and after.
template <class Stats> void explain(const Stats& s, const std::vector<subst::rule>& rules) {
    std::map<std::string, std::size_t, std::less<>> index;  // a rule's text, either way round -> its index
    for (std::size_t i = 0; i < rules.size(); ++i) {
        index.emplace(subst::to_string(rules[i]), i);
        if (auto rev = subst::reversed(rules[i])) index.emplace(subst::to_string(*rev), i);
    }
    std::printf("rewrites applied (%zu)%s:\n", s.applied.size(),
                s.sites.empty() && !s.applied.empty()
                    ? ", rules only (where and the cost change are recorded by the greedy search)"
                    : "");
    for (std::size_t k = 0; k < s.applied.size(); ++k) {
        const auto it = index.find(s.applied[k]);
        const std::string id = it == index.end() ? std::string("built-in") : concat("rule ", it->second);
        std::printf("%4zu  %-10s %s\n", k + 1, id.c_str(), s.applied[k].c_str());
        if (k < s.sites.size()) {
            const auto& site = s.sites[k];
            std::printf("      at %s: %s -> %s\n", site.where.c_str(), format_seconds(site.cost_before).c_str(),
                        format_seconds(site.cost_after).c_str());
        }
    }
}

/// The rewrites a result took, on one line: each rule of the rule file by its ID and text, and how
/// many built-in ones, for the message that refuses a result whose interpreter check fails.
template <class Stats> std::string applied_rules(const Stats& s, const std::vector<subst::rule>& rules) {
    std::map<std::string, std::size_t, std::less<>> index;  // as explain() finds them
    for (std::size_t i = 0; i < rules.size(); ++i) {
        index.emplace(subst::to_string(rules[i]), i);
        if (auto rev = subst::reversed(rules[i])) index.emplace(subst::to_string(*rev), i);
    }
    std::map<std::size_t, std::size_t> from_file;  // rule index -> times applied
    std::size_t builtin = 0;
    for (const auto& text : s.applied) {
        const auto it = index.find(text);
        if (it == index.end()) ++builtin;
        else ++from_file[it->second];
    }
    std::string r = concat(s.applied.size(), " rewrites (");
    bool first = true;
    for (const auto& [i, times] : from_file) {
        r += concat(first ? "" : "; ", "rule ", i, " '", subst::to_string(rules[i]), "'",
                    times > 1 ? concat(" x", times) : "");
        first = false;
    }
    if (builtin > 0) r += concat(first ? "" : "; ", builtin, " built-in");
    return r + ")";
}

double total_flops(const graph::computation_graph& g) {
    double flops = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v) flops += g.flops(v);
    return flops;
}

/// The rule file to read: --rules, else the default library; a missing one says how to make it.
std::filesystem::path rules_path(const superopt_flags& f) {
    std::filesystem::path path;
    if (!f.rules.empty()) path = f.rules;
    else {
        try {
            path = io::default_rules_file();
        } catch (const error&) {
            throw error("goopt superopt", "no rule library in this build",
                        "--rules FILE (make one with 'goopt generate-rules --out rules.json')");
        }
    }
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw error("goopt superopt", concat("no rule file at ", path.string()),
                    "--rules FILE (make one with 'goopt generate-rules --out rules.json')");
    return path;
}

/// The table of --cost-table; with --calibrate-rounds a missing file is a new table of this machine
/// (the default repetitions and statistic of 'goopt calibrate'), and a foreign one is refused even
/// with --accept-foreign-table (this machine's times would be added to it).
std::optional<cost::cost_table> load_table(const superopt_flags& f) {
    if (f.calibrate_rounds == 0) return load_cost_table(f.measured);
    if (f.measured.file.empty())
        throw error("--calibrate-rounds", "without --cost-table", "--cost-table FILE (the table the rounds grow)");
    const auto here =
        measuring_environment({.ort_dir = f.measured.ort_dir, .measurer = f.measured.measurer}, f.measured.threads);
    std::error_code ec;
    if (!std::filesystem::exists(f.measured.file, ec))
        return cost::cost_table{.environment = here, .repetitions = 30, .statistic = "median"};
    auto table = io::read_measured_table_file(f.measured.file);
    cost::check_environment(f.measured.file, table.environment, here, false);
    return table;
}

/// --runtime-gate G: the result and the input, both as the export writes them, timed in onnxruntime
/// in interleaved rounds; a result that does not gain at least G in three rounds of four (the
/// per-round gains' lower quartile) is not kept (the input is handed on: noise alone, wide on a busy
/// machine or a sub-millisecond model, then keeps the input), one whose outputs differ from the input's by more than
/// 1e-4 stops the run. The cost models (the roofline, a table of single ops) cannot see the runtime's own fusions of
/// the input, so a predicted gain can be a measured loss (docs/cost.md).
template <class Result> void runtime_gate(const superopt_flags& f, const graph_with_origin& origin, Result& r) {
    const auto& input = origin.loaded.graph;
    const auto c = compare_in_runtime(input, r.graph, origin.onnx.get(), onnx_opset(origin), f.measured.threads,
                                      f.gate_rounds, f.measured.ort_dir);
    if (!(c.max_rel_diff <= 1e-4))
        throw error("goopt superopt --runtime-gate",
                    concat("in onnxruntime the result's outputs differ from the input's by ", c.max_rel_diff,
                           " (relative)", f.out.empty() ? std::string() : concat("; ", f.out, " not written")),
                    "at most 1e-4");
    std::printf(
        "runtime gate: onnxruntime ran the result %.1f %% faster than the input in the median round, %.1f %% in "
        "the lower quartile (%zu interleaved rounds, %lld thread%s; outputs within %.2g)\n",
        100 * c.median_gain, 100 * c.lower_quartile_gain, c.rounds, static_cast<long long>(c.threads),
        c.threads == 1 ? "" : "s", c.max_rel_diff);
    if (c.lower_quartile_gain >= *f.runtime_gate) return;
    std::printf("runtime gate: %.1f %% is under --runtime-gate %.1f %%: the input is handed on\n",
                100 * c.lower_quartile_gain, 100 * *f.runtime_gate);
    r.graph = input;
    r.stats.cost_after = r.stats.cost_before;
    r.stats.rules_applied = 0;
    r.stats.applied.clear();
    r.stats.sites.clear();
}

int run_superopt(const superopt_flags& f) {
    if (f.ilp && f.method != "eqsat")
        throw error("--ilp", concat("--method ", f.method, ": the ILP extraction is equality saturation's"),
                    "--method eqsat");
#if !defined(GOOPT_PROGRAM_HAS_CBC)
    if (f.ilp) throw error("--ilp", "this goopt was built without CBC", "a build with coinor-libcbc-dev (goopt::cbc)");
#endif
    // the output's format is settled before the search, so that a bad --out fails at once
    const auto out_format = f.out.empty() ? graph_file_format::json : output_format(f.out, f.format);
    if (f.out.empty() && !f.format.empty()) throw error("--format", concat("'", f.format, "' without --out"), "--out");
    // measured op costs: a table of this machine, else the roofline alone (an empty table)
    auto table = load_table(f);
    const auto path = rules_path(f);
    const auto file_rules = io::read_rules_file(path);
    subst::builtin_options builtins;
    const auto rules = without_disabled(file_rules, f.disabled, builtins);
    const auto origin = load_graph_with_origin(f.source);
    const auto& input = origin.loaded;
    if (f.runtime_gate && !origin.onnx)
        throw error("--runtime-gate", "a graph not read from an ONNX file (onnxruntime runs the file's weights)",
                    "--onnx FILE.onnx");
    // the search costs single ops
    const measuring measure{.ort_dir = f.measured.ort_dir, .measurer = f.measured.measurer, .groups = false};
    // the input measured first, whatever the table holds: the result's rounds below measure only the
    // result's configurations, and an input costed by the fallback against a measured result would
    // make the search's gain a comparison of two cost models
    if (table && f.calibrate_rounds > 0) {
        const bool fresh = table->seconds.empty();
        const auto first = measure_missing(input.graph, onnx_opset(origin), *table, measure);
        if (fresh || first.measured > 0) io::write_measured_table_file(f.measured.file, *table);
        std::printf("calibrated the input: %zu op configurations measured in %.1f s (%zu already in the table)%s%s\n",
                    first.measured, first.seconds, first.already, first.measured > 0 || fresh ? ", wrote " : "",
                    first.measured > 0 || fresh ? f.measured.file.c_str() : "");
        for (const auto& n : first.not_measured) std::printf("  not measured (%s)\n", n.c_str());
    }
    const auto preset = device::find_preset(table && !f.device_given ? std::string("CPU") : f.device);
    if (!preset) throw error("--device", concat("unknown device '", f.device, "'"), "a preset name");
    const device::device_spec dev = device::describe(*preset);

    const subst::rewrite_space space{.builtins = builtins, .seconds = f.seconds};
    subst::eqsat_config eqsat;
#if defined(GOOPT_PROGRAM_HAS_CBC)
    std::shared_ptr<subst::ilp_report> ilp;
    if (f.ilp) {
        ilp = std::make_shared<subst::ilp_report>();
        eqsat.final_solver = subst::cbc_extraction({.seconds = f.seconds > 0 ? f.seconds : 10}, ilp);
    }
#endif
    progress_line progress(f.quiet);
    struct visitor {
        progress_line& line;
        bool progress(const subst::search_progress& p) {
            line.update(concat("superopt (best ", format_seconds(p.best_cost), ", ", p.graphs_seen, " graphs)"), p.step,
                        p.step, "steps");
            return true;
        }
    } v{progress};
    // the searches --method names (the library runs any subst::SubstitutionSearch); the model is
    // made again from the table each round, so that the last search is the final table's alone
    // with --calibrate-rounds the model records what the search asked and the table lacked, measured
    // before the next round (cost::recording_model): a rewrite the fallback misjudges gets measured too
    const bool calibrating = table && f.calibrate_rounds > 0;
    auto cost_model = cost::recording_model(
        cost_model_of(f.measured, table.value_or(cost::cost_table{}), input.graph, dev), calibrating);
    auto search = [&] {
        auto run = [&](const auto& method) {
            return subst::named(subst::optimize(input.graph, rules, cost_model, dev, space, method, v));
        };
        return f.method == "taso"    ? run(subst::taso_method{})
               : f.method == "eqsat" ? run(subst::eqsat_method{eqsat})
                                     : run(subst::greedy_method{});
    };
    auto r = search();
    progress.clear();
    // --calibrate-rounds: measure what the result uses and what the search asked about (its
    // candidates' configurations) that the table lacks, and search again, until the search asks for
    // nothing unmeasured (or nothing more can be measured), at most N times
    for (std::int64_t round = 1; calibrating && round <= f.calibrate_rounds; ++round) {
        const auto before = cost::coverage(*table, r.graph, subst::runs_per_inference(r.graph));
        auto asked = cost_model.unmeasured();
        std::erase_if(asked, [&](const auto& a) { return table->find(a.first).has_value(); });
        if (before.measured_configs == before.configs && asked.empty()) break;
        const auto m = measure_missing(r.graph, onnx_opset(origin), *table, measure);
        const auto c = measure_asked(asked, "the search's candidates", onnx_opset(origin), *table, measure);
        io::write_measured_table_file(f.measured.file, *table);
        std::printf(
            "calibrate round %lld: the result had %s, the search asked about %zu more; measured %zu in %.1f s, "
            "wrote %s\n",
            static_cast<long long>(round), describe_coverage(before).c_str(), c.configurations - c.already,
            m.measured + c.measured, m.seconds + c.seconds, f.measured.file.c_str());
        for (const auto& n : m.not_measured) std::printf("  not measured (%s)\n", n.c_str());
        for (const auto& n : c.not_measured) std::printf("  not measured (%s)\n", n.c_str());
        if (m.measured + c.measured == 0) break;
        cost_model = cost::recording_model(cost_model_of(f.measured, *table, input.graph, dev), true);
        r = search();
        progress.clear();
    }
    // not converged in N rounds: a last search that refuses unmeasured configurations, so that the
    // result's cost is measured (what the rounds measured is still used)
    if (const auto c = cost::coverage(table.value_or(cost::cost_table{}), r.graph, subst::runs_per_inference(r.graph));
        table && f.calibrate_rounds > 0 && f.measured.fallback != "refuse" && c.measured_configs < c.configs) {
        std::printf("not converged after %lld rounds (the result had %s): searched again with --unmeasured refuse\n",
                    static_cast<long long>(f.calibrate_rounds), describe_coverage(c).c_str());
        auto refusing = f.measured;
        refusing.fallback = "refuse";
        cost_model = cost::recording_model(cost_model_of(refusing, *table, input.graph, dev), false);
        r = search();
        progress.clear();
    }
    // never a graph costlier than the input under the model searched with (an extraction heuristic
    // can hand one on), nor one predicted to gain less than --min-gain (with it, a gain must be
    // predicted: an input the model costs 0 gains nothing): then the input itself
    const double floor = r.stats.cost_before * (1 - f.min_gain);
    if (f.min_gain > 0 ? !(r.stats.cost_after < floor) : r.stats.cost_after > r.stats.cost_before) {
        if (r.stats.cost_after > r.stats.cost_before)
            std::printf("the search's result costs %s, more than the input's %s: the input is handed on\n",
                        format_seconds(r.stats.cost_after).c_str(), format_seconds(r.stats.cost_before).c_str());
        else if (r.stats.rules_applied > 0)
            std::printf(
                "the search's result costs %s against the input's %s, a gain under --min-gain %.3g: the "
                "input is handed on\n",
                format_seconds(r.stats.cost_after).c_str(), format_seconds(r.stats.cost_before).c_str(), f.min_gain);
        r.graph = input.graph;
        r.stats.cost_after = r.stats.cost_before;
        r.stats.rules_applied = 0;
        r.stats.applied.clear();
        r.stats.sites.clear();
    }
    graph::validate(r.graph);
    const auto& s = r.stats;

    std::printf("%s: %zu rules from %s, %s search on %s, %s\n", input.name.c_str(), rules.size(), path.string().c_str(),
                f.method.c_str(), std::string(preset->label).c_str(),
                f.seconds > 0 ? ("at most " + format_seconds(f.seconds)).c_str() : "within its count budgets");
    std::printf("%-8s %8s %14s\n", "graph", "ops", "inference cost");
    std::printf("%-8s %8zu %14s\n", "before", input.graph.num_ops(), format_seconds(s.cost_before).c_str());
    std::printf("%-8s %8zu %14s\n", "after", r.graph.num_ops(), format_seconds(s.cost_after).c_str());
    std::printf("gain %.3fx (cost before / after), %zu rewrites, %zu graphs costed, %.1f s, bound: %s\n",
                // a graph that costs nothing before and after (no op that runs) is unchanged: 1x
                s.cost_after > 0    ? s.cost_before / s.cost_after
                : s.cost_before > 0 ? std::numeric_limits<double>::infinity()
                                    : 1.0,
                s.rules_applied, s.graphs_seen, s.seconds, std::string(s.bound).c_str());
    if (s.refused > 0)  // a rule of the file that does not hold at a match is never applied there
        std::printf("%zu matches refused: the rule was not proven at the matched shapes\n", s.refused);
    if (table) {  // how much of the search's costs were measured, and what the roofline alone predicts
        const auto roofline = [&](const graph::computation_graph& g) {
            return format_seconds(subst::inference_cost(g, cost::roofline_model{}, dev));
        };
        std::printf(
            "cost table %s: before: %s; after: %s; the rest by %s of the %s preset\n", f.measured.file.c_str(),
            describe_coverage(cost::coverage(*table, input.graph, subst::runs_per_inference(input.graph))).c_str(),
            describe_coverage(cost::coverage(*table, r.graph, subst::runs_per_inference(r.graph))).c_str(),
            describe_fallback(cost_model.model().fallback()).c_str(), std::string(preset->label).c_str());
        std::printf("roofline cost (%s preset): before %s, after %s\n", std::string(preset->label).c_str(),
                    roofline(input.graph).c_str(), roofline(r.graph).c_str());
    }
    if (f.explain) explain(s, file_rules);
#if defined(GOOPT_PROGRAM_HAS_CBC)
    if (ilp)
        std::printf("ilp extraction: %zu solves, %zu variables, %zu constraints, %s (lower bound %s), %.1f s\n",
                    ilp->solves, ilp->variables, ilp->constraints,
                    ilp->optimal  ? "proven optimal"
                    : ilp->found  ? "stopped at the time limit"
                    : ilp->solves ? "no acyclic solution in time"
                                  : "no time left",
                    format_seconds(ilp->lower_bound).c_str(), ilp->seconds);
#endif

    // the interpreter runs in double; graphs over the FLOP limit would take minutes
    const double flops = total_flops(input.graph);
    const std::size_t opaque = input.graph.ops_of_kind(ops::op_kind::opaque).size();
    if (opaque > 0) {  // no rule rewrote them, but the interpreter cannot run the graph
        std::printf(
            "interpreter check: skipped (%zu opaque ops: the interpreter has no kernel for them; run the "
            "exported model in onnxruntime instead)\n",
            opaque);
    } else if (f.check_flops > 0 && flops <= f.check_flops) {
        const double diff = subst::max_relative_difference(input.graph, r.graph);
        std::printf("interpreter check: max relative output difference %.3g%s\n", diff,
                    diff <= 1e-6 ? " (equivalent)" : "");
        if (!(diff <= 1e-6))  // nothing is written: a wrong rule (a user's rule file) must not reach a model
            throw error("goopt superopt",
                        concat("the optimized graph's outputs differ from the original's by ", diff,
                               " (relative), after ", applied_rules(s, file_rules),
                               f.out.empty() ? std::string() : concat("; ", f.out, " not written")),
                        "at most 1e-6 (leave a rule out with --disable-rule ID to find the wrong one; a built-in's "
                        "failure: please report this graph)");
    } else {
        std::printf("interpreter check: skipped (%.2f GFLOPs, over --check-flops %.2f GFLOPs)\n", flops * 1e-9,
                    f.check_flops * 1e-9);
    }
    if (f.runtime_gate && r.stats.rules_applied > 0) runtime_gate(f, origin, r);
    if (!f.out.empty()) write_graph_output(f.out, out_format, r.graph, origin.onnx.get(), 0, &input.graph);
    return 0;
}

}  // namespace

command add_superopt_command(CLI::App& root) {
    auto flags = std::make_shared<superopt_flags>();
    auto* app = root.add_subcommand("superopt",
                                    "Substitution search only: rewrite a graph into a cheaper equivalent one "
                                    "with a rule library, and write it");
    flags->source.add_flags(*app);
    app->add_option("--rules", flags->rules, "The rule library (default: the one of this build or installation)")
        ->type_name("FILE.json");
    std::vector<std::string> names;
    for (const auto* p : device::presets) names.emplace_back(p->label);
    app->add_option("--device", flags->device, "The device preset whose roofline cost the search minimizes")
        ->check(CLI::IsMember(names, CLI::ignore_case))
        ->capture_default_str()
        ->each([flags](const std::string&) { flags->device_given = true; });
    flags->measured.add_flags(*app);
    app->add_option("--calibrate-rounds", flags->calibrate_rounds,
                    "With --cost-table: up to N times, measure in onnxruntime the op configurations of the result "
                    "that the table lacks (first the input's: a missing table is made), add them to the "
                    "table and search again; the result is the last search's, that of the final table")
        ->check(CLI::Range(0, 100))
        ->type_name("N")
        ->capture_default_str();
    app->add_option("--min-gain", flags->min_gain,
                    "Hand on the input where the result is predicted to be less than this fraction faster (under "
                    "the model searched with: a gain under the timing noise of the table is not worth the risk "
                    "of a slowdown)")
        ->check(finite_range(0.0, 1.0))
        ->type_name("FRACTION")
        ->capture_default_str();
    app->add_option("--runtime-gate", flags->runtime_gate,
                    "With an --onnx file: time the result against the input in onnxruntime (--runtime-gate-rounds "
                    "interleaved rounds, --threads intra-op threads) and hand on the input unless the result gains at "
                    "least this fraction in three rounds of four (0: not slower; needs node and onnxruntime-node, "
                    "./bootstrap.sh ort)")
        ->check(finite_range(-1.0, 1.0))
        ->type_name("FRACTION");
    app->add_option("--runtime-gate-rounds", flags->gate_rounds,
                    "Rounds the runtime gate times (each runs both models)")
        ->check(CLI::Range(1, 100000))
        ->type_name("N")
        ->capture_default_str();
    app->add_option("--method", flags->method,
                    "The search: greedy (first improvement), taso (backtracking) or eqsat (equality saturation)")
        ->check(CLI::IsMember({"greedy", "taso", "eqsat"}))
        ->capture_default_str();
    app->add_flag("--ilp", flags->ilp,
                  "With --method eqsat: take the final extraction on with Tensat's ILP, solved by CBC, "
                  "within --time, else CBC's own 10 s (needs a build with coinor-libcbc-dev)");
    app->add_option("--time", flags->seconds,
                    "Opt-in wall-time limit of the search in seconds (0: none; the search's count budgets stop it, "
                    "so the result does not depend on the machine's speed or load)")
        ->check(finite_range(0.0, 1e6))
        ->type_name("SECONDS")
        ->capture_default_str();
    app->add_option("--check-flops", flags->check_flops,
                    "Check the result on the interpreter against the original when the graph has at most this many "
                    "FLOPs (0: never)")
        ->check(finite_range(0.0, 1e15))
        ->capture_default_str();
    app->add_option("-o,--out", flags->out,
                    "Write the optimized graph (atomically): goopt.graph JSON (.json) or ONNX (.onnx, with an --onnx "
                    "file's weights), by the extension or --format")
        ->type_name("FILE.json|FILE.onnx")
        ->check(writable_file());
    add_format_flag(*app, flags->format);
    app->add_flag("--explain", flags->explain,
                  "List the rewrites applied: each rule's index in the rule file (or built-in), its text, and with the "
                  "greedy search the ops it rewrote and the cost before and after");
    app->add_option("--disable-rule", flags->disabled,
                    "Leave a rule out of the search: its index in the rule file (both directions), as --explain "
                    "shows it, or a built-in family (activation_fusion, batchnorm_fold, addend_fusion, merge_convs, "
                    "sum_convs, merge_matmuls, batch_matmuls, merge_elementwise, split_elementwise, concat_of_split); "
                    "repeatable")
        ->type_name("ID")
        ->allow_extra_args(false);
    app->add_flag("-q,--quiet", flags->quiet, "No progress line (there is none either when stdout is not a terminal)");
    return {app, [flags] { return run_superopt(*flags); }};
}

}  // namespace goopt::cli
