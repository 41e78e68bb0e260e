#pragma once
/// @file
/// @brief Clusters from short spec strings: `4xV100:nvlink`, `2xK80:pcie`, `8xA100:nvlink`.

#include <goopt/device/cluster.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/error.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace goopt::device {

/// Link latencies the spec-string topologies assume (not datasheet figures): a peer-to-peer copy
/// over NVLink, and a copy staged through the host over PCIe, each including the copy's setup.
inline constexpr double nvlink_latency = 5e-6;
inline constexpr double pcie_latency = 10e-6;

/// @brief Parses `<count>x<preset>:<topology>`: count 1..1024, a preset name (case-insensitive: K80,
/// P100, V100, T4, A100, H100, CPU), and `nvlink` (one link per ordered pair at the preset's NVLink
/// bandwidth per direction; at most 256 devices) or `pcie` (one bus shared by all transfers, at the
/// preset's PCIe bandwidth).
/// @throws goopt::error quoting the spec and saying what was expected.
inline cluster<device_spec> parse_cluster(std::string_view spec) {
    const std::string where = concat("cluster spec '", spec, "'");
    const std::string_view form = "<count>x<device>:<topology>, e.g. 4xV100:nvlink";
    const auto x = spec.find('x');
    const auto colon = spec.find(':');
    if (x == std::string_view::npos || colon == std::string_view::npos || colon < x)
        throw error(where, "malformed", form);
    const std::string_view count_text = spec.substr(0, x), name = spec.substr(x + 1, colon - x - 1),
                           topology = spec.substr(colon + 1);
    unsigned long count = 0;
    const auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (count_text.empty() || ec != std::errc() || end != count_text.data() + count_text.size())
        throw error(where, concat("device count '", count_text, "' is not a number"), form);
    if (count == 0) throw error(where, "device count is 0", "at least 1");
    if (count > 1024) throw error(where, concat("device count ", count, " is more than 1024"), "at most 1024");
    const auto p = find_preset(name);
    if (!p) throw error(where, concat("unknown device '", name, "'"), concat("one of ", preset_names()));
    const device_spec d = describe(*p);
    cluster<device_spec> c;
    if (topology == "nvlink") {
        // one link (one simulated transfer queue) per ordered pair: 256 devices are 65,280 links
        if (count > 256)
            throw error(where, concat(count, " devices all-to-all over NVLink"),
                        "at most 256 (NVSwitch domains are no larger); use :pcie for more");
        if (p->nvlink_bandwidth <= 0)
            throw error(where, concat(p->label, " has no NVLink"), concat(count, "x", p->label, ":pcie"));
        c = cluster<device_spec>::all_to_all(d, count, p->nvlink_bandwidth, nvlink_latency, "nvlink");
    } else if (topology == "pcie") {
        c = cluster<device_spec>::shared_bus(d, count, p->pcie_bandwidth, pcie_latency, "pcie");
    } else {
        throw error(where, concat("unknown topology '", topology, "'"), "nvlink or pcie");
    }
    c.set_description(concat(count, "x", p->label, ":", topology));
    return c;
}

}  // namespace goopt::device
