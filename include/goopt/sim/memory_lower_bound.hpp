#pragma once
/// @file
/// @brief A lower bound on the memory any placement and schedule of a graph needs, so that a row where
/// no placer fits says whether anything could: the simulator's memory model, read as a cut.
///
/// Why a cut: when an op L starts, every op it depends on has finished, and none of the ops that depend
/// on it has started. A tensor made by one of L's ancestors and read by L or by one of L's descendants
/// is therefore held somewhere (on its producer's device, or as a copy on a reader's: the simulator
/// frees the source of a transfer only when the copy exists) at that moment, whatever the placement
/// and the order. So are the weights (persistent), the graph outputs made before L, and L's own
/// outputs (allocated when it starts). Their sum, at the op where it is largest, is held on all devices
/// together at one moment of every step, and no cluster with less memory in total runs the step. Read
/// at one op instead, the same rule gives what one device must hold alone: that op's inputs and outputs.
///
/// Without fusion (a tensor that stays inside a fused kernel takes no memory), as
/// sim::step_time_lower_bound is.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace goopt::sim {

/// What sim::memory_lower_bound finds, in bytes.
struct memory_bound {
    /// Held on all devices together at the start of op `cut` in every step (weights included): no
    /// cluster whose devices' capacities sum to less runs the step within memory.
    std::int64_t total = 0;
    graph::op_id cut = graph::no_op;
    std::int64_t weights = 0;  ///< the weights' bytes (persistent, part of `total`)
    /// The inputs and outputs of op `largest_op` (its distinct inputs, weights included), which one
    /// device holds at once when that op starts: no placement fits on devices of less memory each.
    std::int64_t largest_op = 0;
    graph::op_id largest_op_at = graph::no_op;
};

/// @brief The bound of the file comment for every op of `g`, in 64-op chunks: per chunk, one pass
/// backwards marks each op's descendants among the chunk (as bits), one pass forwards its ancestors,
/// and each tensor adds its bytes to the ops it is live across. O((ops + edges) x ops / 64) time,
/// O(ops) memory: well under a second at GNMT-8's 60k ops.
/// @throws goopt::error for a cyclic graph.
inline memory_bound memory_lower_bound(const graph::computation_graph& g) {
    const std::size_t n = g.num_ops(), nt = g.num_tensors();
    const std::vector<std::size_t> order = graph::topological_order(g);
    memory_bound out;
    std::vector<std::uint8_t> weight(nt, 0), is_output(nt, 0);
    std::vector<std::int64_t> bytes(nt, 0), own(n, 0);  // own: an op's non-weight outputs
    for (graph::tensor_id t = 0; t < nt; ++t) {
        const auto& x = g.get_tensor(t);
        bytes[t] = x.type.bytes();
        weight[t] = g.get_op(x.producer).kind == ops::op_kind::weight;
        if (weight[t]) out.weights += bytes[t];
        else own[x.producer] += bytes[t];
    }
    for (graph::tensor_id t : g.outputs()) is_output[t] = 1;
    std::vector<std::uint32_t> stamp(nt, static_cast<std::uint32_t>(-1));
    for (graph::op_id o = 0; o < n; ++o) {  // one device holds its distinct inputs and its outputs
        std::int64_t held = 0;
        for (graph::tensor_id t : g.get_op(o).inputs)
            if (stamp[t] != o) {
                stamp[t] = o;
                held += bytes[t];
            }
        for (graph::tensor_id t : g.get_op(o).outputs) held += bytes[t];
        if (held > out.largest_op || out.largest_op_at == graph::no_op) {
            out.largest_op = held;
            out.largest_op_at = o;
        }
    }

    // above[v]: bit j set when v is a strict ancestor of the chunk's j-th op; below[v]: when v is
    // that op or one of its descendants
    std::vector<std::uint64_t> above(n), below(n), self(n, 0);
    std::int64_t best = -1;
    for (std::size_t first = 0; first < n; first += 64) {
        const std::size_t count = std::min<std::size_t>(64, n - first);
        for (std::size_t j = 0; j < count; ++j) self[order[first + j]] = std::uint64_t{1} << j;
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            std::uint64_t m = 0;
            for (graph::tensor_id t : g.get_op(static_cast<graph::op_id>(*it)).outputs)
                for (const graph::use& u : g.get_tensor(t).uses) m |= above[u.op] | self[u.op];
            above[*it] = m;
        }
        for (std::size_t v : order) {
            std::uint64_t m = self[v];
            for (graph::tensor_id t : g.get_op(static_cast<graph::op_id>(v)).inputs) m |= below[g.producer(t)];
            below[v] = m;
        }
        std::int64_t live[64] = {};
        for (graph::tensor_id t = 0; t < nt; ++t) {
            if (weight[t] || bytes[t] == 0) continue;
            std::uint64_t read_after = is_output[t] ? ~std::uint64_t{0} : 0;
            for (const graph::use& u : g.get_tensor(t).uses) read_after |= below[u.op];
            for (std::uint64_t m = above[g.producer(t)] & read_after; m != 0; m &= m - 1)
                live[std::countr_zero(m)] += bytes[t];
        }
        for (std::size_t j = 0; j < count; ++j) {
            const auto l = static_cast<graph::op_id>(order[first + j]);
            const std::int64_t held = live[j] + own[l];
            if (held > best) {
                best = held;
                out.cut = l;
            }
            self[l] = 0;
        }
    }
    out.total = out.weights + std::max<std::int64_t>(best, 0);
    return out;
}

}  // namespace goopt::sim
