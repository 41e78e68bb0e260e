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
/// @throws goopt::error quoting the spec and naming the part that is wrong or missing (the count, the
/// device, the topology) with what was expected there.
inline cluster<device_spec> parse_cluster(std::string_view spec) {
    constexpr unsigned long max_devices = 1024;
    const std::string where = concat("cluster spec '", spec, "'");
    const std::string_view form = "<count>x<device>:<topology>, e.g. 4xV100:nvlink";
    const auto x = spec.find('x');
    if (x == std::string_view::npos) throw error(where, "no 'x' between a device count and a device", form);
    const std::string_view count_text = spec.substr(0, x), rest = spec.substr(x + 1);
    const auto colon = rest.find(':');
    const std::string_view name = rest.substr(0, colon);
    unsigned long count = 0;
    const auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    const bool digits = !count_text.empty() && end == count_text.data() + count_text.size();
    if (digits && (ec == std::errc::result_out_of_range || (ec == std::errc() && count > max_devices)))
        throw error(where, concat("device count ", count_text, " is more than ", max_devices),
                    concat("at most ", max_devices));
    if (!digits || ec != std::errc())
        throw error(where, concat("device count '", count_text, "' is not a number"), form);
    if (count == 0) throw error(where, "device count is 0", "at least 1");
    if (name.empty()) throw error(where, "no device after the count", concat("one of ", preset_names()));
    const auto p = find_preset(name);
    if (!p) throw error(where, concat("unknown device '", name, "'"), concat("one of ", preset_names()));
    const std::string suggested = concat(count, "x", p->label, p->nvlink_bandwidth > 0 ? ":nvlink" : ":pcie");
    if (colon == std::string_view::npos)
        throw error(where, "no topology after the device", concat("':nvlink' or ':pcie' after it, e.g. ", suggested));
    const std::string_view topology = rest.substr(colon + 1);
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
