#include <goopt/device/cluster_spec.hpp>
#include <goopt/io/svg_timeline.hpp>
#include <goopt/sim/simulator.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

using namespace goopt;
using ops::op_kind;

namespace {

/// Sum of data-ops over the boxes of one class ("op", "agg", "transfer", "agg-transfer").
std::size_t events_drawn(const std::string& svg, const std::string& cls) {
    const std::string box = concat("<rect class=\"", cls, "\" data-ops=\"");
    std::size_t n = 0;
    for (auto at = svg.find(box); at != std::string::npos; at = svg.find(box, at + box.size())) {
        const char* digits = svg.c_str() + at + box.size();
        REQUIRE(std::isdigit(static_cast<unsigned char>(*digits)));
        n += std::strtoul(digits, nullptr, 10);
    }
    return n;
}

/// `width` parallel chains of `depth` relu/sigmoid ops, chain k placed on device k mod devices.
graph::computation_graph chains(std::size_t width, std::size_t depth, std::size_t elements) {
    graph::computation_graph g("chains");
    const auto x = g.input("x", {static_cast<std::int64_t>(elements)});
    for (std::size_t k = 0; k < width; ++k) {
        auto t = x;
        for (std::size_t i = 0; i < depth; ++i) t = g.add1(i % 2 ? op_kind::sigmoid : op_kind::relu, {t});
        g.mark_output(t);
    }
    return g;
}

sim::placement round_robin(const graph::computation_graph& g, std::size_t width, std::size_t depth,
                           std::size_t devices) {
    sim::placement p(g.num_ops(), 0);
    for (std::size_t k = 0; k < width; ++k)
        for (std::size_t i = 0; i < depth; ++i) p[1 + k * depth + i] = static_cast<sim::device_id>(k % devices);
    return p;
}

}  // namespace

TEST_CASE("svg timeline: a row per device and link, a box per op, axis, step marker and legend") {
    const auto g = chains(2, 5, 1 << 16);
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    auto p = round_robin(g, 2, 5, 2);
    p[6] = 0;  // the second chain starts on device 0: one transfer to device 1
    const auto r = s.run(p);
    const std::string svg = io::svg_timeline(g, cl, r);
    CHECK(goopt::test::count_of(svg, "<g class=\"row\" data-kind=\"device\"") == 2);
    CHECK(goopt::test::count_of(svg, "<g class=\"row\" data-kind=\"link\"") == cl.num_links());
    CHECK(goopt::test::count_of(svg, "<rect class=\"op\" data-ops=\"1\"") == 10);  // wide enough: no aggregates
    CHECK(goopt::test::count_of(svg, "class=\"agg\"") == 0);
    CHECK(events_drawn(svg, "transfer") == r.transfers.size());
    CHECK(r.transfers.size() == 1);
    CHECK(goopt::test::count_of(svg, "<g class=\"step-time\">") == 1);
    CHECK(svg.find(">step " + io::detail::svg_time(r.step_time) + "</text>") != std::string::npos);
    // the legend names both kinds and transfers
    CHECK(svg.find(">relu</text>") != std::string::npos);
    CHECK(svg.find(">sigmoid</text>") != std::string::npos);
    CHECK(svg.find(">transfer</text>") != std::string::npos);
    CHECK(goopt::test::count_of(svg, "<g class=\"axis\">") == 1);
    CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
}

TEST_CASE("svg timeline: fused groups are one outlined box") {
    const auto g = chains(1, 4, 1 << 16);
    const auto cl = device::parse_cluster("1xV100:pcie");
    sim::simulator s(g, cl);
    const sim::placement p(g.num_ops(), 0);
    const sim::fusion_groups f{-1, 1, 1, 1, -1};  // relu, sigmoid, relu fused; the last sigmoid alone
    const auto r = s.run(p, {.fusion = f});
    const std::string svg = io::svg_timeline(g, cl, r, {.fusion = f});
    CHECK(goopt::test::count_of(svg, "<rect class=\"op\" data-ops=\"3\"") == 1);
    CHECK(goopt::test::count_of(svg, "stroke=\"#000\" stroke-width=\"1.2\"") == 1);
    CHECK(goopt::test::count_of(svg, "<rect class=\"op\" data-ops=\"1\"") == 1);
    CHECK(svg.find("fused group 1: 3 ops") != std::string::npos);
}

TEST_CASE("svg timeline: 60,000 ops stay readable (small boxes aggregated, every op accounted for)") {
    const std::size_t width = 8, depth = 7500;  // 60,000 timed ops on 8 devices
    const auto g = chains(width, depth, 64);
    const auto cl = device::parse_cluster("8xV100:nvlink");
    sim::simulator s(g, cl);
    const auto r = s.run(round_robin(g, width, depth, 8));
    const std::string svg = io::svg_timeline(g, cl, r);
    CHECK(events_drawn(svg, "op") + events_drawn(svg, "agg") == width * depth);
    CHECK(goopt::test::count_of(svg, "class=\"agg\"") > 0);
    // x lives on device 0: one transfer to each other device; only the 7 busy links of 56 get a row
    CHECK(r.transfers.size() == 7);
    CHECK(events_drawn(svg, "transfer") + events_drawn(svg, "agg-transfer") == 7);
    CHECK(goopt::test::count_of(svg, "<g class=\"row\" data-kind=\"device\"") == 8);
    CHECK(goopt::test::count_of(svg, "<g class=\"row\" data-kind=\"link\"") == 7);
    CHECK(svg.find("49 idle links not shown") != std::string::npos);
    // bounded by the pixels, not the ops: per row at most width/min_box_width boxes + width/aggregate_width
    const io::svg_timeline_options o;
    const std::size_t bound = 8 * static_cast<std::size_t>(o.width / o.min_box_width + o.width / o.aggregate_width + 2);
    CHECK(goopt::test::count_of(svg, "<rect class=\"op\"") + goopt::test::count_of(svg, "<rect class=\"agg\"") <=
          bound);
    CHECK(svg.size() < 2'000'000);
}
