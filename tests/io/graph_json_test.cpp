#include <goopt/io/graph_json.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using goopt::graph::computation_graph;
using goopt::ops::attr_id;
using goopt::ops::op_kind;
using ints = std::vector<std::int64_t>;
using i64 = std::int64_t;

/// A graph that uses every attribute type and spelling: enum attributes (padding, activation),
/// integer lists, reals (finite and not), negative integers, multi-output references, several dtypes
/// and layer numbers.
computation_graph coverage_graph() {
    namespace ops = goopt::ops;
    computation_graph g("coverage");
    const auto x = g.input("x", {1, 16, 8, 8});
    const auto w = g.weight("w", {16, 16, 3, 3});
    const auto conv = g.add1(op_kind::conv2d, {x, w},
                             {{attr_id::stride, ints{1, 1}},
                              {attr_id::padding, static_cast<i64>(ops::padding_mode::same)},
                              {attr_id::activation, static_cast<i64>(ops::activation::relu)}},
                             "conv");
    g.set_layer(g.producer(conv), 0);
    const auto split = g.add(op_kind::split, {conv}, {{attr_id::axis, i64{1}}, {attr_id::sizes, ints{4, 12}}}, "split");
    const auto s0 = split[0], s1 = split[1];
    g.set_layer(g.producer(s0), 1);
    const auto pool = g.add1(op_kind::maxpool2d, {s1},
                             {{attr_id::kernel, ints{2, 2}},
                              {attr_id::stride, ints{2, 2}},
                              {attr_id::padding, static_cast<i64>(ops::padding_mode::valid)}},
                             "pool");
    const auto t = g.add1(op_kind::transpose, {pool}, {{attr_id::perm, ints{0, 2, 3, 1}}}, "t");
    const auto r = g.add1(op_kind::reshape, {t}, {{attr_id::shape, ints{16, -1}}}, "r");
    const auto cl = g.add1(op_kind::clip, {r}, {{attr_id::min, -1.5}, {attr_id::max, 6.0}}, "clip");
    const auto inf = std::numeric_limits<double>::infinity();
    const auto cl2 = g.add1(op_kind::clip, {cl}, {{attr_id::min, -inf}, {attr_id::max, inf}}, "clip_open");
    const auto red =
        g.add1(op_kind::reduce_mean, {s0}, {{attr_id::axes, ints{2, 3}}, {attr_id::keepdims, i64{0}}}, "mean");
    const auto pad = g.add1(op_kind::pad, {red}, {{attr_id::pads, ints{0, 1, 0, 2}}, {attr_id::value, 0.25}}, "pad");
    const auto sl = g.add1(op_kind::slice, {cl2}, {{attr_id::begin, ints{0, 0}}, {attr_id::end, ints{8, 6}}}, "sl");
    const auto sm = g.add1(op_kind::softmax, {sl}, {{attr_id::axis, i64{-1}}}, "sm");
    const auto gamma = g.weight("gamma", {6});
    const auto beta = g.weight("beta", {6});
    const auto ln = g.add1(op_kind::layernorm, {sl, gamma, beta}, {{attr_id::epsilon, 1e-3}}, "ln");
    g.set_layer(g.producer(ln), 2);
    const auto cat = g.add1(op_kind::concat, {sm, ln}, {{attr_id::axis, i64{0}}}, "cat");
    const auto one = g.add1(op_kind::const_one, {}, {{attr_id::shape, ints{1}}}, "one");
    const auto scaled = g.add1(op_kind::smul, {cat, one}, {}, "scaled");
    const auto wm = g.weight("wm", {6, 5});
    const auto mm =
        g.add1(op_kind::matmul, {scaled, wm}, {{attr_id::activation, static_cast<i64>(ops::activation::tanh)}}, "mm");
    g.set_layer(g.producer(mm), 3);
    g.set_colocation(g.producer(mm), 5);
    const auto ids = g.input("ids", {3}, ops::dtype::i64);
    const auto table = g.weight("table", {10, 6}, ops::dtype::f16);
    const auto emb = g.add1(op_kind::gather, {table, ids}, {}, "emb");
    g.add1(op_kind::relu, {pad});  // unnamed: the graph names it relu_<id>
    g.mark_output(mm);
    g.mark_output(s1);
    g.mark_output(emb);
    return g;
}

/// Op-for-op equality, ids included: what an exact round trip promises.
void check_same_graph(const computation_graph& a, const computation_graph& b) {
    CHECK(a.name() == b.name());
    REQUIRE(a.num_ops() == b.num_ops());
    REQUIRE(a.num_tensors() == b.num_tensors());
    for (goopt::graph::op_id i = 0; i < a.num_ops(); ++i) {
        const auto& x = a.get_op(i);
        const auto& y = b.get_op(i);
        INFO("op ", i, " ", x.name);
        CHECK(x.kind == y.kind);
        CHECK(x.name == y.name);
        CHECK(x.attrs == y.attrs);
        CHECK(x.inputs == y.inputs);
        CHECK(x.outputs == y.outputs);
        const auto ta = a.output_types(i), tb = b.output_types(i);
        CHECK(ta == tb);
        CHECK(x.layer == y.layer);
        CHECK(x.colocation == y.colocation);
    }
    CHECK(a.outputs() == b.outputs());
}

constexpr const char* head = R"({"format": "goopt.graph", "version": 1, )";

std::string doc(const std::string& ops, const std::string& outputs = "[]") {
    return std::string(head) + "\"ops\": [" + ops + "], \"outputs\": " + outputs + "}";
}

/// The goopt::error a text raises (any other exception fails the test), checked to be one line that
/// names the source.
std::string error_of(const std::string& text) {
    try {
        goopt::io::from_json_string(text, "t.json");
    } catch (const goopt::error& e) {
        const std::string msg = e.what();
        CHECK(msg.rfind("t.json: ", 0) == 0);
        CHECK(msg.find('\n') == std::string::npos);
        return msg;
    }
    FAIL("no error for: " << text);
    return {};
}

const std::string x_in = R"({"name": "x", "op": "input", "shape": [2, 3]})";

}  // namespace

TEST_CASE("graph JSON: the documented example reads as written") {
    const auto g =
        goopt::io::read_graph_file(std::filesystem::path(GOOPT_TEST_DATA_DIR) / "graphs" / "resnet_block.json");
    CHECK(g.name() == "resnet_block");
    REQUIRE(g.num_ops() == 5);
    const char* names[] = {"x", "w1", "c1", "s", "a"};
    for (goopt::graph::op_id i = 0; i < 5; ++i) CHECK(g.get_op(i).name == names[i]);
    const auto& c1 = g.get_op(2);
    CHECK(c1.kind == op_kind::conv2d);
    CHECK(c1.layer == 0);
    CHECK(c1.attrs.get_int(attr_id::padding) == static_cast<i64>(goopt::ops::padding_mode::same));
    CHECK(c1.attrs.get_int(attr_id::activation) == static_cast<i64>(goopt::ops::activation::relu));
    CHECK(g.get_op(3).outputs.size() == 2);
    const auto& a = g.get_op(4);
    CHECK(a.inputs[0] == g.get_op(3).outputs[0]);
    CHECK(a.inputs[1] == g.get_op(3).outputs[1]);
    CHECK(g.type_of(a.outputs[0]) == goopt::ops::tensor_type{{1, 32, 56, 56}, goopt::ops::dtype::f32});
    CHECK(g.get_op(0).layer == -1);
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.outputs()[0] == a.outputs[0]);
}

TEST_CASE("graph JSON: write then read is exact, and the text is a fixed point") {
    const computation_graph g = coverage_graph();
    const std::string text = goopt::io::to_json_string(g);
    const computation_graph back = goopt::io::from_json_string(text);
    check_same_graph(g, back);
    CHECK(goopt::io::to_json_string(back) == text);
    // spot checks of the spelling the format documents
    CHECK_HAS(text, R"({"name": "x", "op": "input", "shape": [1, 16, 8, 8], "dtype": "f32"})");
    CHECK_HAS(text, R"("attrs": {"stride": [1, 1], "padding": "same", "activation": "relu", "dilation": [1, 1]})");
    CHECK_HAS(text, R"("inputs": ["split:1"])");
    CHECK_HAS(text, R"("min": "-inf", "max": "inf")");
    CHECK_HAS(text, R"("shape": [10, 6], "dtype": "f16")");
    CHECK_HAS(text, R"("outputs": ["mm", "split:1", "emb"])");
    CHECK_HAS(text, R"({"name": "mean", "op": "reduce_mean", "inputs": ["split:0"])");
    CHECK_HAS(text, R"("layer": 3, "colocation": 5)");
}

TEST_CASE("graph JSON: nlohmann conversions by ADL, plain and ordered") {
    const computation_graph g = coverage_graph();
    const nlohmann::json j = g;
    check_same_graph(g, j.get<computation_graph>());
    const nlohmann::ordered_json oj = g;
    check_same_graph(g, oj.get<computation_graph>());
    CHECK(j["ops"].size() == g.num_ops());
    // errors through get<>() are goopt::error naming the source <json>
    nlohmann::json bad = j;
    bad["ops"][2]["inputs"][0] = "nowhere";
    try {
        (void)bad.get<computation_graph>();
        FAIL("no error");
    } catch (const goopt::error& e) {
        CHECK_HAS(std::string(e.what()), "<json>: /ops/2/inputs/0: ");
    }
}

TEST_CASE("graph JSON: an embedded graph reports places below its pointer") {
    const auto j = nlohmann::json::parse(R"({"format": "goopt.graph", "version": 1, "ops": [{"op": "relu"}]})");
    try {
        goopt::io::graph_from_json(j, "task.json", "/experiments/0/graph");
        FAIL("no error");
    } catch (const goopt::error& e) {
        CHECK_HAS(std::string(e.what()), "task.json: /experiments/0/graph/ops/0: ");
    }
}

TEST_CASE("graph JSON: files round trip through write_graph_file and read_graph_file") {
    goopt::test::temp_dir dir{"goopt_graph_json_test_"};
    const computation_graph g = coverage_graph();
    const auto path = dir.path / "g.json";
    goopt::io::write_graph_file(path, g);
    check_same_graph(g, goopt::io::read_graph_file(path));
    std::istringstream in(goopt::io::to_json_string(g));
    check_same_graph(g, goopt::io::read_graph(in, "stream"));
}

TEST_CASE("graph JSON: ops may come in any order; a valid file order is kept") {
    // consumers before producers: the reader orders them itself
    const auto g = goopt::io::from_json_string(doc(
        R"({"name": "a", "op": "ewadd", "inputs": ["s:0", "s:1"], "shape": [1, 2, 4, 4]},
           {"name": "s", "op": "split", "inputs": ["c"], "attrs": {"axis": 1, "sizes": [2, 2]}},
           {"name": "c", "op": "conv2d", "inputs": ["x", "w"]},
           {"name": "w", "op": "weight", "shape": [4, 4, 1, 1]},
           {"name": "x", "op": "input", "shape": [1, 4, 4, 4]})",
        R"(["a"])"));
    REQUIRE(g.num_ops() == 5);
    const auto a = g.find("a");
    REQUIRE(a);
    CHECK(g.describe(*a) == "'a' (ewadd)");
    CHECK(g.get_op(*a).inputs[1] == g.get_op(*g.find("s")).outputs[1]);
    // the result is in dependency order and reads back identically
    const std::string text = goopt::io::to_json_string(g);
    check_same_graph(g, goopt::io::from_json_string(text));

    // A valid order is kept even where a plain FIFO topological sort would move the second source
    // ahead of the first consumer.
    const auto h = goopt::io::from_json_string(doc(x_in + R"(, {"name": "r", "op": "relu", "inputs": ["x"]},
                  {"name": "y", "op": "input", "shape": [2, 3]},
                  {"name": "e", "op": "ewadd", "inputs": ["r", "y"]})"));
    const char* names[] = {"x", "r", "y", "e"};
    REQUIRE(h.num_ops() == 4);
    for (goopt::graph::op_id i = 0; i < 4; ++i) CHECK(h.get_op(i).name == names[i]);
}

TEST_CASE("graph JSON: accepted spellings") {
    SUBCASE("numeric padding and activation, integer reals, default dtype, shape assertions") {
        const auto g = goopt::io::from_json_string(doc(
            R"({"name": "x", "op": "input", "shape": [1, 2, 4, 4]},
               {"name": "w", "op": "weight", "shape": [2, 2, 3, 3], "dtype": "f32"},
               {"name": "c", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"padding": 1, "activation": 3},
                "shape": [1, 2, 2, 2], "dtype": "f32"},
               {"name": "k", "op": "clip", "inputs": ["c:0"], "attrs": {"min": 0, "max": 6}})"));
        const auto& c = g.get_op(2);
        CHECK(c.attrs.get_int(attr_id::padding) == 1);
        CHECK(c.attrs.get_int(attr_id::activation) == 3);
        CHECK(c.attrs.get_ints(attr_id::stride) == ints{1, 1});  // default filled in
        CHECK(g.get_op(3).attrs.get_real(attr_id::max) == 6.0);
        CHECK(g.type_of(g.get_op(0).outputs[0]).type == goopt::ops::dtype::f32);
    }
    SUBCASE("an empty ops list is an empty graph; name and outputs are optional") {
        const auto g = goopt::io::from_json_string(R"({"format": "goopt.graph", "version": 1, "ops": []})");
        CHECK(g.num_ops() == 0);
        CHECK(g.outputs().empty());
        CHECK(goopt::io::to_json_string(g) ==
              "{\n  \"format\": \"goopt.graph\",\n  \"version\": 1,\n  \"ops\": [],\n  \"outputs\": []\n}\n");
    }
    SUBCASE("not-a-number survives a round trip as \"nan\"") {
        const auto g = goopt::io::from_json_string(
            doc(x_in +
                R"(, {"name": "p", "op": "pad", "inputs": ["x"], "attrs": {"pads": [0, 0, 1, 1], "value": "nan"}})"));
        CHECK(std::isnan(g.get_op(1).attrs.get_real(attr_id::value)));
        CHECK_HAS(goopt::io::to_json_string(g), R"("value": "nan")");
    }
    SUBCASE("an op name with a colon that is not ambiguous") {
        const auto g = goopt::io::from_json_string(doc(
            R"({"name": "block:conv", "op": "input", "shape": [2]}, {"name": "r", "op": "relu", "inputs": ["block:conv"]})"));
        CHECK(g.get_op(1).inputs[0] == g.get_op(0).outputs[0]);
    }
}

TEST_CASE("graph JSON errors: the document") {
    SUBCASE("invalid JSON gives nlohmann's byte position") {
        const auto m = error_of(R"({"format": "goopt.graph",, "version": 1})");
        CHECK_HAS(m, "invalid JSON at byte 26");
        CHECK(!goopt::test::contains(m, "[json.exception"));
    }
    SUBCASE("a truncated file") {
        const std::string full = goopt::io::to_json_string(coverage_graph());
        const auto m = error_of(full.substr(0, full.size() / 2));
        CHECK_HAS(m, "invalid JSON at byte");
        CHECK_HAS(m, "unexpected end of input");
    }
    SUBCASE("a number too large for a double") {
        const auto m = error_of(R"({"format": "goopt.graph", "version": 1e999})");
        CHECK_HAS(m, "t.json: invalid JSON: number overflow parsing '1e999'");
    }
    SUBCASE("not an object") {
        CHECK_HAS(error_of("[1, 2]"), "t.json: top level: got an array: expected a JSON object (a goopt graph)");
    }
    SUBCASE("missing format") { CHECK_HAS(error_of(R"({"version": 1, "ops": []})"), "top level: missing \"format\""); }
    SUBCASE("wrong format") {
        CHECK_HAS(error_of(R"({"format": "onnx", "version": 1, "ops": []})"),
                  "/format: got 'onnx': expected \"goopt.graph\"");
        CHECK_HAS(error_of(R"({"format": 3, "version": 1, "ops": []})"),
                  "/format: got the integer 3: expected \"goopt.graph\"");
    }
    SUBCASE("unsupported or missing version") {
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "version": 2, "ops": []})"),
                  "/version: unsupported version 2: expected version 1, which this reader supports");
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "ops": []})"), "missing \"version\"");
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "version": "1", "ops": []})"),
                  "/version: got a string: expected an integer");
    }
    SUBCASE("missing ops, ops not a list") {
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "version": 1})"), "top level: missing \"ops\"");
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "version": 1, "ops": {}})"),
                  "/ops: got an object: expected a list of ops");
    }
    SUBCASE("an unknown top-level key (a typo would otherwise lose data)") {
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "version": 1, "ops": [], "ouputs": []})"),
                  "/ouputs: unknown key 'ouputs'");
    }
    SUBCASE("graph name not a string") {
        CHECK_HAS(error_of(R"({"format": "goopt.graph", "version": 1, "name": 5, "ops": []})"),
                  "/name: got the integer 5: expected a string");
    }
}

TEST_CASE("graph JSON errors: one op") {
    SUBCASE("an op that is not an object") {
        CHECK_HAS(error_of(doc("42")), "/ops/0: got the integer 42: expected an op object");
    }
    SUBCASE("missing op kind") { CHECK_HAS(error_of(doc(R"({"name": "c"})")), "/ops/0: op 'c': missing \"op\""); }
    SUBCASE("unknown op kind: named, nothing else listed") {
        const auto m = error_of(doc(x_in + R"(, {"name": "c", "op": "conv", "inputs": ["x"]})"));
        CHECK_HAS(m, "/ops/1/op: op 'c': unknown op kind 'conv'");
        CHECK(!goopt::test::contains(m, "conv2d"));
    }
    SUBCASE("unknown key in an op") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [2], "attr": {}})")),
                  "/ops/0/attr: unknown key 'attr'");
        // control characters from the file are escaped: the message stays on one line
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [2], "a\nb": 1})")),
                  R"(/ops/0/a\nb: unknown key 'a\nb')");
        CHECK_HAS(error_of(doc(R"({"name": "r\nx", "op": "relu"})")),
                  R"(op 'r\x0ax' (relu): has 0 inputs: expected 1)");
    }
    SUBCASE("unknown attribute name") {
        const auto m = error_of(
            doc(x_in + R"(, {"name": "s", "op": "softmax", "inputs": ["x"], "attrs": {"axes": [0], "bogus": 1}})"));
        CHECK_HAS(m, "/ops/1/attrs/axes: op 's': unknown attribute 'axes' for softmax (it takes axis)");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "relu", "inputs": ["x"], "attrs": {"a/b": 1}})")),
                  "/ops/1/attrs/a~1b: unknown attribute 'a/b' for relu (it takes none)");
    }
    SUBCASE("attribute of the wrong type") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "transpose", "inputs": ["x"], "attrs": {"perm": "1,0"}})")),
                  "/ops/1/attrs/perm: got a string: expected a list of integers");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, "0"]}})")),
                  "/ops/1/attrs/perm/1: got a string: expected an integer");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "softmax", "inputs": ["x"], "attrs": {"axis": 1.5}})")),
                  "/ops/1/attrs/axis: got the real number 1.5: expected an integer");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "clip", "inputs": ["x"], "attrs": {"min": [0], "max": 1}})")),
                  "/ops/1/attrs/min: got an array: expected a real number");
        CHECK_HAS(
            error_of(doc(x_in + R"(, {"op": "softmax", "inputs": ["x"], "attrs": {"axis": 18446744073709551615}})")),
            "/ops/1/attrs/axis: the integer 18446744073709551615 is out of range");
    }
    SUBCASE("enumerated attributes out of their range") {
        const std::string xw = R"({"name": "x", "op": "input", "shape": [1, 2, 4, 4]},
                                  {"name": "w", "op": "weight", "shape": [2, 2, 3, 3]}, )";
        CHECK_HAS(error_of(doc(xw + R"({"op": "conv2d", "inputs": ["x", "w"], "attrs": {"padding": "full"}})")),
                  "/ops/2/attrs/padding: unknown padding 'full': expected \"same\" or \"valid\"");
        CHECK_HAS(error_of(doc(xw + R"({"op": "conv2d", "inputs": ["x", "w"], "attrs": {"activation": 7}})")),
                  "/ops/2/attrs/activation: activation 7: expected");
    }
    SUBCASE("missing required attribute") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "s", "op": "split", "inputs": ["x"], "attrs": {"axis": 1}})")),
                  "/ops/1: op 's' (split): missing required attribute 'sizes'");
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input"})")),
                  "/ops/0: op 'x' (input): missing required attribute 'shape'");
    }
    SUBCASE("wrong arity") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "r", "op": "relu", "inputs": ["x", "x"]})")),
                  "/ops/1: op 'r' (relu): has 2 inputs: expected 1");
    }
    SUBCASE("name, layer, inputs of the wrong type") {
        CHECK_HAS(error_of(doc(R"({"name": 7, "op": "input", "shape": [2]})")),
                  "/ops/0/name: got the integer 7: expected a string");
        CHECK_HAS(error_of(doc(R"({"name": "", "op": "input", "shape": [2]})")), "/ops/0/name: empty op name");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "relu", "inputs": ["x"], "layer": "one"})")),
                  "/ops/1/layer: got a string: expected an integer");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "relu", "inputs": ["x"], "layer": 4294967296})")),
                  "/ops/1/layer: layer 4294967296 is out of the 32-bit range");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "relu", "inputs": "x"})")),
                  "/ops/1/inputs: got a string: expected a list of tensor references");
        CHECK_HAS(error_of(doc(x_in + R"(, {"op": "relu", "inputs": [0]})")),
                  "/ops/1/inputs/0: got the integer 0: expected a tensor reference");
    }
    SUBCASE("a shape attribute given twice on a source op") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [2], "attrs": {"shape": [2]}})")),
                  "/ops/0/shape: op 'x': shape given both here and in \"attrs\"");
    }
}

TEST_CASE("graph JSON errors: references and structure") {
    SUBCASE("a reference to an undefined tensor") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "e", "op": "ewadd", "inputs": ["x", "y"]})")),
                  "/ops/1/inputs/1: reference 'y' names no op in the file");
    }
    SUBCASE("name:k with k out of range") {
        CHECK_HAS(error_of(doc(
                      x_in + R"(, {"name": "s", "op": "split", "inputs": ["x"], "attrs": {"axis": 1, "sizes": [1, 2]}},
                                          {"name": "r", "op": "relu", "inputs": ["s:2"]})")),
                  "/ops/2/inputs/0: reference 's:2': op 's' has 2 outputs, so there is no output 2");
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "r", "op": "relu", "inputs": ["x:1"]})")),
                  "/ops/1/inputs/0: reference 'x:1': op 'x' has 1 output, so there is no output 1");
    }
    SUBCASE("duplicate op names") {
        CHECK_HAS(error_of(doc(x_in + ", " + x_in)), "/ops/1/name: duplicate op name 'x' (first used at /ops/0)");
    }
    SUBCASE("a name that also reads as another op's output") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "x:1", "op": "input", "shape": [2]})")),
                  "/ops/1/name: op name 'x:1' is ambiguous: it also reads as output 1 of op 'x'");
    }
    SUBCASE("an unnamed op whose generated name is taken") {
        CHECK_HAS(
            error_of(
                doc(x_in + R"(, {"op": "relu", "inputs": ["x"]}, {"name": "relu_1", "op": "relu", "inputs": ["x"]})")),
            "/ops/1: this unnamed op gets the name 'relu_1', which another op in the file has");
    }
    SUBCASE("a cycle names the ops on it") {
        const auto m = error_of(doc(x_in + R"(, {"name": "a", "op": "ewadd", "inputs": ["x", "c"]},
                                               {"name": "b", "op": "relu", "inputs": ["a"]},
                                               {"name": "c", "op": "relu", "inputs": ["b"]},
                                               {"name": "d", "op": "relu", "inputs": ["c"]})"));
        CHECK_HAS(m, "/ops: the ops form a cycle: ");
        // the cycle is a -> b -> c -> a, from whichever op it is entered
        CHECK((goopt::test::contains(m, "'a' -> 'b' -> 'c' -> 'a'") ||
               goopt::test::contains(m, "'b' -> 'c' -> 'a' -> 'b'") ||
               goopt::test::contains(m, "'c' -> 'a' -> 'b' -> 'c'")));
        CHECK(!goopt::test::contains(m, "'d'"));
        CHECK_HAS(error_of(doc(R"({"name": "self", "op": "relu", "inputs": ["self"]})")), "cycle: 'self' -> 'self'");
    }
    SUBCASE("an output naming nothing") {
        CHECK_HAS(error_of(doc(x_in, R"(["x", "nothing"])")),
                  "/outputs/1: reference 'nothing' names no op in the file");
        CHECK_HAS(error_of(doc("", R"(["x"])")), "/outputs/0: reference 'x' names no op");
        CHECK_HAS(error_of(doc(x_in, R"("x")")), "/outputs: got a string: expected a list of tensor references");
    }
}

TEST_CASE("graph JSON errors: shapes and types") {
    SUBCASE("a shape mismatch between inputs is add()'s error at the op's place") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "y", "op": "input", "shape": [4, 5]},
                                          {"name": "e", "op": "ewadd", "inputs": ["x", "y"]})")),
                  "t.json: /ops/2: op 'e' (ewadd): shapes [2,3] and [4,5] do not broadcast");
    }
    SUBCASE("a shape or dtype assertion that differs from inference") {
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "r", "op": "relu", "inputs": ["x"], "shape": [3, 2]})")),
                  "/ops/1/shape: 'r' (relu) has shape [2,3], the file says [3,2]");
        CHECK_HAS(error_of(doc(x_in + R"(, {"name": "r", "op": "relu", "inputs": ["x"], "dtype": "f16"})")),
                  "/ops/1/dtype: 'r' (relu) has dtype f32, the file says f16");
    }
    SUBCASE("negative or zero dimensions") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [2, -3]})")),
                  "/ops/0/shape/1: dimension -3: expected >= 1");
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "weight", "shape": [0]})")),
                  "/ops/0/shape/0: dimension 0: expected >= 1");
    }
    SUBCASE("an element count that overflows int64") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [4294967296, 4294967296, 4294967296]})")),
                  "/ops/0: op 'x' (input): shape [4294967296,4294967296,4294967296]: element count overflows 64 bits");
    }
    SUBCASE("a byte count that overflows int64") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [4611686018427387904]})")),
                  "/ops/0: op 'x' (input): tensor [4611686018427387904]: byte count overflows 64 bits");
        // the same element count in one-byte elements fits
        CHECK_NOTHROW(goopt::io::from_json_string(
            doc(R"({"name": "x", "op": "input", "shape": [4611686018427387904], "dtype": "u8"})")));
    }
    SUBCASE("a rank above the maximum") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [1, 1, 1, 1, 1, 1, 1, 1, 1]})")),
                  "/ops/0/shape: shape has rank 9: expected at most 8");
    }
    SUBCASE("an unknown dtype") {
        CHECK_HAS(error_of(doc(R"({"name": "x", "op": "input", "shape": [2], "dtype": "float32"})")),
                  "/ops/0/dtype: unknown dtype 'float32': expected one of f32, f64");
    }
}

TEST_CASE("graph JSON: damaged files raise goopt::error and nothing else") {
    const std::string text = goopt::io::to_json_string(coverage_graph());
    // every truncation (the text minus its last "}\n" is no longer a complete document)
    for (std::size_t n = 0; n + 1 < text.size(); ++n)
        CHECK_THROWS_AS(goopt::io::from_json_string(std::string_view(text).substr(0, n)), goopt::error);
    // random edits: each one is either still a graph or a one-line goopt::error
    std::mt19937 rng(2024);
    const std::string alphabet = "{}[]\":,0123456789-.e ax\\/";
    for (int i = 0; i < 300; ++i) {
        std::string s = text;
        const std::size_t p = rng() % s.size();
        if (i % 2) s[p] = alphabet[rng() % alphabet.size()];
        else s.erase(p, 1 + rng() % 6);
        try {
            (void)goopt::io::from_json_string(s);
        } catch (const goopt::error& e) {
            CHECK(std::string(e.what()).find('\n') == std::string::npos);
        }
    }
}

TEST_CASE("graph JSON: files that cannot be read, graphs that cannot be written") {
    goopt::test::temp_dir dir{"goopt_graph_json_test_"};
    const auto missing = dir.path / "missing.json";
    try {
        goopt::io::read_graph_file(missing);
        FAIL("no error");
    } catch (const goopt::error& e) {
        CHECK_HAS(std::string(e.what()), missing.string() + ": cannot open the graph file: No such file or directory");
    }
    CHECK_THROWS_AS(goopt::io::read_graph_file(dir.path), goopt::error);

    computation_graph dup;
    dup.input("x", {2});
    dup.input("x", {2});
    CHECK_THROWS_WITH_AS(goopt::io::to_json_string(dup),
                         "io::to_json_string: graph: ops 0 and 1 are both named 'x': expected unique op names",
                         goopt::error);
    computation_graph ambiguous;
    ambiguous.input("x", {2});
    ambiguous.input("x:1", {2});
    CHECK_THROWS_AS(goopt::io::to_json_string(ambiguous), goopt::error);
    nlohmann::json j;
    CHECK_THROWS_AS(j = dup, goopt::error);
    computation_graph bad_utf8;
    bad_utf8.input("x\xff", {2});
    CHECK_THROWS_AS(goopt::io::to_json_string(bad_utf8), goopt::error);
}
