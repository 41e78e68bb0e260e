// Every shipped type models its concept; a user's own type can too; a type missing a member does not.
#include <goopt/graph.hpp>

#include <doctest/doctest.h>

#include <span>
#include <vector>

namespace user {
/// A user's own graph type, which goopt does not own: an adjacency list of integers.
struct dag {
    std::vector<std::vector<int>> preds, succs;
    std::vector<int> kind;
    void add(int k, std::vector<int> in) {
        const int id = static_cast<int>(kind.size());
        kind.push_back(k);
        preds.push_back(in);
        succs.emplace_back();
        for (int p : in) succs[static_cast<std::size_t>(p)].push_back(id);
    }
};

/// Missing op_label: cannot be hashed, so it is not a ComputationGraph.
struct unlabeled {
    std::size_t num_ops() const { return 0; }
    std::vector<int> predecessors(std::size_t) const { return {}; }
    std::vector<int> successors(std::size_t) const { return {}; }
};

/// Has everything as members: models the concept through the default traits.
struct with_members : unlabeled {
    std::uint64_t op_label(std::size_t) const { return 0; }
};
}  // namespace user

template <> struct goopt::graph::computation_graph_traits<user::dag> {
    static std::size_t num_ops(const user::dag& g) { return g.kind.size(); }
    static std::span<const int> predecessors(const user::dag& g, std::size_t v) { return g.preds[v]; }
    static std::span<const int> successors(const user::dag& g, std::size_t v) { return g.succs[v]; }
    static std::uint64_t op_label(const user::dag& g, std::size_t v) { return static_cast<std::uint64_t>(g.kind[v]); }
};

static_assert(goopt::graph::ComputationGraph<goopt::graph::computation_graph>);
static_assert(goopt::graph::ComputationGraph<user::dag>);
static_assert(goopt::graph::ComputationGraph<user::with_members>);
static_assert(!goopt::graph::ComputationGraph<user::unlabeled>);
static_assert(!goopt::graph::ComputationGraph<int>);

TEST_CASE("goopt's generic algorithms run on a user's graph type") {
    user::dag g;
    g.add(0, {});      // 0
    g.add(1, {0});     // 1
    g.add(1, {0});     // 2
    g.add(2, {1, 2});  // 3
    CHECK(goopt::graph::topological_order(g) == std::vector<std::size_t>{0, 1, 2, 3});
    CHECK(goopt::graph::levels(g) == std::vector<std::size_t>{0, 1, 1, 2});
    CHECK(goopt::graph::critical_path(g, [](std::size_t v) { return double(v); }).length == doctest::Approx(5.0));
    goopt::graph::reachability<user::dag> r(g);
    CHECK(r.reaches(1, 3));
    CHECK_FALSE(r.reaches(1, 2));

    user::dag h;  // the same graph with the two middle ops swapped
    h.add(0, {});
    h.add(1, {0});
    h.add(1, {0});
    h.add(2, {2, 1});
    CHECK(goopt::graph::structural_hash(g) == goopt::graph::structural_hash(h));
    h.kind[3] = 3;
    CHECK(goopt::graph::structural_hash(g) != goopt::graph::structural_hash(h));

    g.preds[0].push_back(3);  // close a cycle 0 -> 1 -> 3 -> 0
    g.succs[3].push_back(0);
    CHECK_THROWS_AS(goopt::graph::topological_order(g), goopt::error);
    CHECK(goopt::graph::find_cycle(g).size() == 3);
}
