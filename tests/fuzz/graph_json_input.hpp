#pragma once
/// @file
/// @brief One fuzz input for the graph JSON reader (io::from_json_string): a goopt::error is a clean
/// rejection; an accepted graph must be valid (graph::problems) and survive write/read/write
/// unchanged, since the reader promises never to return a silently wrong graph.

#include "fuzz_input.hpp"

#include <goopt/error.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/graph_json.hpp>

#include <string>
#include <string_view>

namespace goopt::fuzz {

/// @return true when the reader accepted the input. @throws fuzz::finding for a broken promise;
/// any exception other than goopt::error escapes (a finding too).
inline bool graph_json_input(std::string_view bytes) {
    graph::computation_graph g;
    try {
        g = io::from_json_string(bytes, "<fuzz>");
    } catch (const error&) {
        return false;
    }
    if (const auto p = graph::problems(g); !p.empty())
        throw finding("the reader accepted an invalid graph: " + p.front());
    std::string text;
    try {
        text = io::to_json_string(g);
    } catch (const error&) {
        return true;  // names the writer cannot spell (invalid UTF-8) are refused with a goopt::error
    }
    std::string again;
    try {
        again = io::to_json_string(io::from_json_string(text, "<round trip>"));
    } catch (const error& e) {
        throw finding(std::string("the reader rejects what the writer wrote: ") + e.what());
    }
    if (again != text) throw finding("write/read/write changed the graph: " + excerpt(text));
    return true;
}

}  // namespace goopt::fuzz
