// Every op kind is complete: a spec (ops::op_table), a kernel (interp), a gradient rule or an
// explicit none (models), modular semantics or an explicit not_enumerated (subst). A missing row is
// a compile error (ops/kind_table.hpp); these checks state that, and walk every kind at run time.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/kernels.hpp>
#include <goopt/models/gradient_rules.hpp>
#include <goopt/ops/kind_table.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/world.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace goopt;
using ops::op_kind;

// A row cannot be left out: no entry type has a default, so a short table has an element with no
// initializer, which does not compile; nor can an entry be null.
static_assert(!std::is_default_constructible_v<ops::required_fn<interp::detail::kernel_fn<float>>>);
static_assert(!std::is_constructible_v<ops::required_fn<interp::detail::kernel_fn<float>>, std::nullptr_t>);
static_assert(!std::is_default_constructible_v<models::detail::gradient_rule>);
static_assert(!std::is_constructible_v<models::detail::gradient_rule, std::nullptr_t>);
static_assert(!std::is_default_constructible_v<subst::detail::modular_semantics>);
static_assert(!std::is_constructible_v<subst::detail::modular_semantics, std::nullptr_t>);
static_assert(interp::detail::kernel_table<double>.size() == ops::num_op_kinds &&
              models::detail::gradient_table.size() == ops::num_op_kinds &&
              subst::detail::modular_table.size() == ops::num_op_kinds);

namespace {

/// Kinds that only a training graph holds: gradients of other kinds and optimizer updates.
bool training_only(op_kind k) {
    const std::string_view n = ops::name(k);
    return n.find("_grad") != std::string_view::npos || n.ends_with("_update") || k == op_kind::const_fill;
}

}  // namespace

TEST_CASE("every op kind has its spec, kernel, gradient rule (or none) and fingerprint semantics (or none)") {
    const subst::world taso = subst::taso_world();
    std::size_t with_rule = 0;
    for (const op_kind k : ops::all_op_kinds) {
        CAPTURE(ops::name(k));
        CHECK(ops::spec(k).kind == k);
        CHECK(ops::parse_op_kind(ops::name(k)) == k);
        // every kind a forward graph computes has a gradient rule; sources and training-only kinds none
        // (an opaque op's semantics are unknown: it has none)
        const bool forward_compute = !ops::spec(k).has(ops::source) && !training_only(k) && k != op_kind::opaque;
        CHECK(models::detail::has_gradient_rule(k) == forward_compute);
        with_rule += models::detail::has_gradient_rule(k);
        // exact semantics exactly for the kinds the substitution generator enumerates
        const bool enumerated = std::find(taso.kinds.begin(), taso.kinds.end(), k) != taso.kinds.end();
        CHECK(subst::has_modular_semantics(k) == enumerated);
    }
    CHECK(with_rule == 53);
}

TEST_CASE("a kernel for every kind: each source kind's kernel refuses or computes, none is missing") {
    // the kernel table's entries are never null (a type error); this runs the kernels of the
    // constant sources, which need no inputs, through interp::evaluate_op
    graph::computation_graph g;
    const auto c = g.add1(op_kind::const_one, {}, {{ops::attr_id::shape, std::vector<std::int64_t>{2, 2}}});
    const auto x = g.input("x", {2, 2});
    const std::span<const interp::value<double>* const> none;
    CHECK(interp::evaluate_op<double>(g, g.producer(c), none)[0](1, 1) == 1.0);
    CHECK_THROWS_AS(interp::evaluate_op<double>(g, g.producer(x), none), error);
}
