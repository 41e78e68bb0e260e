#pragma once
/// @file
/// @brief What goopt's generic graph algorithms need of a graph, so users can bring their own type.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>

namespace goopt::graph {

/// How generic algorithms see a graph type. The primary template forwards to member functions;
/// specialize it to adapt a graph type you do not own (as boost::graph_traits is specialized).
/// Ops are identified by dense indices 0 .. num_ops(g) - 1.
/// Members are templates declared with their expression as return type so that a type lacking one simply does
/// not model ComputationGraph (instead of failing to compile inside the traits).
template <class G> struct computation_graph_traits {
    template <class H = G> static auto num_ops(const H& g) -> decltype(g.num_ops()) { return g.num_ops(); }
    template <class H = G> static auto predecessors(const H& g, std::size_t v) -> decltype(g.predecessors(v)) {
        return g.predecessors(v);
    }
    template <class H = G> static auto successors(const H& g, std::size_t v) -> decltype(g.successors(v)) {
        return g.successors(v);
    }
    template <class H = G> static auto op_label(const H& g, std::size_t v) -> decltype(g.op_label(v)) {
        return g.op_label(v);
    }
    // What graph::import needs besides (see ImportableGraph in graph/import.hpp).
    template <class H = G> static auto op_kind(const H& g, std::size_t v) -> decltype(g.op_kind(v)) {
        return g.op_kind(v);
    }
    template <class H = G> static auto op_attributes(const H& g, std::size_t v) -> decltype(g.op_attributes(v)) {
        return g.op_attributes(v);
    }
    template <class H = G> static auto op_name(const H& g, std::size_t v) -> decltype(g.op_name(v)) {
        return g.op_name(v);
    }
};

/// A directed graph of ops with ordered inputs, as goopt's generic algorithms need it.
/// Models: graph::computation_graph; any type with a computation_graph_traits specialization.
/// @code
///   computation_graph_traits<G>::num_ops(g)         -> std::size_t  // ops are 0 .. n-1
///   computation_graph_traits<G>::predecessors(g, v) -> range of op indices, one per input edge
///   computation_graph_traits<G>::successors(g, v)   -> range of op indices, one per output edge
///   computation_graph_traits<G>::op_label(g, v)     -> std::uint64_t  // kind + attributes, no name
/// @endcode
/// predecessors and successors list the same edges from both ends (with the same multiplicity).
template <class G>
concept ComputationGraph = requires(const G& g, std::size_t v) {
    { computation_graph_traits<G>::num_ops(g) } -> std::convertible_to<std::size_t>;
    { computation_graph_traits<G>::predecessors(g, v) } -> std::ranges::input_range;
    { computation_graph_traits<G>::successors(g, v) } -> std::ranges::input_range;
    { computation_graph_traits<G>::op_label(g, v) } -> std::convertible_to<std::uint64_t>;
    requires std::integral<std::ranges::range_value_t<decltype(computation_graph_traits<G>::predecessors(g, v))>>;
    requires std::integral<std::ranges::range_value_t<decltype(computation_graph_traits<G>::successors(g, v))>>;
};

}  // namespace goopt::graph
