#pragma once
// goopt: optional-edge (needs Debian's libonnx-dev and libprotobuf-dev: CMake target goopt::onnx)
/// @file
/// @brief ONNX import and export: a model file (opset 11-17, the operators of vision, transformer and recurrent
/// models) becomes a shape-inferred graph::computation_graph. Shape-only subgraphs (Shape -> Gather
/// -> Concat -> Reshape, Constant, ConstantOfShape, ...) are folded at import time, because the graph
/// IR has static shapes; every remaining ONNX node maps onto existing op kinds exactly
/// (Gemm -> transpose + matmul + smul + ewadd, Unsqueeze -> reshape, explicit pads -> pad + VALID,
/// LSTM / GRU -> one cell op per step, ConvTranspose and Resize -> constant matmuls + conv2d).
///
/// Initializers become `weight` ops. Data stored outside the .onnx file (external data) is read
/// from its side file, relative to the model file (io::import_onnx; not by import_onnx_bytes, which
/// has no file); where that file does not exist (a model whose weights were stripped), the
/// initializer still gives a weight of the right shape, just without values; a side file too short
/// for its tensors is an error. Graph inputs that are not initializers become `input` ops.
/// Constants that a computed op consumes (a Pow exponent, a Gemm alpha) are `weight` ops with values
/// too, since no op kind holds a constant with arbitrary values.
///
/// ONNX export (io::write_onnx, io::to_onnx) writes any inference graph back as standard ONNX
/// operators, opset 13-22, with the import's weight values as initializers (export.hpp), an LSTM or
/// GRU that no rewrite touched as the file's node (recurrent_write_back.hpp), and initializers in a
/// side file where the model would pass 2 GiB or the caller asks (external_data.hpp).
///
/// The parts, under io/onnx/: model.hpp (options, result, entry points), constant.hpp (values known
/// at import time), importer.hpp (state and shared steps), fold.hpp, convert.hpp, convolution.hpp,
/// recurrent.hpp, resize.hpp, tile.hpp (the handlers), handlers.hpp (the op table), import.hpp (the import);
/// exporter.hpp (the exporter's options, report, state and shared steps), lowering.hpp (one
/// lowering per op kind), recurrent_write_back.hpp, symbolic_dims.hpp (symbolic dimensions named
/// again), export.hpp (the export); external_data.hpp.

#include <goopt/io/onnx/constant.hpp>
#include <goopt/io/onnx/convert.hpp>
#include <goopt/io/onnx/convolution.hpp>
#include <goopt/io/onnx/export.hpp>
#include <goopt/io/onnx/exporter.hpp>
#include <goopt/io/onnx/external_data.hpp>
#include <goopt/io/onnx/fold.hpp>
#include <goopt/io/onnx/handlers.hpp>
#include <goopt/io/onnx/import.hpp>
#include <goopt/io/onnx/importer.hpp>
#include <goopt/io/onnx/lowering.hpp>
#include <goopt/io/onnx/model.hpp>
#include <goopt/io/onnx/opaque.hpp>
#include <goopt/io/onnx/random_weights.hpp>
#include <goopt/io/onnx/recurrent.hpp>
#include <goopt/io/onnx/recurrent_write_back.hpp>
#include <goopt/io/onnx/resize.hpp>
#include <goopt/io/onnx/symbolic_dims.hpp>
#include <goopt/io/onnx/tile.hpp>
