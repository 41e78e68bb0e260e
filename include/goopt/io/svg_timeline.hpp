#pragma once
/// @file
/// @brief A simulated step drawn as an SVG timeline: one row per device (its ops) and one per link
/// (its transfers); hovering a box shows the op or tensor, its times and its size.

#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace goopt::io {

struct svg_timeline_options {
    double width = 1200;       ///< pixels of the time axis
    double row_height = 22;    ///< pixels per device or link row
    double label_width = 140;  ///< pixels for row names
};

namespace detail {
inline void append_xml(std::string& out, std::string_view s) {
    for (char ch : s) {
        switch (ch) {
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '&': out += "&amp;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
            if (static_cast<unsigned char>(ch) >= 0x20) out += ch;  // XML 1.0 forbids most control characters
        }
    }
}
inline std::string svg_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}
inline std::string svg_time(double seconds) {
    char buf[32];
    if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.3f s", seconds);
    else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
    else std::snprintf(buf, sizeof buf, "%.3f us", seconds * 1e6);
    return buf;
}
}  // namespace detail

/// @brief The SVG document of one simulation: ops coloured by kind, transfers in grey.
template <device::DeviceModel D>
std::string svg_timeline(const graph::computation_graph& g, const device::cluster<D>& c, const sim::simulation_result& r,
                         const svg_timeline_options& o = {}) {
    const std::size_t rows = c.num_devices() + c.num_links();
    const double top = 30, span = r.step_time > 0 ? r.step_time : 1.0;
    const double height = top + static_cast<double>(rows) * o.row_height + 10;
    auto x_of = [&](double t) { return o.label_width + t / span * o.width; };
    std::string s;
    s.reserve(256 + 160 * (r.ops.size() + r.transfers.size()));
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + detail::svg_number(o.label_width + o.width + 10) +
         "\" height=\"" + detail::svg_number(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    s += "<text x=\"4\" y=\"16\">";
    detail::append_xml(s, g.name().empty() ? std::string("graph") : g.name());
    s += " on ";
    detail::append_xml(s, c.description().empty() ? std::to_string(c.num_devices()) + " devices" : c.description());
    s += ": step " + detail::svg_time(r.step_time) + (r.oom ? " (out of memory)" : "") + "</text>\n";
    for (std::size_t row = 0; row < rows; ++row) {
        const double y = top + static_cast<double>(row) * o.row_height;
        std::string label;
        if (row < c.num_devices()) {
            label = "dev " + std::to_string(row) + " " + device::device_traits<D>::name(c.device(row));
            if (row < r.out_of_memory.size() && r.out_of_memory[row]) label += " OOM";
        } else {
            label = c.get_link(row - c.num_devices()).name;
        }
        s += "<text x=\"4\" y=\"" + detail::svg_number(y + o.row_height * 0.7) + "\">";
        detail::append_xml(s, label);
        s += "</text>\n<line x1=\"" + detail::svg_number(o.label_width) + "\" x2=\"" +
             detail::svg_number(o.label_width + o.width) + "\" y1=\"" + detail::svg_number(y + o.row_height) + "\" y2=\"" +
             detail::svg_number(y + o.row_height) + "\" stroke=\"#ddd\"/>\n";
    }
    auto box = [&](std::size_t row, double start, double end, const std::string& fill, const std::string& title) {
        const double y = top + static_cast<double>(row) * o.row_height + 2;
        s += "<rect x=\"" + detail::svg_number(x_of(start)) + "\" y=\"" + detail::svg_number(y) + "\" width=\"" +
             detail::svg_number(std::max(0.5, x_of(end) - x_of(start))) + "\" height=\"" +
             detail::svg_number(o.row_height - 4) + "\" fill=\"" + fill + "\"><title>";
        detail::append_xml(s, title);
        s += "</title></rect>\n";
    };
    for (const auto& e : r.ops) {
        if (e.end <= e.start) continue;  // sources take no time
        const auto& op = g.get_op(e.op);
        const unsigned hue = (static_cast<unsigned>(op.kind) * 47u) % 360u;
        box(e.device, e.start, e.end, "hsl(" + std::to_string(hue) + ",60%,60%)",
            op.name + " (" + std::string(op.spec().name) + ") " + detail::svg_time(e.start) + " - " + detail::svg_time(e.end));
    }
    for (const auto& e : r.transfers) {
        const auto& t = g.get_tensor(e.tensor);
        box(c.num_devices() + e.link, e.start, e.end, "#999",
            g.get_op(t.producer).name + ":" + std::to_string(t.index) + " " + std::to_string(e.bytes) + " bytes, dev " +
                std::to_string(e.from) + " -> " + std::to_string(e.to) + ", " + detail::svg_time(e.start) + " - " +
                detail::svg_time(e.end));
    }
    s += "</svg>\n";
    return s;
}

/// Writes svg_timeline atomically (io::atomic_write).
template <device::DeviceModel D>
void write_svg_timeline(const std::filesystem::path& path, const graph::computation_graph& g,
                        const device::cluster<D>& c, const sim::simulation_result& r, const svg_timeline_options& o = {}) {
    atomic_write(path, svg_timeline(g, c, r, o));
}

}  // namespace goopt::io
