// ResNet-50 and ResNeXt-50 32x4d: op counts, parameters and FLOPs against hand-derived and published
// figures, shapes, layers, and configs that change the graph.
#include <goopt/models/resnet.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>

using namespace goopt;
using ops::op_kind;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace resnet_test {

std::map<op_kind, int> count_kinds(const graph::computation_graph& g) {
    std::map<op_kind, int> n;
    for (const auto& o : g.ops()) ++n[o.kind];
    return n;
}

/// Elements of all weights, and of the batchnorm running statistics among them.
struct weight_elements {
    std::int64_t all = 0, running_stats = 0;
};
weight_elements count_weights(const graph::computation_graph& g) {
    weight_elements w;
    for (const auto& o : g.ops()) {
        if (o.kind != op_kind::weight) continue;
        const auto n = g.type_of(o.outputs[0]).num_elements();
        w.all += n;
        if (o.name.ends_with(".running_mean") || o.name.ends_with(".running_var")) w.running_stats += n;
    }
    return w;
}

double matmul_conv_flops(const graph::computation_graph& g) {
    double f = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v)
        if (g.get_op(v).kind == op_kind::conv2d || g.get_op(v).kind == op_kind::matmul) f += g.flops(v);
    return f;
}

ops::shape shape_of(const graph::computation_graph& g, const std::string& op) {
    const auto v = g.find(op);
    REQUIRE_MESSAGE(v.has_value(), "no op named " << op);
    return g.type_of(g.get_op(*v).outputs[0]).dims;
}

TEST_CASE("resnet50: op counts per kind, derived by hand") {
    const auto g = models::resnet50();
    // 16 bottleneck blocks (3 + 4 + 6 + 3), each 3 convs, plus one projection (downsample) conv on the
    // first block of each of the 4 stages, plus the stem conv: 16 * 3 + 4 + 1 = 53 convs, each
    // followed by a batchnorm. Relus: the stem's, and 3 per block (after bn1, bn2 and the residual
    // add): 1 + 48 = 49. Ewadds: 16 residual adds + the fc bias = 17. Weights: a kernel and 4
    // batchnorm tensors per conv (53 * 5 = 265) + fc weight and bias = 267. One input, one max pool,
    // one global average pool, one flatten, one matmul (fc).
    const auto n = count_kinds(g);
    CHECK(n.at(op_kind::conv2d) == 53);
    CHECK(n.at(op_kind::batchnorm) == 53);
    CHECK(n.at(op_kind::relu) == 49);
    CHECK(n.at(op_kind::ewadd) == 17);
    CHECK(n.at(op_kind::weight) == 267);
    CHECK(n.at(op_kind::input) == 1);
    CHECK(n.at(op_kind::maxpool2d) == 1);
    CHECK(n.at(op_kind::global_avgpool) == 1);
    CHECK(n.at(op_kind::flatten) == 1);
    CHECK(n.at(op_kind::matmul) == 1);
    CHECK(n.size() == 10);  // no other kind
    CHECK(g.num_ops() == 444u);
    CHECK(graph::problems(g).empty());
}

TEST_CASE("resnet50: parameters match torchvision's 25,557,032 and FLOPs its 4.09 GMACs") {
    const auto g = models::resnet50();
    // Batchnorm channels: stem 64; stage s with planes p and n blocks: n * (p + p + 4p) + 4p for the
    // projection: 3*384+256 = 1408, 4*768+512 = 3584, 6*1536+1024 = 10240, 3*3072+2048 = 11264;
    // total 26,560. Trainable = conv kernels + 2 * 26,560 (scale, bias) + fc 2048*1000 + 1000, which
    // torchvision publishes as 25,557,032; running mean and variance add another 2 * 26,560.
    const auto w = count_weights(g);
    CHECK(w.running_stats == 2 * 26'560);
    CHECK(w.all - w.running_stats == 25'557'032);
    CHECK(g.parameter_bytes() == 4 * (25'557'032 + 53'120));
    // MACs, summed by hand over the convs (OH * OW * O * C/groups * kh * kw) and the fc: stem
    // 112^2*64*3*49 = 118,013,952, the 16 blocks and 4 projections, fc 2,048,000: 4,089,184,256 in
    // all (the widely quoted "4.1 GMACs"); at 2 FLOPs per MAC:
    CHECK(matmul_conv_flops(g) == doctest::Approx(8'178'368'512.0).epsilon(1e-12));
    double total = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v) total += g.flops(v);
    CHECK(total > 8.178e9);
    CHECK(total < 8.30e9);  // batchnorm, relu, adds and pools are ~1 % on top
}

TEST_CASE("resnet50: shapes, names and layers") {
    const auto g = models::resnet50();
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    CHECK(shape_of(g, "maxpool") == ops::shape{1, 64, 56, 56});
    CHECK(shape_of(g, "layer1.2.relu3") == ops::shape{1, 256, 56, 56});
    CHECK(shape_of(g, "layer2.0.conv2") == ops::shape{1, 128, 28, 28});  // v1.5: stride on the 3x3
    CHECK(shape_of(g, "layer2.0.conv1") == ops::shape{1, 128, 56, 56});
    CHECK(shape_of(g, "layer3.5.relu3") == ops::shape{1, 1024, 14, 14});
    CHECK(shape_of(g, "layer4.2.relu3") == ops::shape{1, 2048, 7, 7});
    // layer = running block index: layer3.2 is block 3 + 4 + 2 + 1 = 10; stem 0, head 17
    CHECK(g.get_op(*g.find("layer3.2.conv1")).layer == 10);
    CHECK(g.get_op(*g.find("layer3.2.conv1.weight")).layer == 10);
    CHECK(g.get_op(*g.find("conv1")).layer == 0);
    CHECK(g.get_op(*g.find("fc")).layer == 17);
    for (const auto& o : g.ops()) {
        CHECK(o.layer >= 0);
        CHECK(o.layer <= 17);
    }
}

TEST_CASE("resnet50: the config changes the graph") {
    const auto base = models::resnet50();
    const auto b8 = models::resnet50({.batch = 8});
    CHECK(b8.type_of(b8.outputs()[0]).dims == ops::shape{8, 1000});
    CHECK(b8.num_ops() == base.num_ops());
    CHECK(b8.parameter_bytes() == base.parameter_bytes());
    CHECK(matmul_conv_flops(b8) == doctest::Approx(8 * 8'178'368'512.0).epsilon(1e-12));

    // 2 bottlenecks per stage: 8 * 3 + 4 + 1 convs
    const auto shallow = models::resnet50({.blocks = {2, 2, 2, 2}});
    CHECK(count_kinds(shallow).at(op_kind::conv2d) == 29);
    CHECK(count_kinds(shallow).at(op_kind::ewadd) == 9);

    const auto small = models::resnet50({.image = 64, .num_classes = 10, .width = 16});
    CHECK(small.type_of(small.outputs()[0]).dims == ops::shape{1, 10});
    CHECK(shape_of(small, "layer4.2.relu3") == ops::shape{1, 512, 2, 2});

    CHECK_THROWS_AS(models::resnet50({.batch = 0}), error);
    CHECK_THROWS_AS(models::resnet50({.blocks = {3, 0, 6, 3}}), error);
    CHECK_THROWS_AS(models::resnet50({.width = 4, .width_per_group = 8}), error);  // 4 * 8 / 64 = 0 channels
}

TEST_CASE("resnext50_32x4d: grouped 3x3 convs, torchvision's 25,028,904 parameters") {
    const auto g = models::resnext50();
    // Same wiring as ResNet-50, so the same op counts; bottleneck width = planes * 4 / 64 * 32,
    // i.e. 128, 256, 512, 1024 per stage, each 3x3 conv in 32 groups of 4 (then 8, 16, 32) channels.
    const auto n = count_kinds(g);
    CHECK(n.at(op_kind::conv2d) == 53);
    CHECK(n.at(op_kind::batchnorm) == 53);
    CHECK(n.at(op_kind::relu) == 49);
    CHECK(n.at(op_kind::ewadd) == 17);
    CHECK(g.num_ops() == 444u);
    CHECK(g.type_of(g.get_op(*g.find("layer1.0.conv2.weight")).outputs[0]).dims == ops::shape{128, 4, 3, 3});
    CHECK(g.type_of(g.get_op(*g.find("layer4.0.conv2.weight")).outputs[0]).dims == ops::shape{1024, 32, 3, 3});
    CHECK(shape_of(g, "layer1.0.conv2") == ops::shape{1, 128, 56, 56});
    const auto w = count_weights(g);
    CHECK(w.all - w.running_stats == 25'028'904);
    // published: 4.23 GMACs (conv + fc)
    CHECK(matmul_conv_flops(g) / 2 == doctest::Approx(4.23e9).epsilon(0.01));
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    CHECK(g.name() == "resnext50_32x4d");

    // a separate config type: overriding the batch keeps the 32 groups
    const auto b2 = models::resnext50({.batch = 2});
    CHECK(b2.type_of(b2.get_op(*b2.find("layer1.0.conv2.weight")).outputs[0]).dims == ops::shape{128, 4, 3, 3});
    CHECK(b2.type_of(b2.outputs()[0]).dims == ops::shape{2, 1000});
}

}  // namespace resnet_test
