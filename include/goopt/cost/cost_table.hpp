#pragma once
/// @file
/// @brief A table of measured op times keyed by op configuration (cost/op_config.hpp), with the
/// environment it was measured in, and how much of a graph it covers.

#include <goopt/cost/measured_time.hpp>
#include <goopt/cost/measurement_environment.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::cost {

/// Measured seconds per op (or fused group) configuration, in one environment. A time is the
/// `statistic` ("median", or "min" on a machine too busy for medians to mean anything) of
/// `repetitions` runs of the configuration alone as a small model, less `dispatch_seconds` (the cost
/// of a call, not of an op: a model of one tiny op less what each further op of a chain of them adds,
/// so that an op keeps the runtime's cost of launching it, which a graph of fewer ops saves).
/// The map is ordered so that a table is written the same way every time.
struct cost_table {
    measurement_environment environment{};
    std::int64_t repetitions = 0;
    std::string statistic = "median";
    double dispatch_seconds = 0;
    std::map<std::string, double, std::less<>> seconds{};

    /// Records a time; throws goopt::error for one that cost::valid_op_seconds refuses.
    void set(std::string key, double s) {
        if (!valid_op_seconds(s))
            throw error("cost::cost_table", concat("time of '", key, "' is ", s), valid_op_seconds_text());
        seconds[std::move(key)] = s;
    }
    std::optional<double> find(std::string_view key) const {
        const auto it = seconds.find(key);
        if (it == seconds.end()) return std::nullopt;
        return it->second;
    }
};

/// How many of a graph's op configurations a table has measured.
struct table_coverage {
    std::size_t configs = 0;           ///< distinct configurations of the counted ops
    std::size_t measured_configs = 0;  ///< of those, how many the table has
    std::size_t ops = 0;               ///< counted ops
    std::size_t measured_ops = 0;      ///< of those, how many the table has a time for
};

/// @brief The coverage of `g` by `table`: over the measurable ops (cost::is_measurable) where
/// `counted` is true (every measurable op when `counted` is empty; e.g. subst::runs_per_inference,
/// the ops a substitution search's cost adds up). Opaque ops count as configurations never measured.
inline table_coverage coverage(const cost_table& table, const graph::computation_graph& g,
                               const std::vector<bool>& counted = {}) {
    table_coverage c;
    std::set<std::string, std::less<>> seen;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        if (!counted.empty() && !counted.at(o)) continue;
        if (g.get_op(o).spec().has(ops::source)) continue;
        ++c.ops;
        if (!is_measurable(g, o)) {
            ++c.configs;  // each opaque op its own configuration, never measured
            continue;
        }
        auto key = op_config_key(g, o);
        const bool measured = table.find(key).has_value();
        c.measured_ops += measured ? 1 : 0;
        if (seen.insert(std::move(key)).second) {
            ++c.configs;
            c.measured_configs += measured ? 1 : 0;
        }
    }
    return c;
}

}  // namespace goopt::cost
