#pragma once
/// @file
/// @brief The reference interpreter: evaluates a whole computation graph on given or random inputs.
/// It keeps every tensor's value, because it exists to compare graphs (a rewrite against its
/// original), not to be fast.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/interp/kernels.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/dtype.hpp>
#include <goopt/ops/op_kind.hpp>

#include <xtensor/xarray.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace goopt::interp {

/// Values of the source ops of a graph (`input` and `weight`), by op name.
template <std::floating_point T> using feed_map = std::unordered_map<std::string, value<T>>;

/// @brief Evaluates every op of `g` in topological order.
/// @tparam T the scalar all tensors are evaluated in (float or double).
/// @param feeds the value of every `input`, `weight` and `constant` op, by op name, shaped as the op's output;
///        feeds naming no source op are ignored.
/// @return the value of every tensor, indexed by graph::tensor_id.
/// @throws goopt::error naming the op for a missing feed, a feed of the wrong shape, a cyclic graph
///         (graph::topological_order) and any error of a kernel (interp::evaluate_op).
template <std::floating_point T>
std::vector<value<T>> evaluate(const graph::computation_graph& g, const feed_map<T>& feeds);

/// @brief Evaluates `g` and returns the values of its outputs, in g.outputs() order.
template <std::floating_point T> std::vector<value<T>> run(const graph::computation_graph& g, const feed_map<T>& feeds);

/// @brief Random feeds for every `input`, `weight` and `constant` op of `g`, for checking rewrites numerically.
/// Floating sources get values uniform in [-1, 1). A source of integral dtype (gather indices) gets
/// integers in [0, 4), and fewer when a gather reads it along a shorter axis: [0, min(4, n)) for the
/// shortest such axis n, so that random indices are always in range.
/// Every number is drawn from `rng` through std::uniform_real_distribution, ops in id order and
/// elements in row-major order, so the same seed gives the same feeds.
template <std::floating_point T, std::uniform_random_bit_generator Rng>
feed_map<T> random_feeds(const graph::computation_graph& g, Rng& rng);

// ---- implementation ----

template <std::floating_point T>
std::vector<value<T>> evaluate(const graph::computation_graph& g, const feed_map<T>& feeds) {
    std::vector<value<T>> values(g.num_tensors());
    std::vector<const value<T>*> args;
    for (const std::size_t i : graph::topological_order(g)) {
        const auto o = static_cast<graph::op_id>(i);
        const graph::op& op = g.get_op(o);
        if (op.kind == ops::op_kind::input || op.kind == ops::op_kind::weight || op.kind == ops::op_kind::constant) {
            const ops::shape& dims = g.type_of(op.outputs[0]).dims;
            const auto it = feeds.find(op.name);
            if (it == feeds.end())
                throw error("interp", goopt::concat("op ", g.describe(o), ": no feed given"),
                            goopt::concat("a value of shape ", dims.to_string()));
            if (!detail::same_shape(it->second.shape(), dims))
                throw error(
                    "interp",
                    goopt::concat("op ", g.describe(o), ": feed has shape ", detail::shape_string(it->second.shape())),
                    dims.to_string());
            values[op.outputs[0]] = it->second;
            continue;
        }
        args.clear();
        for (const graph::tensor_id t : op.inputs) args.push_back(&values[t]);
        std::vector<value<T>> out = evaluate_op<T>(g, o, args);
        for (std::size_t k = 0; k < out.size(); ++k) values[op.outputs[k]] = std::move(out[k]);
    }
    return values;
}

template <std::floating_point T>
std::vector<value<T>> run(const graph::computation_graph& g, const feed_map<T>& feeds) {
    std::vector<value<T>> all = evaluate<T>(g, feeds);
    std::vector<value<T>> out;
    out.reserve(g.outputs().size());
    for (const graph::tensor_id t : g.outputs()) out.push_back(all[t]);
    return out;
}

template <std::floating_point T, std::uniform_random_bit_generator Rng>
feed_map<T> random_feeds(const graph::computation_graph& g, Rng& rng) {
    feed_map<T> feeds;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const graph::op& op = g.get_op(o);
        if (op.kind != ops::op_kind::input && op.kind != ops::op_kind::weight && op.kind != ops::op_kind::constant)
            continue;
        const graph::tensor_id t = op.outputs[0];
        const ops::tensor_type& type = g.type_of(t);
        value<T> v = detail::filled(type.dims, T(0));
        if (ops::is_integral(type.type)) {
            std::int64_t bound = 4;
            for (const graph::use& u : g.get_tensor(t).uses) {
                const graph::op& consumer = g.get_op(u.op);
                if (consumer.kind != ops::op_kind::gather || u.slot != 1) continue;
                const ops::shape& data = g.type_of(consumer.inputs[0]).dims;
                bound = std::min(bound, data[data.axis(consumer.attrs.get_int(ops::attr_id::axis))]);
            }
            std::uniform_real_distribution<T> dist(T(0), static_cast<T>(bound));
            for (T& x : v.storage()) x = std::min(std::floor(dist(rng)), static_cast<T>(bound - 1));
        } else {
            std::uniform_real_distribution<T> dist(T(-1), T(1));
            for (T& x : v.storage()) x = dist(rng);
        }
        feeds.emplace(op.name, std::move(v));
    }
    return feeds;
}

}  // namespace goopt::interp
