#pragma once
/// @file
/// @brief The roofline scaled by its error on the machine a cost table was measured on: the fallback
/// of cost::measured_model for configurations the table lacks. The plain roofline of a device preset
/// is far from a given runtime (the CPU preset's is 2-20x faster than onnxruntime on one thread,
/// docs/cost.md), so a search on a partly measured table, costing the unmeasured configurations by it,
/// prefers rewrites into configurations nobody measured; scaled by the measured/roofline ratio of the
/// configurations that were measured, the fallback errs as often high as low. Shape-aware
/// (fit_shape), a kind's factor also follows the configuration's size (cost/shape_curve.hpp).

#include <goopt/cost/cost_table.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/cost/op_config_graph.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/cost/shape_curve.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace goopt::cost {

/// A measured configuration of op kind `kind`, for from_points.
struct kind_point {
    ops::op_kind kind{};
    fallback_point times{};
};
/// How fit_shape / from_points follow the shapes: none (one factor per kind, as fit does), or a
/// shape_curve per kind with at least `min_points` points.
struct shape_options {
    std::optional<shape_method> method = shape_method::nearest;  ///< by the measurement in docs/cost.md
    std::size_t min_points = 5;  ///< fewer: the kind's median (a line through 2-4 points is noise)
    std::size_t k = 5;           ///< shape_method::nearest's neighbours
    /// never below the kind's median: a search takes the configurations its fallback makes too cheap,
    /// so a curve may make a configuration dearer than the median says, never cheaper
    bool at_least_median = true;  ///< by the measurement in docs/cost.md
};

/// @brief roofline time x a factor per op kind: the median, over the distinct configurations of that
/// kind that a table measured, of measured time / roofline time on the device the table stands for;
/// a kind with none takes the median over every measured configuration, and with none at all the
/// factor is 1 (the roofline). A time of 0 (a configuration under the dispatch cost, which the
/// table subtracts) says the op is too small to time, not that it is free: it gives no ratio, so
/// that it cannot make the unmeasured configurations of other kinds free.
/// A fused group's roofline time is scaled by its members' factors weighted by their roofline times.
/// Shape-aware (fit_shape), a kind with at least `min_points` measured configurations takes its
/// factor from a shape_curve of them at the op's size (its roofline time less the launch), never
/// below their median unless shape_options say otherwise.
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

    /// The factors of `points` (each time > 0): per kind the median ratio, over all kinds the median
    /// ratio, and with options.method a curve for each kind with enough points. The order of
    /// `points` never matters.
    static scaled_roofline from_points(std::span<const kind_point> points, const shape_options& options);

    /// Shape-aware factors from every single-op configuration `table` measured (rebuilt from its key,
    /// cost/op_config_graph.hpp; one that cannot be rebuilt is left out), their roofline times taken
    /// on `device`. They depend on the table alone: a search from any graph with it costs the same.
    template <device::DeviceModel D>
    static scaled_roofline fit_shape(const cost_table& table, const D& device, const shape_options& options = {});

    /// The factor of op kind `k` for no size in particular: its median ratio.
    double factor(ops::op_kind k) const {
        const auto it = by_kind_.find(k);
        return it == by_kind_.end() ? overall_ : it->second;
    }
    /// The factor of a configuration of kind `k` whose size (roofline time without the launch,
    /// shape_curve.hpp) is `size` seconds: the kind's curve there where it has one, else factor(k).
    double factor(ops::op_kind k, double size) const {
        if (size > 0)
            if (const auto it = curves_.find(k); it != curves_.end())
                return at_least_median_ ? std::max(it->second.factor(size), factor(k)) : it->second.factor(size);
        return factor(k);
    }
    /// The size of a configuration whose roofline time on `d` is `roofline`: that time without the launch.
    template <device::DeviceModel D> static double size_of(double roofline, const D& d) {
        return roofline - device::device_traits<D>::launch_overhead(d);
    }
    /// The kinds whose factor follows the shape.
    const std::map<ops::op_kind, shape_curve>& curves() const noexcept { return curves_; }
    /// The factor of kinds with no measured configuration.
    double overall() const noexcept { return overall_; }
    /// The factors of the kinds with measured configurations.
    const std::map<ops::op_kind, double>& by_kind() const noexcept { return by_kind_; }

    template <device::DeviceModel D>
    double op_time(const graph::computation_graph& g, graph::op_id o, const D& d) const {
        const double t = roofline_model{}.op_time(g, o, d);
        return t * factor(g.get_op(o).kind, size_of(t, d));
    }

    template <device::DeviceModel D>
    double group_time(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d) const {
        double plain = 0, scaled = 0;
        for (graph::op_id o : group) {
            const double t = roofline_model{}.op_time(g, o, d);
            plain += t;
            scaled += t * factor(g.get_op(o).kind, size_of(t, d));
        }
        const double fused = roofline_model{}.group_time(g, group, d);
        return plain > 0 ? fused * (scaled / plain) : fused * overall_;
    }

private:
    std::map<ops::op_kind, double> by_kind_{};
    std::map<ops::op_kind, shape_curve> curves_{};
    bool at_least_median_ = false;
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

inline scaled_roofline scaled_roofline::from_points(std::span<const kind_point> points, const shape_options& options) {
    std::map<ops::op_kind, std::vector<fallback_point>> by_kind;
    std::vector<double> all;
    for (const auto& p : points) {
        by_kind[p.kind].push_back(p.times);
        all.push_back(p.times.measured / p.times.roofline);
    }
    scaled_roofline s;
    s.at_least_median_ = options.at_least_median;
    if (!all.empty()) s.overall_ = detail::median(all);
    for (auto& [kind, kind_points] : by_kind) {
        std::vector<double> ratios;
        for (const auto& p : kind_points) ratios.push_back(p.measured / p.roofline);
        s.by_kind_.emplace(kind, detail::median(ratios));
        std::erase_if(kind_points, [](const fallback_point& p) { return !(p.size > 0); });  // no size to place it at
        if (options.method && kind_points.size() >= std::max<std::size_t>(options.min_points, 1))
            s.curves_.emplace(kind, shape_curve::fit(std::move(kind_points), *options.method, options.k));
    }
    return s;
}

template <device::DeviceModel D>
scaled_roofline scaled_roofline::fit(const cost_table& table, std::span<const graph::computation_graph* const> graphs,
                                     std::span<const std::vector<bool>> counted, const D& device) {
    std::vector<kind_point> points;
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
            points.push_back({g.get_op(o).kind, {roof, *measured, size_of(roof, device)}});
        }
    }
    return from_points(points, shape_options{.method = std::nullopt});
}

template <device::DeviceModel D>
scaled_roofline scaled_roofline::fit_shape(const cost_table& table, const D& device, const shape_options& options) {
    std::vector<kind_point> points;
    for (const auto& [key, seconds] : table.seconds) {
        if (!(seconds > 0) || key.starts_with("group{")) continue;  // 0: too small to time, not free
        std::optional<graph::computation_graph> g;
        try {
            g = op_config_graph(key);
        } catch (const error&) {
            continue;  // a key of an op the op table no longer builds so: no roofline time to compare
        }
        const auto o = static_cast<graph::op_id>(g->num_ops() - 1);
        const double roof = roofline_model{}.op_time(*g, o, device);
        if (roof > 0) points.push_back({g->get_op(o).kind, {roof, seconds, size_of(roof, device)}});
    }
    return from_points(points, options);
}

}  // namespace goopt::cost
