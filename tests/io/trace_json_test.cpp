#include <goopt/device/cluster_spec.hpp>
#include <goopt/io/svg_timeline.hpp>
#include <goopt/io/trace_json.hpp>
#include <goopt/sim/simulator.hpp>

#include <doctest/doctest.h>

using namespace goopt;
using ops::op_kind;

TEST_CASE("a simulated step as a JSON trace and an SVG timeline") {
    graph::computation_graph g("tiny<&>");
    const auto x = g.input("x", {1024});
    const auto a = g.add1(op_kind::relu, {x}, {}, "a");
    const auto b = g.add1(op_kind::sigmoid, {a}, {}, "b");
    g.mark_output(b);
    const auto cl = device::parse_cluster("2xV100:pcie");
    sim::simulator s(g, cl);
    const auto r = s.run(sim::placement{0, 0, 1});
    const auto j = io::trace_to_json(g, cl, r);
    CHECK(j["format"] == "goopt.trace");
    CHECK(j["cluster"] == "2xV100:pcie");
    CHECK(j["step_time"].get<double>() == r.step_time);
    REQUIRE(j["ops"].size() == 3);
    CHECK(j["ops"][1]["op"] == "a");
    REQUIRE(j["transfers"].size() == 1);
    CHECK(j["transfers"][0]["tensor"] == "a:0");
    CHECK(j["transfers"][0]["bytes"] == 4096);
    CHECK(j["devices"][1]["peak_memory"] == r.peak_memory[1]);
    CHECK(j["links"][0]["name"] == "pcie");

    const std::string svg = io::svg_timeline(g, cl, r);
    CHECK(svg.rfind("<svg ", 0) == 0);
    CHECK(svg.find("tiny&lt;&amp;&gt;") != std::string::npos);  // names are escaped
    CHECK(svg.find("<title>a (relu)") != std::string::npos);
    CHECK(svg.find("a:0 4096 bytes, dev 0 -&gt; 1") != std::string::npos);
    // 2 device rows + 1 link row, and one box per timed op and transfer (x takes no time)
    std::size_t boxes = 0;
    for (const char* cls : {"<rect class=\"op\"", "<rect class=\"transfer\""})
        for (std::size_t p = svg.find(cls); p != std::string::npos; p = svg.find(cls, p + 1)) ++boxes;
    CHECK(boxes == 3);
    CHECK(svg.find("pcie</text>") != std::string::npos);
}
