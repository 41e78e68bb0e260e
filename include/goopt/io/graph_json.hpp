#pragma once
/// @file
/// @brief Reading and writing computation graphs as JSON ("goopt.graph" version 1, see
/// docs/graph-json.md): human-editable, ops in any order, every error reported with its place.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/graph_json_format.hpp>
#include <goopt/io/graph_json_reader.hpp>
#include <goopt/io/graph_json_writer.hpp>
#include <goopt/io/json_reading.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <string>
#include <string_view>

namespace goopt::io {

/// @brief Builds a graph from a parsed JSON document, checking everything.
/// @param source_name names the document in error messages (usually the file name).
/// @param pointer_prefix JSON pointer of the graph inside a larger document ("" for the root), so that
/// errors in an embedded graph point at the right place.
/// @throws goopt::error `<source>: <place>: <what was wrong and what was expected>`.
inline graph::computation_graph graph_from_json(const nlohmann::json& j, std::string_view source_name,
                                                std::string_view pointer_prefix = "");
inline graph::computation_graph graph_from_json(const nlohmann::ordered_json& j, std::string_view source_name,
                                                std::string_view pointer_prefix = "");

/// @brief Parses a graph file's text. Errors as graph_from_json, invalid JSON with its byte offset.
inline graph::computation_graph from_json_string(std::string_view text, std::string_view source_name = "<string>");
/// @brief Reads a graph from a stream holding exactly one JSON document.
inline graph::computation_graph read_graph(std::istream& in, std::string_view source_name);
/// @brief Reads a graph file; errors name the file.
inline graph::computation_graph read_graph_file(const std::filesystem::path& path);

/// @brief The canonical text of a graph: keys in a fixed order, one op per line, ops in id order,
/// every attribute explicit. Equal graphs give equal text, so files diff well and round trips are exact.
/// @throws goopt::error when the graph cannot be written faithfully (duplicate or ambiguous op names).
inline std::string to_json_string(const graph::computation_graph& g);
/// @brief Writes to_json_string(g) to a file atomically (io::atomic_write).
inline void write_graph_file(const std::filesystem::path& path, const graph::computation_graph& g);

}  // namespace goopt::io

namespace goopt::graph {

/// nlohmann::json conversions, found by ADL: `nlohmann::json j = g;` and `j.get<computation_graph>()`.
/// Reading raises goopt::error, never an nlohmann exception; messages name the source as `<json>`.
inline void to_json(nlohmann::json& j, const computation_graph& g);
inline void to_json(nlohmann::ordered_json& j, const computation_graph& g);
inline void from_json(const nlohmann::json& j, computation_graph& g);
inline void from_json(const nlohmann::ordered_json& j, computation_graph& g);

}  // namespace goopt::graph

// ---- implementation ----
// (the reader and the writer are in graph_json_reader.hpp and graph_json_writer.hpp)

namespace goopt::io {

inline graph::computation_graph graph_from_json(const nlohmann::json& j, std::string_view source_name,
                                                std::string_view pointer_prefix) {
    return detail::read_graph_json(j, source_name, pointer_prefix);
}
inline graph::computation_graph graph_from_json(const nlohmann::ordered_json& j, std::string_view source_name,
                                                std::string_view pointer_prefix) {
    return detail::read_graph_json(j, source_name, pointer_prefix);
}

inline graph::computation_graph from_json_string(std::string_view text, std::string_view source_name) {
    return graph_from_json(detail::parse_json_text(text, source_name), source_name);
}

inline graph::computation_graph read_graph(std::istream& in, std::string_view source_name) {
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw error(source_name, "reading failed");
    return from_json_string(text, source_name);
}

inline graph::computation_graph read_graph_file(const std::filesystem::path& path) {
    return from_json_string(detail::read_text_file(path, "graph"), path.string());
}

inline std::string to_json_string(const graph::computation_graph& g) {
    nlohmann::ordered_json j;
    detail::write_graph_json(j, g);
    std::string out = "{\n";
    try {
        bool first = true;
        for (const auto& [key, value] : j.items()) {
            if (!first) out += ",\n";
            first = false;
            out += "  " + nlohmann::ordered_json(key).dump() + ": ";
            if (key == "ops" && !value.empty()) {
                out += "[\n";
                for (std::size_t i = 0; i < value.size(); ++i) {
                    out += "    ";
                    detail::append_compact(out, value[i]);
                    out += i + 1 < value.size() ? ",\n" : "\n";
                }
                out += "  ]";
            } else {
                detail::append_compact(out, value);
            }
        }
    } catch (const nlohmann::json::exception& e) {  // a name that is not valid UTF-8
        throw error(detail::writer_name(g), detail::without_nlohmann_prefix(e.what()), "names in valid UTF-8");
    }
    return out + "\n}\n";
}

inline void write_graph_file(const std::filesystem::path& path, const graph::computation_graph& g) {
    atomic_write(path, to_json_string(g));
}

}  // namespace goopt::io

namespace goopt::graph {

inline void to_json(nlohmann::json& j, const computation_graph& g) { io::detail::write_graph_json(j, g); }
inline void to_json(nlohmann::ordered_json& j, const computation_graph& g) { io::detail::write_graph_json(j, g); }
inline void from_json(const nlohmann::json& j, computation_graph& g) { g = io::graph_from_json(j, "<json>"); }
inline void from_json(const nlohmann::ordered_json& j, computation_graph& g) { g = io::graph_from_json(j, "<json>"); }

}  // namespace goopt::graph
