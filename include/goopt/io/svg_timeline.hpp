#pragma once
/// @file
/// @brief A simulated step drawn as an SVG timeline: one row per device (its ops) and one per link
/// (its transfers), boxes coloured by op kind with a legend, fused groups outlined, a time axis with
/// the step time marked. Hovering a box shows the op or tensor, its times and its size.
///
/// Readable from 10 to 60,000 ops: a box narrower than `min_box_width` pixels is not drawn alone but
/// added to its row's aggregate for that stretch of the axis (`aggregate_width` pixels), drawn once
/// in the colour of the kind that took most of its time, its opacity the busy share of the stretch,
/// its title the count. So a row holds at most width / min_box_width boxes plus
/// width / aggregate_width aggregates whatever the op count. Every box and aggregate carries
/// `data-ops` (ops, or transfers, it stands for), so the picture accounts for every event.

#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::io {

struct svg_timeline_options {
    double width = 1200;           ///< pixels of the time axis
    double row_height = 22;        ///< pixels per device or link row
    double label_width = 140;      ///< pixels for row names
    double min_box_width = 1.0;    ///< narrower boxes are aggregated
    double aggregate_width = 3.0;  ///< pixels of the axis one aggregate covers
    /// Links that carried no transfer get a row only when the cluster has at most this many links
    /// (8 devices all-to-all have 56; the idle ones would bury the busy ones).
    std::size_t max_idle_link_rows = 12;
    std::string title = {};  ///< empty: "<graph> on <cluster>"
    /// The fusion groups the simulation ran with (sim::fusion_groups, by op id): each group is drawn
    /// once, outlined. Empty: no outlines.
    std::span<const std::int32_t> fusion = {};
};

namespace detail {
inline void append_xml(std::string& out, std::string_view s) {
    for (char ch : s) {
        switch (ch) {
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '&':
                out += "&amp;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
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
/// An axis label: `t` in the unit that suits the axis' whole `span`, without trailing zeros.
inline std::string svg_tick(double t, double span) {
    char buf[32];
    if (span >= 1) std::snprintf(buf, sizeof buf, "%g s", t);
    else if (span >= 1e-3) std::snprintf(buf, sizeof buf, "%g ms", t * 1e3);
    else std::snprintf(buf, sizeof buf, "%g us", t * 1e6);
    return buf;
}
/// Distinct colours for the kinds that take most of the time (a qualitative palette, most to least).
inline constexpr std::array<std::string_view, 12> kind_palette{"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                               "#b07aa1", "#edc948", "#76b7b2", "#ff9da7",
                                                               "#9c755f", "#1b9e77", "#d95f02", "#7570b3"};
/// The colour of the kind of rank `rank` in time taken: the palette, then muted golden-angle hues.
inline std::string kind_colour(std::size_t rank) {
    if (rank < kind_palette.size()) return std::string(kind_palette[rank]);
    const unsigned hue = static_cast<unsigned>(std::fmod(static_cast<double>(rank) * 137.508, 360.0));
    return "hsl(" + std::to_string(hue) + ",35%," + std::to_string(rank % 2 ? 72 : 58) + "%)";
}
inline constexpr std::string_view transfer_colour = "#999";
/// Tick spacing of 1, 2 or 5 times a power of ten giving about `ticks` ticks over `span`.
inline double nice_step(double span, double ticks) {
    const double raw = span / ticks;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * p) return m * p;
    return 10 * p;
}
/// Draws one row's boxes, aggregating the narrow ones (see the file comment).
class row_painter {
public:
    /// `aggregate_class`: the class of this row's aggregates ("agg" for ops, "agg-transfer" for transfers).
    row_painter(std::string& out, double x0, double px_per_s, double y, double h, const svg_timeline_options& o,
                std::string aggregate_class)
        : out_(out), x0_(x0), px_(px_per_s), y_(y), h_(h), o_(o), aggregate_class_(std::move(aggregate_class)) {}
    /// One event of `count` ops (or one transfer); `key` picks the aggregate's colour.
    void add(double start, double end, std::size_t count, int key, const std::string& fill, bool outlined,
             const std::string& cls, const std::string& title) {
        const double w = (end - start) * px_;
        if (w >= o_.min_box_width) {
            box(x0_ + start * px_, w, fill, 1.0, outlined, cls, count, title);
            return;
        }
        const auto bin = static_cast<std::int64_t>(std::floor(start * px_ / o_.aggregate_width));
        auto& a = bins_[bin];
        a.count += count;
        a.busy += end - start;
        a.outlined = a.outlined || outlined;
        a.by_key[key] += end - start;
        if (a.fill_of.find(key) == a.fill_of.end()) a.fill_of[key] = fill;
    }
    /// Emits the aggregates; call once after the row's events.
    void finish() {
        const double bin_seconds = o_.aggregate_width / px_;
        for (const auto& [bin, a] : bins_) {
            int top = a.by_key.begin()->first;
            for (const auto& [key, t] : a.by_key)
                if (t > a.by_key.at(top)) top = key;
            const double opacity = std::clamp(a.busy / bin_seconds, 0.25, 1.0);
            box(x0_ + static_cast<double>(bin) * o_.aggregate_width, o_.aggregate_width, a.fill_of.at(top), opacity,
                a.outlined, aggregate_class_, a.count,
                std::to_string(a.count) + " small events, busy " + svg_time(a.busy) + " of " + svg_time(bin_seconds));
        }
        bins_.clear();
    }

private:
    struct aggregate {
        std::size_t count = 0;
        double busy = 0;
        bool outlined = false;
        std::map<int, double> by_key;
        std::map<int, std::string> fill_of;
    };
    void box(double x, double w, const std::string& fill, double opacity, bool outlined, const std::string& cls,
             std::size_t count, const std::string& title) {
        out_ += "<rect class=\"" + cls + "\" data-ops=\"" + std::to_string(count) + "\" x=\"" + svg_number(x) +
                "\" y=\"" + svg_number(y_ + 2) + "\" width=\"" + svg_number(std::max(0.5, w)) + "\" height=\"" +
                svg_number(h_ - 4) + "\" fill=\"" + fill + "\"";
        if (opacity < 1) out_ += " fill-opacity=\"" + svg_number(opacity) + "\"";
        if (outlined) out_ += " stroke=\"#000\" stroke-width=\"1.2\"";
        out_ += "><title>";
        append_xml(out_, title);
        out_ += "</title></rect>\n";
    }
    std::string& out_;
    double x0_, px_, y_, h_;
    const svg_timeline_options& o_;
    std::string aggregate_class_;
    std::map<std::int64_t, aggregate> bins_;
};
}  // namespace detail

/// @brief The SVG document of one simulation (see the file comment). `r` must have its trace
/// (sim::simulation_options::record_trace).
template <device::DeviceModel D>
std::string svg_timeline(const graph::computation_graph& g, const device::cluster<D>& c,
                         const sim::simulation_result& r, const svg_timeline_options& o = {});

/// Writes svg_timeline atomically (io::atomic_write).
template <device::DeviceModel D>
void write_svg_timeline(const std::filesystem::path& path, const graph::computation_graph& g,
                        const device::cluster<D>& c, const sim::simulation_result& r,
                        const svg_timeline_options& o = {}) {
    atomic_write(path, svg_timeline(g, c, r, o));
}

// ---- implementation ----

template <device::DeviceModel D>
std::string svg_timeline(const graph::computation_graph& g, const device::cluster<D>& c,
                         const sim::simulation_result& r, const svg_timeline_options& o) {
    using detail::svg_number;
    const std::size_t nd = c.num_devices();
    // the row of each link (none: idle and left out, see max_idle_link_rows)
    constexpr std::size_t no_row = static_cast<std::size_t>(-1);
    std::vector<std::size_t> link_row(c.num_links(), no_row);
    for (const auto& e : r.transfers)
        if (e.link < link_row.size()) link_row[e.link] = 0;
    std::size_t rows = nd;
    for (std::size_t l = 0; l < link_row.size(); ++l)
        if (link_row[l] == 0 || c.num_links() <= o.max_idle_link_rows) link_row[l] = rows++;
    const std::size_t idle_hidden = nd + c.num_links() - rows;
    const bool fused = !o.fusion.empty() && o.fusion.size() == g.num_ops();
    // time per kind (for the legend, largest first) and the events of each row
    std::array<double, ops::num_op_kinds> kind_time{};
    for (const auto& e : r.ops) kind_time[static_cast<std::size_t>(g.get_op(e.op).kind)] += e.end - e.start;
    std::vector<ops::op_kind> legend;
    for (std::size_t k = 0; k < ops::num_op_kinds; ++k)
        if (kind_time[k] > 0) legend.push_back(static_cast<ops::op_kind>(k));
    std::sort(legend.begin(), legend.end(), [&](ops::op_kind a, ops::op_kind b) {
        return kind_time[static_cast<std::size_t>(a)] > kind_time[static_cast<std::size_t>(b)];
    });
    std::array<std::string, ops::num_op_kinds> fill{};
    for (std::size_t rank = 0; rank < legend.size(); ++rank)
        fill[static_cast<std::size_t>(legend[rank])] = detail::kind_colour(rank);
    constexpr std::size_t legend_per_line = 8;
    const std::size_t legend_lines = (legend.size() + 1 + legend_per_line - 1) / legend_per_line;  // + transfers

    const double top = 30, axis_height = 26;
    const double rows_bottom = top + static_cast<double>(rows) * o.row_height;
    const double height = rows_bottom + axis_height + static_cast<double>(legend_lines) * 18 + 34;
    const double span = (r.step_time > 0 ? r.step_time : 1.0) * 1.02;  // room for the step-time marker
    const double px_per_s = o.width / span;
    auto x_of = [&](double t) { return o.label_width + t * px_per_s; };

    std::string s;
    s.reserve(4096 + 200 * std::min<std::size_t>(r.ops.size() + r.transfers.size(), 20000));
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(o.label_width + o.width + 20) +
         "\" height=\"" + svg_number(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    s += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n<text x=\"4\" y=\"16\" font-size=\"13\">";
    if (!o.title.empty()) detail::append_xml(s, o.title);
    else {
        detail::append_xml(s, g.name().empty() ? std::string("graph") : g.name());
        s += " on ";
        detail::append_xml(s, c.description().empty() ? std::to_string(nd) + " devices" : c.description());
    }
    s += ": " + std::to_string(g.num_ops()) + " ops, step " + detail::svg_time(r.step_time) +
         (r.oom ? " (out of memory)" : "") + "</text>\n";

    // rows: label and baseline
    for (std::size_t row = 0; row < rows; ++row) {
        const double y = top + static_cast<double>(row) * o.row_height;
        std::string label;
        if (row < nd) {
            label = "dev " + std::to_string(row) + " " + device::device_traits<D>::name(c.device(row));
            if (row < r.out_of_memory.size() && r.out_of_memory[row]) label += " OOM";
        } else {
            const auto l =
                static_cast<std::size_t>(std::find(link_row.begin(), link_row.end(), row) - link_row.begin());
            label = c.get_link(l).name;
        }
        s += "<g class=\"row\" data-kind=\"" + std::string(row < nd ? "device" : "link") + "\"><text x=\"4\" y=\"" +
             svg_number(y + o.row_height * 0.7) + "\">";
        detail::append_xml(s, label);
        s += "</text><line x1=\"" + svg_number(o.label_width) + "\" x2=\"" + svg_number(o.label_width + o.width) +
             "\" y1=\"" + svg_number(y + o.row_height) + "\" y2=\"" + svg_number(y + o.row_height) +
             "\" stroke=\"#ddd\"/></g>\n";
    }

    // device rows: one box per op, or per fused group (its members share start and end)
    std::vector<std::vector<const sim::op_event*>> per_device(nd);
    for (const auto& e : r.ops)
        if (e.end > e.start && e.device < nd) per_device[e.device].push_back(&e);  // sources take no time
    std::vector<std::size_t> group_size;
    if (fused) {
        group_size.assign(g.num_ops(), 0);
        for (const auto& e : r.ops)
            if (e.end > e.start && o.fusion[e.op] >= 0 && static_cast<std::size_t>(o.fusion[e.op]) < g.num_ops())
                ++group_size[static_cast<std::size_t>(o.fusion[e.op])];
    }
    std::vector<std::uint8_t> group_drawn(fused ? g.num_ops() : 0, 0);
    for (std::size_t d = 0; d < nd; ++d) {
        detail::row_painter paint(s, o.label_width, px_per_s, top + static_cast<double>(d) * o.row_height, o.row_height,
                                  o, "agg");
        for (const sim::op_event* e : per_device[d]) {
            const auto& op = g.get_op(e->op);
            const std::int32_t group =
                fused && static_cast<std::size_t>(std::max(o.fusion[e->op], 0)) < g.num_ops() ? o.fusion[e->op] : -1;
            if (group >= 0 && group_size[static_cast<std::size_t>(group)] > 1) {
                if (group_drawn[static_cast<std::size_t>(group)]) continue;
                group_drawn[static_cast<std::size_t>(group)] = 1;
                const std::size_t n = group_size[static_cast<std::size_t>(group)];
                paint.add(e->start, e->end, n, static_cast<int>(op.kind), fill[static_cast<std::size_t>(op.kind)], true,
                          "op",
                          "fused group " + std::to_string(group) + ": " + std::to_string(n) + " ops, first " + op.name +
                              " (" + std::string(op.spec().name) + ") " + detail::svg_time(e->start) + " - " +
                              detail::svg_time(e->end));
                continue;
            }
            paint.add(e->start, e->end, 1, static_cast<int>(op.kind), fill[static_cast<std::size_t>(op.kind)], false,
                      "op",
                      op.name + " (" + std::string(op.spec().name) + ") " + detail::svg_time(e->start) + " - " +
                          detail::svg_time(e->end));
        }
        paint.finish();
    }
    // link rows: transfers
    std::vector<std::vector<const sim::transfer_event*>> per_link(c.num_links());
    for (const auto& e : r.transfers)
        if (e.link < per_link.size()) per_link[e.link].push_back(&e);
    for (std::size_t l = 0; l < per_link.size(); ++l) {
        if (link_row[l] == no_row) continue;
        detail::row_painter paint(s, o.label_width, px_per_s, top + static_cast<double>(link_row[l]) * o.row_height,
                                  o.row_height, o, "agg-transfer");
        for (const sim::transfer_event* e : per_link[l]) {
            const auto& t = g.get_tensor(e->tensor);
            paint.add(e->start, e->end, 1, -1, std::string(detail::transfer_colour), false, "transfer",
                      g.get_op(t.producer).name + ":" + std::to_string(t.index) + " " + std::to_string(e->bytes) +
                          " bytes, dev " + std::to_string(e->from) + " -> " + std::to_string(e->to) + ", " +
                          detail::svg_time(e->start) + " - " + detail::svg_time(e->end));
        }
        paint.finish();
    }

    // time axis with ticks, and the step time marked
    const double step = detail::nice_step(span, 8);
    s += "<g class=\"axis\"><line x1=\"" + svg_number(o.label_width) + "\" x2=\"" +
         svg_number(o.label_width + o.width) + "\" y1=\"" + svg_number(rows_bottom + 2) + "\" y2=\"" +
         svg_number(rows_bottom + 2) + "\" stroke=\"#000\"/>\n";
    for (double t = 0; t <= span + step * 1e-9; t += step) {
        const double x = x_of(t);
        s += "<line x1=\"" + svg_number(x) + "\" x2=\"" + svg_number(x) + "\" y1=\"" + svg_number(rows_bottom + 2) +
             "\" y2=\"" + svg_number(rows_bottom + 6) + "\" stroke=\"#000\"/><text x=\"" + svg_number(x) + "\" y=\"" +
             svg_number(rows_bottom + 17) + "\" text-anchor=\"middle\">" + detail::svg_tick(t, span) + "</text>\n";
    }
    s += "</g>\n<g class=\"step-time\"><line x1=\"" + svg_number(x_of(r.step_time)) + "\" x2=\"" +
         svg_number(x_of(r.step_time)) + "\" y1=\"" + svg_number(top - 4) + "\" y2=\"" + svg_number(rows_bottom + 2) +
         "\" stroke=\"#c00\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/><text x=\"" +
         svg_number(x_of(r.step_time) - 4) + "\" y=\"" + svg_number(top - 6) +
         "\" text-anchor=\"end\" fill=\"#c00\">step " + detail::svg_time(r.step_time) + "</text></g>\n";

    // legend: kinds by time taken, then transfers; how to read aggregates and outlines
    const double ly = rows_bottom + axis_height + 8;
    s += "<g class=\"legend\">\n";
    for (std::size_t i = 0; i <= legend.size(); ++i) {
        const double x = o.label_width + static_cast<double>(i % legend_per_line) * (o.width / legend_per_line);
        const double y = ly + static_cast<double>(i / legend_per_line) * 18;
        const bool transfer = i == legend.size();
        s += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\" width=\"12\" height=\"12\" fill=\"" +
             (transfer ? std::string(detail::transfer_colour) : fill[static_cast<std::size_t>(legend[i])]) +
             "\"/><text x=\"" + svg_number(x + 16) + "\" y=\"" + svg_number(y + 10) + "\">" +
             (transfer ? std::string("transfer") : std::string(ops::name(legend[i]))) + "</text>\n";
    }
    s += "<text x=\"" + svg_number(o.label_width) + "\" y=\"" +
         svg_number(ly + static_cast<double>(legend_lines) * 18 + 10) +
         "\" fill=\"#555\">outlined: a fused group; faint boxes: several small ops or transfers drawn as one "
         "(opacity = busy share, hover for the count)" +
         (idle_hidden ? "; " + std::to_string(idle_hidden) + " idle links not shown" : std::string()) +
         "</text>\n</g>\n</svg>\n";
    return s;
}

}  // namespace goopt::io
