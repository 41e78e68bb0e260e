#pragma once
// goopt: optional-edge (part of the ONNX exporter, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Writing an unrolled LSTM or GRU back as the file's node, so that a runtime keeps its fused
/// recurrent kernel (onnxruntime runs goopt's unrolled steps 2-4x slower: docs/runtime.md).
///
/// The importer records, per LSTM/GRU node, the ops it became (io::onnx_recurrent_node). The
/// export writes the node back only where the graph still computes each output the node gives
/// exactly as the import made it: walking back from each output the graph still has, every op met
/// until the node's own inputs (X, initial_h, initial_c) must be an op of the node's region with its
/// recorded kind, attributes, output types and edges; no op outside those may read a value inside
/// them but the node's outputs; and a runtime must be able to run the node where the export puts it.
/// A region any rewrite touched fails one of these and is lowered op by op, as any other graph.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/onnx/exporter.hpp>
#include <goopt/io/onnx/model.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace goopt::io::detail {

/// A recorded node whose region is intact in the graph exported: what writing it back needs.
struct recurrent_write_back {
    const onnx_recurrent_node* record = nullptr;
    std::map<int, graph::tensor_id> inputs;   ///< the node's computed inputs, by input slot
    std::map<int, graph::tensor_id> outputs;  ///< the node's outputs the graph still has, by output slot
    std::vector<graph::op_id> ops;            ///< the graph ops it stands for (not lowered)
    std::size_t after = 0;                    ///< written after the op at this place of the order (0: first)
};

/// What plan_recurrent_write_backs() decided: the nodes to write back, and one line per recorded
/// node that the graph still computes but not as imported (lowered instead).
struct recurrent_plan {
    std::vector<recurrent_write_back> nodes;
    std::vector<std::string> lowered;
};

/// @brief The source's LSTM/GRU nodes that can be written back into an export of g, whose ops are
/// lowered in `order` (a topological order of g), at operator set `opset`.
inline recurrent_plan plan_recurrent_write_backs(const graph::computation_graph& g, const onnx_model& source,
                                                 const std::vector<std::size_t>& order, std::int64_t opset);

// ---- implementation ----

namespace recurrent_detail {

inline std::string node_label(const onnx::NodeProto& n) {
    return concat(n.op_type(), " '", n.name().empty() ? (n.output_size() ? n.output(0) : "") : n.name(), "'");
}

/// Why the region of `r` is not intact in g, or empty; fills w (ops and edges) as it checks.
inline std::string check_region(const graph::computation_graph& g, const onnx_recurrent_node& r,
                                const std::unordered_map<std::string_view, graph::op_id>& by_name,
                                recurrent_write_back& w) {
    std::unordered_map<std::string_view, std::size_t> region;
    for (std::size_t k = 0; k < r.ops.size(); ++k) region.emplace(r.ops[k].name, k);
    std::vector<graph::op_id> stack;
    for (const auto& [slot, ref] : r.outputs) {
        const auto it = by_name.find(ref.op);
        if (it == by_name.end()) continue;  // an output nothing reads, removed by a rewrite
        const graph::op& op = g.get_op(it->second);
        if (ref.index >= op.outputs.size()) return concat("output ", slot, "'s op '", ref.op, "' has changed");
        w.outputs.emplace(slot, op.outputs[ref.index]);
        stack.push_back(it->second);
    }
    if (w.outputs.empty()) return {};
    std::unordered_set<graph::op_id> seen;
    while (!stack.empty()) {
        const graph::op_id o = stack.back();
        stack.pop_back();
        if (!seen.insert(o).second) continue;
        const graph::op& op = g.get_op(o);
        const auto at = region.find(op.name);
        if (at == region.end()) return concat("op ", g.describe(o), " is not one the node became");
        const auto& want = r.ops[at->second];
        if (op.kind != want.kind || !(op.attrs == want.attrs) || op.inputs.size() != want.inputs.size() ||
            g.output_types(o).size() != want.outputs.size())
            return concat("op ", g.describe(o), " has changed");
        for (std::size_t k = 0; k < op.outputs.size(); ++k)
            if (!(g.type_of(op.outputs[k]) == want.outputs[k])) return concat("op ", g.describe(o), " has changed");
        for (std::size_t j = 0; j < op.inputs.size(); ++j) {
            const graph::tensor_id t = op.inputs[j];
            const auto& in = want.inputs[j];
            if (in.slot >= 0) {
                const auto [given, fresh] = w.inputs.emplace(in.slot, t);
                if (!fresh && given->second != t) return concat("the node's input ", in.slot, " is two tensors");
                continue;
            }
            const graph::op_id p = g.producer(t);
            if (g.get_op(p).name != in.op || g.get_tensor(t).index != in.index)
                return concat("op ", g.describe(o), " reads another tensor than it did");
            stack.push_back(p);
        }
        w.ops.push_back(o);
    }
    for (const auto& [slot, type] : r.inputs) {
        const auto it = w.inputs.find(slot);
        if (it == w.inputs.end()) return concat("the node's input ", slot, " is read by none of its ops");
        if (!(g.type_of(it->second) == type) || seen.count(g.producer(it->second)))
            return concat("the node's input ", slot, " has changed");
    }
    if (w.inputs.size() != r.inputs.size()) return "the node's inputs have changed";
    // the values inside the region are the node's own: only its outputs leave it
    std::unordered_set<graph::tensor_id> leaving, graph_outputs(g.outputs().begin(), g.outputs().end());
    for (const auto& [slot, t] : w.outputs) leaving.insert(t);
    for (const graph::op_id o : w.ops)
        for (const graph::tensor_id t : g.get_op(o).outputs) {
            if (leaving.count(t)) continue;
            if (graph_outputs.count(t)) return concat("op ", g.describe(o), "'s value is a graph output");
            for (const auto& u : g.get_tensor(t).uses)
                if (!seen.count(u.op))
                    return concat("op ", g.describe(u.op), " reads a value inside the node (of ", g.describe(o), ")");
        }
    return {};
}

}  // namespace recurrent_detail

inline recurrent_plan plan_recurrent_write_backs(const graph::computation_graph& g, const onnx_model& source,
                                                 const std::vector<std::size_t>& order, std::int64_t opset) {
    recurrent_plan plan;
    if (source.recurrent_nodes.empty()) return plan;
    std::unordered_map<std::string_view, graph::op_id> by_name;
    std::unordered_set<std::string_view> twice;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (!by_name.emplace(g.get_op(o).name, o).second) twice.insert(g.get_op(o).name);
    for (const auto& name : twice) by_name.erase(name);  // ambiguous: not the op recorded
    std::vector<std::size_t> place(g.num_ops(), 0);
    for (std::size_t k = 0; k < order.size(); ++k) place[order[k]] = k + 1;

    for (const auto& r : source.recurrent_nodes) {
        onnx::NodeProto n;
        if (!n.ParseFromString(r.node)) continue;
        recurrent_write_back w;
        w.record = &r;
        std::string why = recurrent_detail::check_region(g, r, by_name, w);
        if (why.empty() && w.outputs.empty()) continue;  // the node is gone: nothing reads it
        if (why.empty() && opset < 14)
            for (const auto& a : n.attribute())
                if (a.name() == "layout") why = concat("its layout attribute needs operator set 14, not ", opset);
        if (why.empty()) {
            // after the last of its inputs' producers that is lowered as a node, before every reader
            for (const auto& [slot, t] : w.inputs) {
                const graph::op_id p = g.producer(t);
                if (!g.get_op(p).spec().has(ops::source)) w.after = std::max(w.after, place[p]);
            }
            const std::unordered_set<graph::op_id> own(w.ops.begin(), w.ops.end());
            for (const auto& [slot, t] : w.outputs)
                for (const auto& u : g.get_tensor(t).uses)
                    if (!own.count(u.op) && place[u.op] <= w.after)
                        why = concat("op ", g.describe(u.op), " reads its output before its inputs are computed");
        }
        if (!why.empty()) {
            plan.lowered.push_back(concat(recurrent_detail::node_label(n), ": ", why));
            continue;
        }
        plan.nodes.push_back(std::move(w));
    }
    return plan;
}

inline void onnx_exporter::write_back(const recurrent_write_back& w) {
    onnx::NodeProto n;
    if (!n.ParseFromString(w.record->node))
        throw error("onnx export", "a recorded recurrent node does not parse", "a serialized NodeProto");
    std::vector<std::string> inputs, outputs;
    for (int k = 0; k < n.input_size(); ++k) {
        if (n.input(k).empty()) {
            inputs.emplace_back();
        } else if (const auto c = w.record->constants.find(k); c != w.record->constants.end()) {
            inputs.push_back(fresh(n.input(k), names_));
            initializer(inputs.back(), c->second.type, c->second.values,
                        concat(recurrent_detail::node_label(n), " input ", k));
        } else {
            inputs.push_back(name_[w.inputs.at(k)]);
        }
    }
    for (int k = 0; k < n.output_size(); ++k) {
        const auto it = w.outputs.find(k);
        outputs.push_back(it == w.outputs.end() ? std::string() : name_[it->second]);
    }
    while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
    onnx::NodeProto& m = add_node(n.name().empty() ? n.op_type() : n.name(), n.op_type(), inputs, outputs);
    m.set_domain(n.domain());
    *m.mutable_attribute() = n.attribute();
    ++written_back_;
}

}  // namespace goopt::io::detail
