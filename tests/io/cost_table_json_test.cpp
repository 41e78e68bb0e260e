#include <goopt/io/cost_table_json.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cstdio>
#include <filesystem>
#include <string>

using namespace goopt;

namespace {
cost::cost_table sample() {
    cost::cost_table t{
        .environment = {.runtime_version = "1.22.0", .threads = 2, .cpu = "Some CPU @ 2.0GHz", .cores = 16},
        .repetitions = 30,
        .statistic = "min",
        .dispatch_seconds = 1.25e-5};
    t.set("relu(;in=f32[1,64];out=f32[1,64])", 2.5e-7);
    t.set("matmul(activation=0;in=f32[1,64],w:f32[64,64];out=f32[1,64])", 1.0 / 3.0 * 1e-5);
    return t;
}
}  // namespace

TEST_CASE("cost table JSON: a round trip keeps every field and time exactly") {
    const auto t = sample();
    const auto j = io::measured_table_to_json(t);
    CHECK(j["format"] == "goopt.cost_table");
    CHECK(j["version"] == 2);
    const auto back = io::measured_table_from_json(nlohmann::json::parse(j.dump()));
    CHECK(back.environment == t.environment);
    CHECK(back.repetitions == 30);
    CHECK(back.statistic == "min");
    CHECK(back.dispatch_seconds == t.dispatch_seconds);
    CHECK(back.seconds == t.seconds);
    // and through a file
    const test::temp_dir dir("goopt_io_");
    const auto path = dir.path / "table.json";
    io::write_measured_table_file(path, t);
    CHECK(io::read_measured_table_file(path).seconds == t.seconds);
}

TEST_CASE("cost table JSON: bad input names the place and what was expected") {
    auto j = io::measured_table_to_json(sample());
    auto refused = [](const nlohmann::json& doc) {
        try {
            io::measured_table_from_json(doc, "t.json");
        } catch (const error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    auto v1 = j;
    v1["version"] = 1;
    CHECK(refused(v1).find("t.json: /version") == 0);
    CHECK(refused(v1).find("per op configuration") != std::string::npos);
    auto negative = j;
    negative["times"][0]["seconds"] = -1;
    CHECK(refused(negative).find("/times/0/seconds") != std::string::npos);
    // two times near the largest double would sum to infinity in a group's cost: refused as read
    auto huge = j;
    huge["times"][0]["seconds"] = 1.7e308;
    CHECK(refused(huge).find("t.json: /times/0/seconds: is the real number 1.7e+308: expected a number of seconds "
                             "in [0, 3600]") == 0);
    auto huge_dispatch = j;
    huge_dispatch["dispatch_seconds"] = 1e9;
    CHECK(refused(huge_dispatch).find("/dispatch_seconds") != std::string::npos);
    auto hour = j;
    hour["times"][0]["seconds"] = cost::max_op_seconds;
    CHECK(refused(hour) == "accepted");
    auto repeated = j;
    repeated["times"][1]["config"] = repeated["times"][0]["config"];
    CHECK(refused(repeated).find("/times/1/config") != std::string::npos);
    auto no_threads = j;
    no_threads["runtime"].erase("threads");
    CHECK(refused(no_threads).find("/runtime/threads: is missing") != std::string::npos);
    auto zero_cores = j;
    zero_cores["machine"]["cores"] = 0;
    CHECK(refused(zero_cores).find("/machine/cores") != std::string::npos);
    auto mean = j;
    mean["statistic"] = "mean";
    CHECK(refused(mean).find("/statistic") != std::string::npos);
    CHECK(refused(nlohmann::json::array()).find("an object") != std::string::npos);
}
