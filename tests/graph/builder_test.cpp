// The typed builder: options reach the attributes, the current layer reaches every op.
#include <goopt/graph/builder.hpp>

#include <doctest/doctest.h>

using namespace goopt;
using ops::attr_id;
using ints = std::vector<std::int64_t>;

TEST_CASE("builder methods set the attributes their options name") {
    graph::computation_graph g;
    graph::builder b(g);
    auto x = b.input("x", {1, 8, 16, 16});
    b.set_layer(3);
    auto w = b.weight("w", {16, 8, 3, 3});
    auto c = b.conv2d(
        x, w,
        {.stride = {2, 2}, .padding = ops::padding_mode::valid, .activation = ops::activation::relu, .name = "c"});
    const auto& a = g.get_op(g.producer(c)).attrs;
    CHECK(a.get_ints(attr_id::stride) == ints{2, 2});
    CHECK(a.get_int(attr_id::padding) == 1);
    CHECK(a.get_int(attr_id::activation) == 1);
    CHECK(g.type_of(c).dims == ops::shape{1, 16, 7, 7});
    auto p = b.maxpool2d(c, {.kernel = {3, 3}, .stride = {2, 2}});
    CHECK(g.type_of(p).dims == ops::shape{1, 16, 4, 4});
    auto parts = b.split(p, 1, {4, 12});
    REQUIRE(parts.size() == 2);
    const graph::tensor_id cat_in[] = {parts[1], parts[0]};
    auto cat = b.concat(cat_in, 1);
    CHECK(g.type_of(cat).dims == ops::shape{1, 16, 4, 4});
    auto k = b.constant(ops::op_kind::const_iconv, {16, 16, 3, 3});
    CHECK(g.get_op(g.producer(k)).kind == ops::op_kind::const_iconv);

    CHECK(g.get_op(g.producer(x)).layer == -1);
    for (graph::op_id v = 1; v < g.num_ops(); ++v) CHECK(g.get_op(v).layer == 3);
}
