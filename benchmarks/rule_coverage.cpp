// How much of the rule library applies to real models: for every zoo inference graph and every ONNX
// test model, each rule (in both directions) is matched, and every match is applied alone; a match
// is applied when the rule is proven at the matched shapes and its target builds, refused otherwise.
// Each applied rewrite is evaluated in double on the interpreter and compared with the original.
//
//   build/benchmarks/rule_coverage [--rules FILE] [--out FILE] [--only NAME] [--limit N] [--list]
//
// --list also prints, per model, each rule applied with its count (stderr).
// --rules: the rule file (default: the library's, io::default_rules_file()); --limit: matches tried
// per rule and model (default 16). Writes a JSON list (atomically) of {"model", "ops",
// "rules_matching", "matches", "applied", "refused", "max_rel_diff", "match_ms", "apply_ms",
// "us_per_rule", "refusals"}: rules_matching counts rules (a rule and its reverse apart) with a
// match; max_rel_diff is the largest |after - before| / max(1, |before|) over the elements of every
// graph output, after each applied rewrite alone; match_ms and apply_ms total the time of
// find_matches over all rules and of apply (proof at the matched shapes included) over all matches;
// refusals counts the reasons of the refused matches.
#include "benchmark_main.hpp"

#include <goopt/goopt.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/models.hpp>
#include <goopt/subst.hpp>
#if defined(GOOPT_HAS_ONNX)
#include <goopt/io/onnx.hpp>
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

using namespace goopt;

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// The rewritten graph evaluated in double, reusing the original's value of every op that is a copy
/// (same name, kind and attributes) reading unchanged values; the rest (the target's ops and what
/// depends on them) is computed, until a recomputed copy's value is bit for bit the original's.
/// @return the largest relative output difference.
double rewritten_difference(const graph::computation_graph& before, const std::vector<interp::value<double>>& values,
                            const graph::computation_graph& after) {
    std::unordered_map<std::string, graph::op_id> by_name;
    for (graph::op_id o = 0; o < before.num_ops(); ++o) by_name.emplace(before.get_op(o).name, o);
    std::vector<interp::value<double>> own(after.num_tensors());
    std::vector<const interp::value<double>*> at(after.num_tensors(), nullptr);  // the value of each tensor
    std::vector<graph::tensor_id> same(after.num_tensors(), UINT32_MAX);         // original tensor with that value
    std::vector<const interp::value<double>*> args;
    for (const std::size_t i : graph::topological_order(after)) {
        const auto o = static_cast<graph::op_id>(i);
        const auto& op = after.get_op(o);
        const auto it = by_name.find(op.name);
        const bool counterpart = it != by_name.end() && before.get_op(it->second).kind == op.kind &&
                                 before.get_op(it->second).attrs == op.attrs &&
                                 before.get_op(it->second).inputs.size() == op.inputs.size();
        bool copy = counterpart;
        for (std::size_t k = 0; copy && k < op.inputs.size(); ++k)
            copy = same[op.inputs[k]] == before.get_op(it->second).inputs[k];
        if (copy) {
            const auto& src = before.get_op(it->second);
            for (std::size_t k = 0; k < op.outputs.size(); ++k) {
                same[op.outputs[k]] = src.outputs[k];
                at[op.outputs[k]] = &values[src.outputs[k]];
            }
            continue;
        }
        if (op.kind == ops::op_kind::input || op.kind == ops::op_kind::weight || op.kind == ops::op_kind::constant)
            throw error("rewritten graph", concat("source op ", after.describe(o), " is not in the original"));
        args.clear();
        for (auto t : op.inputs) args.push_back(at[t]);
        auto out = interp::evaluate_op<double>(after, o, args);
        for (std::size_t k = 0; k < out.size(); ++k) {
            // a recomputed op whose value is bit for bit the original's: what depends on it is unchanged
            if (counterpart) {
                const auto& orig = values[before.get_op(it->second).outputs[k]];
                if (orig.shape() == out[k].shape() && std::equal(orig.begin(), orig.end(), out[k].begin())) {
                    same[op.outputs[k]] = before.get_op(it->second).outputs[k];
                    at[op.outputs[k]] = &orig;
                    continue;
                }
            }
            own[op.outputs[k]] = std::move(out[k]);
            at[op.outputs[k]] = &own[op.outputs[k]];
        }
    }
    double worst = 0;
    for (std::size_t k = 0; k < after.outputs().size(); ++k) {
        const auto& a = values[before.outputs()[k]];
        const auto& b = *at[after.outputs()[k]];
        if (a.size() != b.size()) return INFINITY;
        for (std::size_t e = 0; e < a.size(); ++e)
            worst = std::max(worst, std::abs(a.data()[e] - b.data()[e]) / std::max(1.0, std::abs(a.data()[e])));
    }
    return worst;
}

/// The first words of a refusal, so that reasons of the same kind are counted together.
std::string reason_kind(const std::string& what) {
    const auto at = what.find("not applied at this match: ");
    std::string r = at == std::string::npos ? what : what.substr(at + 27);
    if (const auto p = r.find(" ("); p != std::string::npos) r = r.substr(0, p);
    if (const auto p = r.find(": "); p != std::string::npos) r = r.substr(0, p);
    return r;
}

struct model {
    std::string name;
    graph::computation_graph graph;
};

int run(int argc, char** argv) {
    std::string rules_file, out = "rule_coverage.json", only;
    std::size_t limit = 16;
    bool list = false;
    bench::command_line cli("rule_coverage",
                            "How much of the rule library applies to real models: every rule (both directions) "
                            "matched on every zoo inference graph and ONNX test model, every match applied alone "
                            "and checked on the interpreter.");
    cli.add_option("--rules", rules_file, "The rule file (default: the library's, io::default_rules_file())")
        ->type_name("FILE");
    cli.add_option("--out", out, "Write the table as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file())
        ->capture_default_str();
    cli.add_option("--only", only, "One model (a zoo name or onnx:<file stem>; default: all)")->type_name("NAME");
    cli.add_option("--limit", limit, "Matches tried per rule and model")
        ->transform(bench::count(1, 1000000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_flag("--list", list, "Also print, per model, each rule applied with its count (stderr)");
    if (!cli.parse_flags(argc, argv)) return 0;
    if (rules_file.empty()) rules_file = io::default_rules_file().string();
    const auto stored = io::read_rules_file(rules_file);
    const auto rules = subst::both_directions(stored);
    std::fprintf(stderr, "%zu rules from %s, %zu with their reverses\n", stored.size(), rules_file.c_str(),
                 rules.size());

    std::vector<model> models;
    for (const auto& e : models::taso_workloads())
        if (only.empty() || only == e.name) models.push_back({e.name, e.build()});
#if defined(GOOPT_HAS_ONNX)
    const std::filesystem::path onnx_dir = GOOPT_ONNX_TEST_DIR;
    std::vector<std::filesystem::path> files;
    for (const auto& f : std::filesystem::directory_iterator(onnx_dir))
        if (f.path().extension() == ".onnx") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        const std::string name = "onnx:" + f.stem().string();
        if (!only.empty() && only != name) continue;
        try {
            models.push_back({name, io::import_onnx(f).graph});
        } catch (const error& e) {
            std::fprintf(stderr, "%s: not imported (%s)\n", name.c_str(), e.what());  // the bad-input test models
        }
    }
#endif
    if (models.empty()) throw error("flag --only", concat("no such model '", only, "'"), "a model of the zoo");

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf("%-28s %6s %8s %8s %8s %8s %12s %10s %10s\n", "model", "ops", "matching", "matches", "applied",
                "refused", "max_rel_diff", "match_ms", "apply_ms");
    for (const auto& [name, g] : models) {
        std::mt19937_64 rng(2019);
        const auto values = interp::evaluate<double>(g, interp::random_feeds<double>(g, rng));
        subst::soundness_cache cache;
        std::size_t matching = 0, matches = 0, applied = 0, refused = 0;
        double max_diff = 0, match_ms = 0, apply_ms = 0;
        std::map<std::string, std::size_t> refusals, applied_rules;
        for (const auto& r : rules) {
            auto t0 = clock_type::now();
            const auto ms = subst::find_matches(g, r, limit);
            match_ms += ms_since(t0);
            if (ms.empty()) continue;
            ++matching;
            matches += ms.size();
            for (const auto& m : ms) {
                t0 = clock_type::now();
                try {
                    const auto h = subst::apply(g, r, m, {.cache = &cache});
                    apply_ms += ms_since(t0);
                    graph::validate(h);
                    ++applied;
                    if (list) ++applied_rules[subst::to_string(r)];
                    max_diff = std::max(max_diff, rewritten_difference(g, values, h));
                } catch (const error& e) {
                    apply_ms += ms_since(t0);
                    ++refused;
                    ++refusals[reason_kind(e.what())];
                }
            }
        }
        std::printf("%-28s %6zu %8zu %8zu %8zu %8zu %12.3g %10.1f %10.1f\n", name.c_str(), g.num_ops(), matching,
                    matches, applied, refused, max_diff, match_ms, apply_ms);
        std::fflush(stdout);
        for (const auto& [text, n] : applied_rules) std::fprintf(stderr, "  %4zu x %s\n", n, text.c_str());
        nlohmann::ordered_json why = nlohmann::ordered_json::object();
        for (const auto& [k, n] : refusals) why[k] = n;
        results.push_back({{"model", name},
                           {"ops", g.num_ops()},
                           {"rules_matching", matching},
                           {"matches", matches},
                           {"applied", applied},
                           {"refused", refused},
                           {"max_rel_diff", max_diff},
                           {"match_ms", match_ms},
                           {"apply_ms", apply_ms},
                           {"us_per_rule", 1000.0 * (match_ms + apply_ms) / static_cast<double>(rules.size())},
                           {"refusals", why}});
    }
    bench::write_results(out, results.dump(2) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("rule_coverage", [&] { return run(argc, argv); });
}
