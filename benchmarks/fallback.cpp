// How well each fallback of cost::measured_model predicts an op configuration nobody measured:
// leave-one-out over a measured table (goopt calibrate). Each single-op configuration the table
// measured (its key rebuilt into a graph, cost/op_config_graph.hpp) is predicted from all the others
// by (a) the plain roofline of --device, (b) the roofline x the per-kind median measured/roofline
// ratio (`--unmeasured scaled`), then the shape-aware fallbacks (cost/shape_curve.hpp): (c) a
// power-law fit per kind of the ratio against size (the roofline time without the launch), (d) the
// median ratio of the k configurations nearest in size, and each of them never below the kind's
// median, (e) and (f); (f) is `--unmeasured shape`. Per kind and overall: the median and 90th
// percentile of |ln(predicted / measured)|, and the share predicted too cheap by more than 1.5x (what a search that
// takes the cheapest candidates selects for). docs/cost.md ("Shape-aware fallback").
#include <goopt/cost/scaled_roofline.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/io/cost_table_json.hpp>

#include "benchmark_main.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace goopt;

namespace {

/// A configuration's prediction errors, ln(predicted / measured), one per method.
struct errors_of_method {
    std::string name;
    std::map<std::string, std::vector<double>> by_kind;  // kind name -> errors; "all" for every kind
};

struct error_summary {
    std::size_t n = 0;
    double median = 0, p90 = 0, too_cheap = 0;  // |ln| median and 90th percentile; share < measured/1.5
};

error_summary summarize(std::vector<double> e) {
    error_summary s;
    s.n = e.size();
    if (e.empty()) return s;
    std::size_t cheap = 0;
    for (double& x : e) {
        cheap += x < -std::log(1.5) ? 1 : 0;
        x = std::abs(x);
    }
    std::sort(e.begin(), e.end());
    s.median = e.size() % 2 ? e[e.size() / 2] : (e[e.size() / 2 - 1] + e[e.size() / 2]) / 2;
    // nearest rank: the smallest error at least 90 % of the configurations are within
    const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(e.size())));
    s.p90 = e[std::max<std::size_t>(rank, 1) - 1];
    s.too_cheap = static_cast<double>(cheap) / static_cast<double>(e.size());
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("fallback", [&] {
        std::string table_file, device_name = "CPU", out;
        std::size_t min_points = cost::shape_options{}.min_points, k = cost::shape_options{}.k;
        bench::command_line cli("fallback",
                                "Leave-one-out over a measured cost table: how far the roofline, the per-kind "
                                "scaled roofline and the shape-aware fallbacks predict each measured configuration "
                                "from all the others.");
        cli.add_option("--cost-table", table_file, "A goopt.cost_table of version 2 (goopt calibrate)")
            ->required()
            ->type_name("FILE.json");
        cli.add_option("--device", device_name, "The device preset whose roofline is scaled")->capture_default_str();
        cli.add_option("--min-points", min_points, "Configurations a kind needs for a shape curve")
            ->transform(bench::count(1, 100000))
            ->capture_default_str();
        cli.add_option("--k", k, "Neighbours of the nearest-configurations method")
            ->transform(bench::count(1, 100000))
            ->capture_default_str();
        bool each = false, apart = false;
        cli.add_flag("--leave-out-same-size", apart,
                     "Leave out with each configuration every other one of its kind within 1 % of its size (the same "
                     "convolution with other padding, an input that is a weight in one and not in the other): a "
                     "configuration a search makes is new, not a near copy of one measured");
        cli.add_flag("--each", each,
                     "Also print every configuration: its roofline and measured time, then each method's "
                     "ln(predicted / measured)");
        cli.add_option("--out", out, "Also write the summary as JSON here")
            ->type_name("FILE.json")
            ->check(goopt::bench::writable_file());
        if (!cli.parse_flags(argc, argv)) return 0;
        const auto preset = device::find_preset(device_name);
        if (!preset) throw error("--device", concat("unknown device '", device_name, "'"), "a preset name");
        const device::device_spec dev = device::describe(*preset);
        const auto table = io::read_measured_table_file(table_file);

        std::vector<cost::kind_point> points;
        std::vector<std::string> keys;  // of points
        std::size_t groups = 0, zero = 0, unrebuilt = 0;
        for (const auto& [key, seconds] : table.seconds) {
            if (key.starts_with("group{")) {
                ++groups;
                continue;
            }
            if (!(seconds > 0)) {
                ++zero;
                continue;
            }
            std::optional<graph::computation_graph> g;
            try {
                g = cost::op_config_graph(key);
            } catch (const error& e) {
                std::fprintf(stderr, "left out: %s\n", e.what());
                ++unrebuilt;
                continue;
            }
            const auto o = static_cast<graph::op_id>(g->num_ops() - 1);
            const double roof = cost::roofline_model{}.op_time(*g, o, dev);
            points.push_back({g->get_op(o).kind, {roof, seconds, cost::scaled_roofline::size_of(roof, dev)}});
            keys.push_back(key);
        }
        std::printf(
            "%s: %zu single-op configurations with a time > 0 (left out: %zu groups, %zu at 0 s, %zu not "
            "rebuilt); roofline of %s\n",
            table_file.c_str(), points.size(), groups, zero, unrebuilt, std::string(preset->label).c_str());

        struct method {
            std::string name;
            std::optional<cost::shape_options> options;  // none: the plain roofline
        };
        const std::vector<method> methods{
            {"roofline", std::nullopt},
            {"scaled (per-kind median)", cost::shape_options{.method = std::nullopt}},
            {"log-log fit", cost::shape_options{cost::shape_method::loglog_fit, min_points, k, false}},
            {concat("nearest ", k, " in size"), cost::shape_options{cost::shape_method::nearest, min_points, k, false}},
            {"fit, >= median", cost::shape_options{cost::shape_method::loglog_fit, min_points, k, true}},
            {concat("shape: nearest ", k, ", >= median"),
             cost::shape_options{cost::shape_method::nearest, min_points, k, true}},
        };
        std::vector<errors_of_method> errors;
        std::vector<cost::kind_point> others;
        for (const auto& m : methods) {
            errors_of_method e{m.name, {}};
            for (std::size_t i = 0; i < points.size(); ++i) {
                const auto& p = points[i];
                double predicted = p.times.roofline;
                if (m.options) {
                    others.clear();
                    for (std::size_t j = 0; j < points.size(); ++j) {
                        const bool alike = points[j].kind == p.kind &&
                                           std::abs(std::log(points[j].times.size / p.times.size)) < std::log(1.01);
                        if (j != i && !(apart && alike)) others.push_back(points[j]);
                    }
                    const auto s = cost::scaled_roofline::from_points(others, *m.options);
                    predicted *= s.factor(p.kind, p.times.size);
                }
                const double err = std::log(predicted / p.times.measured);
                e.by_kind[std::string(ops::name(p.kind))].push_back(err);
                e.by_kind["all"].push_back(err);
            }
            errors.push_back(std::move(e));
        }

        if (each) {
            // the errors of each configuration, in the order they were predicted (kind by kind)
            std::map<std::string, std::size_t> next;
            for (std::size_t i = 0; i < points.size(); ++i) {
                const auto& p = points[i];
                const std::string kind(ops::name(p.kind));
                const std::size_t at = next[kind]++;
                std::printf("%-14s roofline %10.3e s measured %10.3e s ln error", kind.c_str(), p.times.roofline,
                            p.times.measured);
                for (const auto& e : errors) std::printf(" %7.3f", e.by_kind.at(kind).at(at));
                std::printf("  %s\n", keys[i].c_str());
            }
        }
        nlohmann::json json = {{"cost_table", table_file},
                               {"device", std::string(preset->label)},
                               {"configurations", points.size()},
                               {"min_points", min_points},
                               {"k", k},
                               {"leave_out_same_size", apart},
                               {"methods", nlohmann::json::array()}};
        std::printf("|ln(predicted/measured)| median / 90th percentile, share predicted > 1.5x too cheap\n");
        std::printf("%-18s %5s", "kind", "n");
        for (const auto& e : errors) std::printf(" | %-28s", e.name.c_str());
        std::printf("\n");
        for (const auto& [kind, all] : errors.front().by_kind) {
            std::printf("%-18s %5zu", kind.c_str(), all.size());
            for (const auto& e : errors) {
                const auto s = summarize(e.by_kind.at(kind));
                std::printf(" | %6.3f / %6.3f, %5.1f %%      ", s.median, s.p90, 100 * s.too_cheap);
            }
            std::printf("\n");
        }
        for (const auto& e : errors) {
            nlohmann::json kinds = nlohmann::json::object();
            for (const auto& [kind, v] : e.by_kind) {
                const auto s = summarize(v);
                kinds[kind] = {
                    {"n", s.n}, {"median_abs_log", s.median}, {"p90_abs_log", s.p90}, {"too_cheap_1_5x", s.too_cheap}};
            }
            json["methods"].push_back({{"name", e.name}, {"by_kind", kinds}});
        }
        if (!out.empty()) bench::write_results(out, json.dump(1) + "\n");
        return 0;
    });
}
