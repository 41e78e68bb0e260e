#include <goopt/graph/computation_graph.hpp>
#include <goopt/subst/rewriting/equivalence.hpp>

#include <doctest/doctest.h>

#include <cmath>

using namespace goopt;

namespace {

/// sqrt(x), or sqrt(relu(x)): random feeds in [-1, 1] take the first out of its domain
graph::computation_graph square_root(bool rectified) {
    graph::computation_graph g(rectified ? "sqrt_relu" : "sqrt");
    auto x = g.input("x", {4, 8});
    if (rectified) x = g.add1(ops::op_kind::relu, {x});
    g.mark_output(g.add1(ops::op_kind::sqrt, {x}));
    return g;
}

}  // namespace

TEST_CASE("equivalence check: NaN where both graphs give it agrees, NaN in one only does not") {
    const auto a = square_root(false), b = square_root(true);
    CHECK(subst::max_relative_difference(a, a) == 0);  // NaN at the negative feeds in both: the same graph
    CHECK(std::isinf(subst::max_relative_difference(a, b)));
    CHECK(std::isinf(subst::max_relative_difference(b, a)));
    CHECK(subst::max_relative_difference(b, b) == 0);
}
