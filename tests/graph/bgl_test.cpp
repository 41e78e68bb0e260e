// Boost.Graph algorithms run directly on graph::computation_graph.
#include <goopt/graph/bgl.hpp>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/graph_concepts.hpp>
#include <boost/graph/topological_sort.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>

using namespace goopt;
using ops::op_kind;

BOOST_CONCEPT_ASSERT((boost::VertexListGraphConcept<graph::computation_graph>));
BOOST_CONCEPT_ASSERT((boost::IncidenceGraphConcept<graph::computation_graph>));
BOOST_CONCEPT_ASSERT((boost::BidirectionalGraphConcept<graph::computation_graph>));

namespace {
/// x -> a -> b; x -> c; (b, c, a) -> d : a diamond with a long and a short branch.
graph::computation_graph diamond() {
    graph::computation_graph g;
    auto x = g.input("x", {4});
    auto a = g.add1(op_kind::relu, {x}, {}, "a");
    auto b = g.add1(op_kind::tanh, {a}, {}, "b");
    auto c = g.add1(op_kind::sigmoid, {x}, {}, "c");
    auto s = g.add1(op_kind::ewadd, {b, c}, {}, "s");
    g.add1(op_kind::ewmul, {s, a}, {}, "d");
    return g;
}

struct order_recorder : boost::default_dfs_visitor {
    std::vector<graph::op_id>* discovered;
    void discover_vertex(graph::op_id v, const graph::computation_graph&) const { discovered->push_back(v); }
};
}  // namespace

TEST_CASE("boost::topological_sort gives an order that respects every edge") {
    const auto g = diamond();
    std::vector<graph::op_id> reversed;
    boost::topological_sort(g, std::back_inserter(reversed));
    REQUIRE(reversed.size() == g.num_ops());
    std::vector<std::size_t> pos(g.num_ops());
    for (std::size_t i = 0; i < reversed.size(); ++i) pos[reversed[i]] = reversed.size() - 1 - i;
    for (graph::op_id v = 0; v < g.num_ops(); ++v)
        for (auto [e, end] = out_edges(v, g); e != end; ++e) CHECK(pos[source(*e, g)] < pos[target(*e, g)]);
}

TEST_CASE("boost::depth_first_search and breadth_first_search visit every op") {
    const auto g = diamond();
    std::vector<graph::op_id> seen;
    boost::depth_first_search(g, boost::visitor(order_recorder{{}, &seen}));
    std::sort(seen.begin(), seen.end());
    CHECK(seen == std::vector<graph::op_id>{0, 1, 2, 3, 4, 5});

    std::vector<std::size_t> dist(g.num_ops(), 0);
    boost::breadth_first_search(
        g, graph::op_id{0},
        boost::visitor(boost::make_bfs_visitor(boost::record_distances(dist.data(), boost::on_tree_edge()))));
    CHECK(dist[*g.find("s")] == 2);  // via c, the short branch
    CHECK(dist[*g.find("d")] == 2);  // via a
}

TEST_CASE("in_edges and out_edges agree, with slots and tensors") {
    const auto g = diamond();
    std::size_t total_in = 0, total_out = 0;
    for (auto [v, vend] = vertices(g); v != vend; ++v) {
        total_in += in_degree(*v, g);
        total_out += out_degree(*v, g);
        for (auto [e, end] = in_edges(*v, g); e != end; ++e) {
            CHECK(target(*e, g) == *v);
            CHECK(g.get_op(*v).inputs[e->slot] == e->tensor);
            CHECK(g.producer(e->tensor) == source(*e, g));
        }
    }
    CHECK(total_in == total_out);
    CHECK(total_in == 7);
    const auto d = *g.find("d");
    auto [e, end] = in_edges(d, g);
    CHECK(source(*e, g) == *g.find("s"));
    CHECK(source(*std::next(e), g) == *g.find("a"));
    CHECK(num_vertices(g) == 6);
    CHECK(degree(*g.find("a"), g) == 3);
}
