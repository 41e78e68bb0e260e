#pragma once
/// @file
/// @brief What the JSON readers (graphs, rules, clusters, cost tables) share: parsing text and reading
/// files with errors that name the source, and the pieces of their one-line error messages (printable
/// quotes of names from a file, JSON pointer tokens, what a value is, lists of what is accepted).

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/ops/dtype.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::io::detail {

/// Appends a string from a file or a graph for a one-line error message: control characters escaped,
/// very long strings cut, so that a hostile file cannot make a message span lines or megabytes.
inline void append_printable(std::string& out, std::string_view s) {
    constexpr std::size_t max_shown = 80;
    for (std::size_t i = 0; i < s.size() && i < max_shown; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7f) {
            constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else out += static_cast<char>(c);
    }
    if (s.size() > max_shown) out += "...";
}

/// The whole message on one line: names inside messages from the graph (add()'s) are not escaped.
inline std::string one_line(const std::string& message) {
    std::string out;
    out.reserve(message.size());
    for (char c : message) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[static_cast<unsigned char>(c) >> 4];
            out += hex[c & 15];
        } else {
            out += c;
        }
    }
    return out;
}

inline std::string quote(std::string_view s) {
    std::string out = "'";
    append_printable(out, s);
    return out + "'";
}

/// A JSON pointer reference token (RFC 6901: '~' and '/' escaped), made printable as above.
inline std::string pointer_token(std::string_view key) {
    std::string escaped;
    for (char c : key) {
        if (c == '~') escaped += "~0";
        else if (c == '/') escaped += "~1";
        else escaped += c;
    }
    std::string out;
    append_printable(out, escaped);
    return out;
}

/// "a string", "an array", "the real number 1.5": what a JSON value is, for "expected X, got Y".
template <class Json> std::string describe(const Json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::object:
            return "an object";
        case nlohmann::json::value_t::array:
            return "an array";
        case nlohmann::json::value_t::string:
            return "a string";
        case nlohmann::json::value_t::boolean:
            return v.template get<bool>() ? "true" : "false";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
            return "the integer " + v.dump();
        case nlohmann::json::value_t::number_float:
            return "the real number " + v.dump();
        default:
            return "a binary value";
    }
}

/// nlohmann's messages start with "[json.exception.parse_error.101] ", which helps nobody reading ours.
inline std::string without_nlohmann_prefix(std::string what) {
    if (const auto p = what.find("] "); what.rfind("[json.exception.", 0) == 0 && p != std::string::npos)
        what.erase(0, p + 2);
    return what;
}

inline std::string join(const std::vector<std::string_view>& items, std::string_view sep = ", ") {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) (out += i ? sep : "") += items[i];
    return out;
}

inline std::string dtype_list() {
    std::vector<std::string_view> names;
    for (std::size_t i = 0; i < ops::num_dtypes; ++i) names.push_back(ops::name(static_cast<ops::dtype>(i)));
    return join(names);
}

/// `<source>: <place>: <what>[: expected <expected>]` on one line, whatever the file's names hold.
[[noreturn]] inline void fail_at(std::string_view source, std::string_view place, const std::string& what,
                                 std::string_view expected = {}) {
    const std::string where = concat(place.empty() ? std::string_view("top level") : place, ": ", one_line(what));
    if (expected.empty()) throw error(source, where);
    throw error(source, where, one_line(std::string(expected)));
}

/// Checks the "format" and "version" keys of a document of format `name` (version 1) found at JSON
/// pointer `pointer` of `source` ("" for the whole file).
inline void check_header(const nlohmann::json& j, std::string_view source, std::string_view name,
                         std::string_view pointer = "") {
    if (!j.is_object())
        throw error(source,
                    pointer.empty() ? concat("the document is ", describe(j)) : concat(pointer, ": is ", describe(j)),
                    "an object");
    if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != name)
        throw error(source, concat(pointer, "/format"), concat('"', name, '"'));
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<std::int64_t>() != 1)
        throw error(source, concat(pointer, "/version"), "1");
}

/// The JSON document in `text`; invalid JSON is a goopt::error naming `source` and the byte.
inline nlohmann::json parse_json_text(std::string_view text, std::string_view source) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        throw error(source, concat("invalid JSON at byte ", e.byte, ": ", without_nlohmann_prefix(e.what())));
    } catch (const nlohmann::json::exception& e) {
        throw error(source, concat("invalid JSON: ", without_nlohmann_prefix(e.what())));
    }
}

inline std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw error(path.string(), "is a directory", concat("a ", what, " file"));
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int e = errno;
        throw error(path.string(), concat("cannot open the ", what, " file: ", errno_text(e)));
    }
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw error(path.string(), "reading failed");
    return text;
}

}  // namespace goopt::io::detail
