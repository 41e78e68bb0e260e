#pragma once
/// @file
/// @brief The Vision Transformer (Dosovitskiy et al., ICLR'21) as an inference graph: the image cut
/// into patches, a pre-norm Transformer encoder over the patch tokens and a class token, and a
/// classification head. ViT-B/16 at 224x224 is the defaults.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/transformer_encoder.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of ViT; the defaults are ViT-B/16 (86M parameters) on 224x224 images, 1000 classes, batch 1.
struct vit_config {
    std::int64_t batch = 1;
    std::int64_t image = 224;  ///< height and width of the (square, 3-channel) input
    std::int64_t patch = 16;   ///< must divide image
    std::int32_t layers = 12;
    std::int64_t hidden = 768;
    std::int64_t heads = 12;  ///< must divide hidden
    std::int64_t mlp = 3072;  ///< feed-forward width
    std::int64_t classes = 1000;
    double layernorm_epsilon = 1e-6;
};

/// Non-source ops of one encoder layer as vit() builds it: 2 layernorms, 17 of self-attention,
/// 2 + 1 output projection and residual, 2 + 1 + 2 + 1 feed-forward and residual.
inline constexpr std::size_t vit_layer_ops = 28;

/// @brief ViT forward graph. Input `pixel_values` [batch, 3, image, image].
///
/// Embeddings (layer 0): the patch embedding as a patch x patch conv of stride patch (valid
/// padding) plus its bias, flattened to [batch, patches, hidden]; the learned class token [1, 1,
/// hidden] expanded to the batch (a zero fill plus the token, as exporters' Expand) and put first;
/// the learned position embedding [1, patches + 1, hidden] added. Each encoder layer (1..layers,
/// pre-norm as the paper): x + attention(layernorm(x)) with the output projection, then x +
/// mlp(layernorm(x)) with mlp = dense, gelu, dense. Head (layers + 1): the final layernorm, the
/// class token's row, a dense layer to the classes. No dropout (inference). Names follow Hugging
/// Face's ViTModel (`encoder.layer.3.attention.attention.query`).
/// @return the graph; outputs()[0] is the logits [batch, classes].
/// @throws goopt::error for a size below 1, a patch that does not divide the image, or heads that
///         do not divide hidden.
inline graph::computation_graph vit(const vit_config& c = {});

// ---- implementation ----

inline graph::computation_graph vit(const vit_config& c) {
    using graph::tensor_id;
    using ops::attr_id;
    using ops::op_kind;
    if (c.batch < 1 || c.image < 1 || c.patch < 1 || c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.mlp < 1 ||
        c.classes < 1)
        throw error("vit config", "a size below 1", "every size >= 1");
    if (c.image % c.patch != 0)
        throw error("vit config", concat("image ", c.image, " is not a multiple of patch ", c.patch),
                    "image a multiple of patch");
    if (c.hidden % c.heads != 0)
        throw error("vit config", concat("hidden ", c.hidden, " is not a multiple of heads ", c.heads),
                    "hidden a multiple of heads");

    graph::computation_graph g("vit");
    graph::builder b(g);
    const std::int64_t B = c.batch, H = c.hidden, side = c.image / c.patch, N = side * side;
    const double eps = c.layernorm_epsilon;

    b.set_layer(0);
    const auto pixels = b.input("pixel_values", {B, 3, c.image, c.image});
    const auto kernel = b.weight("embeddings.patch_embeddings.projection.weight", {H, 3, c.patch, c.patch});
    auto x = b.conv2d(pixels, kernel,
                      {.stride = {c.patch, c.patch},
                       .padding = ops::padding_mode::valid,
                       .name = "embeddings.patch_embeddings.projection"});
    x = b.ewadd(x, b.weight("embeddings.patch_embeddings.projection.bias", {H, 1, 1}),
                "embeddings.patch_embeddings.projection.add");
    x = b.reshape(x, {B, H, N}, "embeddings.patch_embeddings.flatten");
    x = b.transpose(x, {0, 2, 1}, "embeddings.patch_embeddings.transpose");  // [B, N, H]
    const auto zeros = b.add1(op_kind::const_fill, {},
                              {{attr_id::shape, std::vector<std::int64_t>{B, 1, H}},
                               {attr_id::dtype, std::int64_t(ops::dtype::f32)},
                               {attr_id::value, 0.0}},
                              "embeddings.cls_token.zeros");
    const auto cls = b.ewadd(zeros, b.weight("embeddings.cls_token", {1, 1, H}), "embeddings.cls_token.expand");
    const tensor_id tokens[] = {cls, x};
    x = b.concat(tokens, 1, "embeddings.concat");  // [B, N + 1, H]
    x = b.ewadd(x, b.weight("embeddings.position_embeddings", {1, N + 1, H}), "embeddings.add_positions");

    for (std::int32_t l = 0; l < c.layers; ++l) {
        b.set_layer(l + 1);
        const std::string p = "encoder.layer." + std::to_string(l) + ".";
        auto y = layernorm(b, x, eps, p + "layernorm_before");
        y = self_attention(b, y, c.heads, p + "attention.attention.");
        y = dense(b, y, H, p + "attention.output.dense");
        x = b.ewadd(x, y, p + "attention.residual");
        y = layernorm(b, x, eps, p + "layernorm_after");
        y = dense(b, y, c.mlp, p + "intermediate.dense");
        y = b.unary(op_kind::gelu, y, p + "intermediate.gelu");
        y = dense(b, y, H, p + "output.dense");
        x = b.ewadd(x, y, p + "output.residual");
    }

    b.set_layer(c.layers + 1);
    x = layernorm(b, x, eps, "layernorm");
    auto first = b.add1(
        op_kind::slice, {x},
        {{attr_id::begin, std::vector<std::int64_t>{0, 0, 0}}, {attr_id::end, std::vector<std::int64_t>{B, 1, H}}},
        "class_token");
    first = b.reshape(first, {B, H}, "class_token.reshape");
    g.mark_output(dense(b, first, c.classes, "classifier"));
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
