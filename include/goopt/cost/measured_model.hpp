#pragma once
/// @file
/// @brief A cost model of op times measured on a runtime (a cost::cost_table, written by `goopt
/// calibrate`), keyed by op configuration, falling back to another model (the roofline by default)
/// for configurations that were not measured. TASO (SOSP'19) §5 costs graphs the same way: the sum of
/// each op configuration's measured time.

#include <goopt/cost/cost_table.hpp>
#include <goopt/cost/fused_estimate.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/cost/scaled_roofline.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <algorithm>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace goopt::cost {

/// @brief Measured seconds per op configuration; what was not measured costs what `Fallback` says on
/// the device asked about. The table holds the times of one machine: the device argument only
/// reaches the fallback (give the search the device the table was measured on, the CPU preset for
/// onnxruntime on a CPU, so that the fallback's times are comparable).
/// A fused group whose configuration was measured (as one small model) costs that; a group of
/// measured ops otherwise costs their sum less the launches and the internal memory traffic fusion
/// saves (as the roofline counts them), never less than its slowest member; any other group costs
/// what `Fallback` says. Copies share the table, which never changes after construction, so one
/// model used by concurrent searches gives them all the same costs.
template <class Fallback = roofline_model> class measured_model {
public:
    /// No measured time: the fallback alone.
    measured_model() : measured_model(cost_table{}) {}
    explicit measured_model(cost_table table, Fallback f = {})
        : table_(std::make_shared<const cost_table>(std::move(table))), fallback_(std::move(f)) {}

    const cost_table& table() const noexcept { return *table_; }
    const Fallback& fallback() const noexcept { return fallback_; }

    /// The measured time of op `o`, if its configuration was measured.
    std::optional<double> measured(const graph::computation_graph& g, graph::op_id o) const {
        if (table_->seconds.empty() || !is_measurable(g, o)) return std::nullopt;  // no key to build
        return table_->find(op_config_key(g, o));
    }

    template <device::DeviceModel D>
    double op_time(const graph::computation_graph& g, graph::op_id o, const D& d) const {
        if (auto t = measured(g, o)) return *t;
        return static_cast<double>(fallback_.op_time(g, o, d));
    }

    template <device::DeviceModel D>
    double group_time(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d) const {
        if (group.size() == 1) return op_time(g, group[0], d);
        if (std::all_of(group.begin(), group.end(), [&](graph::op_id o) { return is_measurable(g, o); }))
            if (auto t = table_->find(group_config_key(g, group))) return *t;
        double sum = 0, slowest = 0;
        std::size_t kernels = 0;
        for (graph::op_id o : group) {
            if (g.get_op(o).spec().has(ops::source)) continue;
            const auto t = measured(g, o);
            if (!t) return static_cast<double>(fallback_.group_time(g, group, d));
            sum += *t;
            slowest = std::max(slowest, *t);
            ++kernels;
        }
        return fused_estimate(g, group, d, sum, slowest, kernels);
    }

private:
    std::shared_ptr<const cost_table> table_;
    Fallback fallback_{};
};

/// @brief The measured model of `table` whose fallback is the roofline scaled by the table's error
/// on `device` (cost::scaled_roofline), fitted on the configurations of `g`'s ops that run per step
/// (`counted`; every measurable op when empty) and were measured: for a search, the graph it starts
/// from, so that a search from the same graph and table costs the same.
template <device::DeviceModel D>
measured_model<scaled_roofline> unbiased_model(cost_table table, const graph::computation_graph& g,
                                               const std::vector<bool>& counted, const D& device) {
    const graph::computation_graph* graphs[] = {&g};
    const std::vector<bool> masks[] = {counted};
    auto fallback = scaled_roofline::fit(table, graphs, masks, device);
    return measured_model<scaled_roofline>(std::move(table), std::move(fallback));
}

}  // namespace goopt::cost
