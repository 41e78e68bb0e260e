#include <goopt/io/cluster_json.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cmath>
#include <filesystem>

using namespace goopt;

TEST_CASE("clusters from JSON: spec strings, presets with overrides, custom devices and links") {
    const auto a = io::cluster_from_json_string(R"({"format": "goopt.cluster", "version": 1, "spec": "2xK80:pcie"})");
    CHECK(a.num_devices() == 2);
    CHECK(a.num_links() == 1);

    const auto b = io::cluster_from_json_string(R"({"format": "goopt.cluster", "version": 1,
      "devices": [{"preset": "V100", "mem_capacity": 34359738368},
                  {"name": "npu", "peak_flops": {"f32": 2e14, "f16": 8e14}, "mem_bandwidth": 1.2e12,
                   "mem_capacity": 1e10, "count": 2}],
      "links": [{"name": "bus", "bandwidth": 1.6e10, "latency": 1e-5, "routes": [[0, 1], [1, 0], [1, 2], [2, 1]]}]})");
    REQUIRE(b.num_devices() == 3);
    CHECK(b.device(0).name() == "V100");
    CHECK(b.device(0).mem_capacity() == 34359738368.0);
    CHECK(b.device(0).peak_flops(ops::dtype::f16) == 125e12);  // preset figure kept
    CHECK(b.device(2).name() == "npu");
    CHECK(b.device(2).peak_flops(ops::dtype::f16) == 8e14);
    CHECK(b.device(2).peak_flops(ops::dtype::i64) == 2e14);  // missing dtypes take f32's rate
    CHECK(b.device(2).launch_overhead() == 5e-6);
    CHECK(b.route(0, 1) == 0);
    CHECK(b.route(0, 2) == device::no_link);
    CHECK(b.get_link(0).latency == 1e-5);

    // a written cluster reads back with the same figures
    const auto c = io::cluster_from_json(nlohmann::json::parse(io::cluster_to_json(b).dump()), "roundtrip");
    CHECK(c.num_devices() == 3);
    CHECK(c.device(1).mem_bandwidth() == 1.2e12);
    CHECK(c.route(2, 1) == 0);
    const test::temp_dir dir("goopt_io_");
    const auto path = dir.path / "cluster.json";
    io::write_cluster_file(path, device::parse_cluster("4xA100:nvlink"));
    CHECK(io::read_cluster_file(path).num_links() == 12);
}

TEST_CASE("bad cluster files are clear errors naming the place") {
    auto fails = [](const char* text, const char* message) {
        CHECK_THROWS_WITH_AS(io::cluster_from_json_string(text, "c.json"), doctest::Contains(message), error);
    };
    fails(R"({"format": "goopt.graph", "version": 1})", "c.json: /format: expected \"goopt.cluster\"");
    fails(R"({"format": "goopt.cluster", "version": 1, "spec": "0xV100:nvlink"})", "c.json: /spec: cluster spec");
    fails(R"({"format": "goopt.cluster", "version": 1, "devices": [{"preset": "V300"}]})",
          "c.json: /devices/0/preset: unknown device 'V300'");
    fails(R"({"format": "goopt.cluster", "version": 1, "devices": [{"preset": "V100", "mem_bandwidth": -1}]})",
          "c.json: /devices/0/mem_bandwidth: is -1: expected a finite number > 0");
    fails(R"({"format": "goopt.cluster", "version": 1, "devices": [{"name": "x", "mem_bandwidth": 1}]})",
          "missing \"peak_flops\"");
    fails(R"({"format": "goopt.cluster", "version": 1, "devices": [{"preset": "T4"}, {"preset": "T4"}],
              "links": [{"bandwidth": 1e9, "routes": [[0, 5]]}]})",
          "c.json: /links/0/routes/0/1: device 5 does not exist (there are 2)");
    fails(
        R"({"format": "goopt.cluster", "version": 1, "devices": [{"preset": "T4"}], "links": [{"bandwidth": 0, "routes": []}]})",
        "/links/0/bandwidth: is 0");
    fails(R"({"format": "goopt.cluster", "version": 1, "devices": [{"preset": "T4", "speed": 3}]})",
          "/devices/0/speed: unknown key");
    fails(R"({"format": "goopt.cluster", "version": 1, "devices": [)", "c.json: invalid JSON at byte");
    // NaN cannot be spelled in JSON text, but a document built in code can hold one
    nlohmann::json j = {{"format", "goopt.cluster"},
                        {"version", 1},
                        {"devices", {{{"preset", "A100"}, {"mem_capacity", std::nan("")}}}}};
    CHECK_THROWS_WITH_AS(io::cluster_from_json(j, "code"), doctest::Contains("code: /devices/0/mem_capacity"), error);
}

TEST_CASE("measured cost tables from JSON") {
    const auto m = io::cost_table_from_json(nlohmann::json::parse(R"({"format": "goopt.cost_table", "version": 1,
        "times": [{"device": "V100", "op": "a", "seconds": 2.5e-5}, {"device": "T4", "op": "a", "seconds": 0}]})"));
    CHECK(m.size() == 2);
    CHECK(m.measured("V100", "a") == 2.5e-5);
    CHECK(m.measured("T4", "a") == 0.0);
    CHECK_FALSE(m.measured("A100", "a"));
    CHECK_THROWS_WITH_AS(io::cost_table_from_json(nlohmann::json::parse(R"({"format": "goopt.cost_table", "version": 1,
        "times": [{"device": "V100", "op": "a", "seconds": -2}]})"),
                                                  "t.json"),
                         doctest::Contains("t.json: /times/0/seconds: is -2"), error);
    CHECK_THROWS_WITH_AS(io::cost_table_from_json(nlohmann::json::parse(R"({"format": "goopt.cost_table", "version": 1,
        "times": [{"device": "V100", "op": "a", "seconds": 1e300}]})"),
                                                  "t.json"),
                         doctest::Contains("t.json: /times/0/seconds: is 1e+300: expected a number of seconds in [0, "
                                           "3600]"),
                         error);
}
