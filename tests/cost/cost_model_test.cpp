#include <goopt/cost.hpp>
#include <goopt/device.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace goopt;
using ops::op_kind;

static_assert(cost::CostModel<cost::roofline_model, device::preset>);
static_assert(cost::CostModel<cost::table_model<>, device::device_spec>);
static_assert(!cost::CostModel<int, device::preset>);

TEST_CASE("roofline: compute-bound matmul and memory-bound relu on a V100, by hand") {
    graph::computation_graph g;
    const auto a = g.input("a", {1024, 1024});
    const auto b = g.weight("b", {1024, 1024});
    const auto c = g.add1(op_kind::matmul, {a, b}, {}, "c");
    const auto r = g.add1(op_kind::relu, {c}, {}, "r");
    const cost::roofline_model m;
    // 2 * 1024^3 FLOPs at 15.7 TFLOP/s = 136.78 us (traffic 12 MiB / 900 GB/s = 13.98 us) + 5 us launch
    CHECK(m.op_time(g, g.producer(c), device::v100) == doctest::Approx(5e-6 + 2.0 * 1024 * 1024 * 1024 / 15.7e12));
    // relu: 8 MiB of traffic at 900 GB/s = 9.32 us + 5 us
    CHECK(m.op_time(g, g.producer(r), device::v100) == doctest::Approx(5e-6 + 8.0 * 1024 * 1024 / 900e9));
    CHECK(m.op_time(g, g.producer(a), device::v100) == 0.0);  // sources launch nothing
    CHECK(m.op_time(g, g.producer(b), device::v100) == 0.0);
    // the same matmul is much faster on an H100
    CHECK(m.op_time(g, g.producer(c), device::h100) < m.op_time(g, g.producer(c), device::v100) / 3);
}

TEST_CASE("roofline is dtype-aware: f16 matmuls use the tensor-core rate") {
    graph::computation_graph g;
    const auto a = g.input("a", {2048, 2048}, ops::dtype::f16);
    const auto b = g.input("b", {2048, 2048}, ops::dtype::f16);
    const auto c = g.add1(op_kind::matmul, {a, b});
    const double flops = 2.0 * 2048 * 2048 * 2048;
    const double bytes = 3.0 * 2048 * 2048 * 2;
    // 17.2 GFLOP / 125 TFLOP/s = 137 us, traffic 24 MiB / 900 GB/s = 28 us
    CHECK(cost::roofline_model{}.op_time(g, g.producer(c), device::v100) ==
          doctest::Approx(5e-6 + std::max(flops / 125e12, bytes / 900e9)));
}

TEST_CASE("roofline group time: one launch and no internal traffic") {
    graph::computation_graph g;
    const auto x = g.input("x", {1 << 20});  // 4 MiB
    const auto s = g.add1(op_kind::sigmoid, {x});
    const auto t = g.add1(op_kind::tanh, {s});
    g.mark_output(t);
    const cost::roofline_model m;
    const std::vector<graph::op_id> grp{g.producer(s), g.producer(t)};
    // members alone read and write 8 MiB each; fused: read x, write t = 8 MiB in all
    const double mib = 1024.0 * 1024.0;
    CHECK(m.group_time(g, grp, device::a100) == doctest::Approx(5e-6 + 8 * mib / 1555e9));
    CHECK(m.group_time(g, grp, device::a100) < m.op_time(g, grp[0], device::a100) + m.op_time(g, grp[1], device::a100));
    const std::vector<graph::op_id> one{g.producer(s)};
    CHECK(m.group_time(g, one, device::a100) == m.op_time(g, grp[0], device::a100));
}

TEST_CASE("table model: measured times first, roofline for the rest") {
    graph::computation_graph g;
    const auto x = g.input("x", {1024});
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::relu, {a}, {}, "b");
    g.mark_output(b);
    cost::table_model<> m;
    m.set("V100", "a", 3e-5);
    m.set("V100", "b", 2e-5);
    const auto v100 = device::describe(device::v100);
    CHECK(m.op_time(g, g.producer(a), v100) == 3e-5);
    CHECK(m.op_time(g, g.producer(a), device::describe(device::t4)) ==
          cost::roofline_model{}.op_time(g, g.producer(a), device::describe(device::t4)));
    // fused: 5e-5 - one launch (5e-6) - 8192 saved bytes / 900e9, never below the slowest member
    const std::vector<graph::op_id> grp{g.producer(a), g.producer(b)};
    CHECK(m.group_time(g, grp, v100) == doctest::Approx(5e-5 - 5e-6 - 8192 / 900e9));
    m.set("V100", "b", 0);
    CHECK(m.group_time(g, grp, v100) == doctest::Approx(3e-5));
    CHECK_THROWS_WITH_AS(m.set("V100", "a", -1), doctest::Contains("time of op 'a' on device 'V100' is -1"), error);
    CHECK_THROWS_WITH_AS(m.set("V100", "a", 1e300), doctest::Contains("expected a number of seconds in [0, 3600]"),
                         error);
    // an unmeasured member sends the whole group to the fallback
    cost::table_model<> partial;
    partial.set("V100", "a", 1.0);
    CHECK(partial.group_time(g, grp, v100) == cost::roofline_model{}.group_time(g, grp, v100));
}
