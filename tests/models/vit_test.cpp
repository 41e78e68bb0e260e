// ViT (models/vit.hpp): per-layer op count, ViT-B/16's published parameter count and FLOPs, a tiny
// ViT evaluated by the interpreter, bad configs, and the zoo's two entries.
#include <goopt/interp/interpreter.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/models/vit.hpp>
#include <goopt/models/zoo.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

using namespace goopt;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace vit_test {

std::size_t vit_non_source_ops(const graph::computation_graph& g) {
    std::size_t n = 0;
    for (const auto& o : g.ops()) n += !o.spec().has(ops::source);
    return n;
}

const models::vit_config tiny{
    .batch = 2, .image = 8, .patch = 4, .layers = 2, .hidden = 8, .heads = 2, .mlp = 16, .classes = 5};

TEST_CASE("vit: a tiny ViT runs in the interpreter: logits [batch, classes], finite, batch rows differ") {
    const auto g = models::vit(tiny);
    std::mt19937_64 rng(7);
    const auto out = interp::run(g, interp::random_feeds<double>(g, rng));
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].dimension() == 2);
    CHECK(out[0].shape(0) == 2);
    CHECK(out[0].shape(1) == 5);
    bool finite = true, differ = false;
    for (std::int64_t k = 0; k < 5; ++k) {
        finite = finite && std::isfinite(out[0](0, k)) && std::isfinite(out[0](1, k));
        differ = differ || out[0](0, k) != out[0](1, k);
    }
    CHECK(finite);
    CHECK(differ);  // two images of the batch: the class token is expanded, not shared across images
}

TEST_CASE("vit: each encoder layer adds vit_layer_ops ops; layers stamped 0..layers + 1") {
    auto c = tiny;
    const auto two = vit_non_source_ops(models::vit(c));
    c.layers = 3;
    const auto g = models::vit(c);
    CHECK(vit_non_source_ops(g) - two == models::vit_layer_ops);
    std::int32_t lo = 100, hi = -1;
    for (const auto& o : g.ops()) lo = std::min(lo, o.layer), hi = std::max(hi, o.layer);
    CHECK(lo == 0);
    CHECK(hi == 4);
}

TEST_CASE("vit: ViT-B/16 has the published 86.6M parameters and ~17.6 G multiply-adds per image") {
    const auto g = models::vit();
    CHECK(g.parameter_bytes() == 4 * std::int64_t{86'567'656});
    double flops = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) flops += g.flops(o);
    // Dosovitskiy et al. / DeiT report 17.6 "GFLOPs" counting a multiply-add once; ours count two
    CHECK(flops / 2 == doctest::Approx(17.6e9).epsilon(0.02));
}

TEST_CASE("vit: bad configs are refused") {
    auto c = tiny;
    c.patch = 3;
    CHECK_THROWS_AS(models::vit(c), error);
    c = tiny;
    c.heads = 3;
    CHECK_THROWS_AS(models::vit(c), error);
    c = tiny;
    c.layers = 0;
    CHECK_THROWS_AS(models::vit(c), error);
}

TEST_CASE("vit: the zoo lists vit_b16 and vit_b16_train, and a tiny ViT's training step builds") {
    const auto inference = models::find_workload("vit_b16");
    CHECK_FALSE(inference.training);
    CHECK(inference.family == "vit");
    const auto train = models::find_workload("vit_b16_train");
    CHECK(train.training);
    CHECK(train.family == "vit");
    const auto step = models::make_training_graph(models::vit(tiny));
    CHECK(vit_non_source_ops(step) > 2 * vit_non_source_ops(models::vit(tiny)));
}

}  // namespace vit_test
