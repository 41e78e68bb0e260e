#pragma once
/// @file
/// @brief Strict checks of flag values (CLI11), shared by the `goopt` program (tools/goopt/) and the
/// benchmarks (benchmarks/): a value either means exactly what it says or is refused with a message
/// naming it, never silently changed ("-1" is not the largest seed, "12x" is not 12).

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace goopt::cli_checks {

// The flag values' validators. CLI11 converts a value that passed them with strtoull or strtold,
// which read more than they accept ("012" as octal, hex, leading blanks) and strtold rounds twice
// on the way to a double; so each rewrites the text it accepts into one those read as from_chars
// did. They are transforms (`->transform(count())`): Option::check would hand them a copy.

/// A CLI11 transform for an integer flag: the whole text is a decimal integer in [lo, hi] ("12";
/// not "12x", "-1", "0x1f" or ""). Refused, the message names the value and what was expected.
inline CLI::Validator count(std::uint64_t lo = 0, std::uint64_t hi = std::numeric_limits<std::uint64_t>::max()) {
    std::string expected = "a non-negative integer", range;  // range: shown in --help after the type
    if (hi < std::numeric_limits<std::uint64_t>::max()) {
        range = concat("in ", lo, "..", hi);
        expected = concat("an integer ", range);
    } else if (lo > 0) {
        range = concat(">= ", lo);
        expected = concat("an integer ", range);
    }
    return CLI::Validator(
        [lo, hi, expected](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi)
                return concat("'", text, "': expected ", expected);
            text = std::to_string(v);
            return {};
        },
        range);
}

/// A CLI11 transform for a real flag: the whole text is a finite number >= 0 ("0.5", "1e-4"; not
/// "0.5s", "nan", "inf" or "-1"). Accepted, it becomes the exact hexadecimal form of the double.
inline CLI::Validator non_negative_real() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v) || v < 0)
                return concat("'", text, "': expected a finite number >= 0");
            char hex[64];
            const auto written = std::to_chars(hex, hex + sizeof hex, std::abs(v), std::chars_format::hex);
            text = concat(std::signbit(v) ? "-0x" : "0x",
                          std::string_view(hex, static_cast<std::size_t>(written.ptr - hex)));
            return {};
        },
        "");
}

/// A CLI11 check for an output file flag: a path io::atomic_write can write to (its folder exists and
/// is writable, and it is not a folder), so that a mistyped folder fails at once and not after the
/// run's work ("--out: the folder 'results' of 'results/r.json' does not exist: expected a file in
/// an existing, writable folder").
inline CLI::Validator writable_file() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const std::string problem = io::write_problem(text);
            return problem.empty() ? problem : concat(problem, ": expected a file in an existing, writable folder");
        },
        "");
}

}  // namespace goopt::cli_checks
