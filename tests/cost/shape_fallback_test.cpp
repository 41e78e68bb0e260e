#include <goopt/cost/op_config_graph.hpp>
#include <goopt/cost/scaled_roofline.hpp>
#include <goopt/cost/shape_curve.hpp>
#include <goopt/device.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {

/// The CPU preset without its launch cost: a configuration's size is then its roofline time.
device::device_spec cpu_without_launch() {
    auto d = device::describe(*device::find_preset("CPU"));
    d.launch = 0;
    return d;
}

/// x[rows, 256] @ w[256, cols]: one matmul of each given shape, in one graph.
graph::computation_graph matmuls_of_shapes(const std::vector<std::pair<std::int64_t, std::int64_t>>& shapes) {
    graph::computation_graph g("matmuls");
    for (const auto& [rows, cols] : shapes) {
        const auto x = g.input(concat("x", rows, "_", cols), {rows, 256});
        const auto w = g.weight(concat("w", rows, "_", cols), {256, cols});
        g.mark_output(g.add1(op_kind::matmul, {x, w}, {}, concat("m", rows, "_", cols)));
    }
    return g;
}

}  // namespace

TEST_CASE("op_config_graph: a single op's key rebuilds the op, with the same key and roofline time") {
    graph::computation_graph g("mixed");
    const auto x = g.input("x", {1, 8, 16, 16});
    const auto k = g.weight("k", {16, 8, 3, 3});
    const auto c = g.add1(op_kind::conv2d, {x, k}, {{ops::attr_id::stride, std::vector<std::int64_t>{2, 2}}}, "c");
    const auto r = g.add1(op_kind::relu, {c}, {}, "r");
    const auto p = g.add1(
        op_kind::pad, {r},
        {{ops::attr_id::pads, std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}, {ops::attr_id::value, 0.25}}, "p");
    const auto f = g.add1(op_kind::reshape, {p}, {{ops::attr_id::shape, std::vector<std::int64_t>{1, -1}}}, "f");
    g.mark_output(g.add1(op_kind::ewadd, {f, f}, {}, "a"));
    const auto cpu = device::describe(*device::find_preset("CPU"));
    for (const char* name : {"c", "r", "p", "f", "a"}) {
        CAPTURE(name);
        const auto o = *g.find(name);
        const auto key = cost::op_config_key(g, o);
        const auto one = cost::op_config_graph(key);
        const auto last = static_cast<graph::op_id>(one.num_ops() - 1);
        CHECK(cost::op_config_key(one, last) == key);
        CHECK(cost::roofline_model{}.op_time(one, last, cpu) == cost::roofline_model{}.op_time(g, o, cpu));
    }
    CHECK(cost::op_config_key(g, *g.find("c")).find("w:f32[16,8,3,3]") != std::string::npos);
}

TEST_CASE("op_config_graph: a key it cannot rebuild is an error naming the key") {
    const auto refuses = [](const std::string& key, const std::string& part) {
        CAPTURE(key);
        try {
            (void)cost::op_config_graph(key);
            FAIL("no error");
        } catch (const error& e) {
            const std::string what = e.what();
            CHECK(what.find("cost::op_config_graph") != std::string::npos);
            CHECK(what.find(part) != std::string::npos);
        }
    };
    refuses("group{relu(;in=f32[2];out=f32[2])<-}", "not a single op's key");
    refuses("conv(;in=f32[2];out=f32[2])", "unknown op kind 'conv'");
    refuses("relu(colour=1;in=f32[2];out=f32[2])", "attribute 'colour=1'");
    refuses("relu(;in=f32[2,x];out=f32[2])", "'x'");
    refuses("relu(;in=q8[2];out=f32[2])", "input type 'q8[2]'");
    refuses("relu(;in=f32[2,2];out=f32[3,3])", "rebuilt as 'relu(;in=f32[2,2];out=f32[2,2])'");
    refuses("matmul(activation=0;in=f32[2,3],f32[4,5];out=f32[2,5])", "a configuration the op table accepts");
}

TEST_CASE("shape-aware fallback: a power law of the roofline time is recovered, the per-kind median misses it") {
    const auto d = cpu_without_launch();
    // measured = 3e-3 * roofline^0.6: small matmuls run at a worse efficiency than large ones
    const auto g = matmuls_of_shapes({{1, 64}, {4, 64}, {16, 128}, {64, 256}, {256, 512}, {1024, 1024}, {2, 64}});
    const auto law = [](double roofline) { return 3e-3 * std::pow(roofline, 0.6); };
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (g.get_op(o).kind == op_kind::matmul && g.get_op(o).name != "m2_64")
            t.set(cost::op_config_key(g, o), law(cost::roofline_model{}.op_time(g, o, d)));
    const cost::shape_options fit{.method = cost::shape_method::loglog_fit, .min_points = 3, .at_least_median = false};
    const auto shaped = cost::scaled_roofline::fit_shape(t, d, fit);
    REQUIRE(shaped.curves().count(op_kind::matmul) == 1);
    const auto& curve = shaped.curves().at(op_kind::matmul);
    CHECK(curve.points() == 6);
    CHECK(curve.exponent() == doctest::Approx(-0.4).epsilon(1e-9));  // ratio = 3e-3 roofline^(0.6 - 1)
    CHECK(curve.coefficient() == doctest::Approx(3e-3).epsilon(1e-9));
    // the configuration nobody measured (2 x 64), inside the sizes measured: exact
    const auto unmeasured = *g.find("m2_64");
    const double truth = law(cost::roofline_model{}.op_time(g, unmeasured, d));
    CHECK(shaped.op_time(g, unmeasured, d) == doctest::Approx(truth).epsilon(1e-9));
    // one factor per kind cannot follow it: off by more than 1.5x here
    const auto median = cost::scaled_roofline::fit_shape(t, d, {.method = std::nullopt});
    CHECK(median.curves().empty());
    CHECK(std::abs(std::log(median.op_time(g, unmeasured, d) / truth)) > std::log(1.5));
    // outside the sizes measured the factor is the one at the nearest end, not extrapolated
    const double largest = cost::roofline_model{}.op_time(g, *g.find("m1024_1024"), d);
    CHECK(shaped.factor(op_kind::matmul, 100 * largest) == doctest::Approx(shaped.factor(op_kind::matmul, largest)));
    // never below the median (the default): the large ones, cheaper than the median, take the median
    auto floored_options = fit;
    floored_options.at_least_median = true;
    const auto floored = cost::scaled_roofline::fit_shape(t, d, floored_options);
    CHECK(shaped.factor(op_kind::matmul, largest) < median.factor(op_kind::matmul));
    CHECK(floored.factor(op_kind::matmul, largest) == median.factor(op_kind::matmul));
    CHECK(floored.op_time(g, unmeasured, d) == doctest::Approx(truth).epsilon(1e-9));  // dearer than the median
}

TEST_CASE("shape-aware fallback: the median ratio of the k configurations nearest in size") {
    std::vector<cost::fallback_point> points;
    for (int i = 0; i < 5; ++i) {  // sizes 1, 2, 4, 8, 16 us; ratios 1..5
        const double size = std::ldexp(1e-6, i);
        points.push_back({size, size * (i + 1), size});
    }
    const auto near3 = cost::shape_curve::fit(points, cost::shape_method::nearest, 3);
    CHECK(near3.factor(2e-6) == doctest::Approx(2.0));  // 1, 2, 4 us: ratios 1, 2, 3
    CHECK(near3.factor(7e-6) == doctest::Approx(4.0));  // 4, 8, 16 us (8 and 4 nearer than 2)
    CHECK(near3.factor(1e-3) == doctest::Approx(4.0));  // beyond: the largest three
    CHECK(near3.factor(1e-9) == doctest::Approx(2.0));  // below: the smallest three
    const auto near1 = cost::shape_curve::fit(points, cost::shape_method::nearest, 1);
    CHECK(near1.factor(3.9e-6) == doctest::Approx(3.0));  // 4 us alone
    CHECK_THROWS_AS(cost::shape_curve::fit({}, cost::shape_method::nearest), error);
    CHECK_THROWS_AS(cost::shape_curve::fit({{1e-6, 0, 1e-6}}, cost::shape_method::nearest), error);
}

TEST_CASE("shape-aware fallback: a kind's curve, else its median, else every kind's median, else 1") {
    const auto d = device::describe(*device::find_preset("CPU"));
    const auto g = matmuls_of_shapes({{1, 64}, {4, 64}, {16, 128}, {64, 256}, {256, 512}, {1024, 1024}});
    graph::computation_graph h("others");
    const auto x = h.input("x", {64, 64});
    const auto a = h.add1(op_kind::ewadd, {x, x}, {}, "a");
    h.mark_output(h.add1(op_kind::relu, {a}, {}, "r"));
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    std::vector<double> ratios;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        if (g.get_op(o).kind != op_kind::matmul) continue;
        const double ratio = 10.0 + static_cast<double>(o);
        t.set(cost::op_config_key(g, o), ratio * cost::roofline_model{}.op_time(g, o, d));
        ratios.push_back(ratio);
    }
    t.set(cost::op_config_key(h, *h.find("a")), 2 * cost::roofline_model{}.op_time(h, *h.find("a"), d));
    t.set("group{relu(;in=f32[64,64];out=f32[64,64])<-}", 1.0);  // a group: no single op's ratio
    const auto s = cost::scaled_roofline::fit_shape(t, d);       // nearest 5, from 5 configurations
    CHECK(s.curves().size() == 1);
    CHECK(s.curves().count(op_kind::matmul) == 1);
    CHECK(s.factor(op_kind::ewadd) == doctest::Approx(2.0));  // one configuration: its own median
    ratios.push_back(2.0);
    std::vector<double> sorted = ratios;
    std::sort(sorted.begin(), sorted.end());
    CHECK(s.overall() == doctest::Approx(sorted[3]));  // 7 ratios: the 4th
    const auto relu = *h.find("r");
    CHECK(s.op_time(h, relu, d) == doctest::Approx(s.overall() * cost::roofline_model{}.op_time(h, relu, d)));
    const auto empty = cost::scaled_roofline::fit_shape(cost::cost_table{}, d);
    CHECK(empty.overall() == 1.0);
    CHECK(empty.curves().empty());
    CHECK(empty.op_time(h, relu, d) == cost::roofline_model{}.op_time(h, relu, d));
}

TEST_CASE("shape-aware fallback: the same table gives the same costs, whatever the order of its points") {
    const auto d = device::describe(*device::find_preset("CPU"));
    const auto g = matmuls_of_shapes({{1, 64}, {4, 64}, {16, 128}, {64, 256}, {256, 512}, {1024, 1024}, {2, 2}});
    std::vector<cost::kind_point> points;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        if (g.get_op(o).kind != op_kind::matmul) continue;
        const double roofline = cost::roofline_model{}.op_time(g, o, d);
        points.push_back(
            {op_kind::matmul,
             {roofline, roofline * (3.0 + static_cast<double>(o % 5)), cost::scaled_roofline::size_of(roofline, d)}});
    }
    std::vector<cost::kind_point> reversed(points.rbegin(), points.rend());
    for (auto method : {cost::shape_method::nearest, cost::shape_method::loglog_fit}) {
        const cost::shape_options o{.method = method, .min_points = 3, .k = 4};
        const auto a = cost::scaled_roofline::from_points(points, o),
                   b = cost::scaled_roofline::from_points(reversed, o);
        for (double size = 1e-9; size < 1e-2; size *= 3)
            CHECK(a.factor(op_kind::matmul, size) == b.factor(op_kind::matmul, size));
    }
    cost::cost_table t{.environment = cost::this_machine("1.22.0", 1), .repetitions = 5};
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (g.get_op(o).kind == op_kind::matmul) t.set(cost::op_config_key(g, o), 1e-5 * static_cast<double>(o + 1));
    const auto first = cost::scaled_roofline::fit_shape(t, d), second = cost::scaled_roofline::fit_shape(t, d);
    for (graph::op_id o = 0; o < g.num_ops(); ++o) CHECK(first.op_time(g, o, d) == second.op_time(g, o, d));
}
