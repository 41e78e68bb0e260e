#pragma once
/// @file
/// @brief What the benchmark programs share: strict flag values, the peak memory figure, atomic
/// result files and one way to fail. A bad flag or a failed run is one line on stderr naming the
/// program and exit status 1, never a silently changed setting ("--repeats x" is an error, not 1).

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>

namespace goopt::bench {

/// The value of `flag` as a non-negative integer: the whole text ("12"; not "12x", "-1" or "").
inline std::uint64_t count_value(std::string_view flag, std::string_view text) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
        throw error(concat("flag ", flag), concat("'", text, "'"), "a non-negative integer");
    return v;
}

/// The value of `flag` as an integer in [lo, hi]; outside it is an error naming the range.
inline std::uint64_t count_value(std::string_view flag, std::string_view text, std::uint64_t lo, std::uint64_t hi) {
    const std::uint64_t v = count_value(flag, text);
    if (v < lo || v > hi) throw error(concat("flag ", flag), concat(v), concat(lo, "..", hi));
    return v;
}

/// The value of `flag` as a finite number >= 0: the whole text ("0.5"; not "0.5s", "nan" or "-1").
inline double real_value(std::string_view flag, std::string_view text) {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v) || v < 0)
        throw error(concat("flag ", flag), concat("'", text, "'"), "a finite number >= 0");
    return v;
}

/// A flag given last, with no value after it.
[[noreturn]] inline void missing_value(std::string_view flag) {
    throw error(concat("flag ", flag), "no value after it", "a value (see --help)");
}

/// An argument that is no flag of the program; `expected` lists what is.
[[noreturn]] inline void unknown_argument(std::string_view arg, std::string_view expected = "a flag listed by --help") {
    throw error(concat("argument '", arg, "'"), "unknown", expected);
}

/// Peak resident memory of this process so far (VmHWM), in bytes; 0 where /proc is absent.
inline std::size_t peak_memory_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
}

/// Writes `text` to `path` atomically (an interrupted run leaves the old file or none) and says so.
inline void write_results(const std::string& path, const std::string& text) {
    io::atomic_write(path, text);
    std::printf("wrote %s\n", path.c_str());
    std::fflush(stdout);
}

/// The body of main(): returns what `body` returns; an exception becomes
/// "<program>: error: <what>" on stderr and exit status 1.
template <class Body> int run_main(const char* program, Body&& body) {
    try {
        return body();
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: error: %s\n", program, e.what());
        return 1;
    }
}

}  // namespace goopt::bench
