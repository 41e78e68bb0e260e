#pragma once
// goopt: optional-edge (needs Debian's libonnx-dev and libprotobuf-dev: CMake target goopt::onnx)
/// @file
/// @brief Seeded random values for the weights a graph has no values for, so that a built-in model
/// (or an ONNX file whose weights were stripped) can be exported as a model a runtime runs with
/// its weights as initializers: constant, so that the runtime folds and pre-packs them as it would
/// a trained model's, which it cannot do for weights passed as graph inputs. Timing a runtime does
/// not depend on the values; the values only keep every output finite.
///
/// Each value is uniform in +-1/sqrt(fan-in), as a fresh layer of torch.nn draws it, so that
/// activations keep their scale through deep networks (values in [-1, 1] overflow ResNet-50). The
/// fan-in is the contracted size: a matmul's right operand [.., K, N] has K, any other weight of
/// rank 2 or more its size over the first axis (a conv2d kernel [O, I, kh, kw]: I * kh * kw), a
/// vector its length. Where a consumer needs positive values (a batchnorm's statistics and scale,
/// a divisor, sqrt, log, pow's base) they are in [0.5, 1.5]. Integral weights (gather indices) are
/// in [0, min(4, n)) for the shortest axis n a gather reads with them, as interp::random_feeds
/// draws them.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/onnx/model.hpp>
#include <goopt/ops/op_kind.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>

namespace goopt::io {

/// @brief Random values for every `weight` and `constant` op of `g` that `known` has none for, by op
/// name; ops in id order and elements in row-major order from one std::mt19937_64 seeded with
/// `seed`, so the same graph and seed give the same values on every machine with the same standard
/// library.
inline std::map<std::string, onnx_tensor, std::less<>> random_weight_values(
    const graph::computation_graph& g, std::uint64_t seed,
    const std::map<std::string, onnx_tensor, std::less<>>& known = {});

// ---- implementation ----

namespace detail {

/// Whether a consumer reading a weight at `slot` needs it positive for finite outputs.
inline bool needs_positive(ops::op_kind k, std::uint32_t slot) {
    using ops::op_kind;
    switch (k) {
        case op_kind::batchnorm:
            return slot > 0;  // scale, bias, mean, variance
        case op_kind::div:
            return slot == 1;
        case op_kind::sqrt:
        case op_kind::log:
            return true;
        case op_kind::pow:
            return slot == 0;
        default:
            return false;
    }
}

}  // namespace detail

inline std::map<std::string, onnx_tensor, std::less<>> random_weight_values(
    const graph::computation_graph& g, std::uint64_t seed,
    const std::map<std::string, onnx_tensor, std::less<>>& known) {
    std::mt19937_64 rng(seed);
    std::map<std::string, onnx_tensor, std::less<>> values;
    for (std::size_t i = 0; i < g.num_ops(); ++i) {
        const graph::op& o = g.get_op(static_cast<graph::op_id>(i));
        if ((o.kind != ops::op_kind::weight && o.kind != ops::op_kind::constant) || known.contains(o.name)) continue;
        const graph::tensor_id t = o.outputs[0];
        const ops::tensor_type& type = g.type_of(t);
        const auto& dims = type.dims;
        const std::int64_t rank = static_cast<std::int64_t>(dims.rank());
        bool positive = false, contracted = false;
        std::int64_t index_bound = 4;
        for (const graph::use& u : g.get_tensor(t).uses) {
            const graph::op& c = g.get_op(u.op);
            positive = positive || detail::needs_positive(c.kind, u.slot);
            contracted = contracted || (c.kind == ops::op_kind::matmul && u.slot == 1);
            if (c.kind == ops::op_kind::gather && u.slot == 1) {
                const ops::shape& data = g.type_of(c.inputs[0]).dims;
                index_bound = std::min(index_bound, data[data.axis(c.attrs.get_int(ops::attr_id::axis))]);
            }
        }
        std::int64_t fan_in = 1;
        if (rank >= 2 && contracted) fan_in = dims[static_cast<std::size_t>(rank - 2)];
        else if (rank >= 2)
            for (std::size_t k = 1; k < dims.rank(); ++k) fan_in *= dims[k];
        else if (rank == 1) fan_in = dims[0];
        const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(fan_in, 1)));
        onnx_tensor v{type, std::vector<double>(static_cast<std::size_t>(type.num_elements()))};
        if (ops::is_integral(type.type)) {
            std::uniform_int_distribution<std::int64_t> d(0, std::max<std::int64_t>(index_bound, 1) - 1);
            for (double& x : v.values) x = static_cast<double>(d(rng));
        } else if (positive) {
            std::uniform_real_distribution<double> d(0.5, 1.5);
            for (double& x : v.values) x = d(rng);
        } else {
            std::uniform_real_distribution<double> d(-bound, bound);
            for (double& x : v.values) x = d(rng);
        }
        values.emplace(o.name, std::move(v));
    }
    return values;
}

}  // namespace goopt::io
