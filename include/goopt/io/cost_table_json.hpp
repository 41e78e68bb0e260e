#pragma once
/// @file
/// @brief Op-configuration cost tables (cost::cost_table, written by `goopt calibrate`) as JSON:
/// "goopt.cost_table" version 2. Version 1 (io/cluster_json.hpp) keys times by device and op name;
/// version 2 keys them by op configuration (cost/op_config.hpp) and records where they were measured:
/// @code
/// {"format": "goopt.cost_table", "version": 2,
///  "runtime": {"name": "onnxruntime", "version": "1.22.0", "threads": 1},
///  "machine": {"cpu": "Intel(R) Xeon(R) ...", "cores": 16},
///  "repetitions": 30,                 // runs per configuration; each time is their
///  "statistic": "median",             // median (or "min": the fastest run)
///  "dispatch_seconds": 1.1e-05,       // that of a one-tiny-op model, subtracted from each time
///  "times": [{"config": "relu(;in=f32[1,64];out=f32[1,64])", "seconds": 2.1e-07}, ...]}
/// @endcode

#include <goopt/cost/cost_table.hpp>
#include <goopt/cost/measured_time.hpp>
#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/json_reading.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <string_view>

namespace goopt::io {

/// The version of "goopt.cost_table" that holds op-configuration tables.
inline constexpr std::int64_t configuration_table_version = 2;

inline nlohmann::json measured_table_to_json(const cost::cost_table& t);

/// @brief The table in a "goopt.cost_table" version 2 document; anything else is a goopt::error
/// naming `source`, the JSON pointer of the bad value and what was expected.
inline cost::cost_table measured_table_from_json(const nlohmann::json& j, std::string_view source = "<json>");

/// Reads a "goopt.cost_table" version 2 file.
inline cost::cost_table read_measured_table_file(const std::filesystem::path& path);

/// Writes `t` to `path` atomically (io::atomic_write).
inline void write_measured_table_file(const std::filesystem::path& path, const cost::cost_table& t);

// ---- implementation ----

inline nlohmann::json measured_table_to_json(const cost::cost_table& t) {
    nlohmann::json times = nlohmann::json::array();
    for (const auto& [config, seconds] : t.seconds) times.push_back({{"config", config}, {"seconds", seconds}});
    const auto& e = t.environment;
    return {{"format", "goopt.cost_table"},
            {"version", configuration_table_version},
            {"runtime", {{"name", e.runtime}, {"version", e.runtime_version}, {"threads", e.threads}}},
            {"machine", {{"cpu", e.cpu}, {"cores", e.cores}}},
            {"repetitions", t.repetitions},
            {"statistic", t.statistic},
            {"dispatch_seconds", t.dispatch_seconds},
            {"times", std::move(times)}};
}

namespace detail {

inline const nlohmann::json& member(const nlohmann::json& j, std::string_view source, const std::string& pointer,
                                    const char* key) {
    if (!j.is_object()) fail_at(source, pointer, concat("is ", describe(j)), "an object");
    const auto it = j.find(key);
    if (it == j.end()) fail_at(source, concat(pointer, "/", key), "is missing");
    return *it;
}

inline std::string string_member(const nlohmann::json& j, std::string_view source, const std::string& pointer,
                                 const char* key) {
    const auto& v = member(j, source, pointer, key);
    if (!v.is_string()) fail_at(source, concat(pointer, "/", key), concat("is ", describe(v)), "a string");
    return v.get<std::string>();
}

inline std::int64_t count_member(const nlohmann::json& j, std::string_view source, const std::string& pointer,
                                 const char* key) {
    const auto& v = member(j, source, pointer, key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
        fail_at(source, concat(pointer, "/", key), concat("is ", describe(v)), "an integer >= 1");
    return v.get<std::int64_t>();
}

inline double seconds_member(const nlohmann::json& j, std::string_view source, const std::string& pointer,
                             const char* key) {
    const auto& v = member(j, source, pointer, key);
    if (!v.is_number() || !cost::valid_op_seconds(v.get<double>()))
        fail_at(source, concat(pointer, "/", key), concat("is ", describe(v)), cost::valid_op_seconds_text());
    return v.get<double>();
}

}  // namespace detail

inline cost::cost_table measured_table_from_json(const nlohmann::json& j, std::string_view source) {
    if (!j.is_object()) throw error(source, concat("the document is ", detail::describe(j)), "an object");
    if (detail::string_member(j, source, "", "format") != "goopt.cost_table")
        detail::fail_at(source, "/format", "is not \"goopt.cost_table\"", "\"goopt.cost_table\"");
    const auto& version = detail::member(j, source, "", "version");
    if (version == 1)
        detail::fail_at(source, "/version",
                        "is 1: a table of times per device and op name (io::read_cost_table_file), not per op "
                        "configuration",
                        "2 (a table written by 'goopt calibrate')");
    if (version != configuration_table_version) detail::fail_at(source, "/version", concat("is ", version.dump()), "2");
    cost::cost_table t;
    const auto& runtime = detail::member(j, source, "", "runtime");
    t.environment.runtime = detail::string_member(runtime, source, "/runtime", "name");
    t.environment.runtime_version = detail::string_member(runtime, source, "/runtime", "version");
    t.environment.threads = detail::count_member(runtime, source, "/runtime", "threads");
    const auto& machine = detail::member(j, source, "", "machine");
    t.environment.cpu = detail::string_member(machine, source, "/machine", "cpu");
    t.environment.cores = detail::count_member(machine, source, "/machine", "cores");
    t.repetitions = detail::count_member(j, source, "", "repetitions");
    t.statistic = detail::string_member(j, source, "", "statistic");
    if (t.statistic != "median" && t.statistic != "min")
        detail::fail_at(source, "/statistic", concat("is ", detail::quote(t.statistic)), "\"median\" or \"min\"");
    t.dispatch_seconds = detail::seconds_member(j, source, "", "dispatch_seconds");
    const auto& times = detail::member(j, source, "", "times");
    if (!times.is_array()) detail::fail_at(source, "/times", concat("is ", detail::describe(times)), "an array");
    for (std::size_t i = 0; i < times.size(); ++i) {
        const std::string at = concat("/times/", i);
        auto config = detail::string_member(times[i], source, at, "config");
        if (t.seconds.count(config))
            detail::fail_at(source, concat(at, "/config"), concat("repeats ", detail::quote(config)),
                            "one time per configuration");
        t.set(std::move(config), detail::seconds_member(times[i], source, at, "seconds"));
    }
    return t;
}

inline cost::cost_table read_measured_table_file(const std::filesystem::path& path) {
    return measured_table_from_json(detail::parse_json_text(detail::read_text_file(path, "cost table"), path.string()),
                                    path.string());
}

inline void write_measured_table_file(const std::filesystem::path& path, const cost::cost_table& t) {
    atomic_write(path, measured_table_to_json(t).dump(1) + "\n");
}

}  // namespace goopt::io
