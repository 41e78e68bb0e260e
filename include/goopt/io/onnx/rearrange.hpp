#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Operators that only rearrange cells, lowered exactly onto goopt's data movement:
/// DepthToSpace and SpaceToDepth are a reshape to six axes, a transpose and a reshape (as ONNX
/// defines them), Tile is a gather per repeated axis. No new op kind, so the policy's node
/// features and the shipped checkpoint are unchanged; the interpreter runs them, and rules that
/// move or merge transposes and reshapes see them.

#include <goopt/io/onnx/importer.hpp>

#include <string>

namespace goopt::io::detail {

/// [N, C, H, W] -> [N, C / b^2, H b, W b]. DCR (the default) reads the channels as [b, b, C / b^2],
/// CRD as [C / b^2, b, b].
inline void onnx_importer::convert_depth_to_space(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const ops::shape x = dims_in(n, 0);
    if (x.rank() != 4) fail(n, concat("input has shape ", x.to_string()), "NCHW (rank 4)");
    const std::int64_t b = attr_int(n, "blocksize", 0);
    std::int64_t square = 0;
    if (b < 1 || __builtin_mul_overflow(b, b, &square) || x[1] % square != 0)
        fail(n, concat("blocksize ", b, " for ", x[1], " channels"), "a blocksize b >= 1 whose square divides them");
    const std::string mode = attr_string(n, "mode", "DCR");
    if (mode != "DCR" && mode != "CRD") fail(n, concat("mode '", mode, "'"), "DCR or CRD");
    if (b == 1) return alias(n, 0, 0);
    const std::int64_t N = x[0], C = x[1] / square, H = x[2], W = x[3];
    const bool dcr = mode == "DCR";
    const graph::tensor_id split =
        reshape(tensor_in(n, 0), dcr ? ops::shape{N, b, b, C, H, W} : ops::shape{N, C, b, b, H, W}, name + "/blocks");
    const ints perm = dcr ? ints{0, 3, 4, 1, 5, 2} : ints{0, 1, 4, 2, 5, 3};
    const graph::tensor_id moved = add1(ops::op_kind::transpose, {split}, {{ops::attr_id::perm, perm}}, name);
    bind(n, 0, reshape(moved, ops::shape{N, C, H * b, W * b}, name + "/merge"));
}

/// [N, C, H, W] -> [N, C b^2, H / b, W / b], the inverse of DepthToSpace's DCR.
inline void onnx_importer::convert_space_to_depth(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const ops::shape x = dims_in(n, 0);
    if (x.rank() != 4) fail(n, concat("input has shape ", x.to_string()), "NCHW (rank 4)");
    const std::int64_t b = attr_int(n, "blocksize", 0);
    if (b < 1 || b > x[2] || b > x[3] || x[2] % b != 0 || x[3] % b != 0)
        fail(n, concat("blocksize ", b, " for ", x[2], " x ", x[3], " cells"),
             "a blocksize b >= 1 that divides the height and the width");
    if (b == 1) return alias(n, 0, 0);
    const std::int64_t N = x[0], C = x[1], H = x[2] / b, W = x[3] / b;
    const graph::tensor_id split = reshape(tensor_in(n, 0), ops::shape{N, C, H, b, W, b}, name + "/blocks");
    const graph::tensor_id moved =
        add1(ops::op_kind::transpose, {split}, {{ops::attr_id::perm, ints{0, 3, 5, 1, 2, 4}}}, name);
    bind(n, 0, reshape(moved, ops::shape{N, C * b * b, H, W}, name + "/merge"));
}

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
