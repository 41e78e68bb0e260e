#pragma once
/// @file
/// @brief The roofline scaled by its error on the machine a cost table was measured on: the fallback
/// of cost::measured_model for configurations the table lacks. The plain roofline of a device preset
/// is far from a given runtime (the CPU preset's is 2-20x faster than onnxruntime on one thread,
/// docs/cost.md), so a search on a partly measured table, costing the unmeasured configurations by it,
/// prefers rewrites into configurations nobody measured; scaled by the measured/roofline ratio of the
/// configurations that were measured, the fallback errs as often high as low.

#include <goopt/cost/cost_table.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace goopt::cost {

/// @brief roofline time x a factor per op kind: the median, over the distinct configurations of that
/// kind that a table measured, of measured time / roofline time on the device the table stands for;
/// a kind with none takes the median over every measured configuration, and with none at all the
/// factor is 1 (the roofline). A time of 0 (a configuration under the dispatch cost, which the
/// table subtracts) says the op is too small to time, not that it is free: it gives no ratio, so
/// that it cannot make the unmeasured configurations of other kinds free.
/// A fused group's roofline time is scaled by its members' factors weighted by their roofline times.
/// The factors are fixed when the model is made, so a search given the same table costs the same.
class scaled_roofline {
public:
    scaled_roofline() = default;
    /// The roofline times `factor` for every kind: with a huge factor (refusal_factor), a search
    /// refuses rewrites into configurations a table lacks (each costs seconds), so that its result's
    /// cost is measured.
    static scaled_roofline uniform(double factor) {
        scaled_roofline s;
        s.overall_ = factor;
        return s;
    }
    /// The factor of uniform() that refuses: an unmeasured op costs about a second on a CPU preset.
    static constexpr double refusal_factor = 1e6;

    /// The factors `table` gives on `device`, from the configurations of `graphs`' ops that run
    /// (`counted[k][o]`, or every measurable op of graphs[k] where counted[k] is empty) and were measured.
    template <device::DeviceModel D>
    static scaled_roofline fit(const cost_table& table, std::span<const graph::computation_graph* const> graphs,
                               std::span<const std::vector<bool>> counted, const D& device);

    /// The factor of op kind `k`.
    double factor(ops::op_kind k) const {
        const auto it = by_kind_.find(k);
        return it == by_kind_.end() ? overall_ : it->second;
    }
    /// The factor of kinds with no measured configuration.
    double overall() const noexcept { return overall_; }
    /// The factors of the kinds with measured configurations.
    const std::map<ops::op_kind, double>& by_kind() const noexcept { return by_kind_; }

    template <device::DeviceModel D>
    double op_time(const graph::computation_graph& g, graph::op_id o, const D& d) const {
        return roofline_model{}.op_time(g, o, d) * factor(g.get_op(o).kind);
    }

    template <device::DeviceModel D>
    double group_time(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d) const {
        double plain = 0, scaled = 0;
        for (graph::op_id o : group) {
            const double t = roofline_model{}.op_time(g, o, d);
            plain += t;
            scaled += t * factor(g.get_op(o).kind);
        }
        const double fused = roofline_model{}.group_time(g, group, d);
        return plain > 0 ? fused * (scaled / plain) : fused * overall_;
    }

private:
    std::map<ops::op_kind, double> by_kind_{};
    double overall_ = 1.0;
};

// ---- implementation ----

namespace detail {

/// The median of `v` (the mean of the middle two of an even count); `v` is reordered.
inline double median(std::vector<double>& v) {
    GOOPT_ASSERT(!v.empty());
    const std::size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1) return upper;
    return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

}  // namespace detail

template <device::DeviceModel D>
scaled_roofline scaled_roofline::fit(const cost_table& table, std::span<const graph::computation_graph* const> graphs,
                                     std::span<const std::vector<bool>> counted, const D& device) {
    std::map<ops::op_kind, std::vector<double>> ratios;
    std::vector<double> all;
    std::set<std::string, std::less<>> seen;
    for (std::size_t k = 0; k < graphs.size(); ++k) {
        const auto& g = *graphs[k];
        for (graph::op_id o = 0; o < g.num_ops(); ++o) {
            if (k < counted.size() && !counted[k].empty() && !counted[k].at(o)) continue;
            if (!is_measurable(g, o)) continue;
            auto key = op_config_key(g, o);
            const auto measured = table.find(key);
            if (!measured || !(*measured > 0) || !seen.insert(std::move(key)).second) continue;
            const double roof = roofline_model{}.op_time(g, o, device);
            if (!(roof > 0)) continue;
            ratios[g.get_op(o).kind].push_back(*measured / roof);
            all.push_back(*measured / roof);
        }
    }
    scaled_roofline s;
    if (!all.empty()) s.overall_ = detail::median(all);
    for (auto& [kind, r] : ratios) s.by_kind_.emplace(kind, detail::median(r));
    return s;
}

}  // namespace goopt::cost
