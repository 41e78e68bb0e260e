#pragma once
// A one-graph ONNX model built node by node with ONNX's own protobuf classes, for the tests of
// tests/onnx/ that need a small model of one shape (bad inputs, parameters and constants).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace onnx_testing {

/// A one-graph ONNX model, built node by node.
struct model_builder {
    onnx::ModelProto m;
    onnx::GraphProto* g;

    explicit model_builder(std::int64_t opset = 13) {
        m.set_ir_version(7);
        auto* o = m.add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        g = m.mutable_graph();
        g->set_name("bad");
    }
    model_builder& input(const std::string& name, std::initializer_list<std::int64_t> dims, int elem_type = 1) {
        auto* v = g->add_input();
        v->set_name(name);
        auto* t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(elem_type);
        auto* s = t->mutable_shape();
        for (auto d : dims) s->add_dim()->set_dim_value(d);
        return *this;
    }
    onnx::NodeProto& node(const std::string& op, std::initializer_list<std::string> in,
                          std::initializer_list<std::string> out) {
        auto* n = g->add_node();
        n->set_op_type(op);
        if (out.size() > 0) n->set_name(*out.begin());
        for (const auto& x : in) n->add_input(x);
        for (const auto& x : out) n->add_output(x);
        return *n;
    }
    model_builder& floats(const std::string& name, std::initializer_list<std::int64_t> dims,
                          std::initializer_list<float> values) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(1);
        for (auto d : dims) t->add_dims(d);
        for (float v : values) t->add_float_data(v);
        return *this;
    }
    model_builder& int64s(const std::string& name, std::initializer_list<std::int64_t> dims,
                          std::initializer_list<std::int64_t> values) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(7);
        for (auto d : dims) t->add_dims(d);
        for (auto v : values) t->add_int64_data(v);
        return *this;
    }
    model_builder& output(const std::string& name) {
        g->add_output()->set_name(name);
        return *this;
    }
    std::string bytes() const { return m.SerializeAsString(); }
};

inline void set_attribute(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}
inline void set_attribute(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
}
inline void set_attribute(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
}
inline void set_attribute(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
}

}  // namespace onnx_testing
