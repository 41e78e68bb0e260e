#pragma once
/// @file
/// @brief One fuzz input for the cluster reader (io::cluster_from_json_string): a goopt::error is a
/// clean rejection; an accepted cluster must have devices with finite positive figures, finite
/// transfer times on its routes, and write back to JSON that reads as the same cluster.

#include "fuzz_input.hpp"

#include <goopt/error.hpp>
#include <goopt/io/cluster_json.hpp>

#include <cmath>
#include <string>
#include <string_view>

namespace goopt::fuzz {

/// @return true when the reader accepted the input. @throws fuzz::finding for a broken promise.
inline bool cluster_json_input(std::string_view bytes) {
    device::cluster<> c;
    try {
        c = io::cluster_from_json_string(bytes, "<fuzz>");
    } catch (const error&) {
        return false;
    }
    if (c.num_devices() == 0) throw finding("the reader accepted a cluster without devices");
    for (std::size_t i = 0; i < c.num_devices(); ++i) {
        const auto& d = c.device(i);
        for (std::size_t t = 0; t < ops::num_dtypes; ++t) {
            const double f = d.peak_flops(static_cast<ops::dtype>(t));
            if (!(std::isfinite(f) && f > 0))
                throw finding("the reader accepted a device with bad FLOP/s: " + d.name());
        }
        if (!(std::isfinite(d.mem_bandwidth()) && d.mem_bandwidth() > 0 && std::isfinite(d.mem_capacity()) &&
              d.mem_capacity() > 0 && std::isfinite(d.launch_overhead()) && d.launch_overhead() >= 0))
            throw finding("the reader accepted a device with a bad figure: " + d.name());
        for (std::size_t j = 0; j < c.num_devices(); ++j)
            if (const auto l = c.route(i, j); l != device::no_link && !std::isfinite(c.get_link(l).transfer_time(1e9)))
                throw finding("the reader accepted a link with an infinite transfer time");
    }
    // The round trip of a large shared-bus cluster writes and parses a million routes: seconds under
    // the sanitizers, spent on no new code. Small clusters exercise the same writer and reader.
    if (c.num_devices() > 64) return true;
    std::string text;
    try {
        text = io::cluster_to_json(c).dump();
    } catch (const nlohmann::json::exception&) {
        return true;  // a device or link name that is not valid UTF-8 cannot be written back
    }
    try {
        if (io::cluster_to_json(io::cluster_from_json_string(text, "<round trip>")).dump() != text)
            throw finding("write/read/write changed the cluster: " + excerpt(text));
    } catch (const error& e) {
        throw finding(std::string("the reader rejects what the writer wrote: ") + e.what());
    }
    return true;
}

}  // namespace goopt::fuzz
