#pragma once
/// @file
/// @brief A single op's configuration key (cost/op_config.hpp) read back into a graph of that op
/// alone: its inputs as graph inputs, or weights where the key marks them `w:`. A cost table keeps
/// keys and seconds, not graphs; rebuilt, every measured configuration has a roofline time, so a
/// fallback can be fitted on the whole table and a configuration's error can be measured with the
/// others left in (benchmarks/fallback.cpp).

#include <goopt/cost/op_config.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::cost {

/// The graph of the op that `key` (a single op's key, not a group's) describes; its op is the last
/// one. Throws goopt::error naming the key where it is malformed, names an unknown kind, attribute
/// or element type, or where the op rebuilt from it has another key (output types the op table no
/// longer infers from those inputs and attributes).
inline graph::computation_graph op_config_graph(std::string_view key);

// ---- implementation ----

namespace detail {

[[noreturn]] inline void bad_key(std::string_view key, std::string_view what, std::string_view expected) {
    throw error("cost::op_config_graph", concat("key '", key, "': ", what), expected);
}

inline std::int64_t key_integer(std::string_view key, std::string_view s) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) bad_key(key, concat("'", s, "'"), "an integer");
    return v;
}

/// "[1,64]" -> {1, 64}.
inline std::vector<std::int64_t> key_integers(std::string_view key, std::string_view s) {
    if (s.size() < 2 || s.front() != '[' || s.back() != ']') bad_key(key, concat("'", s, "'"), "[integers]");
    std::vector<std::int64_t> out;
    s = s.substr(1, s.size() - 2);
    while (!s.empty()) {
        const auto comma = s.find(',');
        out.push_back(key_integer(key, s.substr(0, comma)));
        s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    }
    return out;
}

/// Splits `s` at the commas outside brackets.
inline std::vector<std::string_view> split_outside_brackets(std::string_view s) {
    std::vector<std::string_view> parts;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        depth += s[i] == '[' ? 1 : s[i] == ']' ? -1 : 0;
        if (s[i] == ',' && depth == 0) {
            parts.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    }
    if (start < s.size()) parts.push_back(s.substr(start));
    return parts;
}

inline ops::attr_value key_value(std::string_view key, std::string_view s) {
    if (s.starts_with('[')) return key_integers(key, s);
    if (s.find_first_of(".eEn") != std::string_view::npos) {  // a real: 0.5, 1e-05, nan, inf
        double v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc{} || end != s.data() + s.size()) bad_key(key, concat("'", s, "'"), "a number");
        return v;
    }
    return key_integer(key, s);  // a real attribute written as an integer is converted by the graph
}

}  // namespace detail

inline graph::computation_graph op_config_graph(std::string_view key) {
    const auto open = key.find('(');
    const auto in_at = key.find(";in=");
    const auto out_at = key.find(";out=");
    if (open == std::string_view::npos || in_at == std::string_view::npos || out_at == std::string_view::npos ||
        !(open < in_at && in_at < out_at) || !key.ends_with(')'))
        detail::bad_key(key, "not a single op's key", "kind(attributes;in=types;out=types)");
    const auto kind = ops::parse_op_kind(key.substr(0, open));
    if (!kind) detail::bad_key(key, concat("unknown op kind '", key.substr(0, open), "'"), "a kind of ops::op_kind");

    ops::attribute_map attrs;
    for (std::string_view item : detail::split_outside_brackets(key.substr(open + 1, in_at - open - 1))) {
        const auto eq = item.find('=');
        const auto id = eq == std::string_view::npos ? std::nullopt : ops::parse_attr_id(item.substr(0, eq));
        if (!id) detail::bad_key(key, concat("attribute '", item, "'"), "name=value with a known name");
        attrs.set(*id, detail::key_value(key, item.substr(eq + 1)));
    }

    graph::computation_graph g(std::string(key.substr(0, open)));
    std::vector<graph::tensor_id> inputs;
    const auto in_types = key.substr(in_at + 4, out_at - in_at - 4);
    for (std::string_view type : detail::split_outside_brackets(in_types)) {
        const bool fixed = type.starts_with("w:");
        if (fixed) type.remove_prefix(2);
        const auto bracket = type.find('[');
        const auto t = bracket == std::string_view::npos ? std::nullopt : ops::parse_dtype(type.substr(0, bracket));
        if (!t) detail::bad_key(key, concat("input type '", type, "'"), "an element type and [dimensions]");
        const auto dims = detail::key_integers(key, type.substr(bracket));
        const ops::shape s{std::span<const std::int64_t>(dims)};
        const std::string name = concat("x", inputs.size());
        inputs.push_back(fixed ? g.weight(name, s, *t) : g.input(name, s, *t));
    }
    try {
        for (graph::tensor_id t : g.add(*kind, inputs, std::move(attrs), "op")) g.mark_output(t);
    } catch (const error& e) {
        detail::bad_key(key, e.what(), "a configuration the op table accepts");
    }
    const auto rebuilt = op_config_key(g, static_cast<graph::op_id>(g.num_ops() - 1));
    if (rebuilt != key) detail::bad_key(key, concat("rebuilt as '", rebuilt, "'"), "the same key");
    return g;
}

}  // namespace goopt::cost
