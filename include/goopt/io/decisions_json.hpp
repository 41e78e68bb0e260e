#pragma once
/// @file
/// @brief Decisions as JSON ("goopt.decisions" version 1): what `goopt simulate --decisions` scores
/// and the "decisions" object of a goopt.result, so that a decision made by hand or by another
/// program is scored by the same simulator as goopt's own.
/// @code
/// {"format": "goopt.decisions", "version": 1,
///  "placement": [device of op 0, op 1, ...],      // required: one per op, in the graph's op order
///  "priorities": [priority of op 0, ...],         // optional (or null): list scheduling, larger first
///  "fusion_groups": [group of op 0, ...],         // optional (or null): one id >= 0 runs fused, -1 alone
///  "transfer_order": "priority",                  // optional: "produced" (the default) or "priority"
///  "dispatch": "sequence",                        // optional: "ready" (the default) or "sequence"
///  "method": "heft"}                              // optional: what made the decision
/// @endcode

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/sim/decision.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::io {

inline constexpr std::string_view decisions_format_name = "goopt.decisions";

/// What a goopt.decisions document holds: a decision and, optionally, the name of what made it.
struct decisions_document {
    sim::decision decision;
    std::string method = {};  ///< empty: the document names no method
};

/// @brief The goopt.decisions document of `d`, keys in the order above; empty priorities or fusion
/// groups are written as null, "transfer_order" and "dispatch" only when they are not the defaults
/// (so that such a decision reads the same in a reader that predates the keys), "method" only when it
/// is not empty.
inline nlohmann::ordered_json decisions_to_json(const decisions_document& d);

/// @brief Reads a goopt.decisions document made for a graph of `num_ops` ops. The devices are not
/// checked against a cluster here: the simulator refuses those it lacks (sim::decision_refused).
/// @param source names the document in messages (the file name).
/// @param pointer JSON pointer of the document inside a larger one ("" for a file of its own).
/// @throws goopt::error `<source>: <pointer>/<field>[/<index>]: <what was found>: expected <what>` for
/// a wrong format or version, an unknown key, a missing placement, a list without one entry per op,
/// a device that is not an integer >= 0, a priority that is not a finite number, a fusion group id
/// that is not an integer >= -1, a transfer order other than "produced" or "priority", a dispatch
/// other than "ready" or "sequence".
inline decisions_document decisions_from_json(const nlohmann::json& j, std::size_t num_ops, std::string_view source,
                                              std::string_view pointer = "");

/// Reads a goopt.decisions file made for a graph of `num_ops` ops; errors name the file.
inline decisions_document read_decisions_file(const std::filesystem::path& path, std::size_t num_ops);
/// Writes decisions_to_json(d) to a file atomically (io::atomic_write).
inline void write_decisions_file(const std::filesystem::path& path, const decisions_document& d);

// ---- implementation ----

namespace detail {

/// The list at `key` of decisions object `j`: one entry per op, each a number that `valid` accepts.
template <class T, class Valid>
std::vector<T> decision_list(const nlohmann::json& j, std::string_view source, std::string_view pointer,
                             const char* key, std::size_t num_ops, std::string_view expected, Valid valid) {
    const auto& v = j.at(key);
    if (!v.is_array())
        throw error(source, concat(pointer, "/", key, ": is ", describe(v)), concat("an array of ", expected));
    if (v.size() != num_ops)
        throw error(source, concat(pointer, "/", key, ": has ", v.size(), " entries"),
                    concat("one per op (", num_ops, ")"));
    std::vector<T> out;
    out.reserve(num_ops);
    for (std::size_t i = 0; i < num_ops; ++i) {
        const auto& x = v[i];
        if (!x.is_number() || !valid(x))
            throw error(source, concat(pointer, "/", key, "/", i, ": is ", x.dump()), expected);
        out.push_back(x.get<T>());
    }
    return out;
}

}  // namespace detail

inline nlohmann::ordered_json decisions_to_json(const decisions_document& d) {
    const sim::decision& x = d.decision;
    nlohmann::ordered_json j{{"format", decisions_format_name}, {"version", 1}, {"placement", x.placement}};
    j["priorities"] = x.priorities.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(x.priorities);
    j["fusion_groups"] = x.fusion.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(x.fusion);
    if (x.transfers == sim::transfer_order::priority) j["transfer_order"] = "priority";
    if (x.dispatch == sim::dispatch_order::sequence) j["dispatch"] = "sequence";
    if (!d.method.empty()) j["method"] = d.method;
    return j;
}

inline decisions_document decisions_from_json(const nlohmann::json& j, std::size_t num_ops, std::string_view source,
                                              std::string_view pointer) {
    detail::check_header(j, source, decisions_format_name, pointer);
    for (const auto& [key, value] : j.items())
        if (key != "format" && key != "version" && key != "method" && key != "placement" && key != "priorities" &&
            key != "fusion_groups" && key != "transfer_order" && key != "dispatch")
            detail::fail_at(
                source, pointer, concat("unknown key ", detail::quote(key)),
                "format, version, placement, priorities, fusion_groups, transfer_order, dispatch or method");
    if (!j.contains("placement")) throw error(source, concat(pointer, "/placement: missing"), "a device index per op");
    decisions_document out;
    if (j.contains("method")) {
        if (!j["method"].is_string())
            throw error(source, concat(pointer, "/method: is ", detail::describe(j["method"])), "a string");
        out.method = j["method"].get<std::string>();
    }
    sim::decision& d = out.decision;
    d.placement = detail::decision_list<sim::device_id>(
        j, source, pointer, "placement", num_ops, "a device index (an integer >= 0)", [](const nlohmann::json& x) {
            return (x.is_number_unsigned() && x.get<std::uint64_t>() <= std::numeric_limits<sim::device_id>::max()) ||
                   (x.is_number_integer() && x.get<std::int64_t>() >= 0 &&
                    static_cast<std::uint64_t>(x.get<std::int64_t>()) <= std::numeric_limits<sim::device_id>::max());
        });
    if (j.contains("priorities") && !j["priorities"].is_null())
        d.priorities =
            detail::decision_list<double>(j, source, pointer, "priorities", num_ops, "a finite number",
                                          [](const nlohmann::json& x) { return std::isfinite(x.get<double>()); });
    if (j.contains("fusion_groups") && !j["fusion_groups"].is_null())
        d.fusion = detail::decision_list<std::int32_t>(
            j, source, pointer, "fusion_groups", num_ops, "a group id (an integer >= -1)", [](const nlohmann::json& x) {
                return x.is_number_unsigned()
                           ? x.get<std::uint64_t>() <= INT32_MAX
                           : x.is_number_integer() && x.get<std::int64_t>() >= -1 && x.get<std::int64_t>() <= INT32_MAX;
            });
    if (j.contains("transfer_order")) {
        const auto& t = j["transfer_order"];
        if (t == "priority") d.transfers = sim::transfer_order::priority;
        else if (t != "produced")
            throw error(source, concat(pointer, "/transfer_order: is ", t.dump()), "\"produced\" or \"priority\"");
    }
    if (j.contains("dispatch")) {
        const auto& t = j["dispatch"];
        if (t == "sequence") d.dispatch = sim::dispatch_order::sequence;
        else if (t != "ready")
            throw error(source, concat(pointer, "/dispatch: is ", t.dump()), "\"ready\" or \"sequence\"");
    }
    return out;
}

inline decisions_document read_decisions_file(const std::filesystem::path& path, std::size_t num_ops) {
    const std::string source = path.string();
    return decisions_from_json(detail::parse_json_text(detail::read_text_file(path, "decisions"), source), num_ops,
                               source);
}

inline void write_decisions_file(const std::filesystem::path& path, const decisions_document& d) {
    atomic_write(path, decisions_to_json(d).dump(1) + "\n");
}

}  // namespace goopt::io
