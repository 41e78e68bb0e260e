#pragma once
/// @file
/// @brief What the benchmark programs share: their command line (CLI11) with strict flag values, the
/// peak memory figure, atomic result files and one way to fail. A bad flag or a failed run is one
/// line on stderr naming the program and exit status 1, never a silently changed setting
/// ("--repeats x" is an error, not 1).

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>

#include "../tools/cli_checks.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::bench {

/// A benchmark's command line: CLI11's app, declared once for parsing, checking and --help. As in
/// the hand-written parsers it replaces, a flag given twice takes its last value (a list flag such
/// as `--model` adds to its list instead).
class command_line : public CLI::App {
public:
    command_line(const std::string& program, const std::string& description) : CLI::App(description, program) {
        option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }

    /// Parses `argv` into the declared flags.
    /// @return false when --help was asked for (printed on stdout; the program then exits 0)
    /// @throws goopt::error for what CLI11 refuses (an unknown flag, a value missing or malformed),
    /// with CLI11's message, which names the flag; run_main makes it one line and exit status 1.
    [[nodiscard]] bool parse_flags(int argc, const char* const* argv) {
        try {
            parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            exit(e);
            return false;
        } catch (const CLI::ParseError& e) {
            throw error(concat(e.what(), " (see --help)"));
        }
        return true;
    }

    /// The workload flags of the benchmarks over GO's graphs: `--model NAME` and `--graph FILE.json`,
    /// each repeatable.
    void add_graph_flags(std::vector<std::string>& models, std::vector<std::string>& graphs) {
        add_option("--model", models, "A model of the zoo (repeatable; default: every GO workload)")
            ->allow_extra_args(false)
            ->type_name("NAME");
        add_option("--graph", graphs, "A graph in goopt's JSON format (repeatable)")
            ->allow_extra_args(false)
            ->type_name("FILE.json");
    }
};

// The flag values' validators (count, non_negative_real, writable_file) are the program's too.
using cli_checks::count;
using cli_checks::non_negative_real;
using cli_checks::writable_file;

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
/// "<program>: error: <what>" on stderr and exit status 1. A benchmark built with
/// GOOPT_QUICK_PROGRAMS (-O1, for CI) says at the end that its timings mean nothing.
template <class Body> int run_main(const char* program, Body&& body) {
    try {
        const int status = body();
#if defined(GOOPT_QUICK_PROGRAMS)
        std::fflush(stdout);
        std::fprintf(stderr,
                     "%s: note: built with GOOPT_QUICK_PROGRAMS=ON (-O1): its timings are not this "
                     "machine's; rebuild without it to measure\n",
                     program);
#endif
        return status;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: error: %s\n", program, e.what());
        return 1;
    }
}

}  // namespace goopt::bench
