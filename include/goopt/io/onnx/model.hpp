#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief What the ONNX importer takes (onnx_options) and gives (onnx_model), and its entry points.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/ops/op_table.hpp>

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::io {

/// Knobs of the importer.
struct onnx_options {
    /// Shapes of graph inputs, by name: required for inputs with symbolic or unknown dimensions
    /// (a dynamic batch axis), optional otherwise (then they must agree with the file).
    std::map<std::string, std::vector<std::int64_t>, std::less<>> input_shapes = {};
    /// Values of symbolic dimensions, by their name in the file ("batch", "sequence"): every graph
    /// input dimension with that name takes the value. A name no graph input uses is an error (a typo
    /// would otherwise go unnoticed).
    std::map<std::string, std::int64_t, std::less<>> dim_values = {};
    /// Name the two knobs above in errors as the `goopt` program's flags (`--dim NAME=VALUE`,
    /// `--input-shape INPUT=d0,d1,...`) instead of as these members.
    bool command_line_hints = false;
};

/// A constant's type and values in row-major order (integers and booleans held exactly as doubles
/// up to 2^53, which is all that weights and indices of real models need).
struct onnx_tensor {
    ops::tensor_type type;
    std::vector<double> values;
};

/// What the importer returns: the graph and what it knows besides.
struct onnx_model {
    graph::computation_graph graph;
    /// Values of the `weight` ops whose data the file holds, by op name. Weights whose data is
    /// external (stripped) are absent.
    std::map<std::string, onnx_tensor, std::less<>> weight_values;
    /// Names of the file's graph outputs, one per graph output in order (the graph IR names ops,
    /// not tensors): what an export (io::write_onnx) names them again.
    std::vector<std::string> output_names;
    std::int64_t opset = 0;  ///< version of the default ("ai.onnx") operator set
    std::string producer;    ///< producer_name and producer_version of the file
    /// ONNX nodes by op type, as in the file (folded ones included).
    std::map<std::string, std::size_t, std::less<>> onnx_nodes;
    std::size_t folded_nodes = 0;  ///< nodes evaluated at import time (shape-only subgraphs)
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
