#pragma once
/// @file
/// @brief Where a cost table was measured: the runtime (name, version, thread count) and the machine
/// (CPU model, core count). A time measured in one environment says little about another (another
/// runtime version picks other kernels, another thread count splits them otherwise), so a table is
/// used only in the environment it was measured in, unless the user accepts a foreign one.

#include <goopt/error.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

namespace goopt::cost {

/// The runtime and machine a table was measured on.
struct measurement_environment {
    std::string runtime = "onnxruntime";  ///< the runtime's name
    std::string runtime_version{};        ///< e.g. "1.22.0"
    std::int64_t threads = 1;             ///< intra-op threads the runtime was given
    std::string cpu{};                    ///< the CPU model string (Linux: /proc/cpuinfo "model name")
    std::int64_t cores = 0;               ///< hardware threads of the machine

    friend bool operator==(const measurement_environment&, const measurement_environment&) = default;
};

/// "onnxruntime 1.22.0, 1 thread, Intel(R) Xeon(R) ... (16 cores)", for messages.
inline std::string describe(const measurement_environment& e) {
    return concat(e.runtime, " ", e.runtime_version.empty() ? std::string("(version unknown)") : e.runtime_version,
                  ", ", e.threads, e.threads == 1 ? " thread, " : " threads, ", e.cpu, " (", e.cores, " cores)");
}

/// This machine's CPU model string and core count: "model name" of /proc/cpuinfo where it has one,
/// else "unknown"; the cores as std::thread::hardware_concurrency counts them.
inline measurement_environment this_machine(std::string runtime_version, std::int64_t threads) {
    measurement_environment e{.runtime_version = std::move(runtime_version), .threads = threads};
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; std::getline(info, line);) {
        if (line.rfind("model name", 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const auto begin = line.find_first_not_of(" \t", colon + 1);
        e.cpu = begin == std::string::npos ? std::string() : line.substr(begin);
        break;
    }
    if (e.cpu.empty()) e.cpu = "unknown";
    e.cores = static_cast<std::int64_t>(std::thread::hardware_concurrency());
    return e;
}

/// @brief Checks that a table measured in `table` may be used in `here`. A field of `here` that is
/// empty (a runtime version that could not be found) is not compared.
/// @param accept_foreign when true, a mismatch is not an error: the message is returned as a warning.
/// @return "" when the environments agree, else the warning (only with `accept_foreign`).
/// @throws goopt::error naming both environments when they differ and `accept_foreign` is false.
inline std::string check_environment(std::string_view source, const measurement_environment& table,
                                     const measurement_environment& here, bool accept_foreign) {
    const bool same = table.runtime == here.runtime &&
                      (here.runtime_version.empty() || table.runtime_version == here.runtime_version) &&
                      table.threads == here.threads && table.cpu == here.cpu && table.cores == here.cores;
    if (same) return {};
    const std::string what = concat("measured with ", describe(table), ", not here: ", describe(here));
    if (!accept_foreign)
        throw error(source, what,
                    "a table calibrated here ('goopt calibrate'), or --accept-foreign-table to use it anyway");
    return concat(source, ": ", what, " (used anyway: --accept-foreign-table)");
}

}  // namespace goopt::cost
