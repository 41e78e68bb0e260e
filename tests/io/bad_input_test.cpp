// The bad-input table: every malformed graph, rule or cluster document must raise goopt::error whose
// message names the place (file, JSON pointer, op) and says what was expected; never a crash, a hang
// or a silently wrong result. Rows are input -> substrings the message must contain.
// Inputs that are not errors but have a documented result (an empty graph, a colocation group too
// big for any device) are checked at the end.
#include <goopt/baselines/expert_placement.hpp>
#include <goopt/baselines/heft.hpp>
#include <goopt/baselines/single_device.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/cluster_json.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/sim/simulator.hpp>

#include "../error_message_check.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace goopt;

namespace {

struct bad_input {
    const char* what;                   ///< the row's name, shown when it fails
    std::string text;                   ///< the document
    std::vector<std::string> expected;  ///< substrings of the message: the place, then what was expected
};

/// Runs `read` on every row: it must throw goopt::error (nothing else) whose message holds every
/// expected substring and is one line.
void check_table(const std::vector<bad_input>& rows, const std::function<void(const std::string&)>& read) {
    for (const bad_input& row : rows) {
        const std::string name = row.what;
        CAPTURE(name);
        std::string message;
        try {
            read(row.text);
            FAIL("accepted: " << row.what);
        } catch (const error& e) {
            message = e.what();
        }
        check_error_message(message, row.expected);
    }
}

/// A goopt.graph document with these ops (JSON objects, comma separated) and outputs.
std::string graph_doc(const std::string& ops, const std::string& outputs = "[]") {
    return R"({"format": "goopt.graph", "version": 1, "ops": [)" + ops + R"(], "outputs": )" + outputs + "}";
}

const std::string x23 = R"({"name": "x", "op": "input", "shape": [2, 3]})";

/// A goopt.rules document holding one rule with these variables, sides and text.
std::string rule_doc(
    const std::string& source_ops, const std::string& source_outputs, const std::string& target_ops,
    const std::string& target_outputs, const std::string& text,
    const std::string& variables = R"([{"name": "x0", "shape": [4, 4]}, {"name": "x1", "shape": [4, 4]}])") {
    return R"({"format": "goopt.rules", "version": 1, "rules": [{"text": )" + text + R"(, "variables": )" + variables +
           R"(, "source": {"ops": [)" + source_ops + R"(], "outputs": )" + source_outputs +
           R"(}, "target": {"ops": [)" + target_ops + R"(], "outputs": )" + target_outputs + "}}]}";
}

const std::string add01 = R"({"op": "ewadd", "attrs": {}, "inputs": ["x0", "x1"]})";
const std::string add10 = R"({"op": "ewadd", "attrs": {}, "inputs": ["x1", "x0"]})";
const std::string add_text = R"j("ewadd(x0,x1) => ewadd(x1,x0)")j";

std::string cluster_doc(const std::string& body) {
    return R"({"format": "goopt.cluster", "version": 1, )" + body + "}";
}
const std::string v100_figures = R"("peak_flops": 1.5e13, "mem_bandwidth": 9e11, "mem_capacity": 1.6e10)";

}  // namespace

TEST_CASE("bad graph JSON: each is a goopt::error naming the place and what was expected") {
    const std::vector<bad_input> rows = {
        {"empty file", "", {"bad.json", "invalid JSON at byte 1"}},
        {"truncated",
         R"({"format": "goopt.graph", "version": 1, "ops": [{"name": "x")",
         {"bad.json", "invalid JSON at byte"}},
        {"malformed: two commas",
         R"({"format": "goopt.graph",, "version": 1})",
         {"bad.json", "invalid JSON at byte 26"}},
        {"not an object", "[1, 2]", {"bad.json: top level", "got an array", "expected a JSON object (a goopt graph)"}},
        {"missing format",
         R"({"version": 1, "ops": []})",
         {"bad.json: top level", "missing \"format\": \"goopt.graph\""}},
        {"wrong format name",
         R"({"format": "onnx", "version": 1, "ops": []})",
         {"bad.json: /format", "got 'onnx'", "expected \"goopt.graph\""}},
        {"wrong version",
         R"({"format": "goopt.graph", "version": 2, "ops": []})",
         {"bad.json: /version", "unsupported version 2", "expected version 1"}},
        {"version not an integer",
         R"({"format": "goopt.graph", "version": "1", "ops": []})",
         {"bad.json: /version", "got a string", "expected an integer"}},
        {"unknown top-level key",
         R"({"format": "goopt.graph", "version": 1, "ops": [], "extra": 1})",
         {"bad.json: /extra", "unknown key 'extra'"}},
        {"ops not a list",
         R"({"format": "goopt.graph", "version": 1, "ops": {}})",
         {"bad.json: /ops", "expected a list of ops"}},
        {"unknown op",
         graph_doc(R"({"name": "f", "op": "frobnicate"})"),
         {"bad.json: /ops/0/op", "unknown op kind 'frobnicate'"}},
        {"unknown attribute",
         graph_doc(x23 + R"(, {"name": "r", "op": "relu", "inputs": ["x"], "attrs": {"alpha": 1}})"),
         {"bad.json: /ops/1/attrs/alpha", "op 'r': unknown attribute 'alpha' for relu (it takes none)"}},
        {"attribute of the wrong type",
         graph_doc(x23 + R"(, {"name": "s", "op": "softmax", "inputs": ["x"], "attrs": {"axis": "last"}})"),
         {"bad.json: /ops/1/attrs/axis", "got a string", "expected an integer"}},
        {"missing required attribute",
         graph_doc(x23 + R"(, {"name": "c", "op": "concat", "inputs": ["x", "x"]})"),
         {"bad.json: /ops/1", "'c'", "axis"}},
        {"wrong arity: one input to ewadd",
         graph_doc(x23 + R"(, {"name": "a", "op": "ewadd", "inputs": ["x"]})"),
         {"bad.json: /ops/1", "'a'", "has 1 inputs: expected 2"}},
        {"wrong arity: an input to an input op",
         graph_doc(x23 + R"(, {"name": "y", "op": "input", "inputs": ["x"], "shape": [2]})"),
         {"bad.json: /ops/1", "'y'", "has 1 inputs: expected 0"}},
        {"reference to a missing op",
         graph_doc(R"({"name": "r", "op": "relu", "inputs": ["nope"]})"),
         {"bad.json: /ops/0/inputs/0", "reference 'nope' names no op in the file"}},
        {"reference to a missing output",
         graph_doc(x23 + R"(, {"name": "r", "op": "relu", "inputs": ["x:1"]})"),
         {"bad.json: /ops/1/inputs/0", "op 'x' has 1 output, so there is no output 1"}},
        {"duplicate op name", graph_doc(x23 + ", " + x23), {"bad.json: /ops/1/name", "duplicate op name 'x'"}},
        {"cycle",
         graph_doc(R"({"name": "a", "op": "relu", "inputs": ["b"]}, {"name": "b", "op": "relu", "inputs": ["a"]})"),
         {"bad.json: /ops", "the ops form a cycle: 'a' -> 'b' -> 'a'"}},
        {"self loop",
         graph_doc(R"({"name": "a", "op": "relu", "inputs": ["a"]})"),
         {"bad.json: /ops", "cycle: 'a' -> 'a'"}},
        {"shape mismatch between inputs",
         graph_doc(
             x23 +
             R"(, {"name": "y", "op": "input", "shape": [4, 5]}, {"name": "m", "op": "matmul", "inputs": ["x", "y"]})"),
         {"bad.json: /ops/2", "'m'", "matmul of [2,3] and [4,5]"}},
        {"shape assertion that does not hold",
         graph_doc(x23 + R"(, {"name": "r", "op": "relu", "inputs": ["x"], "shape": [3, 2]})"),
         {"bad.json: /ops/1/shape", "has shape [2,3], the file says [3,2]"}},
        {"zero dimension",
         graph_doc(R"({"name": "x", "op": "input", "shape": [2, 0]})"),
         {"bad.json: /ops/0/shape/1", "dimension 0", "expected >= 1"}},
        {"negative dimension",
         graph_doc(R"({"name": "x", "op": "input", "shape": [-3]})"),
         {"bad.json: /ops/0/shape/0", "dimension -3", "expected >= 1"}},
        {"dimension beyond int64",
         graph_doc(R"({"name": "x", "op": "input", "shape": [9223372036854775808]})"),
         {"bad.json: /ops/0/shape/0", "out of range"}},
        {"element count overflows int64",
         graph_doc(R"({"name": "x", "op": "input", "shape": [4294967296, 4294967296]})"),
         {"bad.json: /ops/0", "'x'", "overflows 64 bits"}},
        {"byte count overflows int64",
         graph_doc(R"({"name": "x", "op": "input", "shape": [1152921504606846976, 8]})"),
         {"bad.json: /ops/0", "'x'", "overflows 64 bits"}},
        {"element count of an op's output overflows int64",
         graph_doc(
             R"({"name": "x", "op": "input", "shape": [3037000500]}, {"name": "y", "op": "input", "shape": [3037000500, 1]},)"
             R"({"name": "a", "op": "ewadd", "inputs": ["x", "y"]})"),
         {"bad.json: /ops/2", "'a'", "overflows 64 bits"}},
        {"rank above the maximum",
         graph_doc(R"({"name": "x", "op": "input", "shape": [1, 1, 1, 1, 1, 1, 1, 1, 1]})"),
         {"bad.json: /ops/0/shape", "at most"}},
        {"NaN in a real attribute",
         graph_doc(x23 + R"(, {"name": "c", "op": "clip", "inputs": ["x"], "attrs": {"min": "nan", "max": 1}})"),
         {"bad.json: /ops/1/attrs/min", "min is NaN, expected a number"}},
        {"infinite epsilon",
         graph_doc(R"({"name": "x", "op": "input", "shape": [2, 3]}, {"name": "g", "op": "weight", "shape": [3]},)"
                   R"({"name": "b", "op": "weight", "shape": [3]},)"
                   R"({"name": "n", "op": "layernorm", "inputs": ["x", "g", "b"], "attrs": {"epsilon": "inf"}})"),
         {"bad.json: /ops/3/attrs/epsilon", "expected a finite number"}},
        {"number too large for a double",
         graph_doc(x23 + R"(, {"name": "c", "op": "clip", "inputs": ["x"], "attrs": {"min": 0, "max": 1e999}})"),
         {"bad.json", "invalid JSON", "1e999"}},
        {"unknown dtype",
         graph_doc(R"({"name": "x", "op": "input", "shape": [2], "dtype": "f128"})"),
         {"bad.json: /ops/0/dtype", "unknown dtype 'f128'"}},
        {"layer out of the 32-bit range",
         graph_doc(R"({"name": "x", "op": "input", "shape": [2], "layer": 4294967296})"),
         {"bad.json: /ops/0/layer", "out of the 32-bit range"}},
        {"output reference to a missing op",
         graph_doc(x23, R"(["y"])"),
         {"bad.json: /outputs/0", "reference 'y' names no op"}},
        {"control characters stay escaped",
         graph_doc(R"({"name": "a\nb", "op": "nope"})"),
         {"bad.json: /ops/0/op", "'a\\nb'"}},
    };
    check_table(rows, [](const std::string& text) { (void)io::from_json_string(text, "bad.json"); });
}

TEST_CASE("bad rule files: each is a goopt::error naming the rule, the field and what was expected") {
    // the good document the rows below break one thing of
    REQUIRE(io::rules_from_json_string(rule_doc(add01, R"(["%0"])", add10, R"(["%0"])", add_text), "r.json").size() ==
            1);
    const std::vector<bad_input> rows = {
        {"empty file", "", {"r.json", "invalid JSON at byte 1"}},
        {"truncated",
         R"({"format": "goopt.rules", "version": 1, "rules": [{"text": )",
         {"r.json", "invalid JSON at byte"}},
        {"wrong format name",
         R"({"format": "goopt.graph", "version": 1, "rules": []})",
         {"r.json: format", "expected \"goopt.rules\""}},
        {"wrong version",
         R"({"format": "goopt.rules", "version": 7, "rules": []})",
         {"r.json: version", "is 7", "expected 1"}},
        {"not an object", "[]", {"r.json: top level", "expected an object"}},
        {"unknown op",
         rule_doc(R"({"op": "frob", "attrs": {}, "inputs": ["x0"]})", R"(["%0"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0].source.ops[0].op", "unknown op 'frob'"}},
        {"unknown attribute",
         rule_doc(R"({"op": "ewadd", "attrs": {"axis": 1}, "inputs": ["x0", "x1"]})", R"(["%0"])", add10, R"(["%0"])",
                  add_text),
         {"r.json: rules[0].source.ops[0].attrs", "op ewadd takes no attribute 'axis'"}},
        {"wrong arity",
         rule_doc(R"({"op": "ewadd", "attrs": {}, "inputs": ["x0"]})", R"(["%0"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0]", "has 1 inputs: expected 2"}},
        {"reference to a later op",
         rule_doc(R"({"op": "relu", "attrs": {}, "inputs": ["%1"]}, )" + add01, R"(["%1"])", add10, R"(["%0"])",
                  add_text),
         {"r.json: rules[0].source.ops[0].inputs[0]", "names op 1", "expected an earlier op (< 0)"}},
        {"reference to a missing output",
         rule_doc(add01, R"(["%0#1"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0]", "%0#1", "expected an output of an earlier op"}},
        {"output index beyond 16 bits",
         rule_doc(add01, R"(["%0#65536"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0].source.outputs[0]", "'%0#65536'", "output"}},
        {"malformed reference",
         rule_doc(add01, R"(["%x"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0].source.outputs[0]", "reference '%x' is malformed", "expected %i or %i#k"}},
        {"unknown variable",
         rule_doc(R"({"op": "ewadd", "attrs": {}, "inputs": ["x0", "x9"]})", R"(["%0"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0].source.ops[0].inputs[1]", "unknown variable 'x9'"}},
        {"shape mismatch",
         rule_doc(add01, R"(["%0"])", add10, R"(["%0"])", add_text,
                  R"([{"name": "x0", "shape": [4, 4]}, {"name": "x1", "shape": [3, 5]}])"),
         {"r.json: rules[0]", "broadcast"}},
        {"zero dimension in a variable",
         rule_doc(add01, R"(["%0"])", add10, R"(["%0"])", add_text,
                  R"([{"name": "x0", "shape": [4, 0]}, {"name": "x1", "shape": [4, 4]}])"),
         {"r.json: rules[0].variables[0].shape", "dimensions >= 1"}},
        {"element count overflows int64",
         rule_doc(
             add01, R"(["%0"])", add10, R"(["%0"])", add_text,
             R"([{"name": "x0", "shape": [4294967296, 4294967296]}, {"name": "x1", "shape": [4294967296, 4294967296]}])"),
         {"r.json: rules[0]", "overflows 64 bits"}},
        {"NaN in a real attribute",
         rule_doc(R"({"op": "clip", "attrs": {"min": "nan", "max": 1.0}, "inputs": ["x0"]})", R"(["%0"])",
                  R"({"op": "clip", "attrs": {"min": 0.0, "max": 1.0}, "inputs": ["x0"]})", R"(["%0"])",
                  R"j("clip{min=0,max=1}(x0) => clip{min=0,max=1}(x0)")j"),
         {"r.json: rules[0].source.ops[0].attrs.min", "expected"}},
        {"sides with different output counts",
         rule_doc(add01, R"(["%0", "x0"])", add10, R"(["%0"])", add_text),
         {"r.json: rules[0]", "source has 2 outputs, target 1"}},
        {"text that does not match the graphs",
         rule_doc(add01, R"(["%0"])", add10, R"(["%0"])", R"j("ewadd(x0,x1) => x0")j"),
         {"r.json: rules[0].text", "expected the graphs' form \"ewadd(x0,x1) => ewadd(x1,x0)\""}},
    };
    check_table(rows, [](const std::string& text) { (void)io::rules_from_json_string(text, "r.json"); });
}

TEST_CASE("bad cluster documents and device figures: each is a goopt::error naming the field") {
    REQUIRE(
        io::cluster_from_json_string(cluster_doc(R"("devices": [{)" + v100_figures + "}]"), "c.json").num_devices() ==
        1);
    const std::vector<bad_input> rows = {
        {"empty file", "", {"c.json", "invalid JSON at byte 1"}},
        {"truncated", cluster_doc(R"("devices": [{"preset": "V100")"), {"c.json", "invalid JSON at byte"}},
        {"wrong format name",
         R"({"format": "goopt.graph", "version": 1, "spec": "1xV100:pcie"})",
         {"c.json: /format", "expected \"goopt.cluster\""}},
        {"wrong version",
         R"({"format": "goopt.cluster", "version": 2, "spec": "1xV100:pcie"})",
         {"c.json: /version", "expected 1"}},
        {"zero devices",
         cluster_doc(R"("devices": [])"),
         {"c.json: /devices", "expected a non-empty array of devices"}},
        {"zero devices in a spec", cluster_doc(R"("spec": "0xV100:nvlink")"), {"c.json: /spec", "device count is 0"}},
        {"too many devices all-to-all",
         cluster_doc(R"("spec": "512xA100:nvlink")"),
         {"c.json: /spec", "512 devices all-to-all over NVLink", "expected at most 256"}},
        {"too many devices in a spec", cluster_doc(R"("spec": "1025xT4:pcie")"), {"c.json: /spec", "more than 1024"}},
        {"unknown preset",
         cluster_doc(R"("devices": [{"preset": "V1000"}])"),
         {"c.json: /devices/0/preset", "unknown device 'V1000'"}},
        {"unknown device key",
         cluster_doc(R"("devices": [{"preset": "V100", "memory": 1}])"),
         {"c.json: /devices/0/memory", "unknown key"}},
        {"zero memory",
         cluster_doc(R"("devices": [{"peak_flops": 1e13, "mem_bandwidth": 9e11, "mem_capacity": 0}])"),
         {"c.json: /devices/0/mem_capacity", "expected a finite number > 0"}},
        {"negative memory",
         cluster_doc(R"("devices": [{"preset": "V100", "mem_capacity": -1}])"),
         {"c.json: /devices/0/mem_capacity", "is -1", "expected a finite number > 0"}},
        {"NaN FLOP/s (as a string)",
         cluster_doc(R"("devices": [{"preset": "V100", "peak_flops": "nan"}])"),
         {"c.json: /devices/0/peak_flops", "expected a number or an object of numbers by dtype"}},
        {"zero FLOP/s for one dtype",
         cluster_doc(R"("devices": [{"preset": "V100", "peak_flops": {"f16": 0}}])"),
         {"c.json: /devices/0/peak_flops/f16", "expected a finite number > 0"}},
        {"infinite bandwidth (1e999)",
         cluster_doc(R"("devices": [{"preset": "V100", "mem_bandwidth": 1e999}])"),
         {"c.json", "invalid JSON", "1e999"}},
        {"bandwidth not a number",
         cluster_doc(R"("devices": [{"preset": "V100", "mem_bandwidth": "inf"}])"),
         {"c.json: /devices/0/mem_bandwidth", "is a string", "expected a number"}},
        {"missing figure",
         cluster_doc(R"("devices": [{"peak_flops": 1e13, "mem_bandwidth": 9e11}])"),
         {"c.json: /devices/0", "missing \"mem_capacity\""}},
        {"device count out of range",
         cluster_doc(R"("devices": [{"preset": "V100", "count": 0}])"),
         {"c.json: /devices/0/count", "expected an integer from 1 to 1024"}},
        {"too many devices in all",
         cluster_doc(R"("devices": [{"preset": "V100", "count": 1024}, {"preset": "V100", "count": 1}])"),
         {"c.json: /devices/1/count", "more than 1024 devices"}},
        {"zero link bandwidth",
         cluster_doc(R"("devices": [{"preset": "V100", "count": 2}], "links": [{"bandwidth": 0, "routes": [[0, 1]]}])"),
         {"c.json: /links/0/bandwidth", "expected a finite number > 0"}},
        {"route to a missing device",
         cluster_doc(
             R"("devices": [{"preset": "V100", "count": 2}], "links": [{"bandwidth": 1e9, "routes": [[0, 2]]}])"),
         {"c.json: /links/0/routes/0/1", "device 2 does not exist (there are 2)"}},
    };
    check_table(rows, [](const std::string& text) { (void)io::cluster_from_json_string(text, "c.json"); });

    // Figures that JSON cannot carry but a program can: NaN and infinities are refused where they enter.
    constexpr double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    const device::device_spec v100 = device::describe(device::v100);
    auto spec_with = [&](auto change) {
        device::device_spec s = v100;
        change(s);
        return s;
    };
    CHECK_THROWS_WITH_AS(spec_with([&](auto& s) { s.capacity = nan; }).validate("gpu0"),
                         doctest::Contains("gpu0: device 'V100': mem_capacity is nan: expected a finite number > 0"),
                         error);
    CHECK_THROWS_WITH_AS(spec_with([&](auto& s) { s.peak[0] = inf; }).validate("gpu0"),
                         doctest::Contains("peak_flops.f32 is inf: expected a finite number > 0"), error);
    CHECK_THROWS_WITH_AS(spec_with([&](auto& s) { s.bandwidth = -inf; }).validate("gpu0"),
                         doctest::Contains("mem_bandwidth is -inf"), error);
    device::cluster<> c;
    CHECK_THROWS_WITH_AS(c.add_link({"nv", nan, 0}), doctest::Contains("link 'nv': bandwidth is nan"), error);
    CHECK_THROWS_WITH_AS(c.add_link({"nv", 1e9, inf}), doctest::Contains("link 'nv': latency is inf"), error);
    // A device nobody validated cannot enter a cluster with a NaN or negative figure (a NaN bandwidth
    // would pass through the roofline's max() and give silently wrong times).
    CHECK_THROWS_WITH_AS(c.add_device(spec_with([&](auto& s) { s.bandwidth = nan; })),
                         doctest::Contains("cluster: device 0 ('V100'): mem_bandwidth is nan: expected a number >= 0"),
                         error);
    CHECK_THROWS_WITH_AS(c.add_device(spec_with([&](auto& s) { s.peak[2] = -1; })),
                         doctest::Contains("peak_flops.f16 is -1"), error);
    CHECK(c.num_devices() == 0);
    graph::computation_graph g;
    const auto x = g.input("x", {64, 64});
    g.add1(ops::op_kind::relu, {x}, {}, "r");
    const device::cluster<> no_devices;
    CHECK_THROWS_WITH_AS(sim::simulator(g, no_devices), doctest::Contains("the cluster has no devices"), error);
}

TEST_CASE("documented results: an empty graph, and a colocation group too big for every device") {
    // An empty graph is a graph: it reads, validates, writes back and simulates to a step of 0 s.
    const auto empty = io::from_json_string(graph_doc(""), "empty.json");
    CHECK(empty.num_ops() == 0);
    CHECK(graph::problems(empty).empty());
    CHECK(io::from_json_string(io::to_json_string(empty), "again").num_ops() == 0);
    const auto cluster = device::parse_cluster("2xV100:nvlink");
    sim::simulator es(empty, cluster);
    const auto er = es.run(sim::placement{});
    CHECK(er.step_time == 0);
    CHECK(!er.oom);
    CHECK(baselines::heft(es).placement.empty());

    // Two weights of 9 GiB in one colocation group (a parameter and its optimizer state, say) on
    // 16 GiB V100s, in layers 0 and 1 so that the layer-wise expert placement would split them if
    // colocation allowed: no device can hold the group. That is not an error but a result: every
    // placement is out of memory on the device holding the group, and the step still runs to the end.
    graph::computation_graph g;
    const std::int64_t n = std::int64_t{9} << 28;  // 9 * 2^28 f32 = 9 GiB
    const auto w1 = g.weight("w1", {n}), w2 = g.weight("w2", {n});
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        g.set_colocation(o, 0);
        g.set_layer(o, static_cast<std::int32_t>(o));
    }
    g.mark_output(w1);
    g.mark_output(w2);
    REQUIRE(static_cast<double>(g.parameter_bytes()) > device::v100.mem_capacity());
    sim::simulator s(g, cluster);
    const std::vector<sim::placement> placements = {
        baselines::single_device_placement(g, 0), baselines::single_device_placement(g, 1),
        baselines::heft(s).placement, baselines::expert_placement(g, 2, baselines::model_family::layered)};
    for (const auto& p : placements) {
        const auto r = s.run(p);
        CHECK(r.oom);
        CHECK(std::isfinite(r.step_time));
        CHECK(r.out_of_memory[p[0]] == 1);
        CHECK(static_cast<double>(r.peak_memory[p[0]]) > device::v100.mem_capacity());
    }
}
