#pragma once
/// @file
/// @brief A graph's neighbour lists in compressed sparse row (CSR) form, for GraphSAGE.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace goopt::nn {

/// @brief Neighbours of node v are `indices[offsets[v] .. offsets[v+1])`. Any graph fits (GraphSAGE
/// is inductive), and a 100k-node graph costs two flat arrays.
struct adjacency {
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::uint32_t> indices;

    std::size_t num_nodes() const noexcept { return offsets.size() - 1; }
    std::size_t degree(std::size_t v) const { return offsets[v + 1] - offsets[v]; }

    /// @brief From undirected edges (each listed once; both directions are added), without
    /// duplicates or self loops. Throws goopt::error for an endpoint >= num_nodes.
    static adjacency from_edges(std::size_t num_nodes,
                                const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
        std::vector<std::vector<std::uint32_t>> lists(num_nodes);
        for (const auto& [a, b] : edges) {
            if (a >= num_nodes || b >= num_nodes)
                throw error("nn::adjacency", concat("edge (", a, ", ", b, ")"), concat("nodes below ", num_nodes));
            if (a == b) continue;
            lists[a].push_back(b);
            lists[b].push_back(a);
        }
        return from_lists(lists);
    }

    /// Neighbours of an op = producers of its inputs and consumers of its outputs (GO treats the
    /// data-flow graph as undirected for aggregation; direction is in the degree features).
    static adjacency from_graph(const graph::computation_graph& g) {
        std::vector<std::vector<std::uint32_t>> lists(g.num_ops());
        for (graph::op_id o = 0; o < g.num_ops(); ++o)
            for (graph::tensor_id t : g.get_op(o).inputs) {
                const graph::op_id p = g.producer(t);
                if (p == graph::no_op || p == o) continue;
                lists[o].push_back(p);
                lists[p].push_back(o);
            }
        return from_lists(lists);
    }

    /// @brief GraphSAGE's neighbour sampling: at most `k` neighbours per node, drawn without
    /// replacement with `rng`; nodes with <= k neighbours keep all.
    template <std::uniform_random_bit_generator Rng> adjacency sample(std::size_t k, Rng& rng) const {
        adjacency r;
        r.offsets.reserve(offsets.size());
        std::vector<std::uint32_t> buf;
        for (std::size_t v = 0; v < num_nodes(); ++v) {
            buf.assign(indices.begin() + offsets[v], indices.begin() + offsets[v + 1]);
            if (buf.size() > k) {
                for (std::size_t i = 0; i < k; ++i) {
                    std::uniform_int_distribution<std::size_t> pick(i, buf.size() - 1);
                    std::swap(buf[i], buf[pick(rng)]);
                }
                buf.resize(k);
                std::sort(buf.begin(), buf.end());
            }
            r.indices.insert(r.indices.end(), buf.begin(), buf.end());
            r.offsets.push_back(static_cast<std::uint32_t>(r.indices.size()));
        }
        return r;
    }

private:
    static adjacency from_lists(std::vector<std::vector<std::uint32_t>>& lists) {
        adjacency r;
        r.offsets.reserve(lists.size() + 1);
        for (auto& l : lists) {
            std::sort(l.begin(), l.end());
            l.erase(std::unique(l.begin(), l.end()), l.end());
            r.indices.insert(r.indices.end(), l.begin(), l.end());
            r.offsets.push_back(static_cast<std::uint32_t>(r.indices.size()));
        }
        return r;
    }
};

}  // namespace goopt::nn
