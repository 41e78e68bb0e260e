#pragma once
/// @file
/// @brief Inception-v3 (Szegedy et al., CVPR'16, "Rethinking the Inception Architecture") as an
/// inference graph, one of TASO's (SOSP'19 §7) workloads; also the forward half of GO's.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/classifier_head.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of Inception-v3; the defaults are TASO's inference setting (batch 1, 299x299 ImageNet).
struct inception_v3_config {
    std::int64_t batch = 1;
    std::int64_t image = 299;  ///< input height = width; at least 75 (the VALID convs shrink it)
    std::int64_t num_classes = 1000;
    /// Every conv's channel count is divided by this (1: the paper's network). Inception-v3's
    /// channel counts are all multiples of 16, so 2, 4, 8 and 16 keep the wiring, for small tests.
    std::int64_t channel_divisor = 1;
};

/// @brief Inception-v3 without the auxiliary classifier (inference): 5 stem convs and 2 max pools,
/// Mixed_5b-5d (InceptionA), Mixed_6a (B), Mixed_6b-6e (C, with factorized 1x7/7x1 convs), Mixed_7a
/// (D), Mixed_7b-7c (E), global average pool, fc. Every conv is conv -> batchnorm (eps 1e-3) -> relu
/// as torchvision's BasicConv2d; names follow torchvision (`Mixed_6b.branch7x7dbl_3.conv`). Layer: 0
/// the stem, 1..11 the Mixed blocks in order, 12 the head. Branch average pools are 3x3/1 SAME and
/// exclude the padding (TensorFlow's), where torchvision's count it: same shapes and ops.
/// @return the graph; its one output is the logits [batch, num_classes].
/// @throws goopt::error for an image smaller than 75 or a divisor that does not divide the channels.
inline graph::computation_graph inception_v3(const inception_v3_config& c = {});

// ---- implementation ----

inline graph::computation_graph inception_v3(const inception_v3_config& c) {
    using graph::tensor_id;
    using ops::padding_mode;
    if (c.batch < 1 || c.num_classes < 1 || c.channel_divisor < 1)
        throw error("inception_v3 config", "batch, num_classes or channel_divisor below 1", "each >= 1");
    if (c.image < 75) throw error("inception_v3 config", concat("image ", c.image), ">= 75");

    graph::computation_graph g("inception_v3");
    graph::builder b(g);

    auto channels = [&](std::int64_t n) {
        if (n % c.channel_divisor != 0)
            throw error("inception_v3 config",
                        concat("channel_divisor ", c.channel_divisor, " does not divide ", n, " channels"),
                        "a divisor of every layer's channels");
        return n / c.channel_divisor;
    };
    // torchvision's BasicConv2d: conv without bias, batchnorm (eps 0.001), relu
    auto conv = [&](tensor_id x, std::int64_t out, std::int64_t kh, std::int64_t kw, const std::string& name,
                    std::int64_t stride = 1, padding_mode pad = padding_mode::same) {
        out = channels(out);
        const auto w = b.weight(name + ".conv.weight", {out, g.type_of(x).dims[1], kh, kw});
        auto y = b.conv2d(x, w, {.stride = {stride, stride}, .padding = pad, .name = name + ".conv"});
        const auto scale = b.weight(name + ".bn.weight", {out});
        const auto bias = b.weight(name + ".bn.bias", {out});
        const auto mean = b.weight(name + ".bn.running_mean", {out});
        const auto var = b.weight(name + ".bn.running_var", {out});
        y = b.batchnorm(y, scale, bias, mean, var, 1e-3, name + ".bn");
        return b.relu(y, name + ".relu");
    };
    auto avgpool = [&](tensor_id x, const std::string& name) {
        return b.avgpool2d(x, {.kernel = {3, 3}, .stride = {1, 1}, .name = name});
    };
    auto maxpool = [&](tensor_id x, const std::string& name) {
        return b.maxpool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = padding_mode::valid, .name = name});
    };
    auto cat = [&](std::initializer_list<tensor_id> xs, const std::string& name) {
        const std::vector<tensor_id> v(xs);
        return b.concat(v, 1, name);
    };
    constexpr auto valid = padding_mode::valid;

    b.set_layer(0);
    auto x = b.input("input", {c.batch, 3, c.image, c.image});
    x = conv(x, 32, 3, 3, "Conv2d_1a_3x3", 2, valid);
    x = conv(x, 32, 3, 3, "Conv2d_2a_3x3", 1, valid);
    x = conv(x, 64, 3, 3, "Conv2d_2b_3x3");
    x = maxpool(x, "maxpool1");
    x = conv(x, 80, 1, 1, "Conv2d_3b_1x1", 1, valid);
    x = conv(x, 192, 3, 3, "Conv2d_4a_3x3", 1, valid);
    x = maxpool(x, "maxpool2");

    std::int32_t layer = 0;
    auto inception_a = [&](tensor_id in, std::int64_t pool_features, const std::string& n) {
        b.set_layer(++layer);
        const auto b1 = conv(in, 64, 1, 1, n + ".branch1x1");
        auto b5 = conv(in, 48, 1, 1, n + ".branch5x5_1");
        b5 = conv(b5, 64, 5, 5, n + ".branch5x5_2");
        auto b3 = conv(in, 64, 1, 1, n + ".branch3x3dbl_1");
        b3 = conv(b3, 96, 3, 3, n + ".branch3x3dbl_2");
        b3 = conv(b3, 96, 3, 3, n + ".branch3x3dbl_3");
        const auto bp = conv(avgpool(in, n + ".avgpool"), pool_features, 1, 1, n + ".branch_pool");
        return cat({b1, b5, b3, bp}, n + ".concat");
    };
    auto inception_b = [&](tensor_id in, const std::string& n) {
        b.set_layer(++layer);
        const auto b3 = conv(in, 384, 3, 3, n + ".branch3x3", 2, valid);
        auto bd = conv(in, 64, 1, 1, n + ".branch3x3dbl_1");
        bd = conv(bd, 96, 3, 3, n + ".branch3x3dbl_2");
        bd = conv(bd, 96, 3, 3, n + ".branch3x3dbl_3", 2, valid);
        return cat({b3, bd, maxpool(in, n + ".maxpool")}, n + ".concat");
    };
    auto inception_c = [&](tensor_id in, std::int64_t c7, const std::string& n) {
        b.set_layer(++layer);
        const auto b1 = conv(in, 192, 1, 1, n + ".branch1x1");
        auto b7 = conv(in, c7, 1, 1, n + ".branch7x7_1");
        b7 = conv(b7, c7, 1, 7, n + ".branch7x7_2");
        b7 = conv(b7, 192, 7, 1, n + ".branch7x7_3");
        auto bd = conv(in, c7, 1, 1, n + ".branch7x7dbl_1");
        bd = conv(bd, c7, 7, 1, n + ".branch7x7dbl_2");
        bd = conv(bd, c7, 1, 7, n + ".branch7x7dbl_3");
        bd = conv(bd, c7, 7, 1, n + ".branch7x7dbl_4");
        bd = conv(bd, 192, 1, 7, n + ".branch7x7dbl_5");
        const auto bp = conv(avgpool(in, n + ".avgpool"), 192, 1, 1, n + ".branch_pool");
        return cat({b1, b7, bd, bp}, n + ".concat");
    };
    auto inception_d = [&](tensor_id in, const std::string& n) {
        b.set_layer(++layer);
        auto b3 = conv(in, 192, 1, 1, n + ".branch3x3_1");
        b3 = conv(b3, 320, 3, 3, n + ".branch3x3_2", 2, valid);
        auto b7 = conv(in, 192, 1, 1, n + ".branch7x7x3_1");
        b7 = conv(b7, 192, 1, 7, n + ".branch7x7x3_2");
        b7 = conv(b7, 192, 7, 1, n + ".branch7x7x3_3");
        b7 = conv(b7, 192, 3, 3, n + ".branch7x7x3_4", 2, valid);
        return cat({b3, b7, maxpool(in, n + ".maxpool")}, n + ".concat");
    };
    auto inception_e = [&](tensor_id in, const std::string& n) {
        b.set_layer(++layer);
        const auto b1 = conv(in, 320, 1, 1, n + ".branch1x1");
        const auto b3 = conv(in, 384, 1, 1, n + ".branch3x3_1");
        const auto b3x = cat({conv(b3, 384, 1, 3, n + ".branch3x3_2a"), conv(b3, 384, 3, 1, n + ".branch3x3_2b")},
                             n + ".branch3x3.concat");
        auto bd = conv(in, 448, 1, 1, n + ".branch3x3dbl_1");
        bd = conv(bd, 384, 3, 3, n + ".branch3x3dbl_2");
        const auto bdx = cat({conv(bd, 384, 1, 3, n + ".branch3x3dbl_3a"), conv(bd, 384, 3, 1, n + ".branch3x3dbl_3b")},
                             n + ".branch3x3dbl.concat");
        const auto bp = conv(avgpool(in, n + ".avgpool"), 192, 1, 1, n + ".branch_pool");
        return cat({b1, b3x, bdx, bp}, n + ".concat");
    };

    x = inception_a(x, 32, "Mixed_5b");
    x = inception_a(x, 64, "Mixed_5c");
    x = inception_a(x, 64, "Mixed_5d");
    x = inception_b(x, "Mixed_6a");
    x = inception_c(x, 128, "Mixed_6b");
    x = inception_c(x, 160, "Mixed_6c");
    x = inception_c(x, 160, "Mixed_6d");
    x = inception_c(x, 192, "Mixed_6e");
    x = inception_d(x, "Mixed_7a");
    x = inception_e(x, "Mixed_7b");
    x = inception_e(x, "Mixed_7c");

    b.set_layer(++layer);
    x = classifier_head(b, x, c.num_classes);
    g.mark_output(x);
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
