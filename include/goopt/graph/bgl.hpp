#pragma once
/// @file
/// @brief Boost.Graph adaptation of graph::computation_graph: vertices are ops, edges are tensor uses,
/// so BGL algorithms (topological_sort, depth_first_search, breadth_first_search, ...) run on it.

#include <goopt/graph/computation_graph.hpp>

#include <boost/graph/graph_traits.hpp>
#include <boost/graph/properties.hpp>
#include <boost/iterator/counting_iterator.hpp>
#include <boost/iterator/iterator_facade.hpp>
#include <boost/iterator/transform_iterator.hpp>
#include <boost/property_map/property_map.hpp>

#include <utility>

namespace goopt::graph {

/// A BGL edge: tensor `tensor` flows from op `from` into input `slot` of op `to`.
struct edge {
    op_id from = no_op;
    op_id to = no_op;
    tensor_id tensor = 0;
    std::uint32_t slot = 0;
    friend constexpr bool operator==(const edge&, const edge&) = default;
};

namespace detail {
/// Walks every use of every output of one op.
class out_edge_iterator : public boost::iterator_facade<out_edge_iterator, edge, boost::forward_traversal_tag, edge> {
public:
    out_edge_iterator() = default;
    out_edge_iterator(const computation_graph* g, op_id v, std::size_t out, std::size_t use)
        : g_(g), v_(v), out_(out), use_(use) {
        skip_empty();
    }

private:
    friend class boost::iterator_core_access;
    const op& node() const { return g_->ops()[v_]; }
    void skip_empty() {
        while (out_ < node().outputs.size() && use_ >= g_->tensors()[node().outputs[out_]].uses.size()) {
            ++out_;
            use_ = 0;
        }
    }
    edge dereference() const {
        const tensor_id t = node().outputs[out_];
        const use& u = g_->tensors()[t].uses[use_];
        return {v_, u.op, t, u.slot};
    }
    void increment() {
        ++use_;
        skip_empty();
    }
    bool equal(const out_edge_iterator& o) const { return out_ == o.out_ && use_ == o.use_; }

    const computation_graph* g_ = nullptr;
    op_id v_ = 0;
    std::size_t out_ = 0, use_ = 0;
};

/// Maps input slot k of an op to its in-edge.
struct in_edge_of {
    const computation_graph* g;
    op_id v;
    edge operator()(std::uint32_t slot) const {
        const tensor_id t = g->ops()[v].inputs[slot];
        return {g->tensors()[t].producer, v, t, slot};
    }
};

struct bgl_traversal : boost::vertex_list_graph_tag, boost::bidirectional_graph_tag {};
}  // namespace detail

// ---- BGL free functions, found by ADL

inline std::pair<boost::counting_iterator<op_id>, boost::counting_iterator<op_id>> vertices(
    const computation_graph& g) {
    return {boost::counting_iterator<op_id>(0), boost::counting_iterator<op_id>(static_cast<op_id>(g.num_ops()))};
}
inline std::size_t num_vertices(const computation_graph& g) { return g.num_ops(); }

inline std::pair<detail::out_edge_iterator, detail::out_edge_iterator> out_edges(op_id v, const computation_graph& g) {
    const auto n = g.get_op(v).outputs.size();
    return {detail::out_edge_iterator(&g, v, 0, 0), detail::out_edge_iterator(&g, v, n, 0)};
}
inline std::size_t out_degree(op_id v, const computation_graph& g) {
    std::size_t d = 0;
    for (tensor_id t : g.get_op(v).outputs) d += g.get_tensor(t).uses.size();
    return d;
}

using in_edge_iterator =
    boost::transform_iterator<detail::in_edge_of, boost::counting_iterator<std::uint32_t>, edge, edge>;
inline std::pair<in_edge_iterator, in_edge_iterator> in_edges(op_id v, const computation_graph& g) {
    const auto n = static_cast<std::uint32_t>(g.get_op(v).inputs.size());
    const detail::in_edge_of f{&g, v};
    return {in_edge_iterator(boost::counting_iterator<std::uint32_t>(0), f),
            in_edge_iterator(boost::counting_iterator<std::uint32_t>(n), f)};
}
inline std::size_t in_degree(op_id v, const computation_graph& g) { return g.get_op(v).inputs.size(); }
inline std::size_t degree(op_id v, const computation_graph& g) { return in_degree(v, g) + out_degree(v, g); }

inline op_id source(const edge& e, const computation_graph&) { return e.from; }
inline op_id target(const edge& e, const computation_graph&) { return e.to; }

/// Op ids are dense, so the vertex index map is the identity.
inline boost::typed_identity_property_map<op_id> get(boost::vertex_index_t, const computation_graph&) { return {}; }

}  // namespace goopt::graph

namespace boost {
template <> struct graph_traits<goopt::graph::computation_graph> {
    using vertex_descriptor = goopt::graph::op_id;
    using edge_descriptor = goopt::graph::edge;
    using directed_category = bidirectional_tag;
    using edge_parallel_category = allow_parallel_edge_tag;
    using traversal_category = goopt::graph::detail::bgl_traversal;
    using vertex_iterator = counting_iterator<goopt::graph::op_id>;
    using out_edge_iterator = goopt::graph::detail::out_edge_iterator;
    using in_edge_iterator = goopt::graph::in_edge_iterator;
    using adjacency_iterator = void;
    using edge_iterator = void;
    using vertices_size_type = std::size_t;
    using edges_size_type = std::size_t;
    using degree_size_type = std::size_t;
    static vertex_descriptor null_vertex() { return goopt::graph::no_op; }
};

template <> struct property_map<goopt::graph::computation_graph, vertex_index_t> {
    using type = typed_identity_property_map<goopt::graph::op_id>;
    using const_type = type;
};
}  // namespace boost
