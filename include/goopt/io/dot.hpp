#pragma once
/// @file
/// @brief Graphviz drawing of a computation graph, for looking at what a rewrite did
/// (`dot -Tsvg graph.dot > graph.svg`).

#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>

#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

namespace goopt::io {

namespace detail {

/// Text inside a DOT double-quoted string. Quotes and backslashes are escaped (a backslash would
/// otherwise start a DOT escape such as \n or \l); line breaks become DOT's centered break.
inline std::string dot_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            // dropped: "\r\n" in a name is one line break, not two
        } else {
            out += c;
        }
    }
    return out;
}

/// Node ids are op ids, not names, so that any name (empty, with spaces, quotes) draws correctly.
inline std::string dot_node(graph::op_id o) { return "op" + std::to_string(o); }

/// An edge's label: the tensor's type, after `:k` where it is output k of an op with several.
inline std::string edge_label(const graph::computation_graph& g, const graph::tensor& t) {
    std::string label;  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "..." + std::string&&
    if (g.get_op(t.producer).outputs.size() > 1) label.append(":").append(std::to_string(t.index)).append(" ");
    return label += ops::to_string(t.type);
}

}  // namespace detail

/// @brief Writes the graph in Graphviz DOT: one node per op labelled with its name, kind and output
/// types; graph inputs, weights and constants drawn in their own shapes and colours; one edge per
/// input labelled with the tensor's type (`:k` names output k of a multi-output op); a sink node per
/// graph output.
inline void write_dot(std::ostream& out, const graph::computation_graph& g) {
    out << "digraph \"" << detail::dot_escape(g.name().empty() ? std::string("graph") : g.name()) << "\" {\n";
    out << "  rankdir=TB;\n";
    out << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", "
           "fontsize=10];\n";
    out << "  edge [fontname=\"Helvetica\", fontsize=8];\n";
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const graph::op& x = g.get_op(o);
        std::string label = detail::dot_escape(x.name) + "\\n" + std::string(ops::name(x.kind));
        for (graph::tensor_id t : x.outputs) label += "\\n" + ops::to_string(g.type_of(t));
        if (x.layer >= 0) label += "\\nlayer " + std::to_string(x.layer);
        out << "  " << detail::dot_node(o) << " [label=\"" << label << "\"";
        // Sources are what a reader looks for first: where data enters and where the parameters are.
        if (x.kind == ops::op_kind::input) out << ", shape=invhouse, fillcolor=\"#cfe2f3\"";
        else if (x.kind == ops::op_kind::weight) out << ", shape=cylinder, style=filled, fillcolor=\"#fce5cd\"";
        else if (x.spec().has(ops::source)) out << ", shape=ellipse, style=filled, fillcolor=\"#eeeeee\"";
        out << "];\n";
    }
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const graph::op& x = g.get_op(o);
        for (graph::tensor_id t : x.inputs) {
            const graph::tensor& in = g.get_tensor(t);
            out << "  " << detail::dot_node(in.producer) << " -> " << detail::dot_node(o) << " [label=\""
                << detail::edge_label(g, in) << "\"];\n";
        }
    }
    for (std::size_t k = 0; k < g.outputs().size(); ++k) {
        const graph::tensor& t = g.get_tensor(g.outputs()[k]);
        out << "  output" << k << " [label=\"output " << k << "\", shape=house, fillcolor=\"#d9ead3\"];\n";
        out << "  " << detail::dot_node(t.producer) << " -> output" << k << " [label=\"" << detail::edge_label(g, t)
            << "\", penwidth=2];\n";
    }
    out << "}\n";
}

/// @brief The DOT text of write_dot() as a string.
inline std::string to_dot(const graph::computation_graph& g) {
    std::ostringstream s;
    write_dot(s, g);
    return s.str();
}

}  // namespace goopt::io
