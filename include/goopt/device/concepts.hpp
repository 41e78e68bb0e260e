#pragma once
/// @file
/// @brief What the simulator and the cost models need to know about a device, and the defaults for
/// facts a device type may leave out.

#include <goopt/ops/dtype.hpp>

#include <concepts>
#include <string>
#include <string_view>

namespace goopt::device {

/// Launch overhead of a device that does not state its own: 5 us, the order of a CUDA kernel launch
/// plus a framework's dispatch (an assumption, not a datasheet figure).
inline constexpr double default_launch_overhead = 5e-6;

/// A device the simulator can run ops on.
/// Models: device::preset (device::k80, p100, v100, t4, a100, h100, xeon_8380), device::device_spec
/// (the runtime description a cluster spec string or JSON file produces), and any user type with
/// these members (examples/02_custom_device.cpp).
/// @code
///   d.peak_flops(dtype) -> double   // FLOP/s for arithmetic in that element type, > 0
///   d.mem_bandwidth()   -> double   // bytes/s of device memory, > 0
///   d.mem_capacity()    -> double   // bytes of device memory (an integer count), > 0
/// @endcode
/// Optional facts (launch overhead, name) come through device_traits.
template <class D>
concept DeviceModel = requires(const D& d, ops::dtype t) {
    { d.peak_flops(t) } -> std::convertible_to<double>;
    { d.mem_bandwidth() } -> std::convertible_to<double>;
    { d.mem_capacity() } -> std::convertible_to<double>;
};

/// Facts about a device that a type may provide or leave to a default; specialize it to retrofit them
/// onto a device type you do not own (as boost::graph_traits is specialized).
template <class D> struct device_traits {
    /// Fixed cost of starting one kernel, seconds: d.launch_overhead() when D has it, else
    /// device::default_launch_overhead.
    static double launch_overhead(const D& d) {
        if constexpr (requires {
                          { d.launch_overhead() } -> std::convertible_to<double>;
                      })
            return static_cast<double>(d.launch_overhead());
        else return device::default_launch_overhead;
    }
    /// Name used in traces, tables and measured-time tables: d.name() when D has it, else "device".
    static std::string name(const D& d) {
        if constexpr (requires {
                          { d.name() } -> std::convertible_to<std::string_view>;
                      })
            return std::string(std::string_view(d.name()));
        else return "device";
    }
};

}  // namespace goopt::device
