// graph::import: a user's own graph type comes in through the ComputationGraph traits, goopt decides
// on its copy, and every decision is read back in the user's op ids.
#include <goopt/baselines/heft.hpp>
#include <goopt/device.hpp>
#include <goopt/graph/import.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/sim/user_decision.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace user {
/// A user's own network description: nodes in any order, inputs by index, kinds by name, shapes on sources.
struct net {
    struct node {
        std::string name, kind;
        std::vector<int> inputs;
        std::vector<std::int64_t> shape;  ///< sources only
        std::vector<std::int64_t> sizes;  ///< split only: pieces along the first axis
    };
    std::vector<node> nodes;
    std::vector<std::vector<int>> consumers;  ///< filled by finish()
    void add(std::string name, std::string kind, std::vector<int> inputs, std::vector<std::int64_t> shape = {},
             std::vector<std::int64_t> sizes = {}) {
        nodes.push_back({std::move(name), std::move(kind), std::move(inputs), std::move(shape), std::move(sizes)});
    }
    void finish() {
        consumers.assign(nodes.size(), {});
        for (std::size_t v = 0; v < nodes.size(); ++v)
            for (int p : nodes[v].inputs) consumers[static_cast<std::size_t>(p)].push_back(static_cast<int>(v));
    }
    int index(const std::string& name) const {
        for (std::size_t v = 0; v < nodes.size(); ++v)
            if (nodes[v].name == name) return static_cast<int>(v);
        return -1;
    }
};
}  // namespace user

template <> struct goopt::graph::computation_graph_traits<user::net> {
    static std::size_t num_ops(const user::net& g) { return g.nodes.size(); }
    static std::span<const int> predecessors(const user::net& g, std::size_t v) { return g.nodes[v].inputs; }
    static std::span<const int> successors(const user::net& g, std::size_t v) { return g.consumers[v]; }
    static std::uint64_t op_label(const user::net& g, std::size_t v) {
        return std::hash<std::string>{}(g.nodes[v].kind);
    }
    static ops::op_kind op_kind(const user::net& g, std::size_t v) {
        if (const auto k = ops::parse_op_kind(g.nodes[v].kind)) return *k;
        throw goopt::error("user::net: node '" + g.nodes[v].name + "': unknown kind '" + g.nodes[v].kind + "'");
    }
    static ops::attribute_map op_attributes(const user::net& g, std::size_t v) {
        if (g.nodes[v].kind == "split")
            return {{ops::attr_id::axis, std::int64_t{0}}, {ops::attr_id::sizes, g.nodes[v].sizes}};
        if (g.nodes[v].shape.empty()) return {};
        return {{ops::attr_id::shape, g.nodes[v].shape}, {ops::attr_id::dtype, std::int64_t(ops::dtype::f32)}};
    }
    static const std::string& op_name(const user::net& g, std::size_t v) { return g.nodes[v].name; }
};

static_assert(goopt::graph::ImportableGraph<user::net>);
static_assert(!goopt::graph::ImportableGraph<goopt::graph::computation_graph>);  // it needs no import

using namespace goopt;

namespace {
/// relu(ewadd(matmul(a, w), matmul(b, w))), declared outputs first (not in topological order).
user::net two_branches() {
    user::net g;
    g.add("act", "relu", {1});  // inputs by index, possibly of nodes declared later
    g.add("sum", "ewadd", {2, 3});
    g.add("mm_a", "matmul", {4, 6});
    g.add("mm_b", "matmul", {5, 6});
    g.add("a", "input", {}, {8, 16});
    g.add("b", "input", {}, {8, 16});
    g.add("w", "weight", {}, {16, 16});
    g.finish();
    return g;
}
}  // namespace

TEST_CASE("import copies a user's graph with its names, edges and shapes, and keeps an id map") {
    const user::net u = two_branches();
    const auto im = graph::import(u);
    const auto& g = im.graph;
    graph::validate(g);
    REQUIRE(g.num_ops() == u.nodes.size());
    for (std::size_t v = 0; v < u.nodes.size(); ++v) {
        const graph::op_id o = im.ids.to_goopt[v];
        CHECK(im.ids.to_user[o] == v);
        CHECK(g.get_op(o).name == u.nodes[v].name);
        CHECK(ops::name(g.get_op(o).kind) == u.nodes[v].kind);
        REQUIRE(g.get_op(o).inputs.size() == u.nodes[v].inputs.size());
        for (std::size_t i = 0; i < u.nodes[v].inputs.size(); ++i)  // input order kept
            CHECK(g.producer(g.get_op(o).inputs[i]) == im.ids.to_goopt[static_cast<std::size_t>(u.nodes[v].inputs[i])]);
    }
    CHECK(im.ids.to_goopt[0] != 0);  // "act" comes last in goopt's topological copy
    CHECK(g.type_of(g.get_op(im.ids.to_goopt[0]).outputs[0]).dims == ops::shape{8, 16});
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.producer(g.outputs()[0]) == im.ids.to_goopt[0]);
}

TEST_CASE("a decision on the imported graph reads back in the user's ids") {
    const user::net u = two_branches();
    const auto im = graph::import(u);
    const auto cluster = device::cluster<device::preset>::all_to_all(device::v100, 2, 150e9, 5e-6);
    sim::simulator s(im.graph, cluster);
    sim::decision d = baselines::heft(s).decision();
    d.fusion.assign(im.graph.num_ops(), sim::no_group);
    d.fusion[im.ids.to_goopt[0]] = 3;  // "act" fused with "sum"
    d.fusion[im.ids.to_goopt[1]] = 3;
    const sim::decision mine = sim::to_user_ids(d, im.ids);
    REQUIRE(mine.placement.size() == u.nodes.size());
    for (std::size_t v = 0; v < u.nodes.size(); ++v) {
        CHECK(mine.placement[v] == d.placement[im.ids.to_goopt[v]]);
        CHECK(mine.priorities[v] == d.priorities[im.ids.to_goopt[v]]);
    }
    CHECK(mine.fusion == std::vector<std::int32_t>{3, 3, -1, -1, -1, -1, -1});
    d.priorities.pop_back();
    CHECK_THROWS_WITH_AS(sim::to_user_ids(d, im.ids), doctest::Contains("expected one per op"), error);
}

TEST_CASE("after a rewrite, the surviving ops are found by the user's ids and new ops are not") {
    const user::net u = two_branches();
    const auto im = graph::import(u);
    // ewadd(matmul(x0,x2), matmul(x1,x2)) => matmul(ewadd(x0,x1), x2)
    subst::world w = subst::taso_world();
    w.variables = {{"x0", {4, 4}}, {"x1", {4, 4}}, {"x2", {4, 4}}};
    subst::pattern src, dst;
    src.ops = {{ops::op_kind::matmul, 0, 1, {{subst::variable_op, 0}, {subst::variable_op, 2}}},
               {ops::op_kind::matmul, 0, 1, {{subst::variable_op, 1}, {subst::variable_op, 2}}},
               {ops::op_kind::ewadd, 0, 1, {{0, 0}, {1, 0}}}};
    src.outputs = {{2, 0}};
    dst.ops = {{ops::op_kind::ewadd, 0, 1, {{subst::variable_op, 0}, {subst::variable_op, 1}}},
               {ops::op_kind::matmul, 0, 1, {{0, 0}, {subst::variable_op, 2}}}};
    dst.outputs = {{1, 0}};
    const subst::rule r = subst::make_rule(w, src, dst);
    const auto ms = subst::find_matches(im.graph, r);
    REQUIRE_FALSE(ms.empty());
    const auto h = subst::apply(im.graph, r, ms[0]);
    const auto ids = graph::user_ids_of(im, h);
    REQUIRE(ids.size() == h.num_ops());
    std::vector<std::string> survivors;
    std::size_t created = 0;
    for (graph::op_id o = 0; o < h.num_ops(); ++o) {
        if (ids[o]) {
            CHECK(u.nodes[*ids[o]].name == h.get_op(o).name);
            survivors.push_back(h.get_op(o).name);
        } else {
            ++created;
        }
    }
    std::sort(survivors.begin(), survivors.end());
    CHECK(survivors == std::vector<std::string>{"a", "act", "b", "w"});  // both matmuls and the sum are gone
    CHECK(created == 2);                                                 // one ewadd, one matmul
}

TEST_CASE("import refuses a graph goopt cannot copy, naming the user's op") {
    user::net g = two_branches();
    g.nodes[6].shape = {15, 16};  // matmul of 8x16 by 15x16
    g.finish();
    CHECK_THROWS_WITH_AS(graph::import(g), doctest::Contains("graph::import: user op 2 'mm_a'"), error);

    g = two_branches();
    g.nodes[5].name = "a";
    CHECK_THROWS_WITH_AS(graph::import(g), doctest::Contains("duplicate name"), error);

    g = two_branches();
    g.nodes[4].inputs = {0};  // a -> mm_a -> sum -> act -> a
    g.finish();
    CHECK_THROWS_AS(graph::import(g), error);

    g = two_branches();
    g.add("halves", "split", {4}, {}, {4, 4});
    g.nodes[0].inputs = {7};
    g.finish();
    CHECK_THROWS_WITH_AS(graph::import(g), doctest::Contains("outputs: expected an op with one output"), error);
}
