#pragma once
/// @file
/// @brief How far one op kind's measured times are from the roofline, as a function of the
/// configuration's size (its roofline time without the launch): the factor of a configuration
/// nobody measured taken from the measured configurations of its kind whose size is like its own. One factor per kind
/// (the median ratio) cannot see that a small convolution runs at another efficiency than a large one; a search that
/// merges ops into larger ones (or splits them) then takes exactly the configurations the one
/// factor makes too cheap. docs/cost.md ("Shape-aware fallback") has the measurement behind the default.

#include <goopt/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace goopt::cost {

/// A measured configuration: its roofline time and its measured time, both in seconds and > 0, and
/// its size: the roofline's time without the launch (the larger of its arithmetic and its memory
/// time). The size is what tells configurations apart: the roofline times of small ops all sit at
/// the launch cost (1 us on the CPU preset), while onnxruntime runs them in 5 to 120 us.
struct fallback_point {
    double roofline = 0, measured = 0, size = 0;
};

/// How a kind's factor follows the size.
enum class shape_method {
    /// ln(measured / roofline) = a + b ln(size), least squares over the kind's points: a power law
    /// (with no launch cost, measured = e^a roofline^(1+b)).
    loglog_fit,
    /// the median measured/roofline ratio of the k points nearest in ln(size).
    nearest,
};

/// @brief A kind's factor (measured / roofline) as a function of its size, fitted on that kind's
/// measured points. Outside the sizes measured, the factor is the one at the nearest end: a fit is
/// not extrapolated (a slope fitted on small ops says little about one 100x larger), and a larger
/// op never costs less than a smaller one for lack of points.
/// Deterministic: the same points in any order give the same curve.
class shape_curve {
public:
    shape_curve() = default;

    /// The curve of `points` (each > 0; at least one). With loglog_fit and points of one size
    /// alone, the slope is 0 (one factor: their geometric mean ratio).
    static shape_curve fit(std::vector<fallback_point> points, shape_method method, std::size_t k = 5) {
        if (points.empty()) throw error("cost::shape_curve", "no measured point", "at least one");
        shape_curve c;
        c.method_ = method;
        c.k_ = std::max<std::size_t>(k, 1);
        for (const auto& p : points) {
            if (!(p.roofline > 0) || !(p.measured > 0) || !std::isfinite(p.roofline) || !std::isfinite(p.measured) ||
                !(p.size > 0) || !std::isfinite(p.size))
                throw error("cost::shape_curve", concat("point (", p.roofline, ", ", p.measured, ", ", p.size, ")"),
                            "a roofline time, a measured time and a size > 0");
            c.log_size_.push_back(std::log(p.size));
            c.log_ratio_.push_back(std::log(p.measured / p.roofline));
        }
        // sorted by size (then ratio): the input's order never matters
        std::vector<std::size_t> order(points.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return c.log_size_[a] != c.log_size_[b] ? c.log_size_[a] < c.log_size_[b]
                                                    : c.log_ratio_[a] < c.log_ratio_[b];
        });
        std::vector<double> x, r;
        for (std::size_t i : order) {
            x.push_back(c.log_size_[i]);
            r.push_back(c.log_ratio_[i]);
        }
        c.log_size_ = std::move(x);
        c.log_ratio_ = std::move(r);
        if (method == shape_method::loglog_fit) c.fit_line();
        else c.window_medians();
        return c;
    }

    /// measured / roofline for a configuration of size `size` seconds (> 0).
    double factor(double size) const {
        GOOPT_ASSERT(!log_size_.empty());
        const double x = std::clamp(std::log(size), log_size_.front(), log_size_.back());
        if (method_ == shape_method::loglog_fit) return std::exp(intercept_ + slope_ * x);
        return std::exp(nearest_median(x));
    }

    shape_method method() const noexcept { return method_; }
    std::size_t points() const noexcept { return log_size_.size(); }
    /// loglog_fit's b in measured / roofline = e^a size^b (0 for nearest).
    double exponent() const noexcept { return slope_; }
    /// loglog_fit's e^a.
    double coefficient() const noexcept { return std::exp(intercept_); }

private:
    void fit_line() {
        const auto n = static_cast<double>(log_size_.size());
        double mx = 0, my = 0;
        for (std::size_t i = 0; i < log_size_.size(); ++i) {
            mx += log_size_[i];
            my += log_ratio_[i];
        }
        mx /= n;
        my /= n;
        double sxx = 0, sxy = 0;
        for (std::size_t i = 0; i < log_size_.size(); ++i) {
            const double dx = log_size_[i] - mx;
            sxx += dx * dx;
            sxy += dx * (log_ratio_[i] - my);
        }
        slope_ = sxx > 1e-12 * n ? sxy / sxx : 0.0;
        intercept_ = my - slope_ * mx;
    }

    /// The median log ratio of the k points nearest `x` (ties to the smaller size).
    double nearest_median(double x) const {
        const std::size_t n = log_size_.size(), k = std::min(k_, n);
        // the window of k consecutive sorted points nearest x
        std::size_t lo =
            static_cast<std::size_t>(std::lower_bound(log_size_.begin(), log_size_.end(), x) - log_size_.begin());
        std::size_t hi = lo;  // [lo, hi) taken
        while (hi - lo < k) {
            if (lo == 0) ++hi;
            else if (hi == n) --lo;
            else if (x - log_size_[lo - 1] <= log_size_[hi] - x) --lo;
            else ++hi;
        }
        return window_median_[lo];
    }

    /// The median log ratio of every window of k consecutive points, by its first point: a search
    /// asks for factors millions of times, the windows are known when the curve is made.
    void window_medians() {
        const std::size_t n = log_size_.size(), k = std::min(k_, n);
        for (std::size_t lo = 0; lo + k <= n; ++lo) {
            std::vector<double> r(log_ratio_.begin() + static_cast<std::ptrdiff_t>(lo),
                                  log_ratio_.begin() + static_cast<std::ptrdiff_t>(lo + k));
            std::sort(r.begin(), r.end());
            window_median_.push_back(r.size() % 2 ? r[r.size() / 2] : (r[r.size() / 2 - 1] + r[r.size() / 2]) / 2);
        }
    }

    shape_method method_ = shape_method::loglog_fit;
    std::size_t k_ = 5;
    std::vector<double> log_size_{}, log_ratio_{}, window_median_{};
    double slope_ = 0, intercept_ = 0;
};

}  // namespace goopt::cost
