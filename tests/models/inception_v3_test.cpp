// Inception-v3: op counts derived from the paper's blocks, torchvision's parameter count, the
// published 5.7 GMACs, shapes through the network, layers, configs.
#include <goopt/models/inception_v3.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>

using namespace goopt;
using ops::op_kind;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace inception_v3_test {

std::map<op_kind, int> kinds_of(const graph::computation_graph& g) {
    std::map<op_kind, int> n;
    for (const auto& o : g.ops()) ++n[o.kind];
    return n;
}

ops::shape output_shape(const graph::computation_graph& g, const std::string& op) {
    const auto v = g.find(op);
    REQUIRE_MESSAGE(v.has_value(), "no op named " << op);
    return g.type_of(g.get_op(*v).outputs[0]).dims;
}

TEST_CASE("inception_v3: op counts per kind, derived by hand") {
    const auto g = models::inception_v3();
    // Convs: stem 5; InceptionA 1 + 2 + 3 + 1 = 7 (x3 = 21); InceptionB 1 + 3 = 4; InceptionC
    // 1 + 3 + 5 + 1 = 10 (x4 = 40); InceptionD 2 + 4 = 6; InceptionE 1 + (1 + 2) + (2 + 2) + 1 = 9
    // (x2 = 18): 94 convs, each with a batchnorm and a relu. Max pools: 2 in the stem, 1 in B, 1 in D.
    // Average pools: one branch pool in each A, C, E: 3 + 4 + 2 = 9. Concats: one per block (11) and
    // two inner ones in each E: 15. Weights: 94 * 5 + fc weight and bias = 472.
    const auto n = kinds_of(g);
    CHECK(n.at(op_kind::conv2d) == 94);
    CHECK(n.at(op_kind::batchnorm) == 94);
    CHECK(n.at(op_kind::relu) == 94);
    CHECK(n.at(op_kind::maxpool2d) == 4);
    CHECK(n.at(op_kind::avgpool2d) == 9);
    CHECK(n.at(op_kind::concat) == 15);
    CHECK(n.at(op_kind::weight) == 472);
    CHECK(n.at(op_kind::input) == 1);
    CHECK(n.at(op_kind::global_avgpool) == 1);
    CHECK(n.at(op_kind::flatten) == 1);
    CHECK(n.at(op_kind::matmul) == 1);
    CHECK(n.at(op_kind::ewadd) == 1);
    CHECK(n.size() == 12);
    CHECK(g.num_ops() == 94u * 3 + 4 + 9 + 15 + 472 + 5);  // + input, global pool, flatten, fc, bias
    CHECK(graph::problems(g).empty());
}

TEST_CASE("inception_v3: parameters match torchvision (no aux classifier) and FLOPs the published 5.7 GMACs") {
    const auto g = models::inception_v3();
    std::int64_t all = 0, stats = 0;
    for (const auto& o : g.ops()) {
        if (o.kind != op_kind::weight) continue;
        const auto e = g.type_of(o.outputs[0]).num_elements();
        all += e;
        if (o.name.ends_with("running_mean") || o.name.ends_with("running_var")) stats += e;
    }
    // torchvision's inception_v3 has 27,161,264 parameters of which the auxiliary classifier holds
    // 768*128 + 2*128 + 128*768*25 + 2*768 + 768*1000 + 1000 = 3,326,696: 23,834,568 remain
    CHECK(all - stats == 27'161'264 - 3'326'696);
    double mac_flops = 0;
    for (graph::op_id v = 0; v < g.num_ops(); ++v)
        if (g.get_op(v).kind == op_kind::conv2d || g.get_op(v).kind == op_kind::matmul) mac_flops += g.flops(v);
    CHECK(mac_flops / 2 == doctest::Approx(5.71e9).epsilon(0.01));
}

TEST_CASE("inception_v3: shapes, names and layers") {
    const auto g = models::inception_v3();
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{1, 1000});
    CHECK(output_shape(g, "Conv2d_1a_3x3.relu") == ops::shape{1, 32, 149, 149});
    CHECK(output_shape(g, "Conv2d_2b_3x3.relu") == ops::shape{1, 64, 147, 147});
    CHECK(output_shape(g, "maxpool1") == ops::shape{1, 64, 73, 73});
    CHECK(output_shape(g, "maxpool2") == ops::shape{1, 192, 35, 35});
    CHECK(output_shape(g, "Mixed_5b.concat") == ops::shape{1, 256, 35, 35});
    CHECK(output_shape(g, "Mixed_5d.concat") == ops::shape{1, 288, 35, 35});
    CHECK(output_shape(g, "Mixed_6a.concat") == ops::shape{1, 768, 17, 17});
    CHECK(output_shape(g, "Mixed_6e.concat") == ops::shape{1, 768, 17, 17});
    CHECK(output_shape(g, "Mixed_6b.branch7x7_2.conv") == ops::shape{1, 128, 17, 17});
    CHECK(output_shape(g, "Mixed_7a.concat") == ops::shape{1, 1280, 8, 8});
    CHECK(output_shape(g, "Mixed_7b.branch3x3.concat") == ops::shape{1, 768, 8, 8});
    CHECK(output_shape(g, "Mixed_7c.concat") == ops::shape{1, 2048, 8, 8});
    CHECK(g.type_of(g.get_op(*g.find("Mixed_6b.branch7x7_2.conv.weight")).outputs[0]).dims ==
          ops::shape{128, 128, 1, 7});
    CHECK(g.get_op(*g.find("Conv2d_4a_3x3.conv")).layer == 0);
    CHECK(g.get_op(*g.find("Mixed_5b.branch_pool.conv")).layer == 1);
    CHECK(g.get_op(*g.find("Mixed_6e.concat")).layer == 8);
    CHECK(g.get_op(*g.find("Mixed_7c.concat")).layer == 11);
    CHECK(g.get_op(*g.find("fc")).layer == 12);
    for (const auto& o : g.ops()) CHECK((o.layer >= 0 && o.layer <= 12));
}

TEST_CASE("inception_v3: the config changes the graph") {
    const auto g = models::inception_v3({.batch = 4, .image = 75, .num_classes = 10, .channel_divisor = 16});
    CHECK(g.type_of(g.outputs()[0]).dims == ops::shape{4, 10});
    CHECK(output_shape(g, "Mixed_7c.concat") == ops::shape{4, 2048 / 16, 1, 1});
    CHECK(output_shape(g, "Mixed_5b.concat") == ops::shape{4, 256 / 16, 7, 7});
    CHECK(kinds_of(g).at(op_kind::conv2d) == 94);  // same wiring
    CHECK_THROWS_AS(models::inception_v3({.image = 74}), error);
    CHECK_THROWS_AS(models::inception_v3({.channel_divisor = 3}), error);
}

}  // namespace inception_v3_test
