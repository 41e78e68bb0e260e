// TASO's model files' graphs (models/taso_graphs.hpp): the files' layers and shapes (op counts,
// relu fused into the convs, no batchnorm or bias), the zoo's names, small instances run on the
// interpreter, and the configs refused.
#include <goopt/interp/interpreter.hpp>
#include <goopt/models/taso_graphs.hpp>
#include <goopt/models/zoo.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>

using namespace goopt;
using ops::op_kind;

// (a named namespace: the module's test files compile as one translation unit)
namespace taso_graphs_test {

std::map<op_kind, std::size_t> count_kinds(const graph::computation_graph& g) {
    std::map<op_kind, std::size_t> n;
    for (const auto& o : g.ops()) ++n[o.kind];
    return n;
}

/// Convolutions with relu fused (TASO's activation="RELU") and without.
std::pair<std::size_t, std::size_t> convs_by_activation(const graph::computation_graph& g) {
    std::size_t relu = 0, none = 0;
    for (auto o : g.ops_of_kind(op_kind::conv2d)) {
        const auto a = g.get_op(o).attrs.get_int(ops::attr_id::activation);
        (a == static_cast<std::int64_t>(ops::activation::relu) ? relu : none) += 1;
    }
    return {relu, none};
}

ops::shape output_shape(const graph::computation_graph& g, std::size_t i = 0) { return g.type_of(g.outputs()[i]).dims; }

/// Runs g on random inputs; every output has the inferred shape and is finite.
void runs(const graph::computation_graph& g) {
    std::mt19937_64 rng(7);
    const auto out = interp::run(g, interp::random_feeds<float>(g, rng));
    REQUIRE(out.size() == g.outputs().size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        const auto want = output_shape(g, i);
        REQUIRE(out[i].dimension() == want.rank());
        for (std::size_t d = 0; d < want.rank(); ++d) CHECK(static_cast<std::int64_t>(out[i].shape()[d]) == want[d]);
        bool finite = true;
        for (float x : out[i]) finite = finite && std::isfinite(x);
        CHECK_MESSAGE(finite, g.name() << " output " << i);
    }
}

}  // namespace taso_graphs_test

using namespace taso_graphs_test;

TEST_CASE("resnet50_taso and resnext50_taso: TASO's blocks, relu fused, no batchnorm") {
    const auto r = models::resnet50_taso();
    auto k = count_kinds(r);
    CHECK(r.num_ops() == 137);
    CHECK(k[op_kind::conv2d] == 52);  // 16 blocks x 3 + 4 projections
    CHECK(k[op_kind::batchnorm] == 0);
    CHECK(k[op_kind::ewadd] == 16);
    CHECK(k[op_kind::relu] == 16);  // after each residual add; the rest are fused
    CHECK(convs_by_activation(r) == std::pair<std::size_t, std::size_t>{36, 16});
    CHECK(r.type_of(r.get_op(*r.find("input")).outputs[0]).dims == ops::shape{1, 64, 56, 56});
    CHECK(output_shape(r) == ops::shape{1, 2048, 7, 7});

    const auto x = models::resnext50_taso();
    k = count_kinds(x);
    CHECK(x.num_ops() == 140);
    CHECK(k[op_kind::conv2d] == 53);  // and the stem
    CHECK(k[op_kind::maxpool2d] == 1);
    CHECK(convs_by_activation(x) == std::pair<std::size_t, std::size_t>{37, 16});
    std::size_t grouped = 0;
    for (auto o : x.ops_of_kind(op_kind::conv2d)) {
        const auto& op = x.get_op(o);
        const auto in = x.type_of(op.inputs[0]).dims[1], per_group = x.type_of(op.inputs[1]).dims[1];
        if (in != per_group) {
            ++grouped;
            CHECK(in / per_group == 32);
        }
    }
    CHECK(grouped == 16);
    CHECK(output_shape(x) == ops::shape{1, 2048, 7, 7});

    runs(models::resnet50_taso({.image = 8, .blocks = {1, 1, 1, 1}, .width = 8}));
    runs(models::resnext50_taso({.image = 32, .blocks = {1, 1, 1, 1}, .width = 32}));
    CHECK_THROWS_AS(models::resnext50_taso({.width = 48}), error);  // not a multiple of 32 groups
    CHECK_THROWS_AS(models::resnet50_taso({.blocks = {3, 0, 6, 3}}), error);
}

TEST_CASE("inception_v3_taso: TASO's 94 convs, all with relu fused, VALID where torchvision has no padding") {
    const auto g = models::inception_v3_taso();
    auto k = count_kinds(g);
    CHECK(g.num_ops() == 214);
    CHECK(k[op_kind::conv2d] == 94);
    CHECK(convs_by_activation(g) == std::pair<std::size_t, std::size_t>{94, 0});
    CHECK(k[op_kind::concat] == 11);
    CHECK(k[op_kind::relu] == 0);
    CHECK(k[op_kind::batchnorm] == 0);
    CHECK(output_shape(g) == ops::shape{1, 2048, 8, 8});  // the file's 1x1 "global" pool
    runs(models::inception_v3_taso({.image = 75, .channel_divisor = 8}));
    CHECK_THROWS_AS(models::inception_v3_taso({.image = 74}), error);
}

TEST_CASE("inception_v3_tensat: Tensat's file of the same convs, joined pairwise, pooled as that file pools") {
    const auto g = models::inception_v3_tensat();
    auto k = count_kinds(g);
    CHECK(g.num_ops() == 233);
    CHECK(k[op_kind::conv2d] == 94);
    CHECK(convs_by_activation(g) == std::pair<std::size_t, std::size_t>{94, 0});
    // A and C blocks: 3 concats each; B: 2; D: 1; E: 3 each (the two pairs and the block's)
    CHECK(k[op_kind::concat] == 3 * 3 + 2 + 4 * 3 + 1 + 2 * 3);
    CHECK(k[op_kind::avgpool2d] == 9);  // A x 3, B, C x 4, the global pool
    CHECK(k[op_kind::maxpool2d] == 5);  // the stem's two, D's, E's two
    std::size_t relu_pools = 0;
    for (const auto& op : g.ops())
        if (op.kind == op_kind::avgpool2d && op.attrs.get_int(ops::attr_id::activation) != 0) ++relu_pools;
    CHECK(relu_pools == 7);  // the A and C blocks' branch pools
    CHECK(output_shape(g) == ops::shape{1, 2048, 1, 1});
    // the same convs as TASO's file
    const auto taso = models::inception_v3_taso();
    std::map<std::string, std::size_t> kernels, taso_kernels;
    for (const auto& op : g.ops())
        if (op.kind == op_kind::conv2d) ++kernels[g.type_of(op.inputs[1]).dims.to_string()];
    for (const auto& op : taso.ops())
        if (op.kind == op_kind::conv2d) ++taso_kernels[taso.type_of(op.inputs[1]).dims.to_string()];
    CHECK(kernels == taso_kernels);
    runs(models::inception_v3_tensat({.image = 75, .channel_divisor = 8}));
    CHECK_THROWS_AS(models::inception_v3_tensat({.image = 74}), error);
}

TEST_CASE("nasnet_a_taso: 3 stacks of 5 normal cells and a reduction cell, separable convs as grouped + 1x1") {
    const auto g = models::nasnet_a_taso();
    auto k = count_kinds(g);
    CHECK(g.num_ops() == 601);
    CHECK(k[op_kind::conv2d] == 217);  // stem + 18 cells x (2 squeezes + 5 separable convs x 2)
    CHECK(k[op_kind::ewadd] == 90);
    CHECK(k[op_kind::concat] == 18);
    // relu only where the file fuses it: the stem and each cell's two squeezes
    CHECK(convs_by_activation(g) == std::pair<std::size_t, std::size_t>{37, 180});
    CHECK(output_shape(g) == ops::shape{1, 5120, 7, 7});  // 5 x 1024 channels
    runs(models::nasnet_a_taso({.image = 32, .channels = 8, .stacks = 1, .cells = 1}));
    CHECK_THROWS_AS(models::nasnet_a_taso({.cells = 0}), error);
}

TEST_CASE("bert_taso: relu, then 8 layers whose attention result is kept as an output nothing reads") {
    const auto g = models::bert_taso();
    auto k = count_kinds(g);
    CHECK(g.num_ops() == 146);
    CHECK(k[op_kind::matmul] == 48);  // per layer Q, K, V, two attention products, the layer's own
    CHECK(g.outputs().size() == 9);
    CHECK(output_shape(g) == ops::shape{1024, 1024});
    for (std::size_t i = 1; i < 9; ++i) CHECK(output_shape(g, i) == ops::shape{1024, 1024});
    runs(models::bert_taso({.batch = 2, .seq_length = 8, .hidden = 32, .heads = 4, .layers = 2}));
    // Q times K untransposed needs seq_length = hidden / heads
    CHECK_THROWS_AS(models::bert_taso({.seq_length = 32}), error);
}

TEST_CASE("the zoo lists TASO's files' graphs; nasrnn_taso is the zoo's nasrnn") {
    for (const char* name : {"resnet50_taso", "resnext50_taso", "inception_v3_taso", "inception_v3_tensat",
                             "nasnet_a_taso", "nasrnn_taso", "bert_taso"}) {
        CAPTURE(name);
        const auto e = models::find_workload(name);
        CHECK_FALSE(e.training);
        CHECK(e.build().num_ops() > 0);
    }
    CHECK(models::find_workload("nasrnn_taso").build().num_ops() == models::nasrnn().num_ops());
}
