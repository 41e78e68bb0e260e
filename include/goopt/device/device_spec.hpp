#pragma once
/// @file
/// @brief A device described at run time (read from a JSON file or a cluster spec string): the one
/// place where a device's type is erased, so that files can name any device.

#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/ops/dtype.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

namespace goopt::device {

/// Figures of one device held as data. Models DeviceModel; built from any DeviceModel by describe().
struct device_spec {
    std::string label = "device";
    std::array<double, ops::num_dtypes> peak{};  ///< FLOP/s, indexed by ops::dtype
    double bandwidth = 0;                        ///< bytes/s
    double capacity = 0;                         ///< bytes
    double launch = default_launch_overhead;     ///< seconds per kernel launch

    const std::string& name() const noexcept { return label; }
    double peak_flops(ops::dtype t) const noexcept { return peak[static_cast<std::size_t>(t)]; }
    double mem_bandwidth() const noexcept { return bandwidth; }
    double mem_capacity() const noexcept { return capacity; }
    double launch_overhead() const noexcept { return launch; }

    /// Throws goopt::error naming `where` and the field when a figure is NaN, infinite, zero where it
    /// must be positive, or negative: a device with such figures would make every time meaningless.
    void validate(const std::string& where) const {
        auto check = [&](double v, const std::string& field, bool zero_ok) {
            if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
                throw error(where, concat("device '", label, "': ", field, " is ", v),
                            zero_ok ? "a finite number >= 0" : "a finite number > 0");
        };
        for (std::size_t i = 0; i < ops::num_dtypes; ++i)
            check(peak[i], concat("peak_flops.", ops::name(static_cast<ops::dtype>(i))), false);
        check(bandwidth, "mem_bandwidth", false);
        check(capacity, "mem_capacity", false);
        check(launch, "launch_overhead", true);
    }
};

/// The figures of any device as a device_spec (for writing clusters of user devices to JSON).
template <DeviceModel D> device_spec describe(const D& d) {
    device_spec s;
    s.label = device_traits<D>::name(d);
    for (std::size_t i = 0; i < ops::num_dtypes; ++i)
        s.peak[i] = static_cast<double>(d.peak_flops(static_cast<ops::dtype>(i)));
    s.bandwidth = static_cast<double>(d.mem_bandwidth());
    s.capacity = static_cast<double>(d.mem_capacity());
    s.launch = device_traits<D>::launch_overhead(d);
    return s;
}

}  // namespace goopt::device
