#pragma once
/// @file
/// @brief SqueezeNet 1.1 (Iandola et al., 2016; the 1.1 revision of the authors' release) as an
/// inference graph, one of the workloads of TASO's (SOSP'19) and TENSAT's (MLSys'21) evaluations.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of SqueezeNet 1.1; the defaults are the inference setting (batch 1, 224x224 ImageNet).
struct squeezenet_config {
    std::int64_t batch = 1;
    std::int64_t image = 224;  ///< input height = width; at least 35
    std::int64_t num_classes = 1000;
    /// Every conv's channel count is divided by this (1: the published network; its channel
    /// counts are multiples of 16).
    std::int64_t channel_divisor = 1;
};

/// @brief SqueezeNet 1.1: 3x3/2 conv, 8 fire modules (1x1 squeeze, then 1x1 and 3x3 expand
/// concatenated) with 3x3/2 max pools after conv1, fire3 and fire5, a 1x1 conv to the classes,
/// global average pool. Convs have biases (an ewadd of a [C,1,1] weight) and a separate relu; there is
/// no batchnorm (the network has none). 1.1 rather than 1.0: 2.4x fewer FLOPs at the same accuracy,
/// and VALID pooling reproduces torchvision's ceil-mode shapes exactly (1.0's 109x109 map does not).
/// Names follow torchvision (`features.3.squeeze`); layer: 0 the stem, 1..8 the fire modules, 9 the
/// classifier.
/// @return the graph; its one output is the logits [batch, num_classes].
inline graph::computation_graph squeezenet(const squeezenet_config& c = {});

// ---- implementation ----

inline graph::computation_graph squeezenet(const squeezenet_config& c) {
    using graph::tensor_id;
    if (c.batch < 1 || c.num_classes < 1 || c.channel_divisor < 1)
        throw error("squeezenet config", "batch, num_classes or channel_divisor below 1", "each >= 1");
    if (c.image < 35) throw error("squeezenet config", concat("image ", c.image), ">= 35");

    graph::computation_graph g("squeezenet1_1");
    graph::builder b(g);
    auto channels = [&](std::int64_t n) {
        if (n % c.channel_divisor != 0)
            throw error("squeezenet config",
                        concat("channel_divisor ", c.channel_divisor, " does not divide ", n, " channels"),
                        "a divisor of every layer's channels");
        return n / c.channel_divisor;
    };
    // conv + bias + relu
    auto conv = [&](tensor_id x, std::int64_t out, std::int64_t k, std::int64_t stride, ops::padding_mode pad,
                    const std::string& name) {
        const auto w = b.weight(name + ".weight", {out, g.type_of(x).dims[1], k, k});
        auto y = b.conv2d(x, w, {.stride = {stride, stride}, .padding = pad, .name = name});
        y = b.ewadd(y, b.weight(name + ".bias", {out, 1, 1}), name + ".add");
        return b.relu(y, name + ".relu");
    };
    auto pool = [&](tensor_id x, const std::string& name) {
        return b.maxpool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = ops::padding_mode::valid, .name = name});
    };
    std::int32_t layer = 0;
    auto fire = [&](tensor_id x, int index, std::int64_t squeeze, std::int64_t expand) {
        b.set_layer(++layer);
        const std::string n = "features." + std::to_string(index) + ".";
        const auto s = conv(x, channels(squeeze), 1, 1, ops::padding_mode::same, n + "squeeze");
        const std::vector<tensor_id> e{conv(s, channels(expand), 1, 1, ops::padding_mode::same, n + "expand1x1"),
                                       conv(s, channels(expand), 3, 1, ops::padding_mode::same, n + "expand3x3")};
        return b.concat(e, 1, n + "concat");
    };

    b.set_layer(0);
    auto x = b.input("input", {c.batch, 3, c.image, c.image});
    x = conv(x, channels(64), 3, 2, ops::padding_mode::valid, "features.0");
    x = pool(x, "features.2");
    x = fire(x, 3, 16, 64);
    x = fire(x, 4, 16, 64);
    x = pool(x, "features.5");
    x = fire(x, 6, 32, 128);
    x = fire(x, 7, 32, 128);
    x = pool(x, "features.8");
    x = fire(x, 9, 48, 192);
    x = fire(x, 10, 48, 192);
    x = fire(x, 11, 64, 256);
    x = fire(x, 12, 64, 256);

    b.set_layer(++layer);
    x = conv(x, c.num_classes, 1, 1, ops::padding_mode::same, "classifier.1");
    x = b.unary(ops::op_kind::global_avgpool, x, "classifier.3");
    x = b.add1(ops::op_kind::flatten, {x}, {{ops::attr_id::axis, std::int64_t{1}}}, "flatten");
    g.mark_output(x);
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
