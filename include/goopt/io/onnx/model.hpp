#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief What the ONNX importer takes (onnx_options) and gives (onnx_model), and its entry points.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_table.hpp>

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::io {

/// Knobs of the importer.
struct onnx_options {
    /// Shapes of graph inputs, by name: required for inputs with symbolic or unknown dimensions
    /// (a dynamic batch axis), optional otherwise. Every dimension the file fixes must be given its
    /// value (a model exported with batch 1 cannot be re-batched here: re-export it with a dynamic
    /// axis), and a symbolic dimension bound in dim_values too must be given the bound value.
    std::map<std::string, std::vector<std::int64_t>, std::less<>> input_shapes = {};
    /// Values of symbolic dimensions, by their name in the file ("batch", "sequence"): every graph
    /// input dimension with that name takes the value. A name no graph input uses is an error (a typo
    /// would otherwise go unnoticed).
    std::map<std::string, std::int64_t, std::less<>> dim_values = {};
    /// Graph inputs that are parameters (external weights, or an export that lists its parameters
    /// as graph inputs): each becomes a `weight` op, which models::make_training_graph trains,
    /// instead of an `input` op. An initializer named here is a parameter whatever the rule of
    /// docs/formats.md says (a one-element learned scale). Names must be graph inputs or initializers.
    std::set<std::string, std::less<>> param_inputs = {};
    /// The same the other way round: when not empty, every graph input not named here (and not an
    /// initializer) is a parameter. Give param_inputs or data_inputs, not both.
    std::set<std::string, std::less<>> data_inputs = {};
    /// Keep an operator goopt has no kind for as an `opaque` op (its output types from ONNX shape
    /// inference or the file's value_info; docs/formats.md, "Opaque operators") instead of refusing
    /// the file with a list of every such operator.
    bool keep_unknown_ops = true;
    /// Name the knobs above in errors as the `goopt` program's flags (`--dim NAME=VALUE`,
    /// `--input-shape INPUT=d0,d1,...`, `--param-inputs`, `--data-inputs`) instead of as these members.
    bool command_line_hints = false;
};

/// A constant's type and values in row-major order (integers and booleans held exactly as doubles
/// up to 2^53, which is all that weights and indices of real models need).
struct onnx_tensor {
    ops::tensor_type type;
    std::vector<double> values;
};

/// @brief An ONNX LSTM or GRU node the importer unrolled into graph ops, kept so that an export can
/// write the node back as it was (and a runtime keep its fused kernel) when no rewrite touched the
/// ops it became (recurrent_write_back.hpp checks that against the graph it is given).
///
/// It lives beside the graph, as opaque_nodes and weight_values do, not in it: the graph stays free
/// of ONNX, copies and rewrites of the graph need not carry it, and since the export checks every
/// op it stands for by name, kind, attributes, types and edges, a graph that changed in any of them
/// is lowered op by op instead of trusted. A graph read from JSON has no import behind it, hence no
/// weights to write either.
struct onnx_recurrent_node {
    /// Where an op of the region reads an input: output `index` of the region's op `op`, or, when
    /// `slot` >= 0, the node's own input `slot` (X, initial_h, initial_c), whatever produces it.
    struct input_ref {
        std::string op;
        std::uint32_t index = 0;
        int slot = -1;
    };
    /// One graph op the node became, as the importer made it.
    struct region_op {
        std::string name;
        ops::op_kind kind{};
        ops::attribute_map attrs;
        std::vector<input_ref> inputs;
        std::vector<ops::tensor_type> outputs;
    };
    std::string node;  ///< the file's NodeProto, serialized
    /// The node's inputs known at import time (W, R, B, sequence_lens, P), by input slot: written
    /// back as initializers.
    std::map<int, onnx_tensor> constants;
    /// The types of the node's computed inputs (X, initial_h, initial_c), by input slot.
    std::map<int, ops::tensor_type> inputs;
    /// The node's outputs the file uses (Y, Y_h, Y_c), by output slot: the region's op and output
    /// index that computes each.
    std::map<int, input_ref> outputs;
    std::vector<region_op> ops;  ///< in the order the importer added them (topological)
};

/// What the importer returns: the graph and what it knows besides.
struct onnx_model {
    graph::computation_graph graph;
    /// Values of the `weight` and `constant` ops whose data the file holds, by op name. Weights
    /// whose data is external (stripped) are absent, and so are parameters given as graph inputs.
    std::map<std::string, onnx_tensor, std::less<>> weight_values;
    /// Names of the file's graph outputs, one per graph output in order (the graph IR names ops,
    /// not tensors): what an export (io::write_onnx) names them again.
    std::vector<std::string> output_names;
    /// The symbolic dimensions the file's data inputs had (`dim_param`: "batch", "sequence"), by
    /// graph input op name, one entry per axis ("" where the file fixed it), for inputs with at least
    /// one. An export names these axes again where the graph allows (io::write_onnx, "Symbolic
    /// dimensions" in docs/formats.md); like output_names it lives here, since the graph keeps only
    /// the bound values and a search keeps the names of graph inputs.
    std::map<std::string, std::vector<std::string>, std::less<>> input_dim_params;
    std::int64_t opset = 0;  ///< version of the default ("ai.onnx") operator set
    std::string producer;    ///< producer_name and producer_version of the file
    /// ONNX nodes by op type, as in the file (folded ones included).
    std::map<std::string, std::size_t, std::less<>> onnx_nodes;
    std::size_t folded_nodes = 0;  ///< nodes evaluated at import time (shape-only subgraphs)
    /// The file's nodes kept as `opaque` ops, serialized NodeProtos indexed by the op's `node`
    /// attribute: what an export writes back.
    std::vector<std::string> opaque_nodes;
    /// The file's LSTM and GRU nodes, in file order, with the ops each became: what an export writes
    /// back where no rewrite touched them.
    std::vector<onnx_recurrent_node> recurrent_nodes;
    /// Versions of the operator sets of other domains than ai.onnx the file imports, by domain.
    std::map<std::string, std::int64_t, std::less<>> opset_imports;
    /// One line each: the operators kept opaque. The library prints nothing: they are for the caller.
    std::vector<std::string> warnings;
};

/// @brief Reads and imports an ONNX model file.
/// @throws goopt::error naming the file, and the node where it applies, when the file is not an
///         ONNX model, refers to a tensor that no input, initializer or earlier node gives, uses an
///         operator (or operator form) goopt cannot import — then the message lists every
///         unsupported op type in the file — or when shape inference fails.
inline onnx_model import_onnx(const std::filesystem::path& file, const onnx_options& options = {});

/// @brief Imports a serialized ModelProto held in memory; `source_name` names it in errors.
inline onnx_model import_onnx_bytes(std::string_view bytes, std::string_view source_name,
                                    const onnx_options& options = {});

/// ONNX op types (default domain) the importer handles, sorted.
inline std::vector<std::string_view> onnx_supported_ops();

/// @brief The values of the model's weights as interpreter feeds (graph inputs still to be added).
template <std::floating_point T> interp::feed_map<T> weight_feeds(const onnx_model& model);

// ---- implementation ----

template <std::floating_point T> interp::feed_map<T> weight_feeds(const onnx_model& model) {
    interp::feed_map<T> feeds;
    for (const auto& [name, t] : model.weight_values) {
        interp::value<T> v = interp::detail::filled(t.type.dims, T(0));
        std::copy(t.values.begin(), t.values.end(), v.data());
        feeds.emplace(name, std::move(v));
    }
    return feeds;
}

}  // namespace goopt::io
