#pragma once
/// @file
/// @brief What the "goopt.graph" format fixes for its reader and writer alike (docs/graph-json.md): its
/// name and version, and how a tensor reference names output k of an op ("op:k").

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace goopt::io {

/// Value of the "format" key that identifies a goopt graph file.
inline constexpr std::string_view graph_format_name = "goopt.graph";
/// The format version this reader understands and this writer produces.
inline constexpr std::int64_t graph_format_version = 1;

}  // namespace goopt::io

namespace goopt::io::detail {

/// "name:k" with k in canonical decimal (how the writer spells output k > 0), or nullopt.
inline std::optional<std::pair<std::string_view, std::uint32_t>> split_reference(std::string_view ref) {
    const auto colon = ref.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == ref.size()) return std::nullopt;
    const std::string_view digits = ref.substr(colon + 1);
    std::uint32_t k = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    return std::pair{ref.substr(0, colon), k};
}

/// The op name that makes `name` ambiguous as a reference (`x:1` when an op `x` exists), if any:
/// such a name could mean the op itself or output 1 of `x`, so the format forbids it.
template <class Contains> std::optional<std::string_view> ambiguous_with(std::string_view name, const Contains& has) {
    if (auto r = split_reference(name);
        r && std::to_string(r->second) == name.substr(r->first.size() + 1) && has(r->first))
        return r->first;
    return std::nullopt;
}

}  // namespace goopt::io::detail
