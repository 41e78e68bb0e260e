#include <goopt/io/svg_training_curve.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace goopt;

namespace {}  // namespace

TEST_CASE("svg training curve: best and mean polylines, a line per baseline, legend") {
    std::vector<io::curve_point> curve;
    for (int u = 1; u <= 20; ++u) curve.push_back({double(u), 0.010 - 0.0002 * u, 0.012 - 0.0001 * u});
    const std::vector<io::reference_line> lines{{"single_device", 0.012}, {"heft", 0.007}};
    const std::string svg = io::svg_training_curve(curve, lines, {.title = "gnmt2 <ppo>"});
    CHECK(svg.rfind("<svg ", 0) == 0);
    CHECK(goopt::test::count_of(svg, "<polyline class=\"best\"") == 1);
    CHECK(goopt::test::count_of(svg, "<polyline class=\"mean\"") == 1);
    // one vertex per update on each polyline
    const auto best = svg.find("<polyline class=\"best\"");
    const auto points = svg.substr(svg.find("points=\"", best), svg.find("\"/>", best) - svg.find("points=\"", best));
    CHECK(goopt::test::count_of(points, ",") == curve.size());
    CHECK(goopt::test::count_of(svg, "<g class=\"baseline\">") == 2);
    CHECK(svg.find(">heft 7.000 ms</text>") != std::string::npos);
    CHECK(svg.find("gnmt2 &lt;ppo&gt;") != std::string::npos);
    CHECK(svg.find("best so far") != std::string::npos);
    // a shorter step time is drawn lower (larger y): heft's line under single_device's
    const auto y_of_line = [&](std::size_t k) {
        std::size_t at = 0;
        for (std::size_t i = 0; i <= k; ++i) at = svg.find("<g class=\"baseline\">", at + 1);
        const auto y1 = svg.find("y1=\"", at) + 4;
        return std::stod(svg.substr(y1, svg.find('"', y1) - y1));
    };
    CHECK(y_of_line(1) > y_of_line(0));
    CHECK(svg.find("class=\"legend\"") != std::string::npos);
}

TEST_CASE("svg training curve: bad input is an error naming the point") {
    const std::vector<io::reference_line> none;
    CHECK_THROWS_WITH_AS((void)io::svg_training_curve(std::vector<io::curve_point>{}, none),
                         doctest::Contains("no points"), error);
    const std::vector<io::curve_point> nan{{1, 0.01, 0.01}, {2, std::nan(""), 0.01}};
    CHECK_THROWS_WITH_AS((void)io::svg_training_curve(nan, none), doctest::Contains("point 1 best step time"), error);
    const std::vector<io::curve_point> one{{1, 0.01, 0.02}};
    const std::vector<io::reference_line> bad{{"x", -1}};
    CHECK_THROWS_WITH_AS((void)io::svg_training_curve(one, bad), doctest::Contains("baseline 'x'"), error);
    CHECK_NOTHROW((void)io::svg_training_curve(one, none));  // a single point still draws
}
