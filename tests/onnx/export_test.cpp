// ONNX export: graphs written by io::to_onnx and read back by goopt's own importer compute what
// they computed (the test models with their weights, and graphs that use every inference op
// kind); onnx.checker accepts the files with full_check (Python's onnx, where installed); and
// onnxruntime, where tools/ort is installed, computes what goopt's interpreter computes.
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/io/onnx.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/models/zoo.hpp>
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
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace goopt;
using ops::attr_id;
using ops::op_kind;

namespace export_test {

using onnx_testing::max_rel_diff;
using onnx_testing::model_builder;
using onnx_testing::onnx_checker;
using onnx_testing::onnxruntime_disagreement;
using onnx_testing::onnxruntime_missing;
using onnx_testing::onnxruntime_skipped;
using onnx_testing::ort_dir;
using onnx_testing::python_with_onnx;
using onnx_testing::scratch_dir;
using onnx_testing::set_attribute;
using onnx_testing::slurp;

const std::filesystem::path onnx_dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx";
using ints = std::vector<std::int64_t>;

std::string bytes_of(const onnx::ModelProto& m) {
    std::string b;
    REQUIRE(m.SerializeToString(&b));
    return b;
}

/// Random feeds of g, weights and inputs alike, rounded to float as an f32 file holds them; every
/// batchnorm variance positive, as a trained model's.
interp::feed_map<double> float_feeds(const graph::computation_graph& g, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto feeds = interp::random_feeds<double>(g, rng);
    for (auto& [name, v] : feeds)
        for (auto& x : v.storage()) x = static_cast<float>(x);
    for (const auto& op : g.ops())
        if (op.kind == op_kind::batchnorm)
            for (auto& x : feeds.at(g.get_op(g.producer(op.inputs[4])).name).storage()) x = std::abs(x) + 0.5f;
    return feeds;
}

/// What an import of g would have given: g's weights and constants with the values in `feeds`.
io::onnx_model source_of(const graph::computation_graph& g, const interp::feed_map<double>& feeds) {
    io::onnx_model m;
    auto stored = g.ops_of_kind(op_kind::weight);
    for (const auto c : g.ops_of_kind(op_kind::constant)) stored.push_back(c);
    for (const auto w : stored) {
        const auto& op = g.get_op(w);
        const auto& v = feeds.at(op.name);
        m.weight_values[op.name] = io::onnx_tensor{g.type_of(op.outputs[0]), {v.begin(), v.end()}};
    }
    return m;
}

/// Exports g (weights with values), reads the file back with goopt's importer and checks that both
/// compute the same on the same feeds; returns the export.
io::onnx_export_result round_trip(const graph::computation_graph& g, std::int64_t opset, std::uint64_t seed = 7) {
    graph::validate(g);
    const auto feeds = float_feeds(g, seed);
    const io::onnx_model src = source_of(g, feeds);
    auto r = io::to_onnx(g, {.source = &src, .opset = opset});
    CHECK(r.report.opset == opset);
    CHECK(r.report.weight_inputs == 0);
    const io::onnx_model back = io::import_onnx_bytes(bytes_of(r.model), concat(g.name(), "@", opset));
    graph::validate(back.graph);
    auto back_feeds = io::weight_feeds<double>(back);
    for (const auto i : g.ops_of_kind(op_kind::input)) back_feeds.emplace(g.get_op(i).name, feeds.at(g.get_op(i).name));
    const auto want = interp::run<double>(g, feeds);
    const auto got = interp::run<double>(back.graph, back_feeds);
    // the constants the lowerings add (GELU's sqrt 2, layernorm's epsilon) are f32 values in the file
    CHECK_MESSAGE(max_rel_diff(want, got) <= 1e-6, g.name() << " at opset " << opset);
    return r;
}

ops::attribute_map window(ints stride, ops::padding_mode p, ops::activation a = ops::activation::none,
                          ints dilation = {1, 1}) {
    return {{attr_id::stride, stride},
            {attr_id::padding, static_cast<std::int64_t>(p)},
            {attr_id::activation, static_cast<std::int64_t>(a)},
            {attr_id::dilation, dilation}};
}
ops::attribute_map pooling(ints kernel, ints stride, ops::padding_mode p, ops::activation a = ops::activation::none) {
    return {{attr_id::kernel, kernel},
            {attr_id::stride, stride},
            {attr_id::padding, static_cast<std::int64_t>(p)},
            {attr_id::activation, static_cast<std::int64_t>(a)}};
}
ops::attribute_map act(ops::activation a) { return {{attr_id::activation, static_cast<std::int64_t>(a)}}; }
ops::attribute_map source_shape(ints s) { return {{attr_id::shape, s}}; }

constexpr auto same = ops::padding_mode::same;
constexpr auto valid = ops::padding_mode::valid;

/// Convolutions (SAME with an odd cell, strided, dilated, grouped), both conv2d_bias forms, merged
/// convolutions with an enlarged kernel and their split, pooling with fused activations, the
/// constant kernels, batchnorm; outputs that are a split piece, a graph input and one tensor twice.
graph::computation_graph vision_graph() {
    using ops::activation;
    graph::computation_graph g("vision");
    const auto x = g.input("x", {1, 4, 9, 9});
    const auto c1 =
        g.add1(op_kind::conv2d, {x, g.weight("w1", {8, 4, 3, 3})}, window({2, 2}, same, activation::relu), "conv1");
    const auto c2 = g.add1(op_kind::conv2d, {c1, g.weight("w2", {8, 2, 3, 3})},
                           window({1, 1}, same, activation::sigmoid, {2, 2}), "grouped_dilated");
    const auto c3 = g.add1(op_kind::conv2d_bias, {c2, g.weight("w3", {8, 8, 1, 1}), g.weight("b3", {8, 1, 1})},
                           window({1, 1}, valid, activation::gelu), "conv_bias");
    const auto c4 = g.add1(op_kind::conv2d_bias, {c3, g.weight("w4", {8, 8, 3, 3}), g.weight("res", {1, 8, 5, 5})},
                           window({1, 1}, same, activation::tanh), "conv_residual");
    const auto eb =
        g.add1(op_kind::enlarge, {g.weight("wb", {4, 8, 1, 1})}, {{attr_id::kernel, ints{3, 3}}}, "enlarge");
    const auto wcat = g.add1(op_kind::concat, {g.weight("wa", {4, 8, 3, 3}), eb}, {{attr_id::axis, 0}}, "kernels");
    const auto m = g.add1(op_kind::conv2d, {c4, wcat}, window({1, 1}, same), "merged");
    const auto parts = g.add(op_kind::split, {m}, {{attr_id::axis, 1}, {attr_id::sizes, ints{4, 4}}}, "split");
    const auto p = g.add1(op_kind::avgpool2d, {parts[0]}, pooling({3, 3}, {2, 2}, same, activation::relu), "avgpool");
    const auto mp = g.add1(op_kind::maxpool2d, {parts[1]}, pooling({2, 2}, {2, 2}, same), "maxpool");
    const auto a = g.add1(op_kind::ewadd, {p, mp}, {}, "sum");
    const auto dw = g.add1(op_kind::conv2d, {a, g.add1(op_kind::const_pool, {}, source_shape({4, 1, 3, 3}), "pool_k")},
                           window({1, 1}, same), "depthwise_avg");
    const auto id = g.add1(op_kind::conv2d, {dw, g.add1(op_kind::const_iconv, {}, source_shape({4, 4, 3, 3}), "iconv")},
                           window({1, 1}, same), "identity_conv");
    const auto bn = g.add1(
        op_kind::batchnorm,
        {id, g.weight("bn_scale", {4}), g.weight("bn_bias", {4}), g.weight("bn_mean", {4}), g.weight("bn_var", {4})},
        {{attr_id::epsilon, 1e-3}}, "bn");
    // AlexNet's local response normalization, a style network's instance normalization, clamps
    const auto lr = g.add1(
        op_kind::lrn, {bn},
        {{attr_id::size, std::int64_t{3}}, {attr_id::alpha, 0.1}, {attr_id::beta, 0.75}, {attr_id::bias, 2.0}}, "lrn");
    const auto in = g.add1(op_kind::instance_norm, {lr, g.weight("in_scale", {4}), g.weight("in_bias", {4})},
                           {{attr_id::epsilon, 1e-3}}, "instance_norm");
    const auto ss = g.add1(op_kind::softsign, {in}, {}, "softsign");
    const auto hi = g.add1(op_kind::max, {ss, g.weight("floor", {3})}, {}, "max");
    const auto lo = g.add1(op_kind::min, {g.weight("ceiling", {4, 1, 1}), hi}, {}, "min");
    const auto fl = g.add1(op_kind::flatten, {g.add1(op_kind::global_avgpool, {lo}, {}, "gap")}, {}, "flatten");
    g.mark_output(fl);
    g.mark_output(parts[1]);
    g.mark_output(x);
    g.mark_output(fl);
    return g;
}

/// Embedding, layernorm (last axis and two axes), products with fused GELU and a bias, attention,
/// every elementwise kind, the constant sources, data movement and the reductions.
graph::computation_graph transformer_graph() {
    using ops::activation;
    graph::computation_graph g("transformer");
    const auto tok = g.input("tok", {2, 3}, ops::dtype::i64);
    const auto e = g.add1(op_kind::gather, {g.weight("emb", {10, 8}), tok}, {{attr_id::axis, 0}}, "embed");
    const auto ln = g.add1(op_kind::layernorm, {e, g.weight("ln_g", {8}), g.weight("ln_b", {8})}, {}, "ln");
    const auto q = g.add1(op_kind::matmul, {ln, g.weight("wq", {8, 8})}, act(activation::gelu), "q");
    const auto mb = g.add1(op_kind::matmul_bias, {q, g.weight("wk", {8, 8}), g.weight("bk", {8})}, {}, "k");
    const auto t = g.add1(op_kind::transpose, {mb}, {{attr_id::perm, ints{0, 2, 1}}}, "kt");
    const auto sm = g.add1(op_kind::softmax, {g.add1(op_kind::matmul, {mb, t}, {}, "scores")}, {}, "attn");
    const auto ctx = g.add1(op_kind::matmul, {sm, mb}, {}, "ctx");
    const auto s = g.add1(op_kind::smul, {ctx, g.weight("scale", ops::shape{})}, {}, "scaled");
    const auto cl = g.add1(op_kind::clip, {s}, {{attr_id::min, -0.5}, {attr_id::max, 0.5}}, "clip");
    const auto half = g.add1(op_kind::const_fill, {}, {{attr_id::shape, ints{8}}, {attr_id::value, 2.0}}, "two");
    const auto su = g.add1(op_kind::sub, {g.add1(op_kind::div, {cl, half}, {}, "div"), ln}, {}, "sub");
    const auto one = g.add1(op_kind::const_one, {}, source_shape({2, 3, 8}), "ones");
    const auto base = g.add1(op_kind::ewadd, {g.add1(op_kind::ewmul, {su, su}, {}, "square"), one}, {}, "base");
    const auto pw = g.add1(op_kind::pow, {base, g.constant("expo", {1})}, {}, "pow");
    const auto sq = g.add1(op_kind::sqrt, {base}, {}, "sqrt");
    const auto lg = g.add1(op_kind::log, {base}, {}, "log");
    const auto sg = g.add1(op_kind::sigmoid,
                           {g.add1(op_kind::tanh, {g.add1(op_kind::erf, {su}, {}, "erf")}, {}, "tanh")}, {}, "sigmoid");
    const auto gl = g.add1(op_kind::gelu, {su}, {}, "gelu");
    const auto id = g.add1(op_kind::identity, {g.add1(op_kind::relu, {su}, {}, "relu")}, {}, "identity");
    const auto lk = g.add1(op_kind::leaky_relu, {su}, {{attr_id::alpha, 0.1}}, "leaky_relu");
    const auto hs = g.add1(op_kind::hard_sigmoid, {g.add1(op_kind::hard_swish, {su}, {}, "hard_swish")},
                           {{attr_id::alpha, 0.3}, {attr_id::beta, 0.4}}, "hard_sigmoid");
    const auto ex = g.add1(op_kind::exp, {cl}, {}, "exp");
    const auto pr = g.add1(op_kind::prelu, {su, g.weight("prelu_slope", {3, 1})}, {}, "prelu");
    const auto pn = g.add1(op_kind::prelu, {g.weight("narrow", {8}), su}, {}, "prelu_widened");  // an Expand first
    const auto sp = g.add1(op_kind::softplus, {su}, {}, "softplus");
    const auto el = g.add1(op_kind::elu, {su}, {{attr_id::alpha, 0.5}}, "elu");
    const auto ab = g.add1(op_kind::abs, {su}, {}, "abs");
    const auto an = g.add1(op_kind::add_n, {sq, lg, sg, id, pw, gl, lk, hs, ex, pr, pn, sp, el, ab}, {}, "add_n");
    const auto ln2 = g.add1(op_kind::layernorm, {an, g.weight("ln2_g", {3, 8}), g.weight("ln2_b", {3, 8})},
                            {{attr_id::axis, 1}, {attr_id::epsilon, 1e-3}}, "ln2");
    const auto rs = g.add1(op_kind::reshape, {ln2}, {{attr_id::shape, ints{-1, 4}}}, "reshape");
    const auto tr = g.add1(op_kind::transpose, {rs}, {}, "reverse");
    const auto pd = g.add1(op_kind::pad, {tr}, {{attr_id::pads, ints{1, 0, 0, 2}}, {attr_id::value, 0.25}}, "pad");
    const auto sl = g.add1(op_kind::slice, {pd}, {{attr_id::begin, ints{1, 1}}, {attr_id::end, ints{5, 13}}}, "slice");
    const auto rsum = g.add1(op_kind::reduce_sum, {sl}, {{attr_id::axes, ints{1}}, {attr_id::keepdims, 0}}, "rsum");
    const auto rmean = g.add1(op_kind::reduce_mean, {sl}, {}, "rmean");
    const auto rmax = g.add1(op_kind::reduce_max, {sl}, {{attr_id::axes, ints{0}}}, "rmax");
    const auto mm =
        g.add1(op_kind::matmul, {rmax, g.add1(op_kind::const_imm, {}, source_shape({12, 12}), "eye")}, {}, "by_eye");
    g.mark_output(rsum);
    g.mark_output(rmean);
    g.mark_output(g.add1(op_kind::concat, {rmax, mm}, {{attr_id::axis, 0}}, "cat"));
    return g;
}

/// One LSTM step and one GRU step after it; outputs h and c of different cells.
graph::computation_graph recurrent_graph() {
    graph::computation_graph g("recurrent");
    const auto x = g.input("x", {2, 3});
    const auto h = g.input("h", {2, 4});
    const auto c = g.input("c", {2, 4});
    const auto l = g.add(op_kind::lstm_cell,
                         {x, h, c, g.weight("lw", {3, 16}), g.weight("lu", {4, 16}), g.weight("lb", {16})}, {}, "lstm");
    const auto h2 =
        g.add1(op_kind::gru_cell, {x, l[0], g.weight("gw", {3, 12}), g.weight("gu", {4, 12}), g.weight("gb", {12})}, {},
               "gru");
    g.mark_output(h2);
    g.mark_output(l[1]);
    return g;
}

std::vector<graph::computation_graph> kind_graphs() { return {vision_graph(), transformer_graph(), recurrent_graph()}; }

nlohmann::json value_json(const interp::value<double>& v) {
    nlohmann::json j;
    j["shape"] = nlohmann::json::array();
    for (auto d : v.shape()) j["shape"].push_back(d);
    j["data"] = std::vector<double>(v.begin(), v.end());
    return j;
}

TEST_CASE("the test models with their weights export and import back to what they computed") {
    for (const std::string stem : {"squeezenet1_1", "encoder_small", "unet_small", "lstm_lm", "gru_bidir", "ops_misc",
                                   "ops_torch", "ops_opset11"}) {
        CAPTURE(stem);
        const io::onnx_model m = io::import_onnx(onnx_dir / (stem + ".onnx"));
        const auto r = io::to_onnx(m.graph, {.source = &m});
        // the file's operator set where it is 13-22, else 13 with a warning that says so
        if (m.opset >= 13 && m.opset <= 22) {
            CHECK(r.report.opset == m.opset);
            CHECK(r.report.warnings.empty());
        } else {
            CHECK(r.report.opset == 13);
            REQUIRE(r.report.warnings.size() == 1);
            CHECK(r.report.warnings[0] ==
                  concat("the source file's operator set ", m.opset, " is outside 13-22: writing operator set 13"));
        }
        CHECK(r.report.weight_inputs == 0);
        // every weight with a value is an initializer, but those of the LSTM and GRU nodes written back,
        // whose own weights are
        std::size_t recurrent_weights = 0;
        for (const auto& node : m.recurrent_nodes)
            for (const auto& op : node.ops) recurrent_weights += m.weight_values.count(op.name);
        CHECK(r.report.recurrent_written_back == m.recurrent_nodes.size());
        CHECK(r.report.initializers >= m.weight_values.size() - recurrent_weights);
        const io::onnx_model back = io::import_onnx_bytes(bytes_of(r.model), stem + " (exported)");
        // graph inputs and outputs keep their names
        CHECK(back.output_names == m.output_names);
        std::vector<std::string> in_a, in_b;
        for (const auto i : m.graph.ops_of_kind(op_kind::input)) in_a.push_back(m.graph.get_op(i).name);
        for (const auto i : back.graph.ops_of_kind(op_kind::input)) in_b.push_back(back.graph.get_op(i).name);
        CHECK(in_a == in_b);
        // the stored inputs give the same outputs
        auto fa = io::weight_feeds<double>(m);
        auto fb = io::weight_feeds<double>(back);
        for (const auto& [name, v] : onnx_testing::stored_inputs(onnx_dir / (stem + ".json"))) {
            fa.emplace(name, v);
            fb.emplace(name, v);
        }
        // weights the importer computed in double (an LSTM's two biases summed) are f32 in the file
        CHECK(max_rel_diff(interp::run<double>(m.graph, fa), interp::run<double>(back.graph, fb)) <= 1e-6);
    }
}

TEST_CASE("every inference op kind exports at opsets 13, 17, 18 and 22 and imports back to what it computed") {
    std::map<op_kind, int> seen;
    for (const auto& g : kind_graphs()) {
        for (const auto& o : g.ops()) ++seen[o.kind];
        for (const std::int64_t opset : {13, 17, 18, 22}) {
            const auto r = round_trip(g, opset);
            std::map<std::string, int> types;
            for (const auto& n : r.model.graph().node()) ++types[n.op_type()];
            // LayerNormalization is an operator from 17 on, its arithmetic below
            if (!g.ops_of_kind(op_kind::layernorm).empty())
                CHECK((types.count("LayerNormalization") > 0) == (opset >= 17));
        }
    }
    // every kind of an inference graph is covered: all but the gradients and optimizer updates (the
    // imported constants, opaque ops and the later activations come after them)
    for (const auto k : ops::all_op_kinds) {
        const bool training =
            (k > op_kind::add_n && k < op_kind::constant) || k == op_kind::opaque || k == op_kind::lrn_grad;
        CHECK_MESSAGE(seen.count(k) != training, ops::name(k));
    }
}

TEST_CASE("fused kinds are written as standard operators: Conv with a bias input or an Add, Pad of a kernel") {
    const auto g = vision_graph();
    const auto feeds = float_feeds(g, 1);
    const auto src = source_of(g, feeds);
    const auto r = io::to_onnx(g, {.source = &src});
    std::map<std::string, const onnx::NodeProto*> by_name;
    for (const auto& n : r.model.graph().node()) by_name[n.name()] = &n;
    // a per-channel addend is Conv's third input (reshaped to [O]); a residual an Add after Conv
    REQUIRE(by_name.count("conv_bias"));
    CHECK(by_name["conv_bias"]->op_type() == "Conv");
    CHECK(by_name["conv_bias"]->input_size() == 3);
    REQUIRE(by_name.count("conv_residual"));
    CHECK(by_name["conv_residual"]->input_size() == 2);
    REQUIRE(by_name.count("conv_residual/Add"));
    CHECK(by_name["conv_residual/Add"]->input(1) == "res");
    // an enlarged kernel of known values is written enlarged, as an initializer (onnxruntime refuses a
    // Pad that feeds a Conv's weights); without values, as a Pad
    CHECK(by_name.count("enlarge") == 0);
    bool enlarged = false;
    for (const auto& t : r.model.graph().initializer())
        if (t.name() == "enlarge") enlarged = (t.dims_size() == 4 && t.dims(2) == 3 && t.dims(3) == 3);
    CHECK(enlarged);
    for (const auto& t : r.model.graph().initializer()) CHECK(t.name() != "wb");  // read only by the enlarge
    bool padded = false;
    const auto bare = io::to_onnx(g);
    for (const auto& n : bare.model.graph().node())
        if (n.name() == "enlarge") padded = n.op_type() == "Pad";
    CHECK(padded);
    CHECK(by_name["split"]->op_type() == "Split");
    // SAME: half the padding before, half after, and an odd cell at the end, as goopt's windows have it
    const auto& conv1 = *by_name["conv1"];
    for (const auto& a : conv1.attribute())
        if (a.name() == "pads") CHECK(std::vector<std::int64_t>(a.ints().begin(), a.ints().end()) == ints{1, 1, 1, 1});
    const auto& mp = *by_name["maxpool"];
    for (const auto& a : mp.attribute())
        if (a.name() == "pads") CHECK(std::vector<std::int64_t>(a.ints().begin(), a.ints().end()) == ints{0, 0, 1, 1});
    // graph inputs by the input ops' names, outputs by their producers' (no source file names them);
    // an output that is a graph input is listed under the input's name; a tensor given twice comes
    // through an Identity
    const auto& gp = r.model.graph();
    REQUIRE(gp.input_size() == 1);
    CHECK(gp.input(0).name() == "x");
    REQUIRE(gp.output_size() == 4);
    CHECK(gp.output(0).name() == "flatten");
    CHECK(gp.output(1).name() == "split:1");
    CHECK(gp.output(2).name() == "x");
    CHECK(gp.output(3).name() == "flatten_1");
    CHECK(r.report.warnings == std::vector<std::string>{"no source file's operator set: writing operator set 13"});
}

TEST_CASE("a graph without weight values exports its weights as graph inputs, with a warning") {
    const auto g = models::find_workload("squeezenet").build();
    const auto r = io::to_onnx(g);
    const std::size_t weights = g.ops_of_kind(op_kind::weight).size();
    CHECK(r.report.weight_inputs == weights);
    CHECK(r.model.graph().input_size() == static_cast<int>(weights + g.ops_of_kind(op_kind::input).size()));
    REQUIRE(r.report.warnings.size() == 2);
    CHECK(
        r.report.warnings[1].starts_with(concat("the graph has no weight values (it does not come from an ONNX "
                                                "file with data): its ",
                                                weights, " weights are written as graph inputs ('")));
    // and it reads back as the same graph, weights as inputs
    const auto back = io::import_onnx_bytes(bytes_of(r.model), "squeezenet (exported)");
    CHECK(back.graph.ops_of_kind(op_kind::input).size() == static_cast<std::size_t>(r.model.graph().input_size()));
    // a stripped file (some weights without values) says how many
    const io::onnx_model resnet = io::import_onnx(onnx_dir / "resnet50.onnx");
    const auto rr = io::to_onnx(resnet.graph, {.source = &resnet});
    const std::size_t resnet_weights =
        resnet.graph.ops_of_kind(op_kind::weight).size() + resnet.graph.ops_of_kind(op_kind::constant).size();
    CHECK(rr.report.weight_inputs == resnet_weights - resnet.weight_values.size());
    REQUIRE(rr.report.warnings.size() == 1);
    CHECK(rr.report.warnings[0].starts_with(
        concat(rr.report.weight_inputs, " of ", resnet_weights, " weights have no values in the source file")));
}

TEST_CASE("random weights: seeded, scaled by fan-in, positive where a consumer needs it, written as initializers") {
    for (const auto& g : {vision_graph(), transformer_graph()}) {
        CAPTURE(g.name());
        const auto values = io::random_weight_values(g, 7);
        const std::size_t sources = g.ops_of_kind(op_kind::weight).size() + g.ops_of_kind(op_kind::constant).size();
        CHECK(values.size() == sources);
        CHECK(io::random_weight_values(g, 7).at(values.begin()->first).values == values.begin()->second.values);
        CHECK(io::random_weight_values(g, 8).at(values.begin()->first).values != values.begin()->second.values);
        for (const auto& [name, v] : values) {
            CAPTURE(name);
            CHECK(static_cast<std::int64_t>(v.values.size()) == v.type.num_elements());
            const auto [lo, hi] = std::minmax_element(v.values.begin(), v.values.end());
            if (name.starts_with("bn_")) CHECK((*lo >= 0.5 && *hi <= 1.5));  // batchnorm: positive
            if (name == "w1") CHECK((*lo >= -1 / std::sqrt(36.0) && *hi <= 1 / std::sqrt(36.0)));  // [8, 4, 3, 3]
            if (name == "wq") CHECK((*lo >= -1 / std::sqrt(8.0) && *hi <= 1 / std::sqrt(8.0)));  // matmul's [K = 8, 8]
            if (name == "emb") CHECK(*hi <= 1 / std::sqrt(8.0));
        }
        // weights that have values already are left out
        const std::map<std::string, io::onnx_tensor, std::less<>> known{*values.begin()};
        CHECK(io::random_weight_values(g, 7, known).size() == sources - 1);
        // exported as initializers (no weight is a graph input), and they compute finite outputs
        io::onnx_model origin;
        origin.weight_values = values;
        const auto r = io::to_onnx(g, {.source = &origin});
        CHECK(r.report.weight_inputs == 0);
        const auto back = io::import_onnx_bytes(bytes_of(r.model), g.name() + " (random weights)");
        std::mt19937_64 rng(1);
        auto random = interp::random_feeds<double>(back.graph, rng);
        auto feeds = io::weight_feeds<double>(back);
        for (const auto i : back.graph.ops_of_kind(op_kind::input)) {
            const std::string& name = back.graph.get_op(i).name;
            feeds.insert_or_assign(name, random.at(name));
        }
        for (const auto& out : interp::run<double>(back.graph, feeds))
            for (const double x : out.storage()) REQUIRE(std::isfinite(x));
    }
}

TEST_CASE("a graph with no source keeps its output names through a rewrite, given the graph before it") {
    graph::computation_graph g("conv_relu");
    const auto x = g.input("x", {1, 3, 8, 8});
    const auto c = g.add1(op_kind::conv2d, {x, g.weight("w", {8, 3, 3, 3})}, window({1, 1}, same), "conv");
    const auto b = g.add1(op_kind::ewadd, {c, g.weight("b", {8, 1, 1})}, {}, "bias");
    g.mark_output(g.add1(op_kind::relu, {b}, {}, "act"));
    CHECK(io::onnx_output_names(g) == std::vector<std::string>{"act"});
    const auto r = subst::optimize(g, {}, cost::roofline_model{}, device::t4);
    REQUIRE(r.graph.ops_of_kind(op_kind::relu).empty());  // fused: another op computes the output now
    CHECK(io::to_onnx(r.graph).model.graph().output(0).name() != "act");
    const auto kept = io::to_onnx(r.graph, {.output_names = io::onnx_output_names(g)});
    CHECK(kept.model.graph().output(0).name() == "act");
    CHECK_THROWS_WITH_AS((void)io::to_onnx(r.graph, {.output_names = {"a", "b"}}),
                         "onnx export: onnx_export_options::output_names has 2 names for a graph of 1 outputs: "
                         "expected one name per graph output",
                         error);
}

TEST_CASE("what has no ONNX form is refused with one line naming the op and its kind") {
    graph::computation_graph g("train");
    const auto y = g.input("y", {4});
    const auto dy = g.input("dy", {4});
    g.mark_output(g.add1(op_kind::relu_grad, {y, dy}, {}, "relu_back"));
    std::string msg;
    try {
        (void)io::to_onnx(g);
    } catch (const error& e) {
        msg = e.what();
    }
    CHECK(msg ==
          "onnx export: op 'relu_back' (relu_grad): a gradient or optimizer update (training graphs) has no ONNX "
          "lowering: expected an inference graph (the forward ops only)");
    // an opset out of range, and values that do not fit the weight they are given for
    const auto v = vision_graph();
    CHECK_THROWS_WITH_AS((void)io::to_onnx(v, {.opset = 23}), "onnx export: operator set 23 asked for: expected 13-22",
                         error);
    io::onnx_model wrong;
    wrong.weight_values["w1"] = io::onnx_tensor{{ops::shape{2}, ops::dtype::f32}, {1, 2}};
    CHECK_THROWS_WITH_AS((void)io::to_onnx(v, {.source = &wrong}),
                         "onnx export: weight 'w1': the source's value is f32[2] (2 values): expected f32[8,4,3,3] "
                         "as in the graph (is the source the file this graph came from?)",
                         error);
}

TEST_CASE("write_onnx writes a file that imports") {
    scratch_dir dir;
    const io::onnx_model m = io::import_onnx(onnx_dir / "squeezenet1_1.onnx");
    const auto file = dir.path / "squeezenet.onnx";
    const auto report = io::write_onnx(m.graph, file, {.source = &m});
    CHECK(report.nodes > 0);
    const auto back = io::import_onnx(file);
    CHECK(back.graph.num_ops() > 0);
    CHECK(back.weight_values.size() == m.weight_values.size());
}

TEST_CASE("onnx.checker (full_check) accepts the exported files") {
    const std::string python = python_with_onnx();
    if (python.empty()) {
        MESSAGE("skipped: no python3 with the onnx package (Debian: apt-get install python3-onnx)");
        return;
    }
    scratch_dir dir;
    std::vector<std::pair<std::string, onnx::ModelProto>> files;
    for (const auto& g : kind_graphs())
        for (const std::int64_t opset : {13, 17}) {
            const auto feeds = float_feeds(g, 3);
            const auto src = source_of(g, feeds);
            files.emplace_back(concat(g.name(), "_", opset), io::to_onnx(g, {.source = &src, .opset = opset}).model);
        }
    for (const std::string stem : {"squeezenet1_1", "encoder_small", "lstm_lm", "ops_opset11"}) {
        const io::onnx_model m = io::import_onnx(onnx_dir / (stem + ".onnx"));
        files.emplace_back(stem, io::to_onnx(m.graph, {.source = &m}).model);
    }
    files.emplace_back("squeezenet_zoo", io::to_onnx(models::find_workload("squeezenet").build()).model);
    for (const auto& [name, model] : files) {
        CAPTURE(name);
        const auto file = dir.path / (name + ".onnx");
        std::ofstream(file, std::ios::binary) << bytes_of(model);
        CHECK(onnx_checker(python, file) == "");
    }
}

/// onnxruntime's outputs (tools/ort/run_model.js: a list of {"name", "shape", "data"}) for the model
/// `<stem>.onnx` given `inputs` (by name: {"shape", "data"}); the files it writes are `<stem>.*`.
nlohmann::json onnxruntime_outputs(const std::filesystem::path& stem, const nlohmann::json& inputs) {
    const std::string s = stem.string();
    std::ofstream(s + ".in.json") << inputs.dump();
    const std::string cmd = concat("node '", (ort_dir / "run_model.js").string(), "' '", s, ".onnx' --inputs '", s,
                                   ".in.json' --out '", s, ".out.json' 2>'", s, ".err'");
    const int rc = std::system(cmd.c_str());
    REQUIRE_MESSAGE(rc == 0, slurp(s + ".err"));
    return nlohmann::json::parse(slurp(s + ".out.json")).at("outputs");
}

TEST_CASE("onnxruntime computes what the interpreter computes for every inference op kind") {
    if (onnxruntime_skipped()) return;
    scratch_dir dir;
    for (const auto& g : kind_graphs()) {
        // 18 and 22: the reductions' axes as inputs, IR versions 8 and 10
        for (const std::int64_t opset : {13, 17, 18, 22}) {
            CAPTURE(g.name());
            CAPTURE(opset);
            const auto feeds = float_feeds(g, 5);
            const auto src = source_of(g, feeds);
            const auto stem = dir.path / concat(g.name(), "_", opset);
            io::write_onnx(g, stem.string() + ".onnx", {.source = &src, .opset = opset});
            nlohmann::json in;
            for (const auto i : g.ops_of_kind(op_kind::input))
                in[g.get_op(i).name] = value_json(feeds.at(g.get_op(i).name));
            const auto out = onnxruntime_outputs(stem, in);
            const auto want = interp::run<double>(g, feeds);
            REQUIRE(out.size() == want.size());
            double worst = 0;
            for (std::size_t k = 0; k < want.size(); ++k) {
                CAPTURE(out[k].at("name").get<std::string>());
                std::vector<double> got = out[k].at("data").get<std::vector<double>>();
                REQUIRE(got.size() == want[k].size());
                double diff = 0, scale = 0;
                for (std::size_t e = 0; e < got.size(); ++e) {
                    diff = std::max(diff, std::abs(got[e] - want[k].data()[e]));
                    scale = std::max(scale, std::abs(want[k].data()[e]));
                }
                CHECK(diff / std::max(scale, 1e-30) <= 1e-4);
                worst = std::max(worst, diff / std::max(scale, 1e-30));
            }
            MESSAGE(g.name(), " at opset ", opset, ": onnxruntime vs the interpreter, largest max |a - b| / max |b| ",
                    worst);
        }
    }
}

/// One node's model: input "x" (float, `dims`), the node reading `inputs`, output "y"; its inputs
/// other than "x" are initializers, added with floats() and int64s().
struct one_node {
    model_builder b;
    onnx::NodeProto* node = nullptr;  // in b's graph: not copyable
    one_node(const one_node&) = delete;
    one_node& operator=(const one_node&) = delete;
    one_node(const std::vector<std::int64_t>& dims, const std::string& op, std::initializer_list<std::string> inputs,
             std::int64_t opset = 13)
        : b(opset) {
        auto* in = b.g->add_input();
        in->set_name("x");
        auto* t = in->mutable_type()->mutable_tensor_type();
        t->set_elem_type(1);
        for (auto d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
        node = &b.node(op, inputs, {"y"});
        b.output("y");
    }
    void floats(const std::string& name, const std::vector<float>& values, std::vector<std::int64_t> dims = {}) {
        auto* t = b.g->add_initializer();
        t->set_name(name);
        t->set_data_type(1);
        if (dims.empty()) dims = {static_cast<std::int64_t>(values.size())};
        for (auto d : dims) t->add_dims(d);
        for (float v : values) t->add_float_data(v);
    }
    void int64s(const std::string& name, const std::vector<std::int64_t>& values) {
        auto* t = b.g->add_initializer();
        t->set_name(name);
        t->set_data_type(7);
        t->add_dims(static_cast<std::int64_t>(values.size()));
        for (auto v : values) t->add_int64_data(v);
    }
};

/// The model imported, and its output by the interpreter against onnxruntime's on random inputs in
/// [-1, 1]: the largest difference, which must be at most 1e-5 (onnxruntime in float, the
/// interpreter in double). @return the imported model, for its op counts.
io::onnx_model check_against_onnxruntime(const one_node& m, const std::filesystem::path& stem) {
    std::ofstream(stem.string() + ".onnx", std::ios::binary) << m.b.bytes();
    io::onnx_model imported = io::import_onnx(stem.string() + ".onnx");
    ops::shape dims;
    for (const auto& d : m.b.g->input(0).type().tensor_type().shape().dim()) dims.push_back(d.dim_value());
    auto x = interp::detail::filled(dims, 0.0);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (auto& v : x.storage()) v = uniform(rng);
    auto feeds = io::weight_feeds<double>(imported);  // the lowerings' index and weight tables
    feeds.emplace("x", x);
    const auto want = interp::run<double>(imported.graph, feeds);
    const auto out = onnxruntime_outputs(stem, {{"x", value_json(x)}});
    REQUIRE(out.size() == 1);
    const auto got = out[0].at("data").get<std::vector<double>>();
    REQUIRE(got.size() == want[0].size());
    const auto shape = out[0].at("shape").get<std::vector<std::size_t>>();
    CHECK(std::equal(shape.begin(), shape.end(), want[0].shape().begin(), want[0].shape().end()));
    double diff = 0;
    for (std::size_t e = 0; e < got.size(); ++e) diff = std::max(diff, std::abs(got[e] - want[0].data()[e]));
    CHECK(diff <= 1e-5);
    return imported;
}

TEST_CASE("Resize, lowered onto gathers, computes what onnxruntime's Resize computes") {
    if (onnxruntime_skipped()) return;
    struct resize_case {
        const char* mode;
        const char* coordinates;
        const char* rounding;
        std::vector<std::int64_t> dims;
        std::vector<float> scales;  // given, or else sizes
        std::vector<std::int64_t> sizes;
    };
    // every coordinate transformation and rounding, up and down, an extent of 1, a 5-D (trilinear)
    // input and a channel axis
    const std::vector<resize_case> cases{
        {"nearest", "asymmetric", "floor", {1, 2, 3, 5}, {1, 1, 2, 2}, {}},
        {"nearest", "half_pixel", "round_prefer_floor", {1, 2, 4, 6}, {}, {1, 2, 7, 3}},
        {"nearest", "tf_half_pixel_for_nn", "round_prefer_ceil", {1, 2, 4, 6}, {1, 1, 1.5f, 0.5f}, {}},
        {"nearest", "align_corners", "ceil", {1, 2, 3, 5}, {}, {1, 2, 5, 9}},
        {"nearest", "pytorch_half_pixel", "round_prefer_floor", {1, 2, 3, 4}, {1, 2, 1, 1}, {}},
        {"linear", "half_pixel", "", {1, 2, 3, 5}, {1, 1, 2, 2}, {}},
        {"linear", "pytorch_half_pixel", "", {1, 2, 4, 6}, {}, {1, 2, 1, 11}},
        {"linear", "align_corners", "", {1, 2, 3, 5}, {}, {1, 2, 7, 4}},
        {"linear", "asymmetric", "", {1, 2, 4, 6}, {1, 1, 0.5f, 1.5f}, {}},
        {"linear", "half_pixel", "", {1, 1, 3, 4, 5}, {1, 1, 2, 1.5f, 2}, {}},
    };
    scratch_dir dir;
    int k = 0;
    for (const auto& c : cases) {
        CAPTURE(k);
        one_node m(c.dims, "Resize",
                   c.sizes.empty() ? std::initializer_list<std::string>{"x", "", "scales"}
                                   : std::initializer_list<std::string>{"x", "", "", "sizes"});
        if (c.sizes.empty()) m.floats("scales", c.scales);
        else m.int64s("sizes", c.sizes);
        set_attribute(*m.node, "mode", std::string(c.mode));
        set_attribute(*m.node, "coordinate_transformation_mode", std::string(c.coordinates));
        if (*c.rounding) set_attribute(*m.node, "nearest_mode", std::string(c.rounding));
        const auto imported = check_against_onnxruntime(m, dir.path / concat("resize_", k++));
        CHECK(imported.graph.ops_of_kind(op_kind::matmul).empty());
        CHECK(!imported.graph.ops_of_kind(op_kind::gather).empty());
    }
    // Upsample, as older exporters write it: scales as an input (operator set 9) or an attribute (7)
    for (const char* mode : {"nearest", "linear"}) {
        CAPTURE(mode);
        one_node nine({1, 2, 3, 5}, "Upsample", {"x", "scales"}, 9);
        nine.floats("scales", {1, 1, 2, 1.5f});
        set_attribute(*nine.node, "mode", std::string(mode));
        check_against_onnxruntime(nine, dir.path / concat("upsample9_", mode));
        one_node seven({1, 2, 3, 5}, "Upsample", {"x"}, 7);
        set_attribute(*seven.node, "mode", std::string(mode));
        auto* scales = seven.node->add_attribute();
        scales->set_name("scales");
        scales->set_type(onnx::AttributeProto::FLOATS);
        for (float v : {1.0f, 1.0f, 3.0f, 2.0f}) scales->add_floats(v);
        check_against_onnxruntime(seven, dir.path / concat("upsample7_", mode));
    }
}

TEST_CASE("Slice with steps, Pad in every mode, ConvTranspose and 1-D windows compute what onnxruntime computes") {
    if (onnxruntime_skipped()) return;
    scratch_dir dir;
    int k = 0;
    SUBCASE("Slice: steps up and down, from the end, beside a contiguous axis") {
        struct slice_case {
            std::vector<std::int64_t> starts, ends, axes, steps;
        };
        constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
        for (const auto& c : std::vector<slice_case>{
                 {{0, 0}, {8, 8}, {2, 3}, {2, 2}},    // YOLOv5's space-to-depth
                 {{1, 1}, {8, 8}, {2, 3}, {2, 3}},    // odd offsets, two strides
                 {{-1}, {lowest}, {3}, {-1}},         // reversed
                 {{6, 1}, {0, -1}, {2, 1}, {-2, 1}},  // down by 2, and a contiguous channel slice
                 {{-2}, {-9}, {-1}, {-3}},            // negative start, end and axis
                 {{0}, {100}, {2}, {5}},              // an end past the extent
             }) {
            CAPTURE(k);
            one_node m({1, 3, 8, 7}, "Slice", {"x", "starts", "ends", "axes", "steps"});
            m.int64s("starts", c.starts);
            m.int64s("ends", c.ends);
            m.int64s("axes", c.axes);
            m.int64s("steps", c.steps);
            check_against_onnxruntime(m, dir.path / concat("slice_", k++));
        }
    }
    SUBCASE("Pad: constant, edge and reflect, growing and cropping") {
        struct pad_case {
            const char* mode;
            std::vector<std::int64_t> pads;
        };
        for (const auto& c : std::vector<pad_case>{
                 {"constant", {0, 0, 1, 2, 0, 0, 3, 1}},
                 {"constant", {0, 0, -1, 2, 0, 0, 1, -2}},  // cropped and grown
                 {"edge", {0, 0, 2, 3, 0, 0, 1, 0}},
                 {"reflect", {0, 0, 1, 3, 0, 0, 3, 2}},
                 {"reflect", {0, 1, 0, 0, 0, 1, 0, 0}},  // a channel axis
                 {"edge", {0, 0, -1, 2, 0, 0, 2, -3}},
                 {"reflect", {0, 0, 2, -1, 0, 0, -1, 3}},
                 {"wrap", {0, 0, 2, 3, 0, 0, 1, 4}},  // operator set 19
                 {"wrap", {0, 1, 0, 6, 0, 2, 5, 0}},  // a whole period and more, a channel axis
             }) {
            CAPTURE(k);
            CAPTURE(c.mode);
            one_node m({1, 3, 5, 6}, "Pad", {"x", "pads"}, std::string_view(c.mode) == "wrap" ? 19 : 13);
            m.int64s("pads", c.pads);
            set_attribute(*m.node, "mode", std::string(c.mode));
            check_against_onnxruntime(m, dir.path / concat("pad_", k++));
        }
    }
    SUBCASE("ConvTranspose, 2-D and 1-D: strides, dilations, pads that crop and output_padding") {
        struct transposed_case {
            std::vector<std::int64_t> strides, dilations, pads, output_padding;
            std::int64_t group;
        };
        for (const auto& c : std::vector<transposed_case>{
                 {{2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 1},
                 {{3, 2}, {1, 2}, {1, 2, 2, 0}, {2, 1}, 2},
                 {{1, 1}, {1, 1}, {1, 1, 1, 1}, {0, 0}, 1},  // stride 1: no zero inserted, only a crop
             }) {
            CAPTURE(k);
            one_node m({1, 4, 5, 6}, "ConvTranspose", {"x", "w"});
            std::vector<float> w(4 * (6 / c.group) * 3 * 2);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.5 + i));
            m.floats("w", w, {4, 6 / c.group, 3, 2});
            set_attribute(*m.node, "strides", c.strides);
            set_attribute(*m.node, "dilations", c.dilations);
            set_attribute(*m.node, "pads", c.pads);
            set_attribute(*m.node, "output_padding", c.output_padding);
            set_attribute(*m.node, "group", c.group);
            const auto imported = check_against_onnxruntime(m, dir.path / concat("conv_transpose_", k++));
            CHECK(imported.graph.ops_of_kind(op_kind::matmul).empty());
        }
        // the pads from an output_shape (ONNX: the odd cell of the total at the start, or at the end
        // for SAME_UPPER; a target above the natural extent widens it), or from SAME_* alone (the
        // input's extents times the strides); the natural extents here are 11 and 12
        struct target_case {
            std::vector<std::int64_t> output_shape;
            const char* auto_pad;
        };
        for (const auto& c : std::vector<target_case>{{{10, 13}, "NOTSET"},
                                                      {{1, 3, 9, 11}, "SAME_UPPER"},  // the whole shape
                                                      {{}, "SAME_UPPER"},
                                                      {{}, "SAME_LOWER"},
                                                      {{12, 13}, "SAME_LOWER"}}) {  // wider on both axes
            CAPTURE(c.auto_pad);
            CAPTURE(c.output_shape.size());
            one_node m({1, 4, 5, 6}, "ConvTranspose", {"x", "w"});
            std::vector<float> w(4 * 3 * 3 * 2);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.3 + i));
            m.floats("w", w, {4, 3, 3, 2});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{2, 2});
            if (!c.output_shape.empty()) set_attribute(*m.node, "output_shape", c.output_shape);
            set_attribute(*m.node, "auto_pad", std::string(c.auto_pad));
            const auto imported = check_against_onnxruntime(m, dir.path / concat("conv_transpose_target_", k++));
            CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
        }
        {
            one_node m({1, 2, 7}, "ConvTranspose", {"x", "w"});
            m.floats("w", {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, -0.5f}, {2, 1, 3});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{3});
            set_attribute(*m.node, "output_shape", std::vector<std::int64_t>{1, 1, 20});  // natural: 21
            check_against_onnxruntime(m, dir.path / "conv_transpose_1d_target");
        }
        // 1-D, as a vocoder's upsampling layers: stride 4 with a bias, and stride 2 in groups with
        // pads and output_padding
        {
            one_node m({1, 4, 9}, "ConvTranspose", {"x", "w", "b"});
            std::vector<float> w(4 * 3 * 8);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::cos(0.7 * i));
            m.floats("w", w, {4, 3, 8});
            m.floats("b", {0.5f, -0.25f, 0.125f});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{4});
            set_attribute(*m.node, "pads", std::vector<std::int64_t>{2, 2});
            check_against_onnxruntime(m, dir.path / "conv_transpose_1d");
        }
        {
            one_node m({2, 4, 7}, "ConvTranspose", {"x", "w"});
            std::vector<float> w(4 * 1 * 3);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(1.3 * i));
            m.floats("w", w, {4, 1, 3});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{2});
            set_attribute(*m.node, "pads", std::vector<std::int64_t>{1, 0});
            set_attribute(*m.node, "output_padding", std::vector<std::int64_t>{1});
            set_attribute(*m.node, "group", std::int64_t{2});
            check_against_onnxruntime(m, dir.path / "conv_transpose_1d_groups");
        }
    }
    SUBCASE("Conv, MaxPool and AveragePool on [N, C, L]") {
        {
            one_node m({2, 4, 17}, "Conv", {"x", "w", "b"});
            std::vector<float> w(6 * 2 * 3);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(1.0 + i));
            m.floats("w", w, {6, 2, 3});
            m.floats("b", {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.6f});
            set_attribute(*m.node, "group", std::int64_t{2});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{2});
            set_attribute(*m.node, "dilations", std::vector<std::int64_t>{2});
            set_attribute(*m.node, "pads", std::vector<std::int64_t>{3, 1});
            const auto imported = check_against_onnxruntime(m, dir.path / "conv1d");
            CHECK(imported.graph.ops_of_kind(op_kind::conv2d).size() == 1);
        }
        {
            one_node m({1, 3, 20}, "Conv", {"x", "w"});
            std::vector<float> w(5 * 3 * 4);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::cos(2.0 + i));
            m.floats("w", w, {5, 3, 4});
            set_attribute(*m.node, "auto_pad", std::string("SAME_UPPER"));
            check_against_onnxruntime(m, dir.path / "conv1d_same");
        }
        {
            one_node m({1, 3, 16}, "MaxPool", {"x"});
            set_attribute(*m.node, "kernel_shape", std::vector<std::int64_t>{3});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{2});
            set_attribute(*m.node, "pads", std::vector<std::int64_t>{1, 1});
            check_against_onnxruntime(m, dir.path / "maxpool1d");
        }
        {
            one_node m({1, 3, 16}, "AveragePool", {"x"});
            set_attribute(*m.node, "kernel_shape", std::vector<std::int64_t>{4});
            set_attribute(*m.node, "strides", std::vector<std::int64_t>{4});
            check_against_onnxruntime(m, dir.path / "avgpool1d");
        }
    }
}

TEST_CASE("Tile, Reciprocal, Sum, Mean, activations and padded averages compute what onnxruntime computes") {
    if (onnxruntime_skipped()) return;
    scratch_dir dir;
    SUBCASE("Tile: a gather per repeated axis") {
        one_node m({2, 3, 4}, "Tile", {"x", "repeats"});
        m.int64s("repeats", {3, 1, 2});
        const auto imported = check_against_onnxruntime(m, dir.path / "tile");
        CHECK(imported.graph.ops_of_kind(op_kind::gather).size() == 2);
    }
    SUBCASE("Reciprocal, Sum and Mean with broadcasting") {
        {
            one_node m({2, 5}, "Reciprocal", {"shifted"});
            m.floats("three", {3.0f}, {1});
            m.b.node("Add", {"x", "three"}, {"shifted"});
            m.b.g->mutable_node()->SwapElements(0, 1);  // the Add first
            check_against_onnxruntime(m, dir.path / "reciprocal");
        }
        for (const char* op : {"Sum", "Mean"}) {
            CAPTURE(op);
            one_node m({2, 3, 4}, op, {"x", "row", "column"});
            m.floats("row", {0.5f, -1.0f, 2.0f, 0.25f}, {4});
            m.floats("column", {1.0f, -2.0f, 3.0f}, {3, 1});
            check_against_onnxruntime(m, dir.path / concat("variadic_", op));
        }
    }
    SUBCASE("LeakyRelu, HardSigmoid, HardSwish, Exp, PRelu, Elu, Softplus, Abs: kinds of their own") {
        struct activation_case {
            const char* op;
            std::int64_t opset;
            std::vector<std::pair<const char*, float>> attributes;
            std::vector<float> slope = {};  // the second input: PRelu's slope, Max's and Min's other operand
            std::vector<std::int64_t> slope_dims = {};
            std::vector<std::pair<const char*, std::int64_t>> int_attributes = {};
            std::vector<float> third = {};               // InstanceNormalization's bias (its scale is `slope`)
            std::vector<std::int64_t> dims = {2, 3, 5};  // x's
        };
        for (const auto& c :
             std::vector<activation_case>{{"LeakyRelu", 13, {}},
                                          {"LeakyRelu", 13, {{"alpha", 0.2f}}},
                                          {"HardSigmoid", 13, {}},
                                          {"HardSigmoid", 13, {{"alpha", 0.5f}, {"beta", 0.6f}}},
                                          {"HardSwish", 14, {}},
                                          {"Exp", 13, {}},
                                          {"PRelu", 13, {}, {0.1f, -0.5f, 2.0f}, {3, 1}},  // one per channel
                                          {"PRelu", 13, {}, {0.25f}, {1}},
                                          {"PRelu", 13, {}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f}, {5}},  // per column
                                          {"Elu", 13, {}},
                                          {"Elu", 13, {{"alpha", 0.3f}}},
                                          {"Softplus", 13, {}},
                                          {"Abs", 13, {}},
                                          {"Softsign", 13, {}},
                                          // operator set 21: a scale and a bias per channel
                                          {"GroupNormalization",
                                           21,
                                           {{"epsilon", 1e-3f}},
                                           {0.5f, -1.5f, 2.0f, 0.25f},
                                           {4},
                                           {{"num_groups", 2}},
                                           {0.1f, -0.2f, 0.3f, 0.0f},
                                           {2, 4, 3, 2}},
                                          {"GroupNormalization",
                                           18,
                                           {{"epsilon", 1e-3f}},
                                           {0.5f, -1.5f},
                                           {2},
                                           {{"num_groups", 2}},
                                           {0.1f, -0.2f},
                                           {2, 4, 3, 2}},
                                          {"LpNormalization", 13, {}},
                                          {"LpNormalization", 13, {}, {}, {}, {{"axis", 1}, {"p", 1}}},
                                          {"GlobalLpPool", 13, {}},
                                          {"GlobalLpPool", 13, {}, {}, {}, {{"p", 3}}, {}, {2, 3, 5, 2}},
                                          {"Celu", 13, {}},
                                          {"Celu", 13, {{"alpha", 0.5f}}},
                                          {"Selu", 13, {}},
                                          {"Selu", 13, {{"alpha", 1.5f}, {"gamma", 2.0f}}},
                                          {"Mish", 18, {}},
                                          // soft shrinkage (bias = lambd), lowered onto relu and sub
                                          {"Shrink", 13, {{"lambd", 0.5f}, {"bias", 0.5f}}},
                                          {"Shrink", 13, {{"lambd", 1.5f}, {"bias", 1.5f}}},
                                          {"LogSoftmax", 13, {}},
                                          {"LogSoftmax", 13, {}, {}, {}, {{"axis", 1}}},
                                          // before operator set 13: the trailing block from axis 1
                                          {"LogSoftmax", 11, {}, {}, {}, {{"axis", 1}}},
                                          {"Max", 13, {}, {0.5f, -1.0f, 2.0f, 0.0f, -3.0f}, {5}},
                                          {"Min", 13, {}, {0.5f, -1.0f, 2.0f}, {3, 1}},
                                          // onnxruntime's LRN runs 4-D inputs and odd windows only
                                          {"LRN", 13, {}, {}, {}, {{"size", 3}}, {}, {2, 3, 5, 2}},
                                          {"LRN",
                                           13,
                                           {{"alpha", 0.5f}, {"beta", 0.6f}, {"bias", 2.0f}},
                                           {},
                                           {},
                                           {{"size", 5}},
                                           {},
                                           {2, 3, 5, 2}},
                                          {"InstanceNormalization",
                                           13,
                                           {{"epsilon", 1e-3f}},
                                           {0.5f, -1.0f, 2.0f},
                                           {3},
                                           {},
                                           {0.1f, 0.2f, -0.3f}}}) {
            CAPTURE(c.op);
            CAPTURE(c.slope.size());
            one_node m(c.dims, c.op,
                       c.slope.empty()   ? std::initializer_list<std::string>{"scaled"}
                       : c.third.empty() ? std::initializer_list<std::string>{"scaled", "slope"}
                                         : std::initializer_list<std::string>{"scaled", "slope", "third"},
                       c.opset);
            m.floats("four", {4.0f}, {1});  // inputs in [-4, 4]: both sides of every bend
            if (!c.slope.empty()) m.floats("slope", c.slope, c.slope_dims);
            if (!c.third.empty()) m.floats("third", c.third);
            m.b.node("Mul", {"x", "four"}, {"scaled"});
            m.b.g->mutable_node()->SwapElements(0, 1);
            for (const auto& [name, value] : c.attributes) set_attribute(*m.node, name, value);
            for (const auto& [name, value] : c.int_attributes) set_attribute(*m.node, name, value);
            const auto imported = check_against_onnxruntime(
                m, dir.path / concat("activation_", c.op, c.attributes.size(), "_", c.slope.size()));
            CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
        }
    }
    SUBCASE("AveragePool with explicit pads that leave padded cells out, and ceil_mode windows past the pads") {
        struct average_case {
            std::vector<std::int64_t> kernel, strides, pads;
            std::int64_t include_pad, ceil_mode;
        };
        int k = 0;
        for (const auto& c : std::vector<average_case>{
                 {{3, 3}, {1, 1}, {1, 1, 1, 1}, 0, 0},  // Inception's 3x3 average, padding left out
                 {{3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},  // PyTorch's symmetric pads, not SAME's
                 {{2, 2}, {2, 2}, {0, 0, 0, 0}, 0, 1},  // ResNet-D's shortcut on an odd input
                 {{3, 2}, {2, 2}, {1, 0, 1, 0}, 1, 1},  // counted padding, a window past it
                 {{3, 3}, {3, 3}, {1, 2, 0, 1}, 1, 0},  // counted, asymmetric
             }) {
            CAPTURE(k);
            one_node m({1, 2, 7, 9}, "AveragePool", {"x"});
            set_attribute(*m.node, "kernel_shape", c.kernel);
            set_attribute(*m.node, "strides", c.strides);
            set_attribute(*m.node, "pads", c.pads);
            set_attribute(*m.node, "count_include_pad", c.include_pad);
            set_attribute(*m.node, "ceil_mode", c.ceil_mode);
            check_against_onnxruntime(m, dir.path / concat("average_", k++));
        }
        one_node m({1, 2, 9}, "AveragePool", {"x"});  // 1-D
        set_attribute(*m.node, "kernel_shape", std::vector<std::int64_t>{3});
        set_attribute(*m.node, "strides", std::vector<std::int64_t>{2});
        set_attribute(*m.node, "pads", std::vector<std::int64_t>{1, 1});
        set_attribute(*m.node, "ceil_mode", std::int64_t{1});
        check_against_onnxruntime(m, dir.path / "average_1d");
    }
}

// ---- operators goopt has no kind for: opaque ops

/// The message of the goopt::error that `f` raises, or "".
template <class F> std::string error_of(F f) {
    try {
        f();
    } catch (const error& e) {
        return e.what();
    }
    return "";
}

/// An optimized export `out` of `original`: onnx.checker accepts it, and onnxruntime gives both the
/// same outputs (within 1e-4) on random inputs seeded `seed`; each skipped, saying why, where missing.
void check_export_with_tools(const std::filesystem::path& original, const std::filesystem::path& out, int seed) {
    if (const std::string python = python_with_onnx(); python.empty())
        MESSAGE("onnx.checker skipped: no python3 with the onnx package");
    else CHECK(onnx_checker(python, out) == "");
    if (const std::string missing = onnxruntime_missing(); !missing.empty()) {
        MESSAGE("onnxruntime skipped: ", missing);
        return;
    }
    const std::string why = onnxruntime_disagreement(original, out, seed, 1e-4);
    CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("an operator goopt has no kind for is kept opaque, optimized around and exported unchanged") {
    const auto file = onnx_dir / "opaque_ops.onnx";
    const io::onnx_model m = io::import_onnx(file);
    const auto& g = m.graph;
    graph::validate(g);
    // a warning names the kinds; the shapes come from ONNX shape inference
    REQUIRE(m.warnings.size() == 1);
    CHECK(m.warnings[0] ==
          "3 nodes of operators goopt has no kind for kept as opaque ops (no rule rewrites them, the interpreter "
          "cannot run them, an ONNX export writes them unchanged): CumSum: a computed input, Hardmax, Shrink: lambd "
          "0.1 and bias 0.05 (a step at +-lambd)");
    const auto opaque = g.ops_of_kind(op_kind::opaque);
    REQUIRE(opaque.size() == 3);
    REQUIRE(m.opaque_nodes.size() == 3);
    const auto shrink = *g.find("shrink"), cumsum = *g.find("cumsum"), hardmax = *g.find("hardmax");
    CHECK(g.type_of(g.get_op(shrink).outputs[0]).dims == ops::shape{1, 4, 8, 8});
    CHECK(g.get_op(g.producer(g.get_op(cumsum).inputs[1])).kind == op_kind::constant);  // the axis, with its value
    CHECK(m.weight_values.at("axis").values == std::vector<double>{1});
    CHECK(g.type_of(g.get_op(hardmax).outputs[0]).dims == ops::shape{1, 4});
    // memory-bound by the documented rule: inputs and outputs once, one FLOP per output element
    CHECK(g.bytes_accessed(shrink) == 2 * 4 * 4 * 8 * 8);
    CHECK(g.flops(shrink) == 4 * 8 * 8);

    // refused where opaque ops are not kept, by the interpreter, and by training (no gradient)
    CHECK(error_of([&] {
              (void)io::import_onnx(file, {.keep_unknown_ops = false});
          }).find("unsupported operators in this file: Hardmax") != std::string::npos);
    interp::feed_map<double> feeds = io::weight_feeds<double>(m);
    feeds.emplace("x", interp::detail::filled(ops::shape{1, 3, 8, 8}, 0.5));
    CHECK(error_of([&] {
              (void)interp::run<double>(g, feeds);
          }).find("'shrink' (opaque): an opaque op (an imported operator goopt has no kind for) cannot be evaluated") !=
          std::string::npos);
    CHECK(error_of([&] {
              (void)models::make_training_graph(g);
          }).find("(opaque) lies on a path from a weight to the loss, but its kind has no gradient rule") !=
          std::string::npos);

    // the search still rewrites the rest (each conv's bias add fused), never the opaque ops
    const auto r = subst::optimize(g, {}, cost::roofline_model{}, device::t4);
    graph::validate(r.graph);
    CHECK(r.graph.ops_of_kind(op_kind::conv2d_bias).size() == 2);
    REQUIRE(r.graph.ops_of_kind(op_kind::opaque).size() == 3);
    for (const auto o : r.graph.ops_of_kind(op_kind::opaque)) {
        const auto& op = r.graph.get_op(o);
        CHECK(op.attrs == g.get_op(*g.find(op.name)).attrs);
    }

    // exported: the same op type, domain and attributes, between the same neighbours
    const auto exported = io::to_onnx(r.graph, {.source = &m});
    std::map<std::string, const onnx::NodeProto*> by_type;
    for (const auto& n : exported.model.graph().node()) by_type[n.op_type()] = &n;
    for (const auto& n : m.opaque_nodes) {
        onnx::NodeProto want;
        REQUIRE(want.ParseFromString(n));
        CAPTURE(want.op_type());
        REQUIRE(by_type.count(want.op_type()) == 1);
        const onnx::NodeProto& got = *by_type.at(want.op_type());
        CHECK(got.domain() == want.domain());
        CHECK(got.attribute_size() == want.attribute_size());
        for (int a = 0; a < want.attribute_size(); ++a)
            CHECK(got.attribute(a).SerializeAsString() == want.attribute(a).SerializeAsString());
    }
    CHECK(by_type.at("CumSum")->input(0) == by_type.at("ReduceMean")->output(0));
    CHECK(by_type.at("Hardmax")->input(0) == by_type.at("CumSum")->output(0));
    // and imports back with its opaque ops
    const auto back = io::import_onnx_bytes(bytes_of(exported.model), "opaque_ops (exported)");
    CHECK(back.graph.ops_of_kind(op_kind::opaque).size() == 3);

    // a JSON graph keeps them (kind and attributes), but exports only with the file they came from
    const auto text = io::to_json_string(r.graph);
    const auto from_json = io::from_json_string(text, "opaque.json");
    CHECK(io::to_json_string(from_json) == text);
    CHECK(io::to_onnx(from_json, {.source = &m}).model.graph().node_size() == exported.model.graph().node_size());
    CHECK(error_of([&] { (void)io::to_onnx(from_json); })
              .starts_with("onnx export: op 'shrink' (opaque): an opaque op stands for node 0 of the ONNX file it was "
                           "imported from, which is not given (onnx_export_options::source)"));

    scratch_dir dir;
    const auto out = dir.path / "opaque_ops_opt.onnx";
    std::ofstream(out, std::ios::binary) << bytes_of(exported.model);
    check_export_with_tools(file, out, 3);
}

TEST_CASE("a cast of a computed tensor, a comparison on one and a select are kept opaque, and run in onnxruntime") {
    // a BERT export's attention mask (integers cast to floats), a comparison on computed values and a
    // GPT-2 export's causal mask (a select with a constant, mixed condition)
    model_builder b;
    b.input("x", {1, 8, 16}).input("mask", {1, 8}, 7);
    std::vector<float> w(16 * 16);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.3 * static_cast<double>(i)));
    auto* wq = b.g->add_initializer();
    wq->set_name("wq");
    wq->set_data_type(1);
    wq->add_dims(16);
    wq->add_dims(16);
    for (float v : w) wq->add_float_data(v);
    auto* tri = b.g->add_initializer();  // the causal mask, lower triangular
    tri->set_name("tri");
    tri->set_data_type(9);
    tri->add_dims(8);
    tri->add_dims(8);
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) tri->add_int32_data(c <= r ? 1 : 0);
    b.int64s("one_axis", {1}, {1}).floats("one", {}, {1.0f}).floats("big", {}, {-10000.0f}).floats("zero", {}, {0.0f});
    b.node("MatMul", {"x", "wq"}, {"q"});
    set_attribute(b.node("Transpose", {"x"}, {"xt"}), "perm", std::vector<std::int64_t>{0, 2, 1});
    b.node("MatMul", {"q", "xt"}, {"scores"});
    b.node("Unsqueeze", {"mask", "one_axis"}, {"mask3"});
    set_attribute(b.node("Cast", {"mask3"}, {"maskf"}), "to", std::int64_t{1});
    b.node("Sub", {"one", "maskf"}, {"masked"});
    b.node("Mul", {"masked", "big"}, {"bias"});
    b.node("Add", {"scores", "bias"}, {"biased"});
    b.node("Where", {"tri", "biased", "big"}, {"causal"});
    set_attribute(b.node("Softmax", {"causal"}, {"p"}), "axis", std::int64_t{-1});
    b.node("MatMul", {"p", "x"}, {"attended"});
    b.node("Greater", {"attended", "zero"}, {"positive"});
    b.node("Where", {"positive", "attended", "zero"}, {"y"});
    b.output("y");
    const io::onnx_model m = io::import_onnx_bytes(b.bytes(), "masks.onnx");
    graph::validate(m.graph);
    REQUIRE(m.warnings.size() == 1);
    CHECK(m.warnings[0].find("4 nodes of operators goopt has no kind for kept as opaque ops") != std::string::npos);
    CHECK(m.graph.ops_of_kind(op_kind::opaque).size() == 4);  // Cast, two Where and Greater
    // refused, each naming what goopt lacks, where opaque ops are not kept
    CHECK(error_of([&] {
              (void)io::import_onnx_bytes(b.bytes(), "masks.onnx", {.keep_unknown_ops = false});
          }).find("node 'maskf' (Cast): a cast between element types of a computed tensor") != std::string::npos);

    const auto r = subst::optimize(m.graph, {}, cost::roofline_model{}, device::t4);
    const auto exported = io::to_onnx(r.graph, {.source = &m});
    scratch_dir dir;
    const auto original = dir.path / "masks.onnx", out = dir.path / "masks_opt.onnx";
    std::ofstream(original, std::ios::binary) << b.bytes();
    std::ofstream(out, std::ios::binary) << bytes_of(exported.model);
    check_export_with_tools(original, out, 5);
}

TEST_CASE("a form of a supported operator that goopt has no kind for is kept opaque, and runs in onnxruntime") {
    scratch_dir dir;
    int seed = 7;
    // imported with opaque ops kept: the node is one opaque op, and the warning names its form;
    // refused naming the form without
    auto kept_opaque = [&](const one_node& m, const std::string& stem, const std::string& form) {
        CAPTURE(stem);
        const auto original = dir.path / (stem + ".onnx"), out = dir.path / (stem + "_exported.onnx");
        std::ofstream(original, std::ios::binary) << m.b.bytes();
        const io::onnx_model imported = io::import_onnx(original);
        graph::validate(imported.graph);
        CHECK(imported.graph.ops_of_kind(op_kind::opaque).size() == 1);
        REQUIRE(imported.warnings.size() == 1);
        CHECK(imported.warnings[0].find(concat(m.node->op_type(), ": ", form)) != std::string::npos);
        CHECK(error_of([&] { (void)io::import_onnx(original, {.keep_unknown_ops = false}); }).find(form) !=
              std::string::npos);
        std::ofstream(out, std::ios::binary) << bytes_of(io::to_onnx(imported.graph, {.source = &imported}).model);
        check_export_with_tools(original, out, seed++);
    };
    {
        one_node m({1, 2, 4, 4}, "Resize", {"x", "", "scales"});
        m.floats("scales", {1, 1, 2, 1.5f});
        set_attribute(*m.node, "mode", std::string("cubic"));
        kept_opaque(m, "resize_cubic", "mode 'cubic'");
    }
    {
        // TensorFlow's GRU: the reset gate applied before the recurrence matmul
        one_node m({3, 1, 2}, "GRU", {"x", "w", "r"});
        std::vector<float> w(6 * 2);
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
        m.floats("w", w, {1, 6, 2});
        m.floats("r", w, {1, 6, 2});
        set_attribute(*m.node, "hidden_size", std::int64_t{2});
        kept_opaque(m, "gru_reset_first", "linear_before_reset = 0");
    }
    {
        one_node m({2, 1, 3}, "LSTM", {"x", "w", "r"});
        std::vector<float> w(8 * 3), r(8 * 2);
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)));
        for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(std::sin(0.5 * static_cast<double>(i)));
        m.floats("w", w, {1, 8, 3});
        m.floats("r", r, {1, 8, 2});
        set_attribute(*m.node, "hidden_size", std::int64_t{2});
        set_attribute(*m.node, "clip", 0.5f);
        kept_opaque(m, "lstm_clip", "cell clipping (clip)");
    }
    {
        // optional outputs left empty are not a form of their own: an inference BatchNormalization
        one_node m({1, 2, 3, 3}, "BatchNormalization", {"x", "s", "b", "m", "v"});
        for (const char* name : {"s", "b", "m"}) m.floats(name, {0.5f, 1.5f});
        m.floats("v", {1.0f, 2.0f});
        m.node->add_output("");
        m.node->add_output("");
        const io::onnx_model imported = io::import_onnx_bytes(m.b.bytes(), "batchnorm.onnx");
        CHECK(imported.graph.ops_of_kind(op_kind::batchnorm).size() == 1);
        CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
    }
}

TEST_CASE("Einsum's output type from the equation") {
    using io::detail::einsum_output_type;
    auto f32 = [](std::initializer_list<std::int64_t> d) { return ops::tensor_type{ops::shape(d), ops::dtype::f32}; };
    auto dims = [&](const std::string& eq, std::vector<ops::tensor_type> in) {
        const auto t = einsum_output_type(eq, in);
        return t ? t->dims.to_string() : std::string("none");
    };
    CHECK(dims("bij,bjk->bik", {f32({2, 3, 4}), f32({2, 4, 5})}) == "[2,3,5]");
    CHECK(dims("bhqd, bhkd -> bhqk", {f32({1, 8, 7, 16}), f32({1, 8, 9, 16})}) == "[1,8,7,9]");
    CHECK(dims("...ij,...jk", {f32({6, 2, 3, 4}), f32({2, 4, 5})}) == "[6,2,3,5]");    // implicit: ellipsis, i, k
    CHECK(dims("...ij,...jk->...ik", {f32({1, 3, 4}), f32({2, 4, 5})}) == "[2,3,5]");  // 1 broadcast to 2
    CHECK(dims("ij->", {f32({3, 4})}) == "[]");
    CHECK(dims("ji", {f32({3, 4})}) == "[4,3]");                              // implicit: alphabetical
    CHECK(dims("ii->i", {f32({3, 3})}) == "[3]");                             // a diagonal
    CHECK(dims("bij,bjk->bik", {f32({2, 3, 4}), f32({2, 5, 5})}) == "none");  // j is 4 and 5
    CHECK(dims("ij,jk->ik", {f32({2, 3})}) == "none");                        // two terms, one input
    CHECK(dims("ij->iz", {f32({2, 3})}) == "none");                           // z in no input
    CHECK(dims("ij->ii", {f32({2, 3})}) == "none");                           // an output label twice
    CHECK(dims("...ij->......", {f32({2, 3})}) == "none");                    // two ellipses
    CHECK(dims("i.j->ij", {f32({2, 3})}) == "none");                          // not a letter
}

TEST_CASE("Einsum is lowered onto matmuls, transposes and sums, and computes what onnxruntime's Einsum computes") {
    struct einsum_case {
        std::string equation;
        std::vector<std::int64_t> x;                    // the first input's shape
        std::vector<std::vector<std::int64_t>> others;  // the other inputs' shapes (initializers)
        std::size_t matmuls;
    };
    const std::vector<einsum_case> cases{
        {"bij,jk->bik", {2, 3, 4}, {{4, 5}}, 1},
        {"bhqd,bhkd->bhqk", {1, 2, 3, 4}, {{1, 2, 5, 4}}, 1},  // attention's scores
        {"bhqk,bhkd->bhqd", {1, 2, 3, 5}, {{1, 2, 5, 4}}, 1},  // and its weighted values
        {"...ij,...jk", {6, 2, 3, 4}, {{6, 2, 4, 5}}, 1},      // implicit output
        {"...ij,...jk->...ik", {1, 3, 4}, {{2, 4, 5}}, 1},     // an ellipsis axis of 1 broadcast
        {"abc,cd->dba", {2, 3, 4}, {{4, 5}}, 1},               // the output transposed
        {"Ab,bC->CA", {2, 3}, {{3, 4}}, 1},                    // capitals
        {"i,j->ij", {3}, {{4}}, 1},                            // an outer product
        {"bi,bi->b", {2, 3}, {{2, 3}}, 1},                     // a dot product per row
        {"i,i", {3}, {{3}}, 1},                                // implicit: no letter occurs once, a scalar
        {"bij,bkj->bki", {2, 3, 4}, {{2, 5, 4}}, 1},
        {"ij,jk,kl->il", {2, 3}, {{3, 4}, {4, 5}}, 2},      // a chain
        {"bn,anm,bm->ba", {2, 3}, {{4, 3, 5}, {2, 5}}, 2},  // a bilinear form
        {"bij,k->bjk", {2, 3, 4}, {{5}}, 1},                // a sum over i, then an outer product
        {"ji", {3, 4}, {}, 0},                              // implicit: a transpose
        {"ij->", {3, 4}, {}, 0},                            // everything summed
        {"bij->bj", {2, 3, 4}, {}, 0},
    };
    scratch_dir dir;
    std::size_t k = 0;
    for (const auto& c : cases) {
        CAPTURE(c.equation);
        std::vector<std::string> names{"x"};
        for (std::size_t i = 0; i < c.others.size(); ++i) names.push_back(concat("w", i));
        one_node m(c.x, "Einsum", {});
        for (const auto& name : names) m.node->add_input(name);
        set_attribute(*m.node, "equation", c.equation);
        for (std::size_t i = 0; i < c.others.size(); ++i) {
            std::int64_t size = 1;
            for (const auto d : c.others[i]) size *= d;
            std::vector<float> values;
            for (std::int64_t e = 0; e < size; ++e)
                values.push_back(0.25f * static_cast<float>((e * 7 + 3 * i) % 9) - 1.0f);
            m.floats(names[i + 1], values, c.others[i]);
        }
        const io::onnx_model imported = io::import_onnx_bytes(m.b.bytes(), "einsum.onnx");
        CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
        CHECK(imported.graph.ops_of_kind(op_kind::matmul).size() == c.matmuls);
        if (onnxruntime_skipped()) continue;
        check_against_onnxruntime(m, dir.path / concat("einsum_", k++));
    }
}

TEST_CASE(
    "ReduceL1, ReduceL2, ReduceSumSquare, ReduceMin and ReduceLogSumExp, lowered, compute what onnxruntime "
    "computes") {
    struct reduce_case {
        const char* op;
        std::int64_t opset;
        std::vector<std::int64_t> axes;  // as an attribute below operator set 18, an input from 18
        std::int64_t keepdims;
    };
    const std::vector<reduce_case> cases{
        {"ReduceL1", 13, {1}, 1},           {"ReduceL2", 13, {-1}, 0},          {"ReduceL2", 13, {}, 1},
        {"ReduceSumSquare", 13, {0, 2}, 0}, {"ReduceMin", 13, {1}, 0},          {"ReduceMin", 18, {2}, 1},
        {"ReduceLogSumExp", 13, {1}, 0},    {"ReduceLogSumExp", 13, {0, 2}, 1}, {"ReduceL2", 18, {1}, 0},
    };
    scratch_dir dir;
    std::size_t k = 0;
    for (const auto& c : cases) {
        CAPTURE(c.op);
        CAPTURE(c.opset);
        CAPTURE(k);
        const bool as_input = c.opset >= 18 && !c.axes.empty();
        one_node m({2, 3, 4}, c.op,
                   as_input ? std::initializer_list<std::string>{"x", "axes"} : std::initializer_list<std::string>{"x"},
                   c.opset);
        if (as_input) m.int64s("axes", c.axes);
        else if (!c.axes.empty()) set_attribute(*m.node, "axes", c.axes);
        set_attribute(*m.node, "keepdims", c.keepdims);
        const io::onnx_model imported = io::import_onnx_bytes(m.b.bytes(), "reduce.onnx");
        CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
        if (onnxruntime_skipped()) continue;
        check_against_onnxruntime(m, dir.path / concat("reduce_", k++));
    }
    // empty axes that ask for no reduction have no definition to lower: kept opaque
    one_node m({2, 3}, "ReduceL2", {"x"}, 13);
    set_attribute(*m.node, "noop_with_empty_axes", std::int64_t{1});
    CHECK(io::import_onnx_bytes(m.b.bytes(), "noop.onnx").graph.ops_of_kind(op_kind::opaque).size() == 1);
}

TEST_CASE("Split of operator set 18 by num_outputs: the last chunk smaller where they do not divide the extent") {
    for (const std::int64_t extent : {6, 7, 8}) {
        CAPTURE(extent);
        one_node m({2, extent}, "Split", {"x"}, 18);
        m.node->clear_output();
        m.node->set_name("split");
        for (const char* o : {"a", "b", "c"}) m.node->add_output(o);
        set_attribute(*m.node, "axis", std::int64_t{1});
        set_attribute(*m.node, "num_outputs", std::int64_t{3});
        set_attribute(m.b.node("Concat", {"c", "a", "b"}, {"y"}), "axis", std::int64_t{1});  // reordered
        const io::onnx_model imported = io::import_onnx_bytes(m.b.bytes(), "split.onnx");
        const auto split = imported.graph.ops_of_kind(op_kind::split);
        REQUIRE(split.size() == 1);
        const std::int64_t chunk = (extent + 2) / 3;
        CHECK(imported.graph.get_op(split[0]).attrs.get_ints(ops::attr_id::sizes) ==
              std::vector<std::int64_t>{chunk, chunk, extent - 2 * chunk});
        if (onnxruntime_skipped()) continue;
        scratch_dir dir;
        check_against_onnxruntime(m, dir.path / "split");
    }
    // 4 chunks of 2 would need an extent above 6: refused, naming the extent and the chunks
    one_node m({2, 5}, "Split", {"x"}, 18);
    m.node->clear_output();
    for (const char* o : {"a", "b", "c", "y"}) m.node->add_output(o);
    set_attribute(*m.node, "axis", std::int64_t{1});
    set_attribute(*m.node, "num_outputs", std::int64_t{4});
    CHECK(error_of([&] {
              (void)io::import_onnx_bytes(m.b.bytes(), "split.onnx");
          }).find("axis extent 5 in 4 chunks of 2 leaves the last one empty") != std::string::npos);
}

TEST_CASE("LogSoftmax stays finite far below zero, where log(softmax(x)) would be -inf") {
    model_builder b;
    b.input("x", {1, 3});
    b.node("LogSoftmax", {"x"}, {"y"});
    b.output("y");
    const io::onnx_model m = io::import_onnx_bytes(b.bytes(), "log_softmax.onnx");
    interp::feed_map<double> feeds;
    interp::value<double> x = interp::detail::filled(ops::shape{1, 3}, 0.0);
    x.data()[1] = -1000.0;  // exp(-1000) is 0 in double
    x.data()[2] = 2.0;
    feeds.emplace("x", x);
    const auto y = interp::run<double>(m.graph, feeds)[0];
    const double lse = 2.0 + std::log1p(std::exp(-2.0));
    CHECK(y.data()[0] == doctest::Approx(-lse).epsilon(1e-14));
    CHECK(y.data()[1] == doctest::Approx(-1000.0 - lse).epsilon(1e-14));
    CHECK(y.data()[2] == doctest::Approx(2.0 - lse).epsilon(1e-14));
}

TEST_CASE("three Einsums of one input share its reshape, so that the greedy search merges them") {
    // tests/data/onnx/make_einsum_attention.py: q, k and v are Einsum("bsd,de->bse", x, w)
    const io::onnx_model m = io::import_onnx(onnx_dir / "einsum_attention.onnx");
    const auto x = m.graph.get_op(m.graph.ops_of_kind(op_kind::input).at(0)).outputs[0];
    REQUIRE(m.graph.get_tensor(x).uses.size() == 1);  // one reshape to [10, 8] for the three products
    const auto flat = m.graph.get_op(m.graph.get_tensor(x).uses[0].op).outputs[0];
    CHECK(m.graph.get_tensor(flat).uses.size() == 3);
    const auto r = subst::optimize(m.graph, {}, cost::roofline_model{}, device::v100);  // greedy
    CHECK(r.graph.ops_of_kind(op_kind::matmul).size() == 5);                            // q, k, v as one
    CHECK(m.graph.ops_of_kind(op_kind::matmul).size() == 7);
}

TEST_CASE(
    "an Einsum with a diagonal is kept opaque, typed from its equation, optimized around and run in "
    "onnxruntime") {
    model_builder b;
    b.input("x", {2, 3, 3});
    b.floats("w", {3, 5}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f});
    set_attribute(b.node("Einsum", {"x"}, {"d"}), "equation", std::string("bii->bi"));
    b.node("MatMul", {"d", "w"}, {"e"});
    b.node("Relu", {"e"}, {"y"});
    b.output("y");
    const io::onnx_model m = io::import_onnx_bytes(b.bytes(), "einsum.onnx");
    REQUIRE(m.graph.ops_of_kind(op_kind::opaque).size() == 1);
    CHECK(m.graph.type_of(m.graph.get_op(*m.graph.find("d")).outputs[0]).dims == ops::shape{2, 3});
    // refused, naming the form, where opaque ops are not kept
    CHECK(error_of([&] {
              (void)io::import_onnx_bytes(b.bytes(), "einsum.onnx", {.keep_unknown_ops = false});
          }).find("a label repeated within one term (a diagonal)") != std::string::npos);
    if (const std::string missing = onnxruntime_missing(); !missing.empty()) {
        MESSAGE("onnxruntime skipped: ", missing);
        return;
    }
    scratch_dir dir;
    const auto original = dir.path / "einsum.onnx", out = dir.path / "einsum_opt.onnx";
    std::ofstream(original, std::ios::binary) << b.bytes();
    const auto r = subst::optimize(m.graph, {}, cost::roofline_model{}, device::t4);
    std::ofstream(out, std::ios::binary) << bytes_of(io::to_onnx(r.graph, {.source = &m}).model);
    const std::string why = onnxruntime_disagreement(original, out, 2, 1e-5);
    CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("an opaque op's output types: from shape inference on goopt's shapes, else refused at the node") {
    // a batch bound at import reaches the opaque op's output types (the file's value_info is stale)
    onnx::ModelProto mp;
    REQUIRE(mp.ParseFromString(slurp(onnx_dir / "opaque_ops.onnx")));
    auto* d0 =
        mp.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    d0->clear_dim_value();
    d0->set_dim_param("batch");
    const auto m = io::import_onnx_bytes(bytes_of(mp), "batch.onnx", {.dim_values = {{"batch", 2}}});
    CHECK(m.graph.type_of(m.graph.get_op(*m.graph.find("shrink")).outputs[0]).dims == ops::shape{2, 4, 8, 8});
    CHECK(m.graph.type_of(m.graph.get_op(*m.graph.find("hardmax")).outputs[0]).dims == ops::shape{2, 4});
    // an operator no schema knows, with no value_info: refused naming the node and what would do
    auto* n = mp.mutable_graph()->mutable_node(2);
    n->set_op_type("Frobnicate");
    n->set_domain("example.com");
    auto* o = mp.add_opset_import();
    o->set_domain("example.com");
    o->set_version(1);
    const std::string e = error_of([&] {
        (void)io::import_onnx_bytes(bytes_of(mp), "f.onnx", {.dim_values = {{"batch", 2}}});
    });
    CHECK(e.starts_with(
        "f.onnx: node 'shrink' (Frobnicate): operator 'Frobnicate' has no goopt kind, and the type of its "
        "output 'n1' is unknown"));
    // with the file's own shapes, a value_info for the output does
    mp.mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->set_dim_value(1);
    auto* vi = mp.mutable_graph()->add_value_info();
    vi->set_name("n1");
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (const std::int64_t d : {1, 4, 8, 8}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    const auto custom = io::import_onnx_bytes(bytes_of(mp), "f.onnx");
    REQUIRE(custom.graph.ops_of_kind(op_kind::opaque).size() == 3);
    CHECK(custom.warnings.at(0).ends_with(": CumSum: a computed input, Hardmax, example.com.Frobnicate"));
    // and the export imports its domain's operator set
    const auto r = io::to_onnx(custom.graph, {.source = &custom});
    bool imported = false;
    for (const auto& s : r.model.opset_import())
        imported = imported || (s.domain() == "example.com" && s.version() == 1);
    CHECK(imported);
}

TEST_CASE("an opaque op on a scalar gets its output type from shape inference") {
    onnx_testing::model_builder b;
    b.input("x", {2, 3});
    onnx_testing::set_attribute(b.node("ReduceSum", {"x"}, {"s"}), "keepdims", std::int64_t{0});
    b.node("Floor", {"s"}, {"e"});  // no goopt kind: opaque, its input of rank 0
    b.node("Neg", {"e"}, {"y"});
    b.output("y");
    const auto m = io::import_onnx_bytes(b.bytes(), "scalar.onnx");
    const auto opaque = m.graph.ops_of_kind(op_kind::opaque);
    REQUIRE(opaque.size() == 1);
    CHECK(m.graph.type_of(m.graph.get_op(opaque[0]).outputs[0]).dims.rank() == 0);
}

TEST_CASE("a graph input or an initializer that is also a graph output keeps its name there") {
    onnx_testing::model_builder b;
    b.input("x", {2, 3}).floats("w", {2, 3}, {0, 1, 2, 3, 4, 5});
    b.node("Relu", {"x"}, {"y"});
    b.output("y").output("x").output("w").output("x").output("y");  // x and y listed twice, as the file does
    const auto m = io::import_onnx_bytes(b.bytes(), "io.onnx");
    const auto r = io::to_onnx(m.graph, {.source = &m});
    std::vector<std::string> names;
    for (const auto& o : r.model.graph().output()) names.push_back(o.name());
    CHECK(names == std::vector<std::string>{"y", "x", "w", "x", "y"});
    CHECK(r.model.graph().node_size() == 1);  // the Relu alone
    // names given for the export: a tensor under a second name comes through an Identity
    const auto renamed = io::to_onnx(m.graph, {.source = &m, .output_names = {"y", "x", "w", "x2", "y"}});
    names.clear();
    for (const auto& o : renamed.model.graph().output()) names.push_back(o.name());
    CHECK(names == std::vector<std::string>{"y", "x", "w", "x2", "y"});
    CHECK(renamed.model.graph().node_size() == 2);
}

TEST_CASE("LogSoftmax (lowered) and Hardmax (opaque) of operator set 11 keep their meaning when written at 13") {
    // before operator set 13 they flatten to 2-D at axis (default 1); written unchanged at 13 they would
    // work on that one axis: the import works on the flattened tensor with axis 1, where opaque Hardmax
    // is kept and LogSoftmax lowered onto a max, exp, sum and log
    for (const std::string op : {"LogSoftmax", "Hardmax"}) {
        CAPTURE(op);
        onnx_testing::model_builder b(11);
        b.input("x", {2, 3, 4});
        b.node(op, {"x"}, {"y"});
        onnx_testing::set_attribute(b.node(op, {"x"}, {"z"}), "axis", std::int64_t{-1});  // the last axis: as is
        b.output("y").output("z");
        const auto m = io::import_onnx_bytes(b.bytes(), "old.onnx");
        CHECK(m.graph.ops_of_kind(op_kind::flatten).size() == 1);
        CHECK(m.graph.type_of(m.graph.outputs()[0]).dims == ops::shape{2, 3, 4});
        const auto r = io::to_onnx(m.graph, {.source = &m});
        CHECK(r.report.opset == 13);
        int written = 0;
        for (const auto& n : r.model.graph().node()) {
            if (n.op_type() != op) continue;
            ++written;
            for (const auto& a : n.attribute())
                if (a.name() == "axis") CHECK((a.i() == 1 || a.i() == -1));
        }
        const bool opaque = op == "Hardmax";
        CHECK(written == (opaque ? 2 : 0));
        CHECK(m.graph.ops_of_kind(op_kind::opaque).size() == (opaque ? 2 : 0));
        scratch_dir dir;
        const auto in = dir.path / "old.onnx", out = dir.path / "old_exported.onnx";
        std::ofstream(in, std::ios::binary) << b.bytes();
        std::ofstream(out, std::ios::binary) << bytes_of(r.model);
        if (const std::string missing = onnxruntime_missing(); !missing.empty()) {
            MESSAGE("onnxruntime skipped: ", missing);
        } else {
            const std::string why = onnxruntime_disagreement(in, out, 2, 1e-5);
            CHECK_MESSAGE(why.empty(), why);
        }
    }
}

}  // namespace export_test

TEST_CASE("Floor, Ceil, Round, Sign, Mod and the logical operators fold at import, as shape arithmetic uses them") {
    // a target shape [3, 4] for x's 12 elements, computed from Shape(x) = [2, 6] through each of them
    onnx_testing::model_builder b;
    b.input("x", {2, 6});
    b.floats("scale", {2}, {1.25f, 0.7f}).floats("one", {2}, {0.0f, 1.0f}).floats("signs", {2}, {-1.0f, 2.0f});
    b.int64s("five", {2}, {5, 0}).int64s("modulus", {2}, {5, 7}).int64s("neg", {2}, {-7, 7});
    b.int64s("low", {2}, {1, 1}).int64s("high", {2}, {2, 0}).int64s("zero", {2}, {0, 0});
    b.node("Shape", {"x"}, {"s"});
    onnx_testing::set_attribute(b.node("Cast", {"s"}, {"f"}), "to", std::int64_t{1});
    b.node("Mul", {"f", "scale"}, {"m"});  // [2.5, 4.2]
    b.node("Round", {"m"}, {"r"});         // [2, 4]: the half to the even neighbour
    b.node("Ceil", {"m"}, {"c"});          // [3, 5]
    b.node("Floor", {"m"}, {"fl"});        // [2, 4]
    b.node("Sub", {"c", "one"}, {"t"});    // [3, 4]
    b.node("Sub", {"t", "fl"}, {"t1"});
    b.node("Add", {"t1", "r"}, {"t2"});  // [3, 4]
    onnx_testing::set_attribute(b.node("Cast", {"t2"}, {"ti"}), "to", std::int64_t{7});
    b.node("Sub", {"ti", "five"}, {"u"});      // [-2, 4]
    b.node("Mod", {"u", "modulus"}, {"v"});    // [3, 4]: the divisor's sign
    b.node("Sign", {"signs"}, {"sg"});         // [-1, 1]
    b.node("Mod", {"neg", "modulus"}, {"w"});  // [3, 0]
    onnx_testing::set_attribute(b.node("Mod", {"neg", "modulus"}, {"wf"}), "fmod", std::int64_t{1});  // [-2, 0]
    b.node("Greater", {"low", "high"}, {"g"});                                                        // [false, true]
    b.node("Not", {"g"}, {"ng"});                                                                     // [true, false]
    b.node("Or", {"ng", "g"}, {"all"});                                                               // [true, true]
    b.node("And", {"all", "ng"}, {"first"});                                                          // [true, false]
    b.node("Xor", {"first", "g"}, {"both"});                                                          // [true, true]
    b.node("Where", {"both", "v", "zero"}, {"target"});
    b.node("Reshape", {"x", "target"}, {"y"});
    b.output("y").output("sg").output("w").output("wf");
    const auto m = io::import_onnx_bytes(b.bytes(), "arithmetic.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::opaque).empty());
    CHECK(m.graph.type_of(m.graph.outputs()[0]).dims == ops::shape{3, 4});
    auto folded = [&](const std::string& name) {
        for (const auto& [n, v] : m.weight_values)
            if (n == name) return v.values;
        return std::vector<double>{};
    };
    CHECK(folded("sg") == std::vector<double>{-1, 1});
    CHECK(folded("w") == std::vector<double>{3, 0});
    CHECK(folded("wf") == std::vector<double>{-2, 0});
}

TEST_CASE("Trilu of a constant folds at import: a causal mask built in the graph") {
    onnx_testing::model_builder b(14);
    b.input("x", {3, 4});
    b.floats("m", {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}).int64s("k", {}, {-1});
    b.node("Trilu", {"m"}, {"upper"});  // upper, diagonal 0
    onnx_testing::set_attribute(b.node("Trilu", {"m", "k"}, {"lower"}), "upper", std::int64_t{0});
    b.node("Mul", {"x", "upper"}, {"y"});
    b.output("y").output("lower");
    const auto m = io::import_onnx_bytes(b.bytes(), "trilu.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::opaque).empty());
    std::map<std::string, std::vector<double>> folded;
    for (const auto& [name, v] : m.weight_values) folded[name] = v.values;
    CHECK(folded["upper"] == std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
    CHECK(folded["lower"] == std::vector<double>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
}

TEST_CASE("Max and Min of constants fold at import, any number of inputs, integers and reals") {
    // a shape computed from Shape(x) through a three-input Max and a Min, as exporters clamp sizes
    onnx_testing::model_builder b;
    b.input("x", {2, 3});
    b.int64s("low", {2}, {1, 1}).int64s("wide", {2}, {3, 0}).int64s("cap", {2}, {3, 2});
    b.floats("a", {2}, {1.5f, -2.0f}).floats("c", {1}, {0.5f});
    b.node("Shape", {"x"}, {"s"});
    b.node("Max", {"s", "low", "wide"}, {"m"});  // [3, 3]
    b.node("Min", {"m", "cap"}, {"target"});     // [3, 2]
    b.node("Reshape", {"x", "target"}, {"r"});
    b.node("Max", {"a", "c"}, {"bound"});  // [1.5, 0.5], folded to a constant
    b.node("Mul", {"r", "bound"}, {"y"});
    b.output("y");
    const auto m = io::import_onnx_bytes(b.bytes(), "clamp.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::max).empty());
    CHECK(m.graph.ops_of_kind(op_kind::min).empty());
    CHECK(m.graph.type_of(m.graph.outputs()[0]).dims == ops::shape{3, 2});
    bool found = false;
    for (const auto& [name, v] : m.weight_values)
        if (v.values == std::vector<double>{1.5, 0.5}) found = true;
    CHECK(found);
}

TEST_CASE("Gelu of operator set 20, the erf and the tanh forms, computes what onnxruntime's Gelu computes") {
    if (onnx_testing::onnxruntime_skipped()) return;
    onnx_testing::scratch_dir dir;
    for (const std::string approximate : {"", "none", "tanh"}) {
        CAPTURE(approximate);
        export_test::one_node m({2, 3, 5}, "Gelu", {"scaled"}, 20);
        m.floats("four", {4.0f}, {1});  // inputs in [-4, 4]: both tails and the bend
        m.b.node("Mul", {"x", "four"}, {"scaled"});
        m.b.g->mutable_node()->SwapElements(0, 1);
        if (!approximate.empty()) onnx_testing::set_attribute(*m.b.g->mutable_node(1), "approximate", approximate);
        const auto imported = export_test::check_against_onnxruntime(m, dir.path / concat("gelu_", approximate));
        CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
        CHECK(imported.graph.ops_of_kind(op_kind::gelu).size() == (approximate == "tanh" ? 0U : 1U));
    }
    export_test::one_node bad({2, 3}, "Gelu", {"x"}, 20);
    onnx_testing::set_attribute(*bad.node, "approximate", std::string("sigmoid"));
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bad.b.bytes(), "gelu.onnx"),
                         doctest::Contains("approximate 'sigmoid': expected 'none' or 'tanh'"), goopt::error);
}

namespace folding_test {

/// An 8-bit integer initializer (ONNX keeps them in int32_data): INT8 is 3, UINT8 is 2.
void bytes(onnx_testing::model_builder& b, const std::string& name, int type, std::initializer_list<std::int64_t> dims,
           std::initializer_list<std::int32_t> values) {
    auto* t = b.g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_int32_data(v);
}

/// Moves the graph's first node (one_node's own) after every node added since, so that the nodes
/// stay in topological order as ONNX requires.
void first_node_last(onnx_testing::model_builder& b) {
    for (int k = 0; k + 1 < b.g->node_size(); ++k) b.g->mutable_node()->SwapElements(k, k + 1);
}

}  // namespace folding_test

TEST_CASE(
    "quantized weights, trigonometry, comparisons, Size, CumSum, Shrink and reductions of constants fold as "
    "onnxruntime computes them") {
    if (onnx_testing::onnxruntime_skipped()) return;
    onnx_testing::scratch_dir dir;
    // y = x + the sum of 13 folded terms, each of x's shape [2, 3] or broadcast to it
    export_test::one_node m({2, 3}, "Sum",
                            {"x", "dq_tensor", "dq_axis", "qdq", "sin", "cos", "cumsum", "shrink", "ge", "le", "size",
                             "prod", "row_sum", "col_max"},
                            18);
    auto& b = m.b;
    using folding_test::bytes;
    bytes(b, "q8", 3, {2, 3}, {-128, -5, 0, 3, 77, 127});
    bytes(b, "u8", 2, {2, 3}, {0, 10, 255, 128, 7, 200});
    bytes(b, "zero8", 3, {}, {-3});
    bytes(b, "zero_u8", 2, {3}, {128, 0, 10});
    m.floats("scale", {0.05f}, {});
    m.floats("scales", {0.01f, 0.02f, 0.5f}, {3});
    m.floats("c", {-1.5f, -0.3f, 0.0f, 0.4f, 0.6f, 2.0f}, {2, 3});
    m.floats("d", {-1.5f, 0.0f, 1.0f, 0.4f, 0.5f, 3.0f}, {2, 3});
    m.int64s("axis1", {1});
    m.int64s("axes1", {1});
    b.node("DequantizeLinear", {"q8", "scale", "zero8"}, {"dq_tensor"});
    onnx_testing::set_attribute(b.node("DequantizeLinear", {"u8", "scales", "zero_u8"}, {"dq_axis"}), "axis",
                                std::int64_t{1});
    b.node("QuantizeLinear", {"c", "scale", "zero8"}, {"quantized"});  // 2.0 / 0.05 - 3 = 37, -1.5 / 0.05 - 3 = -33
    b.node("DequantizeLinear", {"quantized", "scale", "zero8"}, {"qdq"});
    b.node("Sin", {"c"}, {"sin"});
    b.node("Cos", {"d"}, {"cos"});
    auto& cumsum = b.node("CumSum", {"c", "axis1"}, {"cumsum"});
    onnx_testing::set_attribute(cumsum, "exclusive", std::int64_t{1});
    onnx_testing::set_attribute(cumsum, "reverse", std::int64_t{1});
    auto& shrink = b.node("Shrink", {"d"}, {"shrink"});
    onnx_testing::set_attribute(shrink, "lambd", 0.45f);  // bias 0: hard shrinkage
    b.node("GreaterOrEqual", {"c", "d"}, {"ge_b"});
    onnx_testing::set_attribute(b.node("Cast", {"ge_b"}, {"ge"}), "to", std::int64_t{1});
    b.node("LessOrEqual", {"c", "d"}, {"le_b"});
    onnx_testing::set_attribute(b.node("Cast", {"le_b"}, {"le"}), "to", std::int64_t{1});
    b.node("Size", {"x"}, {"size_i"});
    onnx_testing::set_attribute(b.node("Cast", {"size_i"}, {"size"}), "to", std::int64_t{1});
    b.node("Shape", {"x"}, {"shape"});
    b.node("ReduceProd", {"shape"}, {"prod_i"});  // 6, kept as [1]
    onnx_testing::set_attribute(b.node("Cast", {"prod_i"}, {"prod"}), "to", std::int64_t{1});
    b.node("ReduceSum", {"c", "axes1"}, {"row_sum"});     // [2, 1]
    auto& max = b.node("ReduceMax", {"d"}, {"col_max"});  // every axis, kept: [1, 1]
    onnx_testing::set_attribute(max, "keepdims", std::int64_t{1});
    folding_test::first_node_last(b);
    const auto imported = export_test::check_against_onnxruntime(m, dir.path / "folds");
    CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
}

TEST_CASE(
    "DequantizeLinear folds per block (operator set 21), QuantizeLinear saturates, and a scale that fits no "
    "axis is refused at its node") {
    onnx_testing::model_builder b(21);
    b.input("x", {2, 4});
    folding_test::bytes(b, "q", 3, {2, 4}, {1, 2, 3, 4, -1, -2, -3, -4});
    b.floats("scale", {2, 2}, {1.0f, 10.0f, 100.0f, 1000.0f})
        .floats("big", {2, 4}, {100, -100, 1.25f, 1.75f, -1.25f, 0, 0, 0});
    b.floats("step", {1}, {0.5f});
    onnx_testing::set_attribute(b.node("DequantizeLinear", {"q", "scale"}, {"w"}), "block_size", std::int64_t{2});
    auto& quantize = b.node("QuantizeLinear", {"big", "step"}, {"saturated"});  // no zero point: output_dtype's
    onnx_testing::set_attribute(quantize, "output_dtype", std::int64_t{3});     // int8
    b.node("Mul", {"x", "w"}, {"y"});
    b.output("y").output("saturated");
    const auto m = io::import_onnx_bytes(b.bytes(), "blocks.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::opaque).empty());
    std::map<std::string, std::vector<double>> folded;
    for (const auto& [name, v] : m.weight_values) folded[name] = v.values;
    // blocks of 2 along axis 1: row 0 scales 1 and 10, row 1 scales 100 and 1000
    CHECK(folded["w"] == std::vector<double>{1, 2, 30, 40, -100, -200, -3000, -4000});
    // 100 / 0.5 = 200 and -200 saturate to int8; 2.5, 3.5 and -2.5 round to the even neighbour
    CHECK(folded["saturated"] == std::vector<double>{127, -128, 2, 4, -2, 0, 0, 0});

    onnx_testing::model_builder bad(13);
    bad.input("x", {2, 4});
    folding_test::bytes(bad, "q", 3, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    bad.floats("scale", {3}, {1.0f, 2.0f, 3.0f});
    bad.node("DequantizeLinear", {"q", "scale"}, {"w"});  // axis 1 has 4 indices
    bad.node("Mul", {"x", "w"}, {"y"});
    bad.output("y");
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bad.bytes(), "bad.onnx"),
                         "bad.onnx: node 'w' (DequantizeLinear): a scale of shape [3] for an input of shape [2,4]: "
                         "expected one scale, or one per index of axis 1 ([4])",
                         goopt::error);
}

TEST_CASE(
    "CastLike, as PyTorch's dynamo exporter writes it for scalar operands, folds on constants and is the "
    "identity on a tensor of the target type; IsInf and IsNaN of constants fold") {
    if (onnx_testing::onnxruntime_skipped()) return;
    onnx_testing::scratch_dir dir;
    export_test::one_node m({2, 3}, "Sum", {"scaled", "shifted", "inf_f", "nan_f"}, 18);
    auto& b = m.b;
    auto* half = b.g->add_initializer();  // a double scalar, cast like the float input
    half->set_name("half");
    half->set_data_type(onnx::TensorProto_DataType_DOUBLE);
    half->add_double_data(0.5);
    b.int64s("two", {}, {2});
    b.node("CastLike", {"half", "x"}, {"half_f"});
    b.node("Mul", {"x", "half_f"}, {"scaled"});
    b.node("CastLike", {"two", "x"}, {"two_f"});
    b.node("CastLike", {"x", "scaled"}, {"same"});  // float like float: the tensor itself
    b.node("Add", {"same", "two_f"}, {"shifted"});
    constexpr float inf = std::numeric_limits<float>::infinity();
    m.floats("special", {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1.0f, 0.0f, -2.0f}, {2, 3});
    onnx_testing::set_attribute(b.node("IsInf", {"special"}, {"inf"}), "detect_negative", std::int64_t{0});
    onnx_testing::set_attribute(b.node("Cast", {"inf"}, {"inf_f"}), "to", std::int64_t{1});  // [1, 0, 0, ...]
    b.node("IsNaN", {"special"}, {"nan"});
    onnx_testing::set_attribute(b.node("Cast", {"nan"}, {"nan_f"}), "to", std::int64_t{1});  // [0, 0, 1, ...]
    folding_test::first_node_last(b);
    const auto imported = export_test::check_against_onnxruntime(m, dir.path / "cast_like");
    CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
}

TEST_CASE(
    "If whose condition folds at import is the branch it takes, nested and with the branch's own constants; "
    "a condition computed from the data is refused at its node") {
    if (onnx_testing::onnxruntime_skipped()) return;
    onnx_testing::scratch_dir dir;
    // y = x + branched, branched = if rows(x) > 1 then relu(x) * scale (a nested If on the same
    // condition: the branch's own constant, or x) else -x
    auto branch = [](const std::string& name, std::initializer_list<onnx::NodeProto> nodes, const std::string& out) {
        onnx::GraphProto g;
        g.set_name(name);
        for (const auto& n : nodes) *g.add_node() = n;
        g.add_output()->set_name(out);
        return g;
    };
    auto make = [](const std::string& op, std::initializer_list<std::string> in, const std::string& out) {
        onnx::NodeProto n;
        n.set_op_type(op);
        n.set_name(out);
        for (const auto& i : in) n.add_input(i);
        n.add_output(out);
        return n;
    };
    auto set_branches = [](onnx::NodeProto& n, const onnx::GraphProto& then, const onnx::GraphProto& otherwise) {
        for (const auto& [name, g] : {std::pair{"then_branch", &then}, std::pair{"else_branch", &otherwise}}) {
            auto* a = n.add_attribute();
            a->set_name(name);
            a->set_type(onnx::AttributeProto::GRAPH);
            *a->mutable_g() = *g;
        }
    };
    onnx::GraphProto inner_then = branch("inner_then", {make("Mul", {"r", "scale"}, "scaled")}, "scaled");
    auto* scale = inner_then.add_initializer();  // the branch's own constant
    scale->set_name("scale");
    scale->set_data_type(onnx::TensorProto_DataType_FLOAT);
    scale->add_dims(3);
    for (float v : {0.5f, -2.0f, 3.0f}) scale->add_float_data(v);
    onnx::NodeProto nested = make("If", {"more"}, "inner");
    set_branches(nested, inner_then, branch("inner_else", {make("Identity", {"x"}, "same")}, "same"));
    onnx::GraphProto then = branch("then", {make("Relu", {"x"}, "r"), nested}, "inner");
    onnx::GraphProto otherwise = branch("else", {make("Neg", {"x"}, "negated")}, "negated");

    export_test::one_node m({2, 3}, "Add", {"x", "branched"}, 13);
    auto& b = m.b;
    b.int64s("zero", {}, {0}).int64s("one", {}, {1});
    b.node("Shape", {"x"}, {"shape"});
    b.node("Gather", {"shape", "zero"}, {"rows"});
    b.node("Greater", {"rows", "one"}, {"more"});
    set_branches(b.node("If", {"more"}, {"branched"}), then, otherwise);
    folding_test::first_node_last(b);
    const auto imported = export_test::check_against_onnxruntime(m, dir.path / "if_folded");
    CHECK(imported.graph.ops_of_kind(op_kind::opaque).empty());
    CHECK(imported.graph.ops_of_kind(op_kind::relu).size() == 1);
    CHECK(imported.graph.ops_of_kind(op_kind::ewmul).size() == 1);  // the nested then-branch's Mul, no Neg

    // the condition from the data: control flow
    onnx_testing::model_builder bad(13);
    bad.input("x", {2, 3}).input("flag", {}, onnx::TensorProto_DataType_BOOL);
    set_branches(bad.node("If", {"flag"}, {"y"}), then, otherwise);
    bad.output("y");
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bad.bytes(), "bad.onnx"),
                         "bad.onnx: node 'y' (If): a condition computed from the data (control flow): expected a "
                         "condition known at import time (from shapes or constants)",
                         goopt::error);
}
