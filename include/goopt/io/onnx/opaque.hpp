#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Operators goopt has no kind for, kept as `opaque` ops: their output types come from ONNX's
/// own shape inference (libonnx) run on the node alone with goopt's input types, else from the
/// file's value_info; the node itself is kept (io::onnx_model::opaque_nodes) for the export.

#include <goopt/io/onnx/einsum.hpp>
#include <goopt/io/onnx/exporter.hpp>
#include <goopt/io/onnx/importer.hpp>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace goopt::io::detail {

/// The static type of `t` when it has one: a tensor type goopt holds, every dimension a value >= 1.
inline std::optional<ops::tensor_type> static_type(const onnx::TypeProto& t) {
    if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return std::nullopt;
    const auto type = onnx_dtype(t.tensor_type().elem_type());
    const auto& dims = t.tensor_type().shape().dim();
    if (!type || static_cast<std::size_t>(dims.size()) > ops::max_rank) return std::nullopt;
    ops::tensor_type r{{}, *type};
    for (const auto& d : dims) {
        if (!d.has_dim_value() || d.dim_value() < 1) return std::nullopt;
        r.dims.push_back(d.dim_value());
    }
    return r;
}

inline std::vector<ops::tensor_type> onnx_importer::opaque_output_types(const node_t& n) {
    // the node alone, its inputs typed as goopt has them (the file's value_info may be stale where
    // a binding changed a dimension), integer constants given as initializers (K, axes, repeats)
    onnx::ModelProto one;
    one.set_ir_version(model_.ir_version());
    *one.mutable_opset_import() = model_.opset_import();
    onnx::GraphProto& g = *one.mutable_graph();
    g.set_name("opaque");
    std::set<std::string> seen;
    for (int k = 0; k < n.input_size(); ++k) {
        const std::string& name = n.input(k);
        if (name.empty() || !seen.insert(name).second) continue;
        const onnx_entry& e = entry(n, k);
        auto& tt = *[&] {
            auto* v = g.add_input();
            v->set_name(name);
            return v->mutable_type()->mutable_tensor_type();
        }();
        tt.set_elem_type(onnx_data_type(e.type.type));
        tt.mutable_shape();  // a scalar has a shape too, of rank 0 (no shape: rank unknown)
        for (const auto d : e.type.dims) tt.mutable_shape()->add_dim()->set_dim_value(d);
        // and small float constants (a Resize's scales): shape inference reads their values
        const bool floats = e.type.type == ops::dtype::f32 || e.type.type == ops::dtype::f64;
        if (!e.value || !(ops::is_integral(e.type.type) || (floats && e.value->size() <= 64))) continue;
        auto& t = *g.add_initializer();
        t.set_name(name);
        t.set_data_type(onnx_data_type(e.type.type));
        for (const auto d : e.type.dims) t.add_dims(d);
        for (const auto v : e.value->i) {
            if (e.type.type == ops::dtype::i64) t.add_int64_data(v);
            else t.add_int32_data(static_cast<std::int32_t>(v));
        }
        for (const double v : e.value->f) {
            if (e.type.type == ops::dtype::f32) t.add_float_data(static_cast<float>(v));
            else t.add_double_data(v);
        }
    }
    *g.add_node() = n;
    for (const auto& o : n.output())
        if (!o.empty()) g.add_output()->set_name(o);
    std::string why;
    try {
        onnx::shape_inference::InferShapes(one, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(false, 1, true));
    } catch (const std::exception& ex) {
        why = ex.what();
    }
    auto typed = [](const auto& values, const std::string& name) -> std::optional<ops::tensor_type> {
        for (const auto& v : values)
            if (v.name() == name) return static_type(v.type());
        return std::nullopt;
    };
    std::vector<ops::tensor_type> types;
    for (const auto& o : n.output()) {
        if (o.empty()) continue;
        auto t = typed(g.output(), o);
        if (!t) t = typed(g.value_info(), o);
        // the file's own value_info holds for the file's input shapes only
        if (!t && rebound_.empty()) t = typed(model_.graph().value_info(), o);
        if (!t && rebound_.empty()) t = typed(model_.graph().output(), o);
        if (!t && n.op_type() == "Einsum") {
            std::vector<ops::tensor_type> in;
            for (int k = 0; k < n.input_size(); ++k) in.push_back(type_in(n, k));
            t = einsum_output_type(attr_string(n, "equation", ""), in);
        }
        if (!t)
            fail(n,
                 concat("operator '", n.op_type(), "' has no goopt kind, and the type of its output '", o,
                        "' is unknown", why.empty() ? std::string() : concat(" (ONNX shape inference: ", why, ")")),
                 rebound_.empty() ? "an operator ONNX's shape inference knows, or a static type for the output in the "
                                    "file's value_info"
                                  : "an operator ONNX's shape inference knows (the file's value_info holds for the "
                                    "file's input shapes, not for bound ones)");
        types.push_back(*t);
    }
    return types;
}

inline void onnx_importer::convert_opaque(const node_t& n, std::string_view form) {
    for (const auto& a : n.attribute())
        if (a.has_g() || a.graphs_size() > 0)
            fail(n,
                 concat("operator '", n.op_type(), "' has no goopt kind and holds a subgraph (attribute '", a.name(),
                        "')"),
                 "no subgraph (control flow is not kept opaque)");
    // Before operator set 13, Hardmax (as Softmax and LogSoftmax: convert_softmax) flattens its input
    // to 2-D at `axis` and work on the whole trailing block; from 13 on they work on that one axis.
    // goopt writes operator set 13 or later, so such a node is kept on the flattened tensor with axis
    // 1, where both meanings agree, between a flatten and a reshape back.
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (default_domain && opset_ < 13 && n.op_type() == "Hardmax" && has_input(n, 0)) {
        const ops::shape& x = dims_in(n, 0);
        const auto ax = static_cast<std::int64_t>(x.axis(attr_int(n, "axis", 1)));
        if (ax + 1 != static_cast<std::int64_t>(x.rank())) {
            const std::string name = node_name(n);
            const graph::tensor_id f =
                add1(ops::op_kind::flatten, {tensor_in(n, 0)}, {{ops::attr_id::axis, ax}}, name + "/flatten");
            node_t flat = n;
            auto* attrs = flat.mutable_attribute();
            for (int k = attrs->size() - 1; k >= 0; --k)
                if (attrs->Get(k).name() == "axis") attrs->DeleteSubrange(k, 1);
            auto* axis = flat.add_attribute();
            axis->set_name("axis");
            axis->set_type(onnx::AttributeProto::INT);
            axis->set_i(1);
            const auto out = add_opaque(flat, {f}, {g_.type_of(f)}, form);
            bind(n, 0, reshape(out[0], x, name + "/unflatten"));
            return;
        }
    }
    std::vector<graph::tensor_id> in;
    for (int k = 0; k < n.input_size(); ++k)
        if (has_input(n, k)) in.push_back(tensor_in(n, k));
    const auto out = add_opaque(n, in, opaque_output_types(n), form);
    std::size_t j = 0;
    for (int k = 0; k < n.output_size(); ++k)
        if (!n.output(k).empty()) bind(n, k, out[j++]);
}

/// The opaque op of node `n` (kept for the export) over `in`, writing tensors of `types`.
inline graph::output_ids onnx_importer::add_opaque(const node_t& n, const std::vector<graph::tensor_id>& in,
                                                   const std::vector<ops::tensor_type>& types, std::string_view form) {
    std::vector<std::int64_t> shapes, dtypes;
    for (const auto& t : types) {
        shapes.push_back(static_cast<std::int64_t>(t.dims.rank()));
        shapes.insert(shapes.end(), t.dims.begin(), t.dims.end());
        dtypes.push_back(static_cast<std::int64_t>(t.type));
    }
    const auto index = static_cast<std::int64_t>(result_.opaque_nodes.size());
    result_.opaque_nodes.push_back(n.SerializeAsString());
    auto out = g_.add(ops::op_kind::opaque, in,
                      {{ops::attr_id::node, index}, {ops::attr_id::shapes, shapes}, {ops::attr_id::dtypes, dtypes}},
                      unique(node_name(n)));
    const std::string type =
        n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : concat(n.domain(), ".", n.op_type());
    ++kept_opaque_[form.empty() ? type : concat(type, ": ", form)];
    return out;
}

}  // namespace goopt::io::detail
