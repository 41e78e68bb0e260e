// ONNX import: real PyTorch exports (structure, shapes, parameter counts), models with weights
// evaluated by the interpreter against the exporter's own output, and rejected files.
// The files come from tools/make_onnx_testdata.py (torch 1.13, torchvision 0.14, onnx 1.12) and, for the
// recurrent and upsampling models, tests/data/onnx/make_recurrent_upsampling.py (torch 1.13).
#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/onnx.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {

const std::filesystem::path data_dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx";

std::map<op_kind, std::size_t> count_kinds(const graph::computation_graph& g) {
    std::map<op_kind, std::size_t> c;
    for (const auto& o : g.ops()) ++c[o.kind];
    return c;
}

std::size_t count(const graph::computation_graph& g, op_kind k) {
    const auto c = count_kinds(g);
    const auto it = c.find(k);
    return it == c.end() ? 0 : it->second;
}

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

interp::value<double> to_value(const nlohmann::json& t) {
    ops::shape s;
    for (auto d : t.at("shape")) s.push_back(d.get<std::int64_t>());
    interp::value<double> v = interp::detail::filled(s, 0.0);
    std::size_t k = 0;
    for (const auto& x : t.at("data")) v.data()[k++] = x.get<double>();
    REQUIRE(k == v.size());
    return v;
}

/// Evaluates the model on the stored input and compares with the stored exporter output:
/// |ours - torch| <= 1e-4 |torch| + 1e-5 elementwise. Returns the largest relative difference.
double check_against_exporter(const std::string& stem) {
    const io::onnx_model m = io::import_onnx(data_dir / (stem + ".onnx"));
    graph::validate(m.graph);
    const auto expected = nlohmann::json::parse(read(data_dir / (stem + ".json")));
    auto feeds = io::weight_feeds<double>(m);
    for (const auto& [name, t] : expected.at("inputs").items()) feeds.emplace(name, to_value(t));
    const auto out = interp::run<double>(m.graph, feeds);
    const auto& want = expected.at("outputs");
    REQUIRE(out.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const auto w = to_value(want[i]);
        REQUIRE(out[i].shape() == w.shape());
        std::size_t bad = 0;
        for (std::size_t k = 0; k < w.size(); ++k) {
            const double a = out[i].data()[k], b = w.data()[k];
            if (!(std::abs(a - b) <= 1e-4 * std::abs(b) + 1e-5)) ++bad;
            worst = std::max(worst, std::abs(a - b) / std::max(std::abs(b), 1e-3));
        }
        CHECK_MESSAGE(bad == 0, stem << " output " << i << ": " << bad << " of " << w.size()
                                     << " elements differ from the exporter's by more than 1e-4 relative");
    }
    return worst;
}

std::string import_error(const std::filesystem::path& p, const io::onnx_options& o = {}) {
    try {
        (void)io::import_onnx(p, o);
    } catch (const error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("ResNet-50 exported by PyTorch (weights stripped): op counts, shapes, parameters") {
    const io::onnx_model m = io::import_onnx(data_dir / "resnet50.onnx");
    const auto& g = m.graph;
    CHECK(graph::problems(g).empty());
    CHECK(m.opset == 13);
    // the export folds each BatchNormalization into its Conv, which then has a bias
    CHECK(count(g, op_kind::conv2d) == 53);          // 1 stem + 16 blocks x 3 + 4 downsample
    CHECK(count(g, op_kind::relu) == 49);            // 1 stem + 16 blocks x 3
    CHECK(count(g, op_kind::ewadd) == 53 + 16 + 1);  // conv biases, residual sums, fc bias
    CHECK(count(g, op_kind::maxpool2d) == 1);
    CHECK(count(g, op_kind::global_avgpool) == 1);
    CHECK(count(g, op_kind::flatten) == 1);
    CHECK(count(g, op_kind::matmul) == 1);
    CHECK(count(g, op_kind::transpose) == 1);  // Gemm's transB
    // PyTorch pads symmetrically; TensorFlow's SAME puts the odd cell at the end, so the stem's
    // 7x7/2 conv, the 3x3/2 max pool and the three 3x3/2 convs get an explicit pad op
    CHECK(count(g, op_kind::pad) == 5);
    CHECK(count(g, op_kind::weight) == 2 * 53 + 2);
    CHECK(count(g, op_kind::input) == 1);
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    // torchvision's 25,557,032 parameters, less one per BatchNorm channel (26,560): folding
    // replaces gamma and beta by one conv bias
    CHECK(g.parameter_bytes() == 4 * (25'557'032 - 26'560));
    // ~4.1 GMAC of convolutions and the classifier
    double flops = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) flops += g.flops(o);
    CHECK(flops > 8.0e9);
    CHECK(flops < 8.4e9);
    // the stem: 224 -> 112 -> 56; every stage halves it down to 7
    const auto conv1 = g.find("/conv1/Conv");  // ops are named after their ONNX nodes
    REQUIRE(conv1);
    CHECK(g.type_of(g.get_op(*conv1).outputs[0]).dims == ops::shape{1, 64, 112, 112});
    CHECK(g.get_op(g.producer(g.get_op(*conv1).inputs[0])).kind == op_kind::pad);
    const auto pool = g.ops_of_kind(op_kind::global_avgpool);
    CHECK(g.type_of(g.get_op(pool[0]).inputs[0]).dims == ops::shape{1, 2048, 7, 7});
    // stripped: an initializer kept its data when Python's bytes object of it (33 bytes of header
    // plus the data) stayed under onnx's size_threshold of 1024
    std::size_t with_values = 0;
    for (const graph::op_id w : g.ops_of_kind(op_kind::weight)) {
        const auto& op = g.get_op(w);
        const bool has_values = m.weight_values.count(op.name) > 0;
        CHECK(has_values == (g.type_of(op.outputs[0]).bytes() + 33 < 1024));
        with_values += has_values;
    }
    CHECK(with_values == 15);  // 64- and 128-channel conv biases: 2 initializers and 13 Identity copies
}

TEST_CASE("Inception-v3 exported by PyTorch (weights stripped)") {
    const io::onnx_model m = io::import_onnx(data_dir / "inception_v3.onnx");
    const auto& g = m.graph;
    CHECK(graph::problems(g).empty());
    CHECK(count(g, op_kind::conv2d) == 94);
    CHECK(count(g, op_kind::relu) == 94);
    CHECK(count(g, op_kind::ewadd) == 94 + 1);
    // 3 A + 1 B + 4 C + 1 D + 2 E blocks: the export merges E's inner concats into the outer one
    CHECK(count(g, op_kind::concat) == 11);
    CHECK(count(g, op_kind::maxpool2d) == 4);
    // avg_pool2d(3, 1, padding=1) counts padded zeros: the export writes Pad + AveragePool
    CHECK(count(g, op_kind::avgpool2d) == 9);
    CHECK(count(g, op_kind::pad) == 9);
    CHECK(count(g, op_kind::global_avgpool) == 1);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    const auto pool = g.ops_of_kind(op_kind::global_avgpool);
    CHECK(g.type_of(g.get_op(pool[0]).inputs[0]).dims == ops::shape{1, 2048, 8, 8});
    // torchvision's 23,834,568 parameters (no aux head) less one per BatchNorm channel (17,216)
    CHECK(g.parameter_bytes() == 4 * (23'834'568 - 17'216));
}

TEST_CASE("transformer encoder exported by PyTorch: shape-only subgraphs fold away") {
    const io::onnx_model m = io::import_onnx(data_dir / "transformer_encoder.onnx");
    const auto& g = m.graph;
    CHECK(graph::problems(g).empty());
    CHECK(m.opset == 14);
    // Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains and Constants are evaluated at import
    CHECK(m.onnx_nodes.at("Shape") == 2);
    CHECK(m.onnx_nodes.at("Constant") == 40);
    CHECK(m.folded_nodes >= 2 + 2 + 40);
    CHECK(count(g, op_kind::gather) == 0);
    // per layer: in-projection, Q K^T, attention x V (MatMul) and the out-projection, two
    // feed-forward layers (Gemm / MatMul)
    CHECK(count(g, op_kind::matmul) == 2 * 6);
    CHECK(count(g, op_kind::softmax) == 2);
    CHECK(count(g, op_kind::erf) == 2);  // exact GELU
    // opset 14 has no LayerNormalization: each of the 4 is ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div
    CHECK(count(g, op_kind::reduce_mean) == 2 * 4);
    CHECK(count(g, op_kind::sqrt) == 4);
    CHECK(count(g, op_kind::pow) == 4);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{32, 1, 256});
    for (const graph::op_id o : g.ops_of_kind(op_kind::softmax))
        CHECK(g.type_of(g.get_op(o).outputs[0]).dims == ops::shape{4, 32, 32});  // heads x seq x seq
    // 2 x (4 d^2 + 2 d ff) weights and 2 x (4 d + ff + d + 4 d) biases and norms, d 256, ff 1024;
    // the scalar constants of the decomposed LayerNorms and GELUs are constants, not parameters
    const std::int64_t d = 256, ff = 1024;
    CHECK(g.parameter_bytes() == 4 * 2 * (4 * d * d + 2 * d * ff + 3 * d + d + ff + d + 4 * d));
    for (const graph::op_id c : g.ops_of_kind(op_kind::constant))
        CHECK(g.type_of(g.get_op(c).outputs[0]).num_elements() == 1);
}

TEST_CASE("SqueezeNet 1.1 with its weights evaluates to the exporter's output") {
    const io::onnx_model m = io::import_onnx(data_dir / "squeezenet1_1.onnx");
    CHECK(count(m.graph, op_kind::conv2d) == 26);
    CHECK(count(m.graph, op_kind::concat) == 8);  // one per fire module
    CHECK(m.graph.parameter_bytes() == 4 * 1'235'496);
    CHECK(m.weight_values.size() == 52);
    const double worst = check_against_exporter("squeezenet1_1");
    MESSAGE("SqueezeNet 1.1: largest relative difference " << worst);
}

TEST_CASE("a 2-layer encoder with embedding and LayerNormalization (opset 17) evaluates to the exporter's output") {
    const io::onnx_model m = io::import_onnx(data_dir / "encoder_small.onnx");
    CHECK(count(m.graph, op_kind::layernorm) == 4);
    CHECK(count(m.graph, op_kind::gather) == 1);  // the embedding lookup; the shape Gathers folded
    check_against_exporter("encoder_small");
}

TEST_CASE("many operator forms (pads, ceil_mode, count_include_pad, BatchNorm, Gemm, Clip, Split) match the exporter") {
    const io::onnx_model m = io::import_onnx(data_dir / "ops_torch.onnx");
    CHECK(count(m.graph, op_kind::batchnorm) == 1);
    CHECK(count(m.graph, op_kind::clip) == 1);
    CHECK(count(m.graph, op_kind::split) == 1);
    check_against_exporter("ops_torch");
}

TEST_CASE("helper-built opset 13 and 11 graphs match numpy") {
    const io::onnx_model m = io::import_onnx(data_dir / "ops_helper.onnx");
    // Constant, Shape, Gather, Equal, Where, Concat of the shape and Expand of a constant
    CHECK(m.folded_nodes == 7);
    const auto r = m.graph.find("reshape");
    REQUIRE(r);
    // Concat(Where(Equal(d, d), d, d), [-1]) with d = Gather(Shape(sq), [0, 2]) = [2, 2]
    CHECK(m.graph.get_op(*r).attrs.get_ints(ops::attr_id::shape) == std::vector<std::int64_t>{2, 2, -1});
    CHECK(m.graph.type_of(m.graph.get_op(*r).outputs[0]).dims == ops::shape{2, 2, 3});
    // Expand of a computed [2,3,2] to [3,1] changes nothing: no op
    CHECK(!m.graph.find("expand_x"));
    check_against_exporter("ops_helper");
    check_against_exporter("ops_opset11");

    // opset 11: Softmax at axis 1 normalizes the flattened trailing block, Gemm's alpha and beta
    // scale by scalars, SAME_UPPER equals TensorFlow's SAME (no pad op)
    const io::onnx_model misc = io::import_onnx(data_dir / "ops_misc.onnx");
    CHECK(count(misc.graph, op_kind::flatten) == 1);
    CHECK(count(misc.graph, op_kind::smul) == 2);
    CHECK(count(misc.graph, op_kind::transpose) == 1);
    CHECK(count(misc.graph, op_kind::pad) == 0);
    CHECK(count(misc.graph, op_kind::reduce_max) == 1);
    check_against_exporter("ops_misc");
}

TEST_CASE("a 2-layer LSTM language model exported by PyTorch unrolls into lstm_cell ops and matches PyTorch") {
    // tests/data/onnx/make_recurrent_upsampling.py: embedding 20x8, nn.LSTM(8, 12, num_layers=2), linear;
    // 5 steps, batch 2; outputs the logits and both layers' final h and c (ONNX's Y, Y_h, Y_c)
    const io::onnx_model m = io::import_onnx(data_dir / "lstm_lm.onnx");
    CHECK(m.onnx_nodes.at("LSTM") == 2);
    CHECK(count(m.graph, op_kind::lstm_cell) == 2 * 5);  // layers x steps
    CHECK(count(m.graph, op_kind::gather) == 1);         // the embedding
    const double worst = check_against_exporter("lstm_lm");
    MESSAGE("LSTM language model: largest relative difference " << worst);
}

TEST_CASE("a bidirectional LSTM with initial states matches PyTorch in Y, Y_h and Y_c") {
    // nn.LSTM(4, 3, bidirectional=True), 3 steps, batch 2, h0 and c0 given
    const io::onnx_model m = io::import_onnx(data_dir / "lstm_bidir.onnx");
    CHECK(count(m.graph, op_kind::lstm_cell) == 2 * 3);  // directions x steps
    const double worst = check_against_exporter("lstm_bidir");
    MESSAGE("bidirectional LSTM: largest relative difference " << worst);
}

TEST_CASE("a 2-layer bidirectional batch-first GRU with an initial state matches PyTorch") {
    // nn.GRU(6, 5, num_layers=2, batch_first=True, bidirectional=True), batch 3, 4 steps; PyTorch
    // exports linear_before_reset = 1 with a nonzero recurrence bias, carried by one extra state unit
    const io::onnx_model m = io::import_onnx(data_dir / "gru_bidir.onnx");
    CHECK(m.onnx_nodes.at("GRU") == 2);
    CHECK(count(m.graph, op_kind::gru_cell) == 2 * 2 * 4);  // layers x directions x steps
    const double worst = check_against_exporter("gru_bidir");
    MESSAGE("bidirectional GRU: largest relative difference " << worst);
}

namespace {

/// An opset-14 model of one LSTM layer (hidden 2, input 2, batch 2, 3 steps) with fixed weights and
/// the given direction and layout, outputs Y, Y_h, Y_c.
std::string lstm_layer(const std::string& direction, std::int64_t layout) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(14);
    auto* g = m.mutable_graph();
    auto* x = g->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (std::int64_t d : layout ? std::vector<std::int64_t>{2, 3, 2} : std::vector<std::int64_t>{3, 2, 2})
        x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    auto weights = [&](const char* name, std::vector<std::int64_t> dims, double phase) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto_DataType_FLOAT);
        std::int64_t n = 1;
        for (auto d : dims) t->add_dims(d), n *= d;
        for (std::int64_t k = 0; k < n; ++k) t->add_float_data(static_cast<float>(0.8 * std::sin(phase + 1.3 * k)));
    };
    weights("W", {1, 8, 2}, 0.1);
    weights("R", {1, 8, 2}, 0.7);
    weights("B", {1, 16}, 1.9);
    auto* n = g->add_node();
    n->set_op_type("LSTM");
    n->set_name("lstm");
    for (const char* in : {"x", "W", "R", "B"}) n->add_input(in);
    for (const char* out : {"y", "y_h", "y_c"}) {
        n->add_output(out);
        g->add_output()->set_name(out);
    }
    auto* a = n->add_attribute();
    a->set_name("direction");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(direction);
    a = n->add_attribute();
    a->set_name("layout");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(layout);
    return m.SerializeAsString();
}

std::vector<interp::value<double>> run_lstm_layer(const std::string& direction, std::int64_t layout,
                                                  const interp::value<double>& x) {
    const auto m = io::import_onnx_bytes(lstm_layer(direction, layout), "lstm.onnx");
    CHECK(count(m.graph, op_kind::lstm_cell) == 3);
    auto feeds = io::weight_feeds<double>(m);
    feeds.emplace("x", x);
    return interp::run<double>(m.graph, feeds);
}

}  // namespace

TEST_CASE("LSTM in reverse equals LSTM forward on the reversed sequence; layout 1 is layout 0 transposed") {
    // x [seq 3, batch 2, input 2] and its reversal in time and its batch-first transpose
    interp::value<double> x = interp::detail::filled(ops::shape{3, 2, 2}, 0.0);
    interp::value<double> reversed = x, batch_first = interp::detail::filled(ops::shape{2, 3, 2}, 0.0);
    for (std::size_t k = 0; k < x.size(); ++k) x.data()[k] = std::cos(0.9 * static_cast<double>(k));
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t i = 0; i < 2; ++i) {
                reversed.data()[((2 - t) * 2 + b) * 2 + i] = x.data()[(t * 2 + b) * 2 + i];
                batch_first.data()[(b * 3 + t) * 2 + i] = x.data()[(t * 2 + b) * 2 + i];
            }
    const auto forward = run_lstm_layer("forward", 0, x);
    const auto reverse = run_lstm_layer("reverse", 0, reversed);
    const auto transposed = run_lstm_layer("forward", 1, batch_first);
    REQUIRE(forward.size() == 3);
    auto dims = [](const interp::value<double>& v) {
        return std::vector<std::size_t>(v.shape().begin(), v.shape().end());
    };
    CHECK(dims(forward[0]) == std::vector<std::size_t>{3, 1, 2, 2});  // Y [seq, directions, batch, hidden]
    CHECK(dims(transposed[0]) == std::vector<std::size_t>{2, 3, 1, 2});
    CHECK(dims(transposed[1]) == std::vector<std::size_t>{2, 1, 2});
    double largest = 0;
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t h = 0; h < 2; ++h) {
                const double y = forward[0].data()[(t * 2 + b) * 2 + h];
                largest = std::max(largest, std::abs(y));
                CHECK(reverse[0].data()[((2 - t) * 2 + b) * 2 + h] == doctest::Approx(y).epsilon(1e-12));
                CHECK(transposed[0].data()[(b * 3 + t) * 2 + h] == doctest::Approx(y).epsilon(1e-12));
            }
    CHECK(largest > 0.05);               // the states are not trivially zero
    for (std::size_t k = 1; k < 3; ++k)  // Y_h and Y_c: [1, batch, hidden] = [batch, 1, hidden] here
        for (std::size_t e = 0; e < 4; ++e) {
            CHECK(reverse[k].data()[e] == doctest::Approx(forward[k].data()[e]).epsilon(1e-12));
            CHECK(transposed[k].data()[e] == doctest::Approx(forward[k].data()[e]).epsilon(1e-12));
        }
}

TEST_CASE("a small U-Net with ConvTranspose and Resize (nearest, bilinear) matches PyTorch") {
    // ConvTranspose (k2 s2; k3 s2 groups 2 pads 1 output_padding 1) lowered onto gathers (one per
    // spatial axis) and conv2d, four Resize forms onto gathers: no op kind of their own
    const io::onnx_model m = io::import_onnx(data_dir / "unet_small.onnx");
    CHECK(m.onnx_nodes.at("ConvTranspose") == 2);
    CHECK(m.onnx_nodes.at("Resize") == 4);
    CHECK(count(m.graph, op_kind::conv2d) == 6);  // 4 convs + 2 transposed
    CHECK(count(m.graph, op_kind::matmul) == 0);
    // per axis, each ConvTranspose gathers once, nearest (2 Resize) once, linear (2 Resize) twice
    CHECK(count(m.graph, op_kind::gather) == 2 * (2 * 1 + 2 * 1 + 2 * 2));
    const double worst = check_against_exporter("unet_small");
    MESSAGE("U-Net: largest relative difference " << worst);
    // what the lowering costs: the FLOPs of its ops against a native transposed convolution's
    // 2 * C * H * W * (O / group) * kh * kw (16x8x8 input; 8 outputs, k2; 4 outputs in 2 groups, k3)
    double lowered = 0, resize = 0, total = 0;
    for (graph::op_id o = 0; o < m.graph.num_ops(); ++o) {
        const std::string& name = m.graph.get_op(o).name;
        const double f = m.graph.flops(o);
        total += f;
        if (name.find("ConvTranspose") != std::string::npos) lowered += f;
        if (name.find("Resize") != std::string::npos) resize += f;
    }
    const double native = 2.0 * 16 * 8 * 8 * (8 * 2 * 2 + 2 * 3 * 3);
    MESSAGE("U-Net: ConvTranspose lowered " << lowered << " FLOPs, native " << native << " (x" << lowered / native
                                            << "); Resize " << resize << " of " << total << " FLOPs");
}

TEST_CASE("bad files give one-line errors naming the problem") {
    SUBCASE("unsupported operators, where they are not kept opaque: the first node, and every unsupported type") {
        const std::string e = import_error(data_dir / "unsupported.onnx", {.keep_unknown_ops = false});
        CHECK(e.find("'top' (TopK)") != std::string::npos);
        CHECK(e.find("unsupported operators in this file: TopK") != std::string::npos);  // LSTM is imported now
    }
    SUBCASE("an input nothing produces") {
        const std::string e = import_error(data_dir / "dangling.onnx");
        CHECK(e.find("'add_bias' (Add)") != std::string::npos);
        CHECK(e.find("'bias'") != std::string::npos);
    }
    SUBCASE("a symbolic dimension needs a given shape") {
        CHECK(import_error(data_dir / "symbolic_dim.onnx").find("'batch'") != std::string::npos);
        io::onnx_options o;
        o.input_shapes["x"] = {4, 3};
        const auto m = io::import_onnx(data_dir / "symbolic_dim.onnx", o);
        CHECK(m.graph.type_of(m.graph.outputs()[0]).dims == ops::shape{4, 3});
        o.input_shapes["x"] = {4, 3, 1};
        CHECK(import_error(data_dir / "symbolic_dim.onnx", o).find("rank") != std::string::npos);
    }
    SUBCASE("a symbolic dimension bound by name") {
        const std::string unbound = import_error(data_dir / "symbolic_dim.onnx");
        CHECK(unbound.find("onnx_options::dim_values[\"batch\"]") != std::string::npos);
        CHECK(unbound.find("onnx_options::input_shapes[\"x\"]") != std::string::npos);
        io::onnx_options o{.dim_values = {{"batch", 5}}};
        const auto m = io::import_onnx(data_dir / "symbolic_dim.onnx", o);
        CHECK(m.graph.type_of(m.graph.outputs()[0]).dims == ops::shape{5, 3});
        o.dim_values["batch"] = 0;
        CHECK(import_error(data_dir / "symbolic_dim.onnx", o).find("bound to 0: expected at least 1") !=
              std::string::npos);
        o.dim_values = {{"bacth", 5}};
        const std::string typo = import_error(data_dir / "symbolic_dim.onnx", o);
        CHECK(typo.find("'bacth' is not a symbolic dimension of any graph input (they have: batch)") !=
              std::string::npos);
        o = {.command_line_hints = true};
        const std::string hint = import_error(data_dir / "symbolic_dim.onnx", o);
        CHECK(hint.find("--dim batch=VALUE") != std::string::npos);
        CHECK(hint.find("--input-shape x=d0,d1,...") != std::string::npos);
    }
    SUBCASE("truncated, not protobuf, missing") {
        const std::string bytes = read(data_dir / "resnet50.onnx");
        for (const std::size_t n : {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 3}) {
            CAPTURE(n);
            CHECK_THROWS_AS((void)io::import_onnx_bytes(std::string_view(bytes).substr(0, n), "cut.onnx"), error);
        }
        CHECK_THROWS_WITH_AS((void)io::import_onnx_bytes("{\"format\": \"goopt.graph\"}", "g.json"),
                             doctest::Contains("g.json: not an ONNX model"), error);
        CHECK(import_error(data_dir / "no_such_file.onnx").find("cannot open") != std::string::npos);
    }
    SUBCASE("every message is one line") {
        for (const char* f : {"unsupported.onnx", "dangling.onnx", "symbolic_dim.onnx"})
            CHECK(import_error(data_dir / f).find('\n') == std::string::npos);
    }
}

TEST_CASE("corrupted files import or raise goopt::error, never crash") {
    // flips bytes of a real export at random places: whatever still parses as a protobuf must be
    // rejected with a goopt::error (or import into a valid graph), nothing else
    const std::string original = read(data_dir / "ops_torch.onnx");
    std::mt19937_64 rng(7);
    std::size_t rejected = 0, imported = 0;
    for (int round = 0; round < 300; ++round) {
        std::string bytes = original;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
        CAPTURE(round);
        try {
            const auto m = io::import_onnx_bytes(bytes, "fuzz.onnx");
            CHECK(graph::problems(m.graph).empty());
            ++imported;
        } catch (const error& e) {
            CHECK(std::string(e.what()).rfind("fuzz.onnx: ", 0) == 0);
            ++rejected;
        }
    }
    MESSAGE(imported << " corrupted files imported, " << rejected << " rejected");
    CHECK(rejected > 0);
}

TEST_CASE("supported operator list is sorted and names the issue's operators") {
    // every row of the op table folds or converts, and elementwise folding names its arithmetic
    // (a run-time check: member-pointer tests are no constant expressions under UBSan)
    for (const auto& h : io::detail::onnx_handlers) {
        CAPTURE(h.op);
        CHECK((h.fold || h.convert));
        if (h.fold == &io::detail::onnx_importer::fold_elementwise) CHECK(h.math);
    }
    const auto ops = io::onnx_supported_ops();
    CHECK(std::is_sorted(ops.begin(), ops.end()));
    for (const char* op : {"Conv",
                           "Gemm",
                           "MatMul",
                           "Relu",
                           "Clip",
                           "Add",
                           "Sub",
                           "Mul",
                           "Div",
                           "Pow",
                           "Sqrt",
                           "Erf",
                           "BatchNormalization",
                           "MaxPool",
                           "AveragePool",
                           "GlobalAveragePool",
                           "Concat",
                           "Split",
                           "Flatten",
                           "Reshape",
                           "Transpose",
                           "Softmax",
                           "ReduceMean",
                           "Gather",
                           "Slice",
                           "Shape",
                           "Constant",
                           "Identity",
                           "Pad",
                           "Where",
                           "Expand",
                           "Unsqueeze",
                           "Squeeze"})
        CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
}
