#pragma once
/// @file
/// @brief Reference kernels: the value semantics of every operator kind, one function per kind,
/// in the headers under interp/kernels/ and named by interp::detail::kernel_table. These define what
/// an op computes; the op table (ops/op_table.hpp) defines its shapes. Rewrites are checked against
/// them on random inputs, as TASO (SOSP'19) fingerprints candidate graphs.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/kernels/common.hpp>
#include <goopt/interp/kernels/contraction.hpp>
#include <goopt/interp/kernels/conv_pool.hpp>
#include <goopt/interp/kernels/data_movement.hpp>
#include <goopt/interp/kernels/elementwise.hpp>
#include <goopt/interp/kernels/kernel_table.hpp>
#include <goopt/interp/kernels/norm.hpp>
#include <goopt/interp/kernels/recurrent.hpp>
#include <goopt/ops/shape.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace goopt::interp {

/// @brief Computes the outputs of op `o` of `g` from the values of its inputs.
/// @tparam T the scalar every tensor is evaluated in (float or double).
/// @param inputs one pointer per input slot of the op, each a row-major value whose shape is the
///        type the graph holds for that input.
/// @return one value per output of the op, shaped as the graph infers.
/// @throws goopt::error naming the op when an input's shape is not the graph's, when the op's
///         inputs no longer give the output types the graph holds (a rewire without re-inference),
///         for a gather index out of range, and for input and weight ops, whose values are fed
///         (interp::evaluate).
template <std::floating_point T>
std::vector<value<T>> evaluate_op(const graph::computation_graph& g, graph::op_id o,
                                  std::span<const value<T>* const> inputs);

// ---- implementation ----

template <std::floating_point T>
std::vector<value<T>> evaluate_op(const graph::computation_graph& g, graph::op_id o,
                                  std::span<const value<T>* const> inputs) {
    const graph::op& op = g.get_op(o);
    const detail::kernel_args<T> a{g, o, op, inputs};
    if (inputs.size() != op.inputs.size())
        a.fail(goopt::concat("given ", inputs.size(), " input values"), concat(op.inputs.size()));
    // The kernels index raw buffers by the graph's shapes, so a value that disagrees (a graph
    // rewired without re-inference, a wrong argument) must stop here, not read out of bounds.
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] == nullptr) a.fail(goopt::concat("input ", i, " has no value"));
        if (!detail::same_shape(inputs[i]->shape(), a.in_dims(i)))
            a.fail(goopt::concat("input ", i, " has shape ", detail::shape_string(inputs[i]->shape())),
                   a.in_dims(i).to_string());
    }
    // Kernels also trust that output and input shapes agree; rewire() changes inputs without
    // re-inferring outputs, so infer again (cheap next to any kernel) rather than index past a buffer.
    if (op.spec().max_inputs != 0) {
        const ops::output_types in_types = g.input_types(o), held = g.output_types(o);
        ops::output_types inferred;
        try {
            inferred = op.spec().infer(ops::view(in_types), op.attrs);
        } catch (const error& e) {
            a.fail(goopt::concat(e.what(), " (shape inference was not redone after a rewire)"));
        }
        if (!std::equal(inferred.begin(), inferred.end(), held.begin(), held.end())) {
            std::string got, want;
            for (const auto& t : inferred) got += goopt::concat(got.empty() ? "" : " ", ops::to_string(t));
            for (const auto& t : held) want += goopt::concat(want.empty() ? "" : " ", ops::to_string(t));
            a.fail(goopt::concat("its inputs give outputs ", got, " but the graph holds ", want,
                                 " (shape inference was not redone after a rewire)"));
        }
    }
    // one indirect call per op: the kind table has a kernel for every kind (checked at compile time)
    std::vector<value<T>> out = detail::kernel_table<T>[static_cast<std::size_t>(op.kind)].fn(a);
    GOOPT_ASSERT(out.size() == op.outputs.size());
    for (std::size_t k = 0; k < out.size(); ++k) GOOPT_ASSERT(detail::same_shape(out[k].shape(), a.out_dims(k)));
    return out;
}

}  // namespace goopt::interp
