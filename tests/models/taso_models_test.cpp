// SqueezeNet, NASNet-A, NasRNN and BERT-base: op counts, parameters, FLOPs, shapes, configs; and every
// TASO model, scaled down, evaluated by the reference interpreter to show that the graphs execute.
#include <goopt/interp/interpreter.hpp>
#include <goopt/models/bert.hpp>
#include <goopt/models/inception_v3.hpp>
#include <goopt/models/nasnet_a.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/resnet.hpp>
#include <goopt/models/squeezenet.hpp>

#include <doctest/doctest.h>
#include <xtensor/xmath.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace taso_models_test {

std::map<op_kind, int> kinds(const graph::computation_graph& g) {
    std::map<op_kind, int> n;
    for (const auto& o : g.ops()) ++n[o.kind];
    return n;
}

std::int64_t weight_elements(const graph::computation_graph& g) {
    std::int64_t n = 0;
    for (const auto& o : g.ops())
        if (o.kind == op_kind::weight) n += g.type_of(o.outputs[0]).num_elements();
    return n;
}

double flops_of(const graph::computation_graph& g, std::initializer_list<op_kind> which) {
    double f = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v)
        for (auto k : which)
            if (g.get_op(v).kind == k) f += g.flops(v);
    return f;
}

ops::shape out_shape(const graph::computation_graph& g, const std::string& op) {
    const auto v = g.find(op);
    REQUIRE_MESSAGE(v.has_value(), "no op named " << op);
    return g.type_of(g.get_op(*v).outputs[0]).dims;
}

/// Random feeds with positive batchnorm variances (uniform [-1, 1) would give sqrt of negatives).
interp::feed_map<float> feeds_for(const graph::computation_graph& g, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto feeds = interp::random_feeds<float>(g, rng);
    for (auto& [name, v] : feeds)
        if (name.ends_with("running_var")) v = xt::abs(v) + 0.5f;
    return feeds;
}

/// Runs g on the feeds; checks that every output has the shape the graph inferred and is finite.
std::vector<interp::value<float>> run_checked(const graph::computation_graph& g, const interp::feed_map<float>& feeds) {
    auto out = interp::run(g, feeds);
    REQUIRE(out.size() == g.outputs().size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        const ops::shape& want = g.type_of(g.outputs()[i]).dims;
        REQUIRE(out[i].dimension() == want.rank());
        for (std::size_t d = 0; d < want.rank(); ++d) CHECK(static_cast<std::int64_t>(out[i].shape()[d]) == want[d]);
        bool finite = true;
        for (float x : out[i]) finite = finite && std::isfinite(x);
        CHECK_MESSAGE(finite, g.name() << " output " << i << " has a NaN or infinity");
    }
    return out;
}

TEST_CASE("squeezenet 1.1: op counts, torchvision's 1,235,496 parameters, 0.35 GMACs, shapes") {
    const auto g = models::squeezenet();
    // 8 fire modules x 3 convs (squeeze, expand1x1, expand3x3) + conv1 + the classifier conv = 26 convs,
    // each with a bias ewadd and a relu; 8 concats (one per fire); 3 max pools; 2 weights per conv.
    const auto n = kinds(g);
    CHECK(n.at(op_kind::conv2d) == 26);
    CHECK(n.at(op_kind::ewadd) == 26);
    CHECK(n.at(op_kind::relu) == 26);
    CHECK(n.at(op_kind::concat) == 8);
    CHECK(n.at(op_kind::maxpool2d) == 3);
    CHECK(n.at(op_kind::weight) == 52);
    CHECK(n.at(op_kind::global_avgpool) == 1);
    CHECK(n.at(op_kind::flatten) == 1);
    CHECK(n.at(op_kind::input) == 1);
    CHECK(n.size() == 9);
    // conv1 64*3*9 + 64 = 1,792; fire(in, s, e) = in*s + s + s*e + e + 9*s*e + e: 11,408 + 12,432 +
    // 45,344 + 49,440 + 104,880 + 111,024 + 188,992 + 197,184; classifier 512*1000 + 1000
    CHECK(weight_elements(g) ==
          1'792 + 11'408 + 12'432 + 45'344 + 49'440 + 104'880 + 111'024 + 188'992 + 197'184 + 513'000);
    CHECK(weight_elements(g) == 1'235'496);
    CHECK(flops_of(g, {op_kind::conv2d}) / 2 == doctest::Approx(0.349e9).epsilon(0.01));
    CHECK(out_shape(g, "features.0.relu") == ops::shape{1, 64, 111, 111});
    CHECK(out_shape(g, "features.2") == ops::shape{1, 64, 55, 55});  // VALID pools = torchvision's ceil mode here
    CHECK(out_shape(g, "features.8") == ops::shape{1, 256, 13, 13});
    CHECK(out_shape(g, "features.12.concat") == ops::shape{1, 512, 13, 13});
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    CHECK(g.get_op(*g.find("features.12.expand3x3")).layer == 8);
    const auto b4 = models::squeezenet({.batch = 4, .num_classes = 10});
    CHECK(b4.type_of(b4.outputs()[0]).dims == ops::shape{4, 10});
    CHECK_THROWS_AS(models::squeezenet({.image = 34}), error);
}

TEST_CASE("nasnet_a: TASO's 3 stacks of 5 normal cells + a reduction cell") {
    const auto g = models::nasnet_a();
    // 18 cells (15 normal, 3 reduction), each: squeeze + fit convs and 5 separable convs of 2 convs
    // = 12 convs (one weight each), 5 ewadds, 1 concat; normal cells have 3 average pools,
    // reduction cells 2 average and 2 max pools. Head: global pool, flatten, fc matmul + bias.
    const auto n = kinds(g);
    CHECK(n.at(op_kind::conv2d) == 18 * 12);
    CHECK(n.at(op_kind::ewadd) == 18 * 5 + 1);
    CHECK(n.at(op_kind::concat) == 18);
    CHECK(n.at(op_kind::avgpool2d) == 15 * 3 + 3 * 2);
    CHECK(n.at(op_kind::maxpool2d) == 3 * 2);
    CHECK(n.at(op_kind::weight) == 18 * 12 + 2);
    CHECK(n.at(op_kind::matmul) == 1);
    CHECK(g.num_ops() == 216u + 91 + 18 + 51 + 6 + 218 + 4);  // + input, global pool, flatten, fc
    // filters 128, 256, 512 in the normal cells; reductions to 256, 512, 1024 (x5 concatenated)
    CHECK(out_shape(g, "cell0.concat") == ops::shape{1, 640, 56, 56});
    CHECK(out_shape(g, "cell5.concat") == ops::shape{1, 1280, 28, 28});
    CHECK(out_shape(g, "cell6.concat") == ops::shape{1, 1280, 28, 28});
    CHECK(out_shape(g, "cell11.concat") == ops::shape{1, 2560, 14, 14});
    CHECK(out_shape(g, "cell17.concat") == ops::shape{1, 5120, 7, 7});
    CHECK(g.type_of(g.get_op(*g.find("cell5.sep0.depthwise.weight")).outputs[0]).dims == ops::shape{256, 1, 7, 7});
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    CHECK(g.get_op(*g.find("cell7.sep3.pointwise")).layer == 7);
    CHECK(g.get_op(*g.find("fc")).layer == 18);

    const auto small = models::nasnet_a({.stacks = 2, .cells = 2});
    CHECK(kinds(small).at(op_kind::concat) == 6);
    CHECK(out_shape(small, "cell5.concat") == ops::shape{1, 2560, 14, 14});
}

TEST_CASE("nasrnn: TASO's hidden 512, 5 steps") {
    const auto g = models::nasrnn();
    // per step: 8 combines of 2 matmuls and an ewadd; the tree: 3 ewadds, 4 ewmuls, 2 relus,
    // 5 sigmoids (t1, t3, t4, t6 and m1), 8 tanhs (t2, t5, m0, m2, m3, m4, m5 and the new state);
    // 16 weight matrices per step (TASO's graph shares none) + the initial state.
    const auto n = kinds(g);
    CHECK(n.at(op_kind::matmul) == 5 * 16);
    CHECK(n.at(op_kind::ewadd) == 5 * 11);
    CHECK(n.at(op_kind::ewmul) == 5 * 4);
    CHECK(n.at(op_kind::relu) == 5 * 2);
    CHECK(n.at(op_kind::sigmoid) == 5 * 5);
    CHECK(n.at(op_kind::tanh) == 5 * 8);
    CHECK(n.at(op_kind::input) == 5);
    CHECK(n.at(op_kind::weight) == 5 * 16 + 1);
    CHECK(n.size() == 8);
    CHECK(weight_elements(g) == 80 * 512 * 512 + 512);
    CHECK(flops_of(g, {op_kind::matmul}) == 80.0 * 2 * 512 * 512);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 512});
    CHECK(g.get_op(*g.find("step3.combine5.x")).layer == 3);

    const auto shared = models::nasrnn({.batch = 4, .hidden = 64, .steps = 8, .shared_weights = true});
    CHECK(kinds(shared).at(op_kind::weight) == 17);
    CHECK(kinds(shared).at(op_kind::matmul) == 8 * 16);
    CHECK(shared.type_of(shared.outputs()[0]).dims == ops::shape{4, 64});
}

TEST_CASE("bert: BERT-base op counts and its 109,482,240 parameters") {
    const auto g = models::bert();
    // Per encoder layer: matmuls Q, K, V, scores, context, attention output, FFN in, FFN out (8);
    // ewadds: 6 biases + 2 residuals (8); reshape and transpose of Q, K, V and the context (4 + 4);
    // softmax 1, layernorm 2, gelu 1; weights: 6 dense (weight + bias) + 2 layernorms (gamma + beta)
    // = 16. Embeddings: 2 gathers, 1 slice (positions), 2 ewadds, 1 layernorm, 5 weights, 2 inputs.
    // Pooler: slice, reshape, matmul, bias ewadd, tanh, 2 weights.
    const auto n = kinds(g);
    CHECK(n.at(op_kind::matmul) == 12 * 8 + 1);
    CHECK(n.at(op_kind::ewadd) == 12 * 8 + 2 + 1);
    CHECK(n.at(op_kind::reshape) == 12 * 4 + 1);
    CHECK(n.at(op_kind::transpose) == 12 * 4);
    CHECK(n.at(op_kind::softmax) == 12);
    CHECK(n.at(op_kind::layernorm) == 12 * 2 + 1);
    CHECK(n.at(op_kind::gelu) == 12);
    CHECK(n.at(op_kind::gather) == 2);
    CHECK(n.at(op_kind::slice) == 2);
    CHECK(n.at(op_kind::tanh) == 1);
    CHECK(n.at(op_kind::weight) == 12 * 16 + 5 + 2);
    CHECK(n.at(op_kind::input) == 2);
    CHECK(n.size() == 12);
    // embeddings (30522 + 512 + 2) * 768 + 2 * 768 = 23,837,184; per layer 4 * (768^2 + 768) +
    // (768*3072 + 3072) + (3072*768 + 768) + 4 * 768 = 7,087,872; pooler 768^2 + 768 = 590,592
    CHECK(weight_elements(g) == 23'837'184 + 12 * 7'087'872 + 590'592);
    CHECK(weight_elements(g) == 109'482'240);
    // matmul FLOPs per layer: 2*S*(4*H^2 + 2*H*4H) + 2 * 2*S^2*H = 1,862,270,976 at S 128, H 768
    CHECK(flops_of(g, {op_kind::matmul}) == 12 * 1'862'270'976.0 + 2.0 * 768 * 768);
    REQUIRE(g.outputs().size() == 2);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 128, 768});
    CHECK(g.type_of(g.outputs()[1]).dims == ops::shape{1, 768});
    CHECK(out_shape(g, "encoder.layer.0.attention.self.scores") == ops::shape{1, 12, 128, 128});
    CHECK(out_shape(g, "encoder.layer.0.attention.self.key.transpose") == ops::shape{1, 12, 64, 128});
    CHECK(g.get_op(*g.find("encoder.layer.3.attention.self.query")).layer == 4);
    CHECK(g.get_op(*g.find("embeddings.LayerNorm")).layer == 0);
    CHECK(g.get_op(*g.find("pooler.tanh")).layer == 13);

    const auto small = models::bert({.batch = 8, .seq_length = 64, .layers = 2});
    CHECK(kinds(small).at(op_kind::softmax) == 2);
    CHECK(small.type_of(small.outputs()[0]).dims == ops::shape{8, 64, 768});
    CHECK_THROWS_AS(models::bert({.heads = 7}), error);
    CHECK_THROWS_AS(models::bert({.seq_length = 513}), error);
}

TEST_CASE("every TASO model, scaled down, runs in the interpreter") {
    SUBCASE("resnet50") {
        const auto g = models::resnet50({.image = 32, .num_classes = 10, .width = 4});
        run_checked(g, feeds_for(g, 1));
    }
    SUBCASE("resnext50") {
        const auto g =
            models::resnext50({.image = 32, .num_classes = 10, .width = 16, .groups = 4, .width_per_group = 16});
        run_checked(g, feeds_for(g, 2));
    }
    SUBCASE("inception_v3") {
        const auto g = models::inception_v3({.image = 75, .num_classes = 10, .channel_divisor = 16});
        run_checked(g, feeds_for(g, 3));
    }
    SUBCASE("squeezenet: logits are averages of relu outputs, so never negative") {
        const auto g = models::squeezenet({.batch = 2, .image = 48, .num_classes = 10, .channel_divisor = 16});
        const auto out = run_checked(g, feeds_for(g, 4));
        float lo = 0;
        for (float x : out[0]) lo = std::min(lo, x);
        CHECK(lo >= 0.0f);
    }
    SUBCASE("nasnet_a") {
        const auto g = models::nasnet_a({.channels = 4, .image = 16, .stacks = 3, .cells = 2, .num_classes = 10});
        run_checked(g, feeds_for(g, 5));
    }
    SUBCASE("bert: with unit gamma and zero beta the last layernorm gives mean 0, variance 1 per token") {
        const auto g = models::bert({.batch = 2,
                                     .seq_length = 8,
                                     .layers = 2,
                                     .hidden = 32,
                                     .heads = 4,
                                     .intermediate = 64,
                                     .vocab = 50,
                                     .max_positions = 16});
        auto feeds = feeds_for(g, 6);
        feeds.at("encoder.layer.1.output.LayerNorm.weight").fill(1.0f);
        feeds.at("encoder.layer.1.output.LayerNorm.bias").fill(0.0f);
        feeds.at("pooler.dense.weight") *= 0.1f;  // keeps tanh away from saturating to exactly +-1 in float
        const auto out = run_checked(g, feeds);
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t s = 0; s < 8; ++s) {
                double mean = 0, sq = 0;
                for (std::size_t h = 0; h < 32; ++h) mean += out[0](b, s, h);
                mean /= 32;
                for (std::size_t h = 0; h < 32; ++h) sq += (out[0](b, s, h) - mean) * (out[0](b, s, h) - mean);
                CHECK(mean == doctest::Approx(0.0).epsilon(1e-4).scale(1.0));
                CHECK(sq / 32 == doctest::Approx(1.0).epsilon(1e-3));
            }
        float lo = 1, hi = -1;  // the pooler ends in tanh
        for (float x : out[1]) lo = std::min(lo, x), hi = std::max(hi, x);
        CHECK(lo > -1.0f);
        CHECK(hi < 1.0f);
    }
}

TEST_CASE("nasrnn: TASO's unshared graph equals the shared-weight RNN when every step gets the same weights") {
    const auto shared = models::nasrnn({.batch = 2, .hidden = 16, .steps = 3, .shared_weights = true});
    const auto unshared = models::nasrnn({.batch = 2, .hidden = 16, .steps = 3});
    const auto feeds = feeds_for(shared, 7);
    interp::feed_map<float> copied;
    for (const auto& [name, v] : feeds) {
        if (name.starts_with("cell."))  // cell.w3 -> step0.w3, step1.w3, step2.w3
            for (int s = 0; s < 3; ++s) copied.emplace("step" + std::to_string(s) + "." + name.substr(5), v);
        else copied.emplace(name, v);  // h0, x0..x2
    }
    const auto a = run_checked(shared, feeds);
    auto b = run_checked(unshared, copied);
    for (float x : a[0]) CHECK((x > -1.0f && x < 1.0f));  // the state is a tanh
    CHECK(xt::allclose(a[0], b[0], 1e-5, 1e-6));
    // and a different weight in one step changes the result: the steps are really wired in sequence
    copied.at("step1.u6") = copied.at("step1.u6") * 0.5f;
    b = run_checked(unshared, copied);
    CHECK_FALSE(xt::allclose(a[0], b[0], 1e-5, 1e-6));
}

}  // namespace taso_models_test
