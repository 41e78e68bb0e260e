#pragma once
/// @file
/// @brief A cost model of measured per-op times (read from JSON by io/cost_table_json.hpp), falling
/// back to another model (the roofline by default) for ops that were not measured.

#include <goopt/cost/fused_estimate.hpp>
#include <goopt/cost/measured_time.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace goopt::cost {

/// Measured seconds per (device name, op name); an op without a measurement on a device costs what
/// `Fallback` says. A fused group of measured ops costs the sum of its members' times less the
/// launches and the internal memory traffic fusion saves (as the roofline counts them), but never less
/// than its slowest member; a group with any unmeasured member costs what `Fallback` says.
/// Lookups hash strings: the simulator asks once per op and device when it is built, never per run.
template <class Fallback = roofline_model> class table_model {
public:
    table_model() = default;
    explicit table_model(Fallback f) : fallback_(std::move(f)) {}

    /// Records a measured time; throws goopt::error for one that cost::valid_op_seconds refuses.
    void set(std::string_view device, std::string_view op, double seconds) {
        if (!valid_op_seconds(seconds))
            throw error("cost::table_model", concat("time of op '", op, "' on device '", device, "' is ", seconds),
                        valid_op_seconds_text());
        times_[key(device, op)] = seconds;
    }
    std::optional<double> measured(std::string_view device, std::string_view op) const {
        const auto it = times_.find(key(device, op));
        if (it == times_.end()) return std::nullopt;
        return it->second;
    }
    std::size_t size() const noexcept { return times_.size(); }
    const Fallback& fallback() const noexcept { return fallback_; }

    template <device::DeviceModel D>
    double op_time(const graph::computation_graph& g, graph::op_id o, const D& d) const {
        if (auto t = measured(device::device_traits<D>::name(d), g.get_op(o).name)) return *t;
        return static_cast<double>(fallback_.op_time(g, o, d));
    }

    template <device::DeviceModel D>
    double group_time(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d) const {
        if (group.size() == 1) return op_time(g, group[0], d);
        const std::string dev = device::device_traits<D>::name(d);
        double sum = 0, slowest = 0;
        std::size_t kernels = 0;
        for (graph::op_id o : group) {
            const auto t = measured(dev, g.get_op(o).name);
            if (!t) return static_cast<double>(fallback_.group_time(g, group, d));
            sum += *t;
            slowest = std::max(slowest, *t);
            if (!g.get_op(o).spec().has(ops::source)) ++kernels;
        }
        return fused_estimate(g, group, d, sum, slowest, kernels);
    }

private:
    static std::string key(std::string_view device, std::string_view op) {
        std::string k(device);
        k += '\0';
        k += op;
        return k;
    }

    Fallback fallback_{};
    std::unordered_map<std::string, double> times_;
};

}  // namespace goopt::cost
