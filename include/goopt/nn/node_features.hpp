#pragma once
/// @file
/// @brief GO's per-node input features of a computation graph, computed once per graph.
/// GO (NeurIPS'20) §3.1: op type, output shape and size, FLOPs, degree, topological position, parameters.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/nn/adjacency.hpp>
#include <goopt/nn/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace goopt::nn {

/// Columns after the op-kind one-hot: log1p(output elements), output rank, log1p of the first four
/// output dims, log1p(FLOPs), log1p(in degree), log1p(out degree), level / max level, topological
/// position / (n - 1), log1p(persistent bytes).
inline constexpr std::size_t num_numeric_features = 12;
/// Width of node_features' rows.
inline constexpr std::size_t num_node_features = ops::num_op_kinds + num_numeric_features;

/// Everything the policy needs about one graph: features, neighbours, and the topological order the
/// attention layers read the nodes in.
template <std::floating_point S> struct graph_features {
    matrix<S> x;                       ///< one row per op (op id order), num_node_features columns
    adjacency adj;                     ///< undirected data-flow neighbours
    std::vector<std::uint32_t> order;  ///< op ids in topological order
};

/// @brief Features of every op of `g`. The op kind is one-hot: the first layer's weight rows for
/// those columns are then exactly a learned op-kind embedding, without a separate lookup layer.
/// Numeric columns are z-scored over the graph (centred; a constant column becomes 0) so graphs of
/// very different sizes feed the network values of the same scale. Throws goopt::error on a cycle.
template <std::floating_point S> graph_features<S> node_features(const graph::computation_graph& g) {
    const std::size_t n = g.num_ops();
    graph_features<S> f;
    f.adj = adjacency::from_graph(g);
    const std::vector<std::size_t> order = graph::topological_order(g);
    f.order.assign(order.begin(), order.end());
    std::vector<double> level(n, 0), position(n, 0);
    double max_level = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t v = order[i];
        position[v] = static_cast<double>(i);
        for (graph::op_id p : g.predecessors(static_cast<graph::op_id>(v))) level[v] = std::max(level[v], level[p] + 1);
        max_level = std::max(max_level, level[v]);
    }
    constexpr std::size_t k = ops::num_op_kinds;
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> num(n, num_numeric_features);
    f.x = matrix<S>::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(num_node_features));
    for (graph::op_id o = 0; o < n; ++o) {
        const graph::op& op = g.get_op(o);
        f.x(o, static_cast<Eigen::Index>(op.kind)) = S(1);
        double elements = 0, rank = 0, dims[4] = {0, 0, 0, 0};
        if (!op.outputs.empty()) {
            const auto& t = g.type_of(op.outputs[0]);
            elements = static_cast<double>(t.num_elements());
            rank = static_cast<double>(t.dims.rank());
            for (std::size_t d = 0; d < 4 && d < t.dims.rank(); ++d) dims[d] = static_cast<double>(t.dims[d]);
        }
        std::size_t out_degree = 0;
        for (graph::tensor_id t : op.outputs) out_degree += g.get_tensor(t).uses.size();
        const double persistent = op.kind == ops::op_kind::weight && !op.outputs.empty()
                                      ? static_cast<double>(g.type_of(op.outputs[0]).bytes())
                                      : 0.0;
        const double row[num_numeric_features] = {std::log1p(elements),
                                                  rank,
                                                  std::log1p(dims[0]),
                                                  std::log1p(dims[1]),
                                                  std::log1p(dims[2]),
                                                  std::log1p(dims[3]),
                                                  std::log1p(std::max(0.0, g.flops(o))),
                                                  std::log1p(static_cast<double>(op.inputs.size())),
                                                  std::log1p(static_cast<double>(out_degree)),
                                                  max_level > 0 ? level[o] / max_level : 0.0,
                                                  n > 1 ? position[o] / static_cast<double>(n - 1) : 0.0,
                                                  std::log1p(persistent)};
        for (std::size_t j = 0; j < num_numeric_features; ++j) num(o, static_cast<Eigen::Index>(j)) = row[j];
    }
    for (Eigen::Index j = 0; j < num.cols(); ++j) {
        const double mean = num.col(j).mean();
        const double var = n > 0 ? (num.col(j).array() - mean).square().mean() : 0.0;
        const double inv = var > 1e-24 ? 1.0 / std::sqrt(var) : 0.0;
        for (Eigen::Index i = 0; i < num.rows(); ++i)
            f.x(i, static_cast<Eigen::Index>(k) + j) = static_cast<S>((num(i, j) - mean) * inv);
    }
    return f;
}

}  // namespace goopt::nn
