// Tensat's ILP extraction solved by CBC (subst/search/ilp_extraction.hpp): it finds the optimum where a
// local search one class at a time cannot (an op shared by two outputs), pays a multi-output op
// once, refuses cyclic choices in each of its three ways, requires exactly the classes every
// derivation needs, and, as eqsat's final extraction, never makes a graph worse or changes its
// values.

#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/subst.hpp>
#include <goopt/subst/search/ilp_extraction.hpp>

#include <doctest/doctest.h>

#include "../sim/random_dag.hpp"
#include "../subst/shipped_rules.hpp"

#include <chrono>
#include <memory>
#include <random>
#include <vector>

using namespace goopt;
using namespace goopt::subst;

namespace {

auto far_deadline() { return std::chrono::steady_clock::now() + std::chrono::seconds(30); }

/// Classes 0 and 1 are the outputs, 2 a leaf (a model input, op 0, free). Each output has its own
/// op (ops 1 and 2, `own` s each) or is one output of a two-output op (op 3, `shared` s) of the leaf.
extraction_problem shared_op_problem(double own, double shared) {
    extraction_problem p;
    p.nodes.resize(3);
    p.op_cost = {0.0, own, own, shared};
    p.nodes[2] = {{0, 0, {}}};
    p.nodes[0] = {{0, 1, {2}}, {1, 3, {2}}};
    p.nodes[1] = {{0, 2, {2}}, {1, 3, {2}}};
    p.roots = {0, 1};
    return p;
}

}  // namespace

TEST_CASE("ilp extraction: a two-output op shared by both outputs is paid once and chosen") {
    // per class the own op is cheaper (3 < 5), and switching one class alone to the shared op costs
    // 3 + 5: only both at once find the optimum, 5
    const auto p = shared_op_problem(3e-6, 5e-6);
    auto report = std::make_shared<ilp_report>();
    const auto solve = cbc_extraction({}, report);
    const auto ch = solve(p, {0, 0, 0}, far_deadline());
    REQUIRE(ch);
    CHECK((*ch)[0] == 1);
    CHECK((*ch)[1] == 1);
    CHECK(report->found);
    CHECK(report->optimal);
    CHECK(report->objective == doctest::Approx(5e-6));
    CHECK(report->solves == 1);
    // where the shared op costs more than both own ops, the own ops stay
    const auto q = shared_op_problem(3e-6, 7e-6);
    const auto ch2 = solve(q, {1, 1, 0}, far_deadline());
    REQUIRE(ch2);
    CHECK((*ch2)[0] == 0);
    CHECK((*ch2)[1] == 0);
    CHECK(report->objective == doctest::Approx(6e-6));
}

TEST_CASE("ilp extraction: a cheaper cyclic choice is refused, in each way of keeping cycles out") {
    // class 0 (root): a leaf op of 10 us, or an op of 1 us reading class 1; class 1: a leaf op of
    // 10 us, or an op of 1 us reading class 0. Without anything against cycles the optimum is the
    // 2 us cycle; the acyclic optimum is class 0's leaf alone (10 us), not 1 + 10.
    extraction_problem p;
    p.nodes.resize(2);
    p.op_cost = {10e-6, 1e-6, 10e-6, 1e-6};
    p.nodes[0] = {{0, 0, {}}, {1, 1, {1}}};
    p.nodes[1] = {{0, 2, {}}, {1, 3, {0}}};
    p.roots = {0};
    auto report = std::make_shared<ilp_report>();
    auto solve = [&](ilp_config c) {
        const auto ch = cbc_extraction(c, report)(p, {1, 0}, far_deadline());
        REQUIRE(ch);
        CHECK((*ch)[0] == 0);
        CHECK(report->objective == doctest::Approx(10e-6));
        CHECK(report->optimal);
    };
    SUBCASE("the acyclic part: class 1's op reading class 0 is left out, one solve") {
        solve({});
        CHECK(report->solves == 1);
        CHECK(report->cycle_cuts == 0);
    }
    SUBCASE("lazy cycle cuts: the cycle is found, cut off, and the program solved again") {
        solve({.acyclic_part = false});
        CHECK(report->solves >= 2);
        CHECK(report->cycle_cuts >= 1);
    }
    SUBCASE("Tensat's order rows for every class: one solve") {
        solve({.acyclic_part = false, .order_every_class = true});
        CHECK(report->solves == 1);
        CHECK(report->cycle_cuts == 0);
    }
}

TEST_CASE("ilp extraction: the classes every derivation needs are required, and only those") {
    // class 0 (root): relu of class 1, or a conv with relu fused of class 2; class 1: a conv of
    // class 2; class 2: the layer's input (a leaf). Both forms of the root read class 2, only one
    // reads class 1: classes 0 and 2 are required, class 1 is not.
    extraction_problem p;
    p.nodes.resize(3);
    p.op_cost = {1e-6, 5e-6, 5e-6, 0.0};
    p.nodes[0] = {{0, 0, {1}}, {1, 1, {2}}};
    p.nodes[1] = {{0, 2, {2}}};
    p.nodes[2] = {{0, 3, {}}};
    p.roots = {0};
    CHECK(subst::detail::extraction_ilp::required_classes(p) == std::vector<bool>{true, false, true});
    // the optimum takes the fused form
    auto report = std::make_shared<ilp_report>();
    const auto ch = cbc_extraction({}, report)(p, {0, 0, 0}, far_deadline());
    REQUIRE(ch);
    CHECK((*ch)[0] == 1);
    CHECK(report->objective == doctest::Approx(5e-6));
    // with a cycle in the class graph (class 2 reading class 0), only the root is required
    p.op_cost.push_back(1e-6);
    p.nodes[2].push_back({1, 4, {0}});
    CHECK(subst::detail::extraction_ilp::required_classes(p) == std::vector<bool>{true, false, false});
}

TEST_CASE("ilp extraction: no time, no choice; too large a program, no choice") {
    const auto p = shared_op_problem(3e-6, 5e-6);
    CHECK_FALSE(cbc_extraction()(p, {0, 0, 0}, std::chrono::steady_clock::now()));
    auto report = std::make_shared<ilp_report>();
    CHECK_FALSE(cbc_extraction({.max_variables = 2}, report)(p, {0, 0, 0}, far_deadline()));
    CHECK(report->solves == 0);
    CHECK_FALSE(report->found);
}

TEST_CASE("ilp extraction: as eqsat's final extraction it is never worse and keeps the values") {
    // shapes other than the rules' own; the sanitizer build ships no rule library (built-ins only)
    const auto rules = shipped_rules();
    const std::vector<graph::computation_graph> graphs{
        models::nasrnn({.batch = 2, .hidden = 12, .steps = 3}),
        models::squeezenet({.image = 35, .num_classes = 10, .channel_divisor = 4})};
    for (const auto& g : graphs) {
        CAPTURE(g.name());
        // the same searches as with a final solver, which runs the one from the model alone
        const auto plain = eqsat_search(g, rules, cost::roofline_model{}, device::t4, {},
                                        {.start_from_standard_fusions = false, .join_matmul_sums_first = false});
        auto report = std::make_shared<ilp_report>();
        eqsat_config config;
        config.final_solver = cbc_extraction({.seconds = 1}, report);
        const auto r = eqsat_search(g, rules, cost::roofline_model{}, device::t4, {}, config);
        CHECK(r.stats.cost_after <= plain.stats.cost_after * (1 + 1e-9));
        CHECK(r.stats.cost_after == doctest::Approx(inference_cost(r.graph, cost::roofline_model{}, device::t4)));
        CHECK_NOTHROW(graph::validate(r.graph));
        for (std::uint64_t seed : {3, 11}) CHECK(max_relative_difference(g, r.graph, seed) <= 1e-9);
        CHECK(report->solves >= 1);
        CHECK(report->variables > 0);
        // the program's optimum is a lower bound on every extraction's cost
        if (report->optimal) CHECK(report->objective <= r.stats.cost_after * (1 + 1e-6));
    }
}

TEST_CASE("ilp extraction: on random DAGs it is never worse and keeps the values (fixed seeds)") {
    const auto rules = shipped_rules();
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        CAPTURE(seed);
        std::mt19937_64 rng(seed);
        const auto g = goopt_test::random_dag(rng, 4, 4);
        eqsat_config config;
        const auto plain = eqsat_search(g, rules, cost::roofline_model{}, device::v100, {}, config);
        auto report = std::make_shared<ilp_report>();
        config.final_solver = cbc_extraction({.seconds = 2}, report);
        const auto r = eqsat_search(g, rules, cost::roofline_model{}, device::v100, {}, config);
        CHECK(r.stats.cost_after <= plain.stats.cost_after * (1 + 1e-9));
        CHECK_NOTHROW(graph::validate(r.graph));
        CHECK(max_relative_difference(g, r.graph, seed) <= 1e-9);
        if (report->solves > 0) CHECK(report->variables > 0);
        if (report->optimal) CHECK(report->objective <= r.stats.cost_after * (1 + 1e-6));
    }
}
