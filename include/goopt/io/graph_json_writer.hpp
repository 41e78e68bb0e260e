#pragma once
/// @file
/// @brief The writer behind io::to_json_string: the canonical JSON of a graph (every attribute explicit,
/// ops in id order), after checking that every op can be referred to by its name alone.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/graph_json_format.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/dtype.hpp>
#include <goopt/ops/op_table.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace goopt::io::detail {

template <class Json> Json attribute_json(ops::attr_id id, const ops::attr_value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
        if (id == ops::attr_id::padding && (*i == 0 || *i == 1))
            return Json(ops::name(static_cast<ops::padding_mode>(*i)));
        if (id == ops::attr_id::activation && *i >= 0 && *i < ops::num_activations)
            return Json(ops::name(static_cast<ops::activation>(*i)));
        if (id == ops::attr_id::dtype && *i >= 0 && *i < static_cast<std::int64_t>(ops::num_dtypes))
            return Json(ops::name(static_cast<ops::dtype>(*i)));
        return Json(*i);
    }
    if (const auto* r = std::get_if<double>(&v)) {
        if (std::isnan(*r)) return Json("nan");
        if (std::isinf(*r)) return Json(*r > 0 ? "inf" : "-inf");
        return Json(*r);
    }
    return Json(std::get<std::vector<std::int64_t>>(v));
}

/// The writer as errors name it: `io::to_json_string: graph 'name'`.
inline std::string writer_name(const graph::computation_graph& g) {
    return concat("io::to_json_string: graph", g.name().empty() ? "" : concat(" ", quote(g.name())));
}

/// Checks that every op can be referred to by its name alone, which is what makes the file readable.
inline void check_names_writable(const graph::computation_graph& g) {
    const std::string module = writer_name(g);
    std::unordered_map<std::string_view, graph::op_id> by_name;
    for (graph::op_id i = 0; i < g.num_ops(); ++i) {
        const std::string& n = g.get_op(i).name;
        if (n.empty()) throw error(module, concat("op ", i, " has an empty name"), "a name for every op");
        if (auto [it, fresh] = by_name.emplace(n, i); !fresh)
            throw error(module, concat("ops ", it->second, " and ", i, " are both named ", quote(n)),
                        "unique op names");
    }
    for (graph::op_id i = 0; i < g.num_ops(); ++i) {
        const std::string& n = g.get_op(i).name;
        if (auto other = ambiguous_with(n, [&](std::string_view x) { return by_name.count(x) > 0; }))
            throw error(module,
                        concat("op name ", quote(n), " would also read as output ", n.substr(other->size() + 1),
                               " of op ", quote(*other)),
                        "op names that are not also references (rename one of them)");
    }
}

inline std::string reference_text(const graph::computation_graph& g, graph::tensor_id t) {
    const graph::tensor& x = g.get_tensor(t);
    const std::string& producer = g.get_op(x.producer).name;
    // "s:0" rather than "s" when s has several outputs, so that its outputs read alike
    return x.index == 0 && g.get_op(x.producer).outputs.size() == 1 ? producer : concat(producer, ":", x.index);
}

template <class Json> void write_graph_json(Json& j, const graph::computation_graph& g) {
    check_names_writable(g);
    j = Json::object();
    j["format"] = graph_format_name;
    j["version"] = graph_format_version;
    if (!g.name().empty()) j["name"] = g.name();
    Json ops_json = Json::array();
    for (graph::op_id i = 0; i < g.num_ops(); ++i) {
        const graph::op& o = g.get_op(i);
        const bool is_source = o.spec().has(ops::source);
        Json x = Json::object();
        x["name"] = o.name;
        x["op"] = ops::name(o.kind);
        if (!o.inputs.empty()) {
            Json in = Json::array();
            for (graph::tensor_id t : o.inputs) in.push_back(reference_text(g, t));
            x["inputs"] = std::move(in);
        }
        Json attrs = Json::object();
        for (const auto& [id, v] : o.attrs)
            if (!(is_source && (id == ops::attr_id::shape || id == ops::attr_id::dtype)))
                attrs[std::string(ops::name(id))] = attribute_json<Json>(id, v);
        if (!attrs.empty()) x["attrs"] = std::move(attrs);
        // Source ops: their shape and dtype attributes. Other ops: the inferred type of output 0,
        // for the reader of the file, and checked again when it is read back.
        if (is_source) {
            x["shape"] = o.attrs.get_ints(ops::attr_id::shape);
            x["dtype"] = attribute_json<Json>(ops::attr_id::dtype, o.attrs.get(ops::attr_id::dtype));
        } else if (!o.outputs.empty()) {
            const ops::tensor_type& t = g.type_of(o.outputs[0]);
            x["shape"] = std::vector<std::int64_t>(t.dims.begin(), t.dims.end());
            x["dtype"] = ops::name(t.type);
        }
        if (o.layer != -1) x["layer"] = o.layer;
        if (o.colocation != -1) x["colocation"] = o.colocation;
        ops_json.push_back(std::move(x));
    }
    j["ops"] = std::move(ops_json);
    Json outs = Json::array();
    for (graph::tensor_id t : g.outputs()) outs.push_back(reference_text(g, t));
    j["outputs"] = std::move(outs);
}

/// One line of JSON with a space after ',' and ':' (nlohmann's compact form has none).
inline void append_compact(std::string& out, const nlohmann::ordered_json& v) {
    if (v.is_object()) {
        out += '{';
        bool first = true;
        for (const auto& [key, value] : v.items()) {
            if (!first) out += ", ";
            first = false;
            out += nlohmann::ordered_json(key).dump();
            out += ": ";
            append_compact(out, value);
        }
        out += '}';
    } else if (v.is_array()) {
        out += '[';
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            append_compact(out, v[i]);
        }
        out += ']';
    } else {
        out += v.dump();
    }
}

}  // namespace goopt::io::detail
