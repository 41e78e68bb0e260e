#pragma once
/// @file
/// @brief One fuzz input for the measured cost table reader (io::measured_table_from_json, the
/// `goopt superopt --cost-table` file): a goopt::error is a clean rejection. An accepted table must
/// hold only times cost::valid_op_seconds allows, write back to JSON that reads as the same table,
/// give the shape-aware fallback (cost::scaled_roofline::fit_shape, which rebuilds every key into a
/// one-op graph) finite positive factors without an error, and, for each key that rebuilds, a graph
/// whose op has that key again and that the measured model costs at the table's time.

#include "fuzz_input.hpp"

#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/cost/op_config_graph.hpp>
#include <goopt/cost/scaled_roofline.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/error.hpp>
#include <goopt/io/cost_table_json.hpp>
#include <goopt/io/json_reading.hpp>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace goopt::fuzz {

/// @return true when the reader accepted the input. @throws fuzz::finding for a broken promise.
inline bool cost_table_input(std::string_view bytes) {
    cost::cost_table t;
    try {
        t = io::measured_table_from_json(io::detail::parse_json_text(bytes, "<fuzz>"), "<fuzz>");
    } catch (const error&) {
        return false;
    }
    if (!cost::valid_op_seconds(t.dispatch_seconds)) throw finding("the reader accepted a bad dispatch time");
    for (const auto& [key, seconds] : t.seconds)
        if (!cost::valid_op_seconds(seconds)) throw finding("the reader accepted a bad time for " + excerpt(key));

    const std::string text = io::measured_table_to_json(t).dump();
    try {
        if (io::measured_table_to_json(
                io::measured_table_from_json(io::detail::parse_json_text(text, "<round trip>"), "<round trip>"))
                .dump() != text)
            throw finding("write/read/write changed the table: " + excerpt(text));
    } catch (const error& e) {
        throw finding(std::string("the reader rejects what the writer wrote: ") + e.what());
    }

    const auto cpu = device::describe(*device::find_preset("CPU"));
    cost::scaled_roofline fallback;
    try {
        fallback = cost::scaled_roofline::fit_shape(t, cpu);
    } catch (const error& e) {
        throw finding(std::string("the shape-aware fallback refused an accepted table: ") + e.what());
    }
    auto bad_factor = [](double f) { return !(std::isfinite(f) && f > 0); };
    if (bad_factor(fallback.overall())) throw finding("a non-finite or non-positive overall factor");
    for (const auto& [kind, f] : fallback.by_kind())
        if (bad_factor(f)) throw finding("a non-finite or non-positive factor of a kind");

    const cost::measured_model<cost::scaled_roofline> model(t, fallback);
    constexpr std::size_t max_rebuilt = 64;  // each rebuild builds a graph: keep an input fast
    std::size_t tried = 0;
    for (const auto& [key, seconds] : t.seconds) {
        if (key.starts_with("group{")) continue;
        if (++tried > max_rebuilt) break;
        std::optional<graph::computation_graph> g;
        try {
            g = cost::op_config_graph(key);
        } catch (const error&) {
            continue;  // a key that names no op this build can make: left out, as fit_shape does
        }
        const auto o = static_cast<graph::op_id>(g->num_ops() - 1);
        if (cost::op_config_key(*g, o) != key) throw finding("a rebuilt op has another key than " + excerpt(key));
        const double scaled = fallback.op_time(*g, o, cpu);
        if (!(std::isfinite(scaled) && scaled >= 0))
            throw finding("the fallback costs a rebuilt op at a non-finite or negative time: " + excerpt(key));
        if (cost::is_measurable(*g, o) && model.op_time(*g, o, cpu) != seconds)
            throw finding("the measured model does not cost a rebuilt op at its time: " + excerpt(key));
    }
    return true;
}

}  // namespace goopt::fuzz
