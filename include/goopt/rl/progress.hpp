#pragma once
/// @file
/// @brief What a training run shows while it runs: one status line on a terminal, and metrics as
/// JSON lines for plotting. Nothing goes to stdout.

#include <goopt/error.hpp>
#include <goopt/rl/ppo.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

namespace goopt::rl {

namespace detail {
/// Whether stderr is a terminal, where the status line is redrawn in place.
inline bool stderr_is_terminal() noexcept {
#if defined(_WIN32)
    return ::_isatty(::_fileno(stderr)) != 0;
#else
    return ::isatty(STDERR_FILENO) == 1;
#endif
}
}  // namespace detail

/// When the status line is drawn.
enum class status_mode : std::uint8_t {
    terminal,  ///< only when stderr is a terminal (the default)
    always,    ///< also into a redirected stderr (one line per update)
    never,
};

/// Knobs of a progress_reporter.
struct progress_config {
    std::filesystem::path metrics = {};  ///< JSON lines, one object per update; empty: none
    bool append = false;                 ///< continue the metrics file (a resumed run) instead of starting it over
    status_mode status = status_mode::terminal;
    std::size_t total_updates = 0;  ///< for the ETA; 0: unknown
};

/// @brief Draws the status line (update, best, mean reward, updates/s, ETA) on stderr and appends
/// one JSON object per update to the metrics file: the update's statistics plus the caller's named
/// figures (e.g. the best step time). @throws goopt::error when the metrics file cannot be opened.
class progress_reporter {
public:
    explicit progress_reporter(progress_config c) : c_(std::move(c)), start_(clock::now()) {
        if (!c_.metrics.empty()) {
            out_.open(c_.metrics, c_.append ? std::ios::app : std::ios::trunc);
            if (!out_)
                throw error("rl::progress_reporter",
                            concat("cannot open the metrics file '", c_.metrics.string(), "'"));
        }
        draw_ =
            c_.status == status_mode::always || (c_.status == status_mode::terminal && detail::stderr_is_terminal());
    }
    progress_reporter(const progress_reporter&) = delete;
    progress_reporter& operator=(const progress_reporter&) = delete;
    ~progress_reporter() {
        if (drawn_) std::fputc('\n', stderr);
    }

    /// @param best_label name of the headline figure in the status line (e.g. "best ms").
    void report(const update_stats& s, const char* best_label, double best,
                std::initializer_list<std::pair<const char*, double>> extra = {}) {
        const double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
        ++seen_;
        const double rate = elapsed > 0 ? static_cast<double>(seen_) / elapsed : 0.0;
        if (out_.is_open()) {
            char buf[512];
            std::snprintf(buf, sizeof buf,
                          "{\"update\": %zu, \"samples\": %zu, \"mean_reward\": %.9g, \"best_reward\": %.9g, "
                          "\"mode_reward\": %.9g, \"entropy\": %.9g, \"clip_fraction\": %.6g, \"loss\": %.9g, "
                          "\"seconds\": %.6g",
                          s.update, s.samples, s.mean_reward, s.best_reward, s.mode_reward, s.entropy, s.clip_fraction,
                          s.loss, elapsed);
            out_ << buf;
            for (const auto& [k, v] : extra) {
                std::snprintf(buf, sizeof buf, ", \"%s\": %.9g", k, v);
                out_ << buf;
            }
            out_ << "}\n";
            out_.flush();
            if (!out_)
                throw error("rl::progress_reporter",
                            concat("cannot write the metrics file '", c_.metrics.string(), "'"));
        }
        if (draw_) {
            const double eta =
                c_.total_updates > s.update && rate > 0 ? static_cast<double>(c_.total_updates - s.update) / rate : 0.0;
            std::fprintf(stderr, "%supdate %zu/%zu  %s %.4g  mean reward %.4f  %.2f updates/s  ETA %.0f s%s",
                         c_.status == status_mode::always ? "" : "\r", s.update, c_.total_updates, best_label, best,
                         s.mean_reward, rate, eta, c_.status == status_mode::always ? "\n" : "   ");
            std::fflush(stderr);
            drawn_ = c_.status != status_mode::always;
        }
    }

private:
    using clock = std::chrono::steady_clock;
    progress_config c_;
    clock::time_point start_;
    std::ofstream out_;
    bool draw_ = false, drawn_ = false;
    std::size_t seen_ = 0;
};

}  // namespace goopt::rl
