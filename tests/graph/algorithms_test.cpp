// Generic graph algorithms: topological order, cycles, levels, critical path, reachability, hashing.
#include <goopt/graph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

using namespace goopt;
using ops::op_kind;

namespace {

/// A random DAG of elementwise ops over [4]-shaped tensors: op i consumes one or two earlier ops.
graph::computation_graph random_dag(std::size_t n, std::mt19937& rng) {
    graph::computation_graph g;
    std::vector<graph::tensor_id> t{g.input("x0", {4}), g.input("x1", {4})};
    constexpr op_kind unary[] = {op_kind::relu, op_kind::tanh, op_kind::sigmoid};
    constexpr op_kind binary[] = {op_kind::ewadd, op_kind::ewmul, op_kind::sub};
    while (g.num_ops() < n) {
        std::uniform_int_distribution<std::size_t> pick(0, t.size() - 1);
        if (rng() % 2) t.push_back(g.add1(unary[rng() % 3], {t[pick(rng)]}));
        else t.push_back(g.add1(binary[rng() % 3], {t[pick(rng)], t[pick(rng)]}));
    }
    return g;
}

bool brute_reaches(const graph::computation_graph& g, std::size_t u, std::size_t v) {
    std::vector<bool> seen(g.num_ops(), false);
    std::vector<std::size_t> stack{u};
    while (!stack.empty()) {
        auto w = stack.back();
        stack.pop_back();
        if (w == v) return true;
        if (seen[w]) continue;
        seen[w] = true;
        for (auto s : g.successors(static_cast<graph::op_id>(w))) stack.push_back(s);
    }
    return false;
}

/// The same graph with its ops added in another valid order and renamed: ids change, structure not.
graph::computation_graph renumbered(const graph::computation_graph& g, std::mt19937& rng) {
    // a random topological order: repeatedly take a random ready op
    std::vector<std::size_t> pending(g.num_ops());
    std::vector<std::size_t> ready, order;
    for (graph::op_id v = 0; v < g.num_ops(); ++v)
        if ((pending[v] = g.get_op(v).inputs.size()) == 0) ready.push_back(v);
    while (!ready.empty()) {
        std::swap(ready[rng() % ready.size()], ready.back());
        auto v = ready.back();
        ready.pop_back();
        order.push_back(v);
        for (auto s : g.successors(static_cast<graph::op_id>(v)))
            if (--pending[s] == 0) ready.push_back(s);
    }
    graph::computation_graph h;
    std::vector<graph::tensor_id> map(g.num_tensors());
    for (auto v : order) {
        const auto& o = g.get_op(static_cast<graph::op_id>(v));
        std::vector<graph::tensor_id> in;
        for (auto t : o.inputs) in.push_back(map[t]);
        auto out = h.add(o.kind, in, o.attrs, "renamed_" + std::to_string(v * 7 + 3));
        for (std::size_t k = 0; k < out.size(); ++k) map[o.outputs[k]] = out[k];
    }
    return h;
}

}  // namespace

TEST_CASE("topological order: the identity for ops in dependency order, smallest ready op first otherwise") {
    graph::computation_graph g;
    const auto x = g.input("x", {2});
    const auto r1 = g.add1(ops::op_kind::relu, {x});
    const auto y = g.input("y", {2});
    const auto r2 = g.add1(ops::op_kind::relu, {y});
    CHECK(graph::topological_order(g) == std::vector<std::size_t>{0, 1, 2, 3});
    g.rewire(g.producer(r1), 0, r2);  // op 1 now reads op 3: ids are no longer an order
    CHECK(graph::topological_order(g) == std::vector<std::size_t>{0, 2, 3, 1});
}

TEST_CASE("topological order respects every edge; a cycle is found and reported") {
    std::mt19937 rng(7);
    auto g = random_dag(60, rng);
    const auto order = graph::topological_order(g);
    REQUIRE(order.size() == g.num_ops());
    std::vector<std::size_t> pos(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
    for (graph::op_id v = 0; v < g.num_ops(); ++v)
        for (auto p : g.predecessors(v)) CHECK(pos[p] < pos[v]);
    CHECK(graph::find_cycle(g).empty());

    // make op 10 consume the output of the last op, which depends on... maybe not 10: pick one that does
    graph::op_id last = static_cast<graph::op_id>(g.num_ops() - 1);
    graph::op_id early = 0;
    for (graph::op_id v = 2; v < last; ++v)
        if (brute_reaches(g, v, last)) {
            early = v;
            break;
        }
    REQUIRE(early != 0);
    g.rewire(early, 0, g.get_op(last).outputs[0]);
    CHECK_FALSE(graph::try_topological_order(g));
    CHECK_THROWS_WITH_AS(graph::topological_order(g), doctest::Contains("cycle"), error);
    const auto cycle = graph::find_cycle(g);
    REQUIRE(cycle.size() >= 2);
    for (std::size_t i = 0; i < cycle.size(); ++i) {  // each op feeds the next, the last feeds the first
        const auto succ = g.successors(static_cast<graph::op_id>(cycle[i]));
        CHECK(std::count(succ.begin(), succ.end(), cycle[(i + 1) % cycle.size()]) >= 1);
    }
}

TEST_CASE("levels and critical path of a diamond") {
    graph::computation_graph g;
    auto x = g.input("x", {4});
    auto a = g.add1(op_kind::relu, {x});     // 1
    auto b = g.add1(op_kind::tanh, {a});     // 2
    auto c = g.add1(op_kind::sigmoid, {x});  // 3
    g.add1(op_kind::ewadd, {b, c});          // 4
    CHECK(graph::levels(g) == std::vector<std::size_t>{0, 1, 2, 1, 3});

    const std::vector<double> cost{0, 1, 2, 5, 1};
    const auto cp = graph::critical_path(g, [&](std::size_t v) { return cost[v]; });
    CHECK(cp.length == doctest::Approx(6.0));  // x -> c (5) -> add (1) beats x -> a -> b (3)
    CHECK(cp.path == std::vector<std::size_t>{0, 3, 4});
    CHECK(cp.finish[2] == doctest::Approx(3.0));
    CHECK_THROWS_WITH_AS(graph::critical_path(g, [](std::size_t v) { return v == 2 ? -1.0 : 1.0; }),
                         doctest::Contains("op 2 has cost"), error);
    CHECK(graph::critical_path(graph::computation_graph{}, [](std::size_t) { return 1.0; }).length == 0);
}

TEST_CASE("critical path is at least every op's own cost and at most the total (random DAGs)") {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 20; ++trial) {
        auto g = random_dag(40, rng);
        std::vector<double> cost(g.num_ops());
        for (auto& c : cost) c = std::uniform_real_distribution<double>(0, 3)(rng);
        const auto cp = graph::critical_path(g, [&](std::size_t v) { return cost[v]; });
        double sum = 0;
        for (auto c : cost) sum += c;
        CHECK(cp.length <= sum + 1e-9);
        CHECK(cp.length >= *std::max_element(cost.begin(), cost.end()) - 1e-9);
        double along = 0;
        for (std::size_t i = 0; i < cp.path.size(); ++i) {
            along += cost[cp.path[i]];
            if (i) CHECK(brute_reaches(g, cp.path[i - 1], cp.path[i]));
        }
        CHECK(along == doctest::Approx(cp.length));
    }
}

TEST_CASE("reachability agrees with a brute-force search (random DAGs)") {
    std::mt19937 rng(3);
    for (int trial = 0; trial < 10; ++trial) {
        const auto g = random_dag(50, rng);
        graph::reachability<graph::computation_graph> r(g);
        for (std::size_t u = 0; u < g.num_ops(); u += 3)
            for (std::size_t v = 0; v < g.num_ops(); v += 2) {
                CAPTURE(u);
                CAPTURE(v);
                CHECK(r.reaches(u, v) == brute_reaches(g, u, v));
            }
        // set queries: any of `from` reaches any of `to`
        for (int q = 0; q < 50; ++q) {
            std::vector<std::size_t> from{rng() % g.num_ops(), rng() % g.num_ops()};
            std::vector<std::size_t> to{rng() % g.num_ops(), rng() % g.num_ops(), rng() % g.num_ops()};
            bool expect = false;
            for (auto f : from)
                for (auto t : to) expect |= brute_reaches(g, f, t);
            CHECK(r.reaches(from, to) == expect);
        }
    }
}

TEST_CASE("structural hash ignores ids and names but sees kinds, attributes, shapes and wiring") {
    std::mt19937 rng(5);
    for (int trial = 0; trial < 10; ++trial) {
        const auto g = random_dag(30, rng);
        const auto h = renumbered(g, rng);
        CHECK(graph::structural_hash(g) == graph::structural_hash(h));
    }

    auto build = [](op_kind k, std::int64_t axis, bool swap) {
        graph::computation_graph g;
        auto x = g.input("x", {4, 4});
        auto s = g.add(op_kind::split, {x},
                       {{ops::attr_id::axis, axis}, {ops::attr_id::sizes, std::vector<std::int64_t>{2, 2}}});
        const graph::tensor_id s0 = s[0], s1 = s[1];
        g.add1(k, {swap ? s1 : s0, swap ? s0 : s1});
        return g;
    };
    const auto base = graph::structural_hash(build(op_kind::sub, 0, false));
    CHECK(base == graph::structural_hash(build(op_kind::sub, 0, false)));
    CHECK(base != graph::structural_hash(build(op_kind::ewadd, 0, false)));  // kind
    CHECK(base != graph::structural_hash(build(op_kind::sub, 1, false)));    // attribute
    CHECK(base != graph::structural_hash(build(op_kind::sub, 0, true)));     // which split output
}
