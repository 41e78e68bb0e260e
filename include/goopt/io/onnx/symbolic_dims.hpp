#pragma once
// goopt: optional-edge (part of the ONNX exporter, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Symbolic dimensions in an export: the axes of graph inputs that the source file named
/// ("batch") are named again, and the outputs' axes that follow them, where the model written stays
/// correct at other values of them.
///
/// The graph holds only the values bound at import, so whether a dimension is still free is not
/// read from the graph but tried: the model, written with size-free Reshape targets and Slice ends
/// (lowering.hpp) and its inputs' axes named, is imported again at two other values of each
/// dimension in turn (value + 1 and value + 2, the others at their bound values). Where that import
/// fails (a Reshape target, Split sizes or a constant's shape still hold the bound value: a batch
/// folded into another axis, an LSTM's batch-sized initial state), the dimension is written as its
/// value and a warning names it and the node. Where it succeeds, an output axis that took the new
/// value both times is named after the dimension, one that changed otherwise (a batch times a
/// sequence) is left unnamed and unvalued, and the rest keep their values.
///
/// What the trial cannot see: an op that gives another shape at another value without failing (a
/// Reshape axis copied from an input axis whose size equals another's by coincidence). Binding a
/// value that no fixed axis has (batch=7 rather than 8 beside 8 heads) leaves no coincidence to
/// take.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/onnx/exporter.hpp>
#include <goopt/io/onnx/import.hpp>
#include <goopt/io/onnx/model.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace goopt::io::detail {

/// The source's symbolic dimensions that the graph's inputs still have: their bound values, and
/// per graph input op (by name) the dimension of each axis ("" for a fixed one).
struct symbolic_plan {
    std::map<std::string, std::int64_t, std::less<>> values;
    std::map<std::string, std::vector<std::string>, std::less<>> inputs;
    /// Per graph output, per axis: the dimension it is named after, "?" for unknown, "" for its value.
    std::vector<std::vector<std::string>> outputs;

    std::set<std::int64_t> bound_values() const {
        std::set<std::int64_t> v;
        for (const auto& [name, value] : values) v.insert(value);
        return v;
    }
    /// Leaves dimension `name` out: its axes are written as their values.
    void drop(const std::string& name) {
        values.erase(name);
        for (auto& [input, axes] : inputs)
            for (auto& a : axes)
                if (a == name) a.clear();
    }
};

/// The plan of graph g for the source's input_dim_params: a dimension bound to two values on two
/// axes (given shapes that disagree) is left out, with a warning.
inline symbolic_plan plan_symbolic_dims(const graph::computation_graph& g, const onnx_model& source,
                                        std::vector<std::string>& warnings) {
    symbolic_plan plan;
    std::set<std::string, std::less<>> conflicting;
    for (const auto o : g.ops_of_kind(ops::op_kind::input)) {
        const graph::op& op = g.get_op(o);
        const auto it = source.input_dim_params.find(op.name);
        if (it == source.input_dim_params.end()) continue;
        const auto& dims = g.type_of(op.outputs[0]).dims;
        if (it->second.size() != dims.rank()) continue;  // not the input the file had
        for (std::size_t a = 0; a < dims.rank(); ++a) {
            const std::string& name = it->second[a];
            if (name.empty()) continue;
            const auto [v, fresh] = plan.values.emplace(name, dims[a]);
            if (!fresh && v->second != dims[a]) conflicting.insert(name);
        }
        plan.inputs.emplace(op.name, it->second);
    }
    for (const auto& name : conflicting) {
        warnings.push_back(concat("symbolic dimension '", name,
                                  "' has different values on different input axes: written as those values"));
        plan.drop(name);
    }
    for (auto& [input, axes] : plan.inputs)  // names of other kinds' axes (a parameter's) are not bound
        for (auto& a : axes)
            if (!plan.values.count(a)) a.clear();
    return plan;
}

/// Names the planned axes of the model's graph inputs and outputs.
inline void name_symbolic_axes(onnx::ModelProto& m, const symbolic_plan& plan) {
    for (auto& v : *m.mutable_graph()->mutable_input()) {
        const auto it = plan.inputs.find(v.name());
        if (it == plan.inputs.end()) continue;
        auto& dims = *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
        for (int a = 0; a < dims.size() && static_cast<std::size_t>(a) < it->second.size(); ++a)
            if (!it->second[static_cast<std::size_t>(a)].empty())
                dims[a].set_dim_param(it->second[static_cast<std::size_t>(a)]);
    }
    auto& outs = *m.mutable_graph()->mutable_output();
    for (int i = 0; i < outs.size() && static_cast<std::size_t>(i) < plan.outputs.size(); ++i) {
        auto& dims = *outs[i].mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
        const auto& names = plan.outputs[static_cast<std::size_t>(i)];
        for (int a = 0; a < dims.size() && static_cast<std::size_t>(a) < names.size(); ++a) {
            const std::string& n = names[static_cast<std::size_t>(a)];
            if (n == "?") dims[a].Clear();
            else if (!n.empty()) dims[a].set_dim_param(n);
        }
    }
}

/// Tries model m (its inputs named by the plan) at two other values of each planned dimension;
/// fills plan.outputs. Returns the dimensions whose trial failed, each with the import's error.
inline std::map<std::string, std::string> try_symbolic_dims(const onnx::ModelProto& m,
                                                            const graph::computation_graph& g, symbolic_plan& plan) {
    // the trial needs shapes only: float initializers of 1 KiB or more go as external data with no
    // file behind it (weights of the right shape without values), which keeps a large model's trial
    // cheap; integer ones (shapes, indices) stay, as folding reads them, and so do the weights of an
    // LSTM or GRU written back, which the importer unrolls with their values
    onnx::ModelProto named = m;
    std::set<std::string, std::less<>> read_with_values;
    for (const auto& n : named.graph().node())
        if (n.op_type() == "LSTM" || n.op_type() == "GRU" || n.op_type() == "RNN")
            for (const auto& i : n.input()) read_with_values.insert(i);
    for (auto& t : *named.mutable_graph()->mutable_initializer()) {
        const int type = t.data_type();
        const bool floating = type == onnx::TensorProto_DataType_FLOAT || type == onnx::TensorProto_DataType_DOUBLE ||
                              type == onnx::TensorProto_DataType_FLOAT16 || type == onnx::TensorProto_DataType_BFLOAT16;
        if (!floating || !t.has_raw_data() || t.raw_data().size() < 1024 || read_with_values.count(t.name())) continue;
        t.clear_raw_data();
        t.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
        auto& where = *t.add_external_data();
        where.set_key("location");
        where.set_value("goopt-shapes-only");
    }
    plan.outputs.clear();
    name_symbolic_axes(named, plan);
    const auto& outs = g.outputs();
    // per output axis: the dimension whose change moved it with it, "?" when it moved otherwise
    std::vector<std::vector<std::string>> follows(outs.size());
    for (std::size_t i = 0; i < outs.size(); ++i) follows[i].assign(g.type_of(outs[i]).dims.rank(), "");
    std::map<std::string, std::string> failed;
    for (const auto& [name, value] : plan.values) {
        for (const std::int64_t delta : {1, 2}) {
            onnx_options opt;
            opt.dim_values = plan.values;
            opt.dim_values[name] = value + delta;
            onnx_model at;
            try {
                at = import_model(named, "the model exported", opt);
            } catch (const std::exception& e) {
                failed.emplace(name, concat("at ", name, "=", value + delta, ": ", e.what()));
                break;
            }
            if (at.graph.outputs().size() != outs.size()) {
                failed.emplace(name, concat("at ", name, "=", value + delta, " the model has ",
                                            at.graph.outputs().size(), " outputs, not ", outs.size()));
                break;
            }
            std::string why;
            for (std::size_t i = 0; i < outs.size() && why.empty(); ++i) {
                const auto& was = g.type_of(outs[i]).dims;
                const auto& now = at.graph.type_of(at.graph.outputs()[i]).dims;
                if (was.rank() != now.rank()) {
                    why = concat("at ", name, "=", value + delta, " output ", i, " has rank ", now.rank(), ", not ",
                                 was.rank());
                    break;
                }
                for (std::size_t a = 0; a < was.rank(); ++a) {
                    if (now[a] == was[a]) {  // followed it at value + 1, not at value + 2
                        if (follows[i][a] == name) follows[i][a].assign(1, '?');
                        continue;
                    }
                    std::string& f = follows[i][a];
                    const bool with_it = was[a] == value && now[a] == value + delta;
                    if (with_it && (f.empty() || f == name)) f = name;
                    else f.assign(1, '?');  // (not = "?": GCC 12 warns falsely, -Wrestrict)
                }
            }
            if (!why.empty()) {
                failed.emplace(name, why);
                break;
            }
        }
    }
    // an axis that followed a dimension on one trial must have followed it on both
    for (auto& axes : follows)
        for (auto& f : axes)
            if (!f.empty() && f != "?" && failed.count(f)) f.clear();
    plan.outputs = std::move(follows);
    return failed;
}

}  // namespace goopt::io::detail
