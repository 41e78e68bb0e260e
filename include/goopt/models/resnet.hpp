#pragma once
/// @file
/// @brief ResNet-50 (He et al., CVPR'16, "v1.5": stride on the 3x3 conv as torchvision) and
/// ResNeXt-50 32x4d (Xie et al., CVPR'17) as inference graphs, two of TASO's (SOSP'19 §7) workloads.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/classifier_head.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace goopt::models {

/// Knobs of ResNet-50; the defaults are TASO's inference setting (batch 1, 224x224 ImageNet).
struct resnet_config {
    std::int64_t batch = 1;
    std::int64_t image = 224;  ///< input height = width
    std::int64_t num_classes = 1000;
    std::array<std::int32_t, 4> blocks{3, 4, 6, 3};  ///< bottleneck blocks per stage (ResNet-50)
    std::int64_t width = 64;                         ///< stem channels; stage s has width * 2^s planes, 4x that out
    std::int64_t groups = 1;                         ///< groups of each 3x3 conv
    std::int64_t width_per_group = 64;               ///< bottleneck width = planes * width_per_group / 64 * groups
};

/// Knobs of ResNeXt-50 32x4d: the same network with 32 groups of 4 channels (at width 64) in each
/// 3x3 conv; a separate type so that `resnext50({.batch = 8})` keeps the 32 groups.
struct resnext_config {
    std::int64_t batch = 1;
    std::int64_t image = 224;
    std::int64_t num_classes = 1000;
    std::array<std::int32_t, 4> blocks{3, 4, 6, 3};
    std::int64_t width = 64;
    std::int64_t groups = 32;
    std::int64_t width_per_group = 4;
};

/// @brief ResNet-50: stem (7x7/2 conv, bn, relu, 3x3/2 max pool), 16 bottleneck blocks
/// (1x1, 3x3, 1x1 conv, each followed by batchnorm, relu after the first two and after the residual
/// add; a 1x1 conv + bn projection on the first block of each stage), global average pool, fc.
/// Op names follow torchvision (`layer3.2.conv1`, `layer1.0.downsample.0`). Layer: 0 stem, 1..16
/// the bottleneck blocks in order, 17 the head. The fc weight is stored [in, out] (matmul), not
/// torch's [out, in]. Batchnorm's running mean and variance are weights too (persistent memory),
/// so parameter_bytes() counts them; torchvision's 25,557,032 parameters do not.
/// @return the graph; its one output is the logits [batch, num_classes].
/// @throws goopt::error for a config that gives no valid network (e.g. channels not divisible by groups).
inline graph::computation_graph resnet50(const resnet_config& c = {});

/// @brief ResNeXt-50 32x4d: resnet50() with grouped 3x3 convs and twice the bottleneck width.
inline graph::computation_graph resnext50(const resnext_config& c = {});

// ---- implementation ----

namespace detail {

struct resnet_shape {
    std::int64_t batch, image, num_classes;
    std::array<std::int32_t, 4> blocks;
    std::int64_t width, groups, width_per_group;
};

inline graph::computation_graph build_resnet(const std::string& model, const resnet_shape& c) {
    using graph::tensor_id;
    if (c.batch < 1 || c.image < 1 || c.num_classes < 1 || c.width < 1 || c.groups < 1 || c.width_per_group < 1)
        throw error(concat(model, " config"), "batch, image, num_classes, width, groups or width_per_group below 1",
                    "each >= 1");
    for (auto n : c.blocks)
        if (n < 1)
            throw error(concat(model, " config"), concat("a stage of ", n, " blocks"), "at least one block per stage");

    graph::computation_graph g(model);
    graph::builder b(g);

    // conv (no bias) -> batchnorm, torchvision's parameter layout
    auto conv_bn = [&](tensor_id x, std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t groups,
                       const std::string& conv, const std::string& bn) {
        const std::int64_t in = g.type_of(x).dims[1];  // a multiple of groups: mid = ... * groups
        const auto w = b.weight(conv + ".weight", {out, in / groups, k, k});
        auto y = b.conv2d(x, w, {.stride = {stride, stride}, .name = conv});
        const auto scale = b.weight(bn + ".weight", {out});
        const auto bias = b.weight(bn + ".bias", {out});
        const auto mean = b.weight(bn + ".running_mean", {out});
        const auto var = b.weight(bn + ".running_var", {out});
        return b.batchnorm(y, scale, bias, mean, var, 1e-5, bn);
    };

    b.set_layer(0);
    auto x = b.input("input", {c.batch, 3, c.image, c.image});
    x = conv_bn(x, c.width, 7, 2, 1, "conv1", "bn1");
    x = b.relu(x, "relu");
    x = b.maxpool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .name = "maxpool"});

    std::int32_t block = 0;
    for (int s = 0; s < 4; ++s) {
        const std::int64_t planes = c.width << s;
        const std::int64_t mid = planes * c.width_per_group / 64 * c.groups;
        const std::int64_t out = planes * 4;
        if (mid < 1)
            throw error(
                concat(model, " config"),
                concat("stage ", s + 1, " has ", planes, " planes, too few for width_per_group ", c.width_per_group),
                "a bottleneck width planes * width_per_group / 64 >= 1");
        for (std::int32_t i = 0; i < c.blocks[static_cast<std::size_t>(s)]; ++i) {
            b.set_layer(++block);
            const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(i) + ".";
            const std::int64_t stride = (i == 0 && s > 0) ? 2 : 1;
            auto y = b.relu(conv_bn(x, mid, 1, 1, 1, p + "conv1", p + "bn1"), p + "relu1");
            y = b.relu(conv_bn(y, mid, 3, stride, c.groups, p + "conv2", p + "bn2"), p + "relu2");
            y = conv_bn(y, out, 1, 1, 1, p + "conv3", p + "bn3");
            const tensor_id shortcut =
                i == 0 ? conv_bn(x, out, 1, stride, 1, p + "downsample.0", p + "downsample.1") : x;
            x = b.relu(b.ewadd(y, shortcut, p + "add"), p + "relu3");
        }
    }

    b.set_layer(block + 1);
    x = classifier_head(b, x, c.num_classes);
    g.mark_output(x);
    graph::validate(g);
    return g;
}

}  // namespace detail

inline graph::computation_graph resnet50(const resnet_config& c) {
    return detail::build_resnet("resnet50",
                                {c.batch, c.image, c.num_classes, c.blocks, c.width, c.groups, c.width_per_group});
}

inline graph::computation_graph resnext50(const resnext_config& c) {
    return detail::build_resnet("resnext50_32x4d",
                                {c.batch, c.image, c.num_classes, c.blocks, c.width, c.groups, c.width_per_group});
}

}  // namespace goopt::models
