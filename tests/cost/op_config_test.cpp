#include <goopt/cost/op_config.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

TEST_CASE("op configuration keys: kind, attributes and types, not names or places") {
    graph::computation_graph g;
    const auto x = g.input("x", {1, 64});
    const auto w = g.weight("w", {64, 32});
    const auto y = g.input("y", {64, 32});
    const auto a = g.add1(op_kind::matmul, {x, w}, {}, "first");
    const auto b = g.add1(op_kind::matmul, {x, w}, {}, "second");  // another name, the same configuration
    const auto c = g.add1(op_kind::matmul, {x, y}, {}, "on_activation");
    const auto r = g.add1(op_kind::relu, {a}, {}, "r");
    const auto key = [&](graph::tensor_id t) { return cost::op_config_key(g, g.producer(t)); };
    CHECK(key(a) == key(b));
    CHECK(key(a) == "matmul(activation=0;in=f32[1,64],w:f32[64,32];out=f32[1,32])");
    CHECK(key(c) != key(a));  // a weight may be prepared once by the runtime: another configuration
    CHECK(key(r) == "relu(;in=f32[1,32];out=f32[1,32])");
    // another shape or dtype is another configuration
    const auto x16 = g.input("x16", {1, 64}, ops::dtype::f16);
    const auto w16 = g.weight("w16", {64, 32}, ops::dtype::f16);
    CHECK(key(g.add1(op_kind::matmul, {x16, w16})) != key(a));
    const auto x2 = g.input("x2", {2, 64});
    CHECK(key(g.add1(op_kind::matmul, {x2, w})) != key(a));
    // attributes are part of it, real ones exactly
    const auto l1 = g.add1(op_kind::clip, {x}, {{ops::attr_id::min, 0.1}, {ops::attr_id::max, 1.0}});
    const auto l2 = g.add1(op_kind::clip, {x}, {{ops::attr_id::min, 0.1 + 1e-15}, {ops::attr_id::max, 1.0}});
    CHECK(key(l1) != key(l2));
    CHECK(key(l1) == "clip(min=0.10000000000000001,max=1;in=f32[1,64];out=f32[1,64])");
    CHECK_FALSE(cost::is_measurable(g, g.producer(x)));
    CHECK(cost::is_measurable(g, g.producer(a)));
}

TEST_CASE("op configuration keys: an operand computed from weights alone is a weight (the runtime folds it)") {
    graph::computation_graph g;
    const auto x = g.input("x", {4, 64});
    const auto a = g.weight("a", {64, 16});
    const auto b = g.weight("b", {16, 32});
    const auto w = g.weight("w", {64, 32});
    const auto key = [&](graph::tensor_id t) { return cost::op_config_key(g, g.producer(t)); };
    const auto ab = g.add1(op_kind::matmul, {a, b}, {}, "ab");  // weight preprocessing: folded once
    const auto folded = g.add1(op_kind::matmul, {x, ab}, {}, "folded");
    CHECK(key(folded) == key(g.add1(op_kind::matmul, {x, w})));
    CHECK(key(folded) == "matmul(activation=0;in=f32[4,64],w:f32[64,32];out=f32[4,32])");
    // an operand that an input reaches is an activation, however it mixes with weights
    const auto xa = g.add1(op_kind::matmul, {x, a});
    CHECK(key(g.add1(op_kind::matmul, {xa, b})) == "matmul(activation=0;in=f32[4,16],w:f32[16,32];out=f32[4,32])");
    const auto xt = g.add1(op_kind::transpose, {x}, {{ops::attr_id::perm, std::vector<std::int64_t>{1, 0}}});
    const auto mixed = g.add1(op_kind::ewadd, {w, g.add1(op_kind::matmul, {xt, g.input("y", {4, 32})})});
    CHECK(key(g.add1(op_kind::matmul, {x, mixed})) == "matmul(activation=0;in=f32[4,64],f32[64,32];out=f32[4,32])");
    // followed cost::detail::fixed_depth ops deep, no further: a deeper chain is keyed as an activation
    auto deep = w;
    for (int k = 0; k < cost::detail::fixed_depth; ++k) deep = g.add1(op_kind::relu, {deep});
    CHECK(key(g.add1(op_kind::matmul, {x, deep})) == key(folded));
    deep = g.add1(op_kind::relu, {deep});
    CHECK(key(g.add1(op_kind::matmul, {x, deep})) == "matmul(activation=0;in=f32[4,64],f32[64,32];out=f32[4,32])");
}

TEST_CASE("fused group keys: members in order and their wiring") {
    graph::computation_graph g;
    const auto x = g.input("x", {8, 8});
    const auto s = g.add1(op_kind::sigmoid, {x});
    const auto t = g.add1(op_kind::tanh, {s});
    const auto u = g.add1(op_kind::ewadd, {s, t});
    const std::vector<graph::op_id> chain{g.producer(s), g.producer(t)};
    const std::vector<graph::op_id> three{g.producer(s), g.producer(t), g.producer(u)};
    CHECK(cost::group_config_key(g, chain) ==
          "group{sigmoid(;in=f32[8,8];out=f32[8,8])<-|tanh(;in=f32[8,8];out=f32[8,8])<0}");
    CHECK(cost::group_config_key(g, three).ends_with("|ewadd(;in=f32[8,8],f32[8,8];out=f32[8,8])<0,1}"));
    // the same members fed from outside are another group
    const std::vector<graph::op_id> apart{g.producer(s), g.producer(u)};
    CHECK(cost::group_config_key(g, apart).ends_with("<0,-}"));
}
