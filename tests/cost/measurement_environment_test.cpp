#include <goopt/cost/measurement_environment.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace goopt;

TEST_CASE("a table of another runtime version, thread count or machine is refused, naming both") {
    const auto here = cost::this_machine("1.22.0", 1);
    CHECK_FALSE(here.cpu.empty());
    CHECK(here.cores >= 1);
    CHECK(cost::check_environment("t.json", here, here, false).empty());
    auto other = here;
    other.runtime_version = "1.17.3";
    try {
        cost::check_environment("t.json", other, here, false);
        FAIL("a table of another onnxruntime version was accepted");
    } catch (const error& e) {
        const std::string what = e.what();
        CHECK(what.find("t.json") == 0);
        CHECK(what.find("onnxruntime 1.17.3") != std::string::npos);
        CHECK(what.find("onnxruntime 1.22.0") != std::string::npos);
        CHECK(what.find("--accept-foreign-table") != std::string::npos);
        CHECK(what.find('\n') == std::string::npos);
    }
    other = here;
    other.threads = 2;
    CHECK_THROWS_AS(cost::check_environment("t.json", other, here, false), error);
    other = here;
    other.cpu = "Another CPU";
    CHECK_THROWS_AS(cost::check_environment("t.json", other, here, false), error);
    other.cores = here.cores + 1;
    // accepted on request, with a warning naming both
    const auto warning = cost::check_environment("t.json", other, here, true);
    CHECK(warning.find("Another CPU") != std::string::npos);
    CHECK(warning.find(here.cpu) != std::string::npos);
    // a runtime version that could not be found here is not compared
    auto unknown = here;
    unknown.runtime_version.clear();
    CHECK(cost::check_environment("t.json", here, unknown, false).empty());
}
