#pragma once
/// @file
/// @brief A cluster: devices and the links between them. Each link is one transfer queue in the
/// simulator, so a shared bus is one link that every pair routes through, and NVLink all-to-all is one
/// link per ordered pair.

#include <goopt/device/concepts.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::device {

/// A communication channel with a FIFO transfer queue: a transfer of b bytes occupies it for
/// latency + b / bandwidth seconds.
struct link {
    std::string name;
    double bandwidth = 0;  ///< bytes/s, > 0
    double latency = 0;    ///< seconds, >= 0

    double transfer_time(double bytes) const noexcept { return latency + bytes / bandwidth; }
};

inline constexpr std::uint32_t no_link = std::numeric_limits<std::uint32_t>::max();

/// @brief Devices and links; route(from, to) names the link a transfer from one device to another uses.
/// @tparam D the device type; clusters read from files hold device_spec.
template <DeviceModel D = device_spec> class cluster {
public:
    cluster() = default;

    /// Adds a device; returns its id (0, 1, ...). It has no routes until connect() gives them.
    /// @throws goopt::error when a figure is NaN or negative: NaN passes through max() and min()
    /// unnoticed and would make every simulated time silently wrong. Zero FLOP/s for a dtype (the
    /// device cannot run it) and an infinite capacity (no limit) are allowed.
    std::uint32_t add_device(D d) {
        check_figures(d, devices_.size());
        const std::size_t n = devices_.size();
        if (n + 1 > stride_) {
            // The route table grows geometrically: copying it on every addition made a 1024-device
            // cluster cost 1024^3 / 3 copies (minutes under a sanitizer; found by fuzzing the reader).
            const std::size_t s = std::max<std::size_t>(4, 2 * stride_);
            std::vector<std::uint32_t> r(s * s, no_link);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j) r[i * s + j] = routes_[i * stride_ + j];
            routes_ = std::move(r);
            stride_ = s;
        }
        devices_.push_back(std::move(d));
        return static_cast<std::uint32_t>(n);
    }

    /// Adds a link; throws goopt::error when its bandwidth is not a finite positive number or its
    /// latency is negative or not finite.
    std::uint32_t add_link(link l) {
        if (!std::isfinite(l.bandwidth) || l.bandwidth <= 0)
            throw error("device::cluster", concat("link '", l.name, "': bandwidth is ", l.bandwidth),
                        "a finite number > 0 (bytes/s)");
        if (!std::isfinite(l.latency) || l.latency < 0)
            throw error("device::cluster", concat("link '", l.name, "': latency is ", l.latency),
                        "a finite number >= 0 (seconds)");
        links_.push_back(std::move(l));
        return static_cast<std::uint32_t>(links_.size() - 1);
    }

    /// Transfers from device `from` to device `to` go through link `l`.
    void connect(std::uint32_t from, std::uint32_t to, std::uint32_t l) {
        const std::size_t n = devices_.size();
        if (from >= n || to >= n)
            throw error("device::cluster", concat("connect(", from, ", ", to, ")"), concat("devices below ", n));
        if (from == to)
            throw error("device::cluster", concat("connect(", from, ", itself)"),
                        "two different devices (a device needs no link to itself)");
        if (l >= links_.size())
            throw error("device::cluster", concat("connect(", from, ", ", to, ", link ", l, ")"),
                        concat("a link below ", links_.size()));
        routes_[from * stride_ + to] = l;
    }

    std::size_t num_devices() const noexcept { return devices_.size(); }
    std::size_t num_links() const noexcept { return links_.size(); }
    const D& device(std::size_t i) const { return devices_.at(i); }
    const std::vector<D>& devices() const noexcept { return devices_; }
    const link& get_link(std::size_t l) const { return links_.at(l); }
    const std::vector<link>& links() const noexcept { return links_; }
    /// The link from one device to another, or no_link when they are not connected (or equal).
    std::uint32_t route(std::size_t from, std::size_t to) const noexcept { return routes_[from * stride_ + to]; }

    /// A short description such as "4xV100:nvlink" when the cluster came from a spec string.
    const std::string& description() const noexcept { return description_; }
    void set_description(std::string s) { description_ = std::move(s); }

    /// n copies of a device with one link per ordered pair (NVLink or NVSwitch all-to-all).
    static cluster all_to_all(const D& d, std::size_t n, double bandwidth, double latency,
                              const std::string& kind = "link") {
        cluster c = copies(d, n);
        for (std::uint32_t i = 0; i < n; ++i)
            for (std::uint32_t j = 0; j < n; ++j)
                if (i != j)
                    c.connect(
                        i, j,
                        c.add_link({kind + " " + std::to_string(i) + "->" + std::to_string(j), bandwidth, latency}));
        return c;
    }
    /// n copies of a device whose transfers all share one bus (PCIe through the host): one queue.
    static cluster shared_bus(const D& d, std::size_t n, double bandwidth, double latency,
                              const std::string& kind = "bus") {
        cluster c = copies(d, n);
        if (n > 1) {
            const auto l = c.add_link({kind, bandwidth, latency});
            for (std::uint32_t i = 0; i < n; ++i)
                for (std::uint32_t j = 0; j < n; ++j)
                    if (i != j) c.connect(i, j, l);
        }
        return c;
    }

private:
    static void check_figures(const D& d, std::size_t id) {
        auto check = [&](double v, std::string_view field) {
            if (std::isnan(v) || v < 0)
                throw error("device::cluster",
                            concat("device ", id, " ('", device_traits<D>::name(d), "'): ", field, " is ", v),
                            "a number >= 0");
        };
        for (std::size_t i = 0; i < ops::num_dtypes; ++i)
            check(static_cast<double>(d.peak_flops(static_cast<ops::dtype>(i))),
                  "peak_flops." + std::string(ops::name(static_cast<ops::dtype>(i))));
        check(static_cast<double>(d.mem_bandwidth()), "mem_bandwidth");
        check(static_cast<double>(d.mem_capacity()), "mem_capacity");
        check(device_traits<D>::launch_overhead(d), "launch_overhead");
    }

    static cluster copies(const D& d, std::size_t n) {
        if (n == 0) throw error("device::cluster::copies", "0 devices", "at least one device");
        cluster c;
        for (std::size_t i = 0; i < n; ++i) c.add_device(d);
        return c;
    }

    std::vector<D> devices_;
    std::vector<link> links_;
    std::vector<std::uint32_t> routes_;  // stride_ x stride_ (>= num_devices), row = source
    std::size_t stride_ = 0;
    std::string description_;
};

}  // namespace goopt::device
