#pragma once
/// @file
/// @brief A training (or search) curve as SVG: the best and the mean simulated step time per update,
/// with the baselines' step times as labelled horizontal lines, so that one look says when the
/// learned method passes each heuristic.

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/svg_timeline.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace goopt::io {

/// One update of a curve: its index and step times in seconds.
struct curve_point {
    double update = 0;
    double best_step_time = 0;  ///< best decisions found so far
    double mean_step_time = 0;  ///< mean over this update's samples
};

/// A horizontal line: a baseline's step time in seconds.
struct reference_line {
    std::string name;
    double step_time = 0;
};

struct svg_curve_options {
    double width = 900;   ///< pixels of the plot area
    double height = 420;  ///< pixels of the plot area
    std::string title = "training curve";
    std::string x_label = "update";
};

/// @brief The SVG document of a curve (polylines "best" and "mean", one "baseline" line per reference).
/// @throws goopt::error for an empty curve, or a step time or update that is not finite and >= 0
/// (naming the point or the line).
inline std::string svg_training_curve(std::span<const curve_point> curve, std::span<const reference_line> baselines,
                                      const svg_curve_options& o = {});

/// Writes svg_training_curve atomically.
inline void write_svg_training_curve(const std::filesystem::path& path, std::span<const curve_point> curve,
                                     std::span<const reference_line> baselines, const svg_curve_options& o = {}) {
    atomic_write(path, svg_training_curve(curve, baselines, o));
}

// ---- implementation ----

inline std::string svg_training_curve(std::span<const curve_point> curve, std::span<const reference_line> baselines,
                                      const svg_curve_options& o) {
    using detail::svg_number;
    if (curve.empty()) throw error("io::svg_training_curve", "the curve has no points", "at least one");
    auto check = [](double v, const std::string& where) {
        if (!std::isfinite(v) || v < 0)
            throw error("io::svg_training_curve", concat(where, " is ", v), "a finite number >= 0");
    };
    double x_lo = curve.front().update, x_hi = x_lo, y_lo = curve.front().best_step_time, y_hi = y_lo;
    for (std::size_t i = 0; i < curve.size(); ++i) {
        const auto& p = curve[i];
        check(p.update, concat("point ", i, " update"));
        check(p.best_step_time, concat("point ", i, " best step time"));
        check(p.mean_step_time, concat("point ", i, " mean step time"));
        x_lo = std::min(x_lo, p.update);
        x_hi = std::max(x_hi, p.update);
        y_lo = std::min({y_lo, p.best_step_time, p.mean_step_time});
        y_hi = std::max({y_hi, p.best_step_time, p.mean_step_time});
    }
    for (const auto& b : baselines) {
        check(b.step_time, concat("baseline '", b.name, "' step time"));
        y_lo = std::min(y_lo, b.step_time);
        y_hi = std::max(y_hi, b.step_time);
    }
    if (x_hi == x_lo) x_hi = x_lo + 1;
    const double pad = (y_hi > y_lo ? y_hi - y_lo : std::max(y_hi, 1e-9)) * 0.06;
    y_lo = std::max(0.0, y_lo - pad);
    y_hi += pad;
    const double left = 80, top = 36, right_labels = 170;
    auto x_of = [&](double u) { return left + (u - x_lo) / (x_hi - x_lo) * o.width; };
    auto y_of = [&](double t) { return top + (y_hi - t) / (y_hi - y_lo) * o.height; };

    std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(left + o.width + right_labels) +
                    "\" height=\"" + svg_number(top + o.height + 70) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    s += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n<text x=\"4\" y=\"18\" font-size=\"13\">";
    detail::append_xml(s, o.title);
    s += "</text>\n<g class=\"axes\">\n<rect x=\"" + svg_number(left) + "\" y=\"" + svg_number(top) + "\" width=\"" +
         svg_number(o.width) + "\" height=\"" + svg_number(o.height) + "\" fill=\"none\" stroke=\"#000\"/>\n";
    const double ys = detail::nice_step(y_hi - y_lo, 6);
    for (double t = std::ceil(y_lo / ys) * ys; t <= y_hi; t += ys)
        s += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + o.width) + "\" y1=\"" +
             svg_number(y_of(t)) + "\" y2=\"" + svg_number(y_of(t)) + "\" stroke=\"#eee\"/><text x=\"" +
             svg_number(left - 4) + "\" y=\"" + svg_number(y_of(t) + 4) + "\" text-anchor=\"end\">" +
             detail::svg_tick(t, y_hi) + "</text>\n";
    const double xs = std::max(1.0, detail::nice_step(x_hi - x_lo, 8));
    for (double u = std::ceil(x_lo / xs) * xs; u <= x_hi + 1e-9; u += xs)
        s += "<text x=\"" + svg_number(x_of(u)) + "\" y=\"" + svg_number(top + o.height + 16) +
             "\" text-anchor=\"middle\">" + std::to_string(static_cast<long long>(std::llround(u))) + "</text>\n";
    s += "<text x=\"" + svg_number(left + o.width / 2) + "\" y=\"" + svg_number(top + o.height + 34) +
         "\" text-anchor=\"middle\">";
    detail::append_xml(s, o.x_label);
    s += "</text>\n<text x=\"14\" y=\"" + svg_number(top + o.height / 2) + "\" transform=\"rotate(-90 14 " +
         svg_number(top + o.height / 2) + ")\" text-anchor=\"middle\">simulated step time</text>\n</g>\n";

    // labels at the right end, pushed apart where lines are close (equal step times are common)
    std::vector<std::size_t> order(baselines.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return baselines[a].step_time > baselines[b].step_time;  // top of the plot first
    });
    std::vector<double> label_y(baselines.size());
    double last = -1e300;
    for (std::size_t i : order) {
        label_y[i] = std::max(y_of(baselines[i].step_time) + 4, last + 12);
        last = label_y[i];
    }
    for (std::size_t i = 0; i < baselines.size(); ++i) {
        const auto& b = baselines[i];
        const double y = y_of(b.step_time);
        const std::string hue = std::to_string((i * 67 + 20) % 360);
        s += "<g class=\"baseline\"><line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + o.width) +
             "\" y1=\"" + svg_number(y) + "\" y2=\"" + svg_number(y) + "\" stroke=\"hsl(" + hue +
             ",55%,45%)\" stroke-dasharray=\"6 3\"/><text x=\"" + svg_number(left + o.width + 6) + "\" y=\"" +
             svg_number(label_y[i]) + "\" fill=\"hsl(" + hue + ",55%,35%)\">";
        detail::append_xml(s, b.name + " " + detail::svg_time(b.step_time));
        s += "</text></g>\n";
    }
    auto polyline = [&](const char* cls, const char* stroke, const char* extra, auto value) {
        s += std::string("<polyline class=\"") + cls + "\" fill=\"none\" stroke=\"" + stroke + "\"" + extra +
             " points=\"";
        for (const auto& p : curve) s += svg_number(x_of(p.update)) + "," + svg_number(y_of(value(p))) + " ";
        s += "\"/>\n";
    };
    polyline("mean", "#7aa7d8", " stroke-width=\"1.2\"", [](const curve_point& p) { return p.mean_step_time; });
    polyline("best", "#08306b", " stroke-width=\"2.2\"", [](const curve_point& p) { return p.best_step_time; });
    const double ly = top + o.height + 52;
    s += "<g class=\"legend\"><line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + 24) + "\" y1=\"" +
         svg_number(ly) + "\" y2=\"" + svg_number(ly) + "\" stroke=\"#08306b\" stroke-width=\"2.2\"/><text x=\"" +
         svg_number(left + 28) + "\" y=\"" + svg_number(ly + 4) + "\">best so far</text><line x1=\"" +
         svg_number(left + 120) + "\" x2=\"" + svg_number(left + 144) + "\" y1=\"" + svg_number(ly) + "\" y2=\"" +
         svg_number(ly) + "\" stroke=\"#7aa7d8\"/><text x=\"" + svg_number(left + 148) + "\" y=\"" +
         svg_number(ly + 4) + "\">mean of the update's samples</text><text x=\"" + svg_number(left + 340) + "\" y=\"" +
         svg_number(ly + 4) + "\" fill=\"#555\">dashed: baselines</text></g>\n</svg>\n";
    return s;
}

}  // namespace goopt::io
