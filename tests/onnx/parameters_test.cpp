// Parameters and constants of imported models: which of a file's values are trained (the rule of
// docs/formats.md), graph inputs named as parameters, the warning for a training step with no
// parameter, and given input shapes checked against every dimension the file fixes.
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/onnx.hpp>
#include <goopt/models/training_graph.hpp>

#include "model_builder.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace parameters_test {

using onnx_testing::model_builder;

const std::filesystem::path onnx_dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx";

/// The message of the goopt::error that importing `bytes` raises, or "" when it imports.
std::string import_error(const std::string& bytes, const io::onnx_options& o) {
    try {
        (void)io::import_onnx_bytes(bytes, "m.onnx", o);
    } catch (const error& e) {
        return e.what();
    }
    return "";
}

/// y = MatMul(x, w) ^ 2 + 1e-5: one weight w (from `w_initializer`, else a graph input) and two
/// scalar constants.
model_builder matmul_pow(bool w_initializer) {
    model_builder b;
    b.input("x", {2, 3});
    if (w_initializer) b.floats("w", {3, 2}, {1, 2, 3, 4, 5, 6});
    else b.input("w", {3, 2});
    b.floats("two", {}, {2.0f}).floats("eps", {1}, {1e-5f});
    b.node("MatMul", {"x", "w"}, {"xw"});
    b.node("Pow", {"xw", "two"}, {"sq"});
    b.node("Add", {"sq", "eps"}, {"y"});
    b.output("y");
    return b;
}

/// Weight ops that receive an update in the training step of `fwd`, by name.
std::set<std::string> trained(const graph::computation_graph& fwd, std::vector<std::string>* warnings = nullptr) {
    const auto train = models::make_training_graph(fwd, {.warnings = warnings});
    std::set<std::string> names;
    for (const auto u : train.ops_of_kind(op_kind::adam_update))
        names.insert(train.get_op(train.producer(train.get_op(u).inputs[0])).name);
    return names;
}

TEST_CASE("a file's scalar constants are constant ops: exported with their values, never trained") {
    const auto m = io::import_onnx_bytes(matmul_pow(true).bytes(), "m.onnx");
    const auto& g = m.graph;
    REQUIRE(g.ops_of_kind(op_kind::weight).size() == 1);
    CHECK(g.get_op(g.ops_of_kind(op_kind::weight)[0]).name == "w");
    CHECK(g.ops_of_kind(op_kind::constant).size() == 2);
    CHECK(m.weight_values.count("two") == 1);  // a constant keeps its value
    std::vector<std::string> warnings;
    CHECK(trained(g, &warnings) == std::set<std::string>{"w"});
    CHECK(warnings.empty());
    CHECK(g.parameter_bytes() == 6 * 4);

    // the export writes every value as an initializer and the constants come back as constants
    const auto r = io::to_onnx(g, {.source = &m});
    std::set<std::string> inits;
    for (const auto& t : r.model.graph().initializer()) inits.insert(t.name());
    CHECK(inits == std::set<std::string>{"w", "two", "eps"});
    CHECK(r.report.weight_inputs == 0);
    const auto back = io::import_onnx_bytes(r.model.SerializeAsString(), "back.onnx");
    CHECK(back.graph.ops_of_kind(op_kind::weight).size() == 1);
    CHECK(back.graph.ops_of_kind(op_kind::constant).size() == 2);
    auto feeds = io::weight_feeds<double>(m);
    feeds.emplace("x", interp::detail::filled(ops::shape{2, 3}, 0.5));
    auto back_feeds = io::weight_feeds<double>(back);
    back_feeds.emplace("x", interp::detail::filled(ops::shape{2, 3}, 0.5));
    const auto a = interp::run<double>(g, feeds), b = interp::run<double>(back.graph, back_feeds);
    REQUIRE(a.size() == 1);
    for (std::size_t k = 0; k < a[0].size(); ++k) CHECK(a[0].data()[k] == doctest::Approx(b[0].data()[k]));
}

TEST_CASE("an imported ViT trains its parameters only: no update for the file's scalar constants") {
    const auto m = io::import_onnx(onnx_dir / "vit_tiny.onnx");
    const auto& g = m.graph;
    std::size_t scalar_constants = 0;
    for (const auto c : g.ops_of_kind(op_kind::constant))
        scalar_constants += g.type_of(g.get_op(c).outputs[0]).num_elements() == 1;
    CHECK(scalar_constants >= 3);  // at least the three LayerNorms' exponents
    for (const auto p : g.ops_of_kind(op_kind::pow)) {
        const auto exponent = g.get_op(g.producer(g.get_op(p).inputs[1]));
        CHECK(exponent.kind == op_kind::constant);
    }
    // every parameter is a floating-point tensor of more than one element, and every one is trained
    for (const auto w : g.ops_of_kind(op_kind::weight)) {
        const auto& t = g.type_of(g.get_op(w).outputs[0]);
        CHECK(ops::is_floating(t.type));
        CHECK(t.num_elements() > 1);
    }
    const auto names = trained(g);
    CHECK(names.size() == g.ops_of_kind(op_kind::weight).size());
    MESSAGE("vit_tiny.onnx: " << names.size() << " Adam updates, " << g.ops_of_kind(op_kind::constant).size()
                              << " constants (" << scalar_constants << " of one element)");
}

TEST_CASE("graph inputs named as parameters are weights; a step with no parameter is warned about") {
    const std::string bytes = matmul_pow(false).bytes();
    SUBCASE("by default every graph input is data: the step has no parameter, and says so") {
        const auto m = io::import_onnx_bytes(bytes, "m.onnx");
        std::vector<std::string> warnings;
        CHECK(trained(m.graph, &warnings).empty());
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].find("has no parameter (0 weights, 2 constants, 2 graph inputs): the training step has no "
                               "backward pass") != std::string::npos);
        CHECK(warnings[0].find("param_inputs") != std::string::npos);
    }
    SUBCASE("--param-inputs w, or --data-inputs x: w is trained") {
        for (const auto& o : {io::onnx_options{.param_inputs = {"w"}}, io::onnx_options{.data_inputs = {"x"}}}) {
            const auto m = io::import_onnx_bytes(bytes, "m.onnx", o);
            CHECK(m.graph.ops_of_kind(op_kind::input).size() == 1);
            REQUIRE(m.graph.ops_of_kind(op_kind::weight).size() == 1);
            CHECK(m.weight_values.count("w") == 0);  // its value comes from outside, as an input's
            std::vector<std::string> warnings;
            CHECK(trained(m.graph, &warnings) == std::set<std::string>{"w"});
            CHECK(warnings.empty());
            // the export writes it as a graph input again, under its name
            const auto r = io::to_onnx(m.graph, {.source = &m});
            std::set<std::string> inputs;
            for (const auto& v : r.model.graph().input()) inputs.insert(v.name());
            CHECK(inputs == std::set<std::string>{"x", "w"});
        }
    }
    SUBCASE("an initializer named a parameter is one, even of one element") {
        const auto m = io::import_onnx_bytes(matmul_pow(true).bytes(), "m.onnx", {.param_inputs = {"eps"}});
        CHECK(trained(m.graph) == std::set<std::string>{"w", "eps"});
    }
    SUBCASE("bad names, both lists, an integer parameter") {
        CHECK(
            import_error(bytes, {.param_inputs = {"v"}}) ==
            "m.onnx: onnx_options::param_inputs: 'v' is not a graph input or an initializer (the graph inputs: w, x)");
        CHECK(import_error(bytes, {.param_inputs = {"w"}, .data_inputs = {"x"}, .command_line_hints = true}) ==
              "m.onnx: --param-inputs and --data-inputs are both given: expected one of them (the parameters, or the "
              "data inputs when every other input is a parameter)");
        model_builder b;
        b.input("x", {2, 3}).input("ids", {2}, 7);
        b.node("Gather", {"x", "ids"}, {"y"});
        b.output("y");
        CHECK(import_error(b.bytes(), {.data_inputs = {"x"}, .command_line_hints = true}) ==
              "m.onnx: graph input 'ids' is i64 and named a parameter by leaving it out of --data-inputs: expected a "
              "floating-point tensor (indices and masks are data inputs)");
    }
}

TEST_CASE("given input shapes agree with every dimension the file fixes; a baked-in batch is named") {
    model_builder fixed;
    fixed.input("x", {1, 4});
    fixed.node("Relu", {"x"}, {"y"});
    fixed.output("y");
    CHECK(io::import_onnx_bytes(fixed.bytes(), "m.onnx", {.input_shapes = {{"x", {1, 4}}}}).graph.type_of(0).dims ==
          ops::shape{1, 4});
    CHECK(import_error(fixed.bytes(), {.input_shapes = {{"x", {8, 4}}}, .command_line_hints = true}) ==
          "m.onnx: graph input 'x': --input-shape gives dimension 0 the value 8, but the file fixes it to 1 (a model "
          "exported with that dimension fixed may have it baked into its constants too): expected 1 as in the file "
          "(only a symbolic or unknown dimension takes another value; re-export the model with a dynamic axis)");

    // x [batch, 4] reshaped to the constant [1, 2, 2]: made for batch 1 only
    model_builder baked;
    baked.input("x", {1, 4});
    auto* d0 = baked.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    d0->clear_dim_value();
    d0->set_dim_param("batch");
    baked.int64s("target", {3}, {1, 2, 2});
    baked.node("Reshape", {"x", "target"}, {"y"});
    baked.output("y");
    CHECK(io::import_onnx_bytes(baked.bytes(), "m.onnx", {.dim_values = {{"batch", 1}}}).graph.num_ops() == 2);
    const std::string e = import_error(baked.bytes(), {.dim_values = {{"batch", 8}}});
    CHECK(e.find("node 'y' (Reshape)") != std::string::npos);
    CHECK(e.find("graph input 'x' axis 0 is 8 (the file has 'batch'): the export baked that dimension in") !=
          std::string::npos);
    CHECK(import_error(baked.bytes(), {.input_shapes = {{"x", {8, 4}}}, .dim_values = {{"batch", 2}}}) ==
          "m.onnx: graph input 'x': onnx_options::input_shapes gives dimension 0 ('batch') the value 8, but "
          "onnx_options::dim_values binds 'batch' to 2: expected one value for one symbolic dimension");
}

TEST_CASE("a given input shape names a graph input: a misspelt or initializer name is an error, not ignored") {
    model_builder b;
    b.input("x", {1, 4});
    b.int64s("target", {2}, {2, 2});
    b.node("Reshape", {"x", "target"}, {"y"});
    b.output("y");
    CHECK(import_error(b.bytes(), {.input_shapes = {{"X", {1, 4}}}, .command_line_hints = true}) ==
          "m.onnx: --input-shape 'X' is not a graph input (the graph inputs: x)");
    CHECK(import_error(b.bytes(), {.input_shapes = {{"target", {2}}}}) ==
          "m.onnx: onnx_options::input_shapes: 'target' is an initializer, whose shape is its value's (the graph "
          "inputs: x)");
}

}  // namespace parameters_test
