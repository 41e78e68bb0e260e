// Symbolic dimensions through an export (issue #26): a model with a symbolic batch, imported at one
// value and rewritten by a search, is written with the batch named again where the graph allows, and
// the file then runs at other batches: imported again by goopt, and in onnxruntime where tools/ort is
// installed, it computes what the original computes at those batches. Where the graph bakes the
// batch in, the value is written, with a warning naming the dimension and the node. And the
// automatic switch to external data, at a threshold the options give.
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/onnx.hpp>
#include <goopt/subst/search/optimize.hpp>

#include "external_tools.hpp"
#include "model_builder.hpp"
#include "values.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace goopt;

namespace symbolic_dims_test {

using onnx_testing::model_builder;
using onnx_testing::scratch_dir;
using onnx_testing::set_attribute;
using onnx_testing::slurp;

/// A float initializer of these dimensions with values drawn uniformly from [-0.5, 0.5].
void random_floats(model_builder& b, const std::string& name, const std::vector<std::int64_t>& dims,
                   std::mt19937_64& rng) {
    auto* t = b.g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    std::int64_t n = 1;
    for (auto d : dims) t->add_dims(d), n *= d;
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (std::int64_t k = 0; k < n; ++k) t->add_float_data(u(rng));
}

/// Graph input x of these dimensions, axis 0 the symbolic "batch".
void batched_input(model_builder& b, std::initializer_list<std::int64_t> dims) {
    b.input("x", dims);
    b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
        "batch");
}

/// x [batch, 6] -> MatMul + Add -> Relu -> MatMul + Add -> Reshape [-1, 2, 2] -> y [batch, 2, 2].
std::string mlp_model() {
    model_builder b;
    std::mt19937_64 rng(11);
    batched_input(b, {1, 6});
    random_floats(b, "w1", {6, 8}, rng);
    random_floats(b, "b1", {8}, rng);
    random_floats(b, "w2", {8, 4}, rng);
    random_floats(b, "b2", {4}, rng);
    b.int64s("shape", {3}, {-1, 2, 2});
    b.node("MatMul", {"x", "w1"}, {"h"});
    b.node("Add", {"h", "b1"}, {"hb"});
    b.node("Relu", {"hb"}, {"r"});
    b.node("MatMul", {"r", "w2"}, {"o"});
    b.node("Add", {"o", "b2"}, {"ob"});
    b.node("Reshape", {"ob", "shape"}, {"y"});
    b.output("y");
    return b.bytes();
}

/// x [batch, 3, 8, 8] -> Conv 3x3 (bias) -> Relu -> MaxPool 2x2 -> Flatten -> MatMul + Add -> y [batch, 5].
std::string conv_model() {
    model_builder b;
    std::mt19937_64 rng(12);
    batched_input(b, {1, 3, 8, 8});
    random_floats(b, "w", {4, 3, 3, 3}, rng);
    random_floats(b, "bias", {4}, rng);
    random_floats(b, "fc", {64, 5}, rng);
    random_floats(b, "fc_b", {5}, rng);
    auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"});
    set_attribute(conv, "kernel_shape", std::vector<std::int64_t>{3, 3});
    set_attribute(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    b.node("Relu", {"c"}, {"r"});
    auto& pool = b.node("MaxPool", {"r"}, {"p"});
    set_attribute(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
    set_attribute(pool, "strides", std::vector<std::int64_t>{2, 2});
    set_attribute(b.node("Flatten", {"p"}, {"f"}), "axis", std::int64_t{1});
    b.node("MatMul", {"f", "fc"}, {"m"});
    b.node("Add", {"m", "fc_b"}, {"y"});
    b.output("y");
    return b.bytes();
}

/// x [batch, 4] + a batch-sized constant [3, 4] (as an initial state exported at batch 3): the batch
/// is baked into the file.
std::string baked_model() {
    model_builder b;
    std::mt19937_64 rng(13);
    batched_input(b, {1, 4});
    random_floats(b, "state", {3, 4}, rng);
    b.node("Add", {"x", "state"}, {"s"});
    b.node("Tanh", {"s"}, {"y"});
    b.output("y");
    return b.bytes();
}

io::onnx_model import_at(const std::string& bytes, const std::string& name, std::int64_t batch) {
    io::onnx_options o;
    o.dim_values["batch"] = batch;
    return io::import_onnx_bytes(bytes, name, o);
}

/// Random values in [-1, 1] (rounded to float) for graph input x of g.
interp::value<double> random_x(const graph::computation_graph& g, std::uint64_t seed) {
    const auto x = *g.find("x");
    auto v = interp::detail::filled(g.type_of(g.get_op(x).outputs[0]).dims, 0.0);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& e : v.storage()) e = static_cast<float>(u(rng));
    return v;
}

std::vector<interp::value<double>> run_with(const io::onnx_model& m, const interp::value<double>& x) {
    auto feeds = io::weight_feeds<double>(m);
    feeds.emplace("x", x);
    return interp::run<double>(m.graph, feeds);
}

std::int64_t dim_value_of(const onnx::ValueInfoProto& v, int axis) {
    return v.type().tensor_type().shape().dim(axis).dim_value();
}
std::string dim_param_of(const onnx::ValueInfoProto& v, int axis) {
    return v.type().tensor_type().shape().dim(axis).dim_param();
}

/// The whole check of one model whose batch stays symbolic: bound at 3, searched, exported, then
/// run at 4 and 6 (value + 1 and + 3) by goopt, and at 5 by onnxruntime, against the original.
void check_stays_symbolic(const std::string& bytes, const std::string& name) {
    CAPTURE(name);
    constexpr std::int64_t bound = 3;
    const io::onnx_model m = import_at(bytes, name, bound);
    REQUIRE(m.input_dim_params.count("x") == 1);
    CHECK(m.input_dim_params.at("x")[0] == "batch");
    const auto searched = subst::optimize(m.graph, {}, cost::roofline_model{}, device::t4);
    CHECK(searched.stats.rules_applied > 0);  // the export below is of a rewritten graph
    graph::validate(searched.graph);
    const auto e = io::to_onnx(searched.graph, {.source = &m});
    for (const auto& w : e.report.warnings) CHECK_MESSAGE(w.find("symbolic") == std::string::npos, w);
    CHECK(e.report.symbolic_dims == std::vector<std::string>{"batch"});
    CHECK(e.report.fixed_dims.empty());
    const auto& gp = e.model.graph();
    REQUIRE(gp.input_size() >= 1);
    CHECK(gp.input(0).name() == "x");
    CHECK(dim_param_of(gp.input(0), 0) == "batch");
    CHECK(!gp.input(0).type().tensor_type().shape().dim(0).has_dim_value());
    REQUIRE(gp.output_size() == 1);
    CHECK(dim_param_of(gp.output(0), 0) == "batch");
    for (int a = 1; a < gp.output(0).type().tensor_type().shape().dim_size(); ++a)
        CHECK(dim_value_of(gp.output(0), a) > 0);
    std::string exported;
    REQUIRE(e.model.SerializeToString(&exported));

    // goopt at other batches: the export imports and computes what the original computes there
    for (const std::int64_t batch : {bound + 1, bound + 3}) {
        CAPTURE(batch);
        const io::onnx_model original = import_at(bytes, name, batch);
        const io::onnx_model back = import_at(exported, name + " exported", batch);
        const auto x = random_x(original.graph, static_cast<std::uint64_t>(batch));
        const auto want = run_with(original, x);
        const auto got = run_with(back, x);
        REQUIRE(want.size() == 1);
        CHECK(want[0].shape()[0] == batch);
        CHECK(onnx_testing::max_rel_diff(want, got) <= 1e-5);
    }

    scratch_dir dir;
    const auto file = dir.path / (name + ".onnx");
    std::ofstream(file, std::ios::binary) << exported;
    if (const std::string python = onnx_testing::python_with_onnx(); python.empty())
        MESSAGE("onnx.checker skipped: no python3 with the onnx package (Debian: apt-get install python3-onnx)");
    else CHECK(onnx_testing::onnx_checker(python, file) == "");

    // onnxruntime at batch 5, against goopt's interpreter on the original at 5
    if (const std::string missing = onnx_testing::onnxruntime_missing(); !missing.empty()) {
        MESSAGE("onnxruntime skipped: ", missing);
        return;
    }
    constexpr std::int64_t batch = bound + 2;
    const io::onnx_model original = import_at(bytes, name, batch);
    const auto x = random_x(original.graph, 5);
    const auto want = run_with(original, x);
    nlohmann::json in;
    in["x"]["shape"] = std::vector<std::int64_t>(x.shape().begin(), x.shape().end());
    in["x"]["data"] = std::vector<double>(x.begin(), x.end());
    const std::string stem = (dir.path / name).string();
    std::ofstream(stem + ".in.json") << in.dump();
    const std::string cmd = concat("node '", (onnx_testing::ort_dir / "run_model.js").string(), "' '", file.string(),
                                   "' --inputs '", stem, ".in.json' --out '", stem, ".out.json' 2>'", stem, ".err'");
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, slurp(stem + ".err"));
    const auto out = nlohmann::json::parse(slurp(stem + ".out.json")).at("outputs");
    REQUIRE(out.size() == 1);
    CHECK(out[0].at("shape").at(0).get<std::int64_t>() == batch);
    const auto got = out[0].at("data").get<std::vector<double>>();
    REQUIRE(got.size() == want[0].size());
    double diff = 0, scale = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        diff = std::max(diff, std::abs(got[k] - want[0].data()[k]));
        scale = std::max(scale, std::abs(want[0].data()[k]));
    }
    CHECK(diff / std::max(scale, 1e-30) <= 1e-4);
    MESSAGE(name, ": onnxruntime at batch ", batch, " (bound at ", bound,
            ") vs the interpreter, max |a - b| / max |b| ", diff / std::max(scale, 1e-30));
}

TEST_CASE("a symbolic batch bound at import stays named in the export of a searched MLP and CNN") {
    check_stays_symbolic(mlp_model(), "mlp");
    check_stays_symbolic(conv_model(), "cnn");
}

TEST_CASE("a Reshape target is written size-free: the axes it keeps copied, the batch folded out inferred") {
    model_builder b;
    batched_input(b, {1, 2, 6});
    b.int64s("fold", {2}, {-1, 6});
    b.int64s("unfold", {3}, {-1, 2, 6});
    b.node("Reshape", {"x", "fold"}, {"f"});
    b.node("Relu", {"f"}, {"r"});
    b.node("Reshape", {"r", "unfold"}, {"y"});
    b.output("y");
    const auto m = import_at(b.bytes(), "fold", 4);
    const auto e = io::to_onnx(m.graph, {.source = &m});
    CHECK(e.report.symbolic_dims == std::vector<std::string>{"batch"});
    CHECK(dim_param_of(e.model.graph().output(0), 0) == "batch");
    std::map<std::string, std::vector<std::int64_t>> targets;
    for (const auto& t : e.model.graph().initializer())
        if (t.data_type() == onnx::TensorProto_DataType_INT64)
            targets[t.name()] = std::vector<std::int64_t>(t.raw_data().size() / 8);
    for (const auto& t : e.model.graph().initializer())
        if (targets.count(t.name())) std::memcpy(targets[t.name()].data(), t.raw_data().data(), t.raw_data().size());
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& n : e.model.graph().node())
        if (n.op_type() == "Reshape") shapes.push_back(targets.at(n.input(1)));
    // [4, 2, 6] -> [8, 6]: the 8 (batch x 2) inferred; [8, 6] -> [4, 2, 6]: the batch inferred
    CHECK(shapes == std::vector<std::vector<std::int64_t>>{{-1, 6}, {-1, 2, 6}});
    // and a file without symbolic dimensions is written as before: the sizes as they are
    const auto plain = io::to_onnx(m.graph, {.source = &m, .symbolic_dims = false});
    CHECK(plain.report.symbolic_dims.empty());
    CHECK(dim_value_of(plain.model.graph().input(0), 0) == 4);
}

TEST_CASE("a batch the graph bakes in is written as its value, with a warning naming it and the node") {
    const std::string bytes = baked_model();
    const auto m = import_at(bytes, "baked", 3);
    const auto e = io::to_onnx(m.graph, {.source = &m});
    CHECK(e.report.symbolic_dims.empty());
    CHECK(e.report.fixed_dims == std::vector<std::string>{"batch"});
    std::size_t warned = 0;
    for (const auto& w : e.report.warnings)
        if (w.find("symbolic dimension 'batch' is written as its value 3: the graph bakes it in") !=
            std::string::npos) {
            ++warned;
            CHECK_MESSAGE(w.find("'s'") != std::string::npos, w);  // the node, the Add with the constant
        }
    CHECK(warned == 1);
    CHECK(dim_value_of(e.model.graph().input(0), 0) == 3);
    CHECK(dim_param_of(e.model.graph().input(0), 0).empty());
    CHECK(dim_value_of(e.model.graph().output(0), 0) == 3);
    scratch_dir dir;
    const auto file = dir.path / "baked.onnx";
    (void)io::write_onnx(m.graph, file, {.source = &m});
    if (const std::string python = onnx_testing::python_with_onnx(); !python.empty())
        CHECK(onnx_testing::onnx_checker(python, file) == "");
}

TEST_CASE("an LSTM written back with the batch-sized initial state of its trace keeps the batch's value") {
    // lstm_lm.onnx with its batch axis made symbolic: the trace baked batch 2 into the initial states'
    // Expand, which the import folds into constants [1, 2, 12] that the written-back LSTM reads
    onnx::ModelProto file;
    REQUIRE(file.ParseFromString(slurp(std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx" / "lstm_lm.onnx")));
    file.mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(1)
        ->set_dim_param("batch");
    const auto m = import_at(file.SerializeAsString(), "lstm_lm", 2);
    REQUIRE(!m.recurrent_nodes.empty());
    const auto e = io::to_onnx(m.graph, {.source = &m});
    CHECK(e.report.recurrent_written_back == m.recurrent_nodes.size());
    CHECK(e.report.fixed_dims == std::vector<std::string>{"batch"});
    std::size_t warned = 0;
    for (const auto& w : e.report.warnings)
        if (w.find("symbolic dimension 'batch' is written as its value 2: the graph bakes it in") !=
            std::string::npos) {
            ++warned;
            CHECK_MESSAGE(w.find("(LSTM)") != std::string::npos, w);  // the node that reads the state
        }
    CHECK(warned == 1);
    CHECK(dim_value_of(e.model.graph().input(0), 1) == 2);
}

TEST_CASE("a model over external_data_above_bytes is written with external data and imports with equal values") {
    const auto m = io::import_onnx(std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx" / "squeezenet1_1.onnx");
    scratch_dir dir;
    const auto whole = io::write_onnx(m.graph, dir.path / "whole.onnx", {.source = &m});
    CHECK(whole.external_data.empty());  // under the default, protobuf's 2 GiB
    CHECK(!std::filesystem::exists(dir.path / "whole.onnx.data"));
    const auto file = dir.path / "split.onnx";
    const auto r = io::write_onnx(m.graph, file, {.source = &m, .external_data_above_bytes = 1 << 20});
    CHECK(r.external_data == "split.onnx.data");
    CHECK(r.external_initializers > 0);
    REQUIRE(std::filesystem::exists(dir.path / "split.onnx.data"));
    CHECK(std::filesystem::file_size(file) < (1u << 20));
    const auto back = io::import_onnx(file);
    REQUIRE(back.weight_values.size() == m.weight_values.size());
    for (const auto& [name, t] : m.weight_values) {
        CAPTURE(name);
        REQUIRE(back.weight_values.count(name) == 1);
        CHECK(back.weight_values.at(name).type == t.type);
        CHECK(back.weight_values.at(name).values == t.values);
    }
    if (const std::string python = onnx_testing::python_with_onnx(); !python.empty())
        CHECK(onnx_testing::onnx_checker(python, file) == "");
}

}  // namespace symbolic_dims_test
