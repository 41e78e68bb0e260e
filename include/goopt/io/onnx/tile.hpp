#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Tile, lowered exactly onto goopt's data movement: a gather per repeated axis. No new op
/// kind, so the policy's node features are unchanged; the interpreter runs it, and its export (a
/// Gather per axis) ran as fast as onnxruntime's Tile. DepthToSpace and SpaceToDepth, which ONNX
/// defines as a reshape to six axes, a transpose and a reshape, are not lowered so: exported that
/// way they ran 1.34x and 2.27x slower than onnxruntime's own kernels (docs/formats.md), so they
/// stay opaque ops, exported unchanged.

#include <goopt/io/onnx/importer.hpp>

#include <string>

namespace goopt::io::detail {

/// Tile: along each axis repeated r > 1 times, a gather of [0, 1, .., d-1] r times over.
inline void onnx_importer::convert_tile(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const ops::shape x = dims_in(n, 0);
    const ints repeats = const_in(n, 1, "repeats").ints();
    if (repeats.size() != x.rank())
        fail(n, concat(repeats.size(), " repeats for rank ", x.rank()), concat(x.rank(), " repeats, one per axis"));
    std::int64_t tables = 0;
    for (std::size_t a = 0; a < x.rank(); ++a) {
        std::int64_t extent = 0;
        if (repeats[a] < 1 || __builtin_mul_overflow(x[a], repeats[a], &extent) ||
            __builtin_add_overflow(tables, repeats[a] > 1 ? extent : 0, &tables))
            fail(n, concat("repeats ", ints_string(repeats), " for shape ", x.to_string()),
                 "repeats >= 1 (goopt holds no empty tensor) whose results fit 64 bits");
    }
    charge_tables(n, tables, concat("Tile's index tables (", tables, " elements)"));
    const graph::tensor_id in = tensor_in(n, 0);
    graph::tensor_id t = in;
    for (std::size_t a = 0; a < x.rank(); ++a) {
        if (repeats[a] == 1) continue;
        ints index(static_cast<std::size_t>(x[a] * repeats[a]));
        for (std::size_t k = 0; k < index.size(); ++k) index[k] = static_cast<std::int64_t>(k) % x[a];
        t = gather_along(t, a, index, concat(name, "/axis", a));
    }
    if (t == in) return alias(n, 0, 0);
    bind(n, 0, t);
}

}  // namespace goopt::io::detail
