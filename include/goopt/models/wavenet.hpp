#pragma once
/// @file
/// @brief WaveNet (van den Oord et al. 2016, "WaveNet: A Generative Model for Raw Audio", §2.1-2.4):
/// stacks of dilated causal convolutions with gated activations and residual and skip
/// connections; one of GO's (NeurIPS'20 §4) workloads (2 stacks / 18 layers, 4 stacks / 36 layers).

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace goopt::models {

/// Knobs of WaveNet. The paper gives the dilation pattern (1, 2, ..., 512 repeated), 256 mu-law
/// classes, filter width 2 and 16 kHz audio; it does not give channel counts. We take the widely
/// used open TensorFlow reproduction's 32 residual / 32 dilation / 512 skip channels, batch 1, and
/// one second of audio (16,000 samples) per example. GO's sizes "2 stacks, 18 layers" and
/// "4 stacks, 36 layers" are read as layers in total (9 per stack, dilations 1..256 in each); set
/// layers = 10 x stacks for full 1..512 stacks. The dilation of layer j of a stack is
/// 2^(j mod dilation_cycle).
struct wavenet_config {
    std::int64_t batch = 1;
    std::int64_t samples = 16000;  ///< length of the audio (time axis = W of an NCHW tensor with H = 1)
    std::int32_t stacks = 2;
    std::int32_t layers = 18;          ///< residual layers in total, a multiple of stacks
    std::int32_t dilation_cycle = 10;  ///< dilations 1, 2, ..., 2^(cycle-1), then again from 1
    std::int64_t filter_width = 2;
    std::int64_t residual_channels = 32;
    std::int64_t dilation_channels = 32;
    std::int64_t skip_channels = 512;
    std::int64_t classes = 256;  ///< mu-law quantization levels (one-hot input, softmax output)

    /// Layer numbering: residual layer j (counted over all stacks) -> j, the initial causal
    /// convolution -> layers, the output head (relu, 1x1, relu, 1x1) -> layers + 1.
    constexpr std::int32_t residual_layer(std::int32_t j) const noexcept { return j; }
    constexpr std::int32_t input_layer() const noexcept { return layers; }
    constexpr std::int32_t head_layer() const noexcept { return layers + 1; }
    /// Dilation of residual layer j.
    constexpr std::int64_t dilation(std::int32_t j) const noexcept {
        return std::int64_t{1} << ((j % (layers / stacks)) % dilation_cycle);
    }
};

/// @brief WaveNet forward graph, ending at the logits [B, classes, 1, samples].
///
/// Input `audio` [B, classes, 1, samples] (one-hot mu-law). A causal convolution is `pad` on the
/// left of the time axis by (filter_width - 1) * dilation, then a VALID conv2d with a
/// [out, in, 1, filter_width] kernel and that dilation, so output t sees inputs <= t only.
/// Initial causal conv to residual_channels; then each residual layer: one pad, filter and gate
/// dilated convs, tanh(filter) * sigmoid(gate), a 1x1 skip conv summed into the skip total, and
/// a 1x1 conv added to the layer's input (the residual; omitted in the last layer, whose residual
/// output nothing reads). Head: relu, 1x1 conv, relu, 1x1 conv to `classes`. No biases (as the
/// reproduction's default); no global or local conditioning.
/// @throws goopt::error for a config with a size < 1 or layers not a multiple of stacks.
inline graph::computation_graph wavenet(const wavenet_config& c = {});

// ---- implementation ----

inline graph::computation_graph wavenet(const wavenet_config& c) {
    using graph::tensor_id;
    using ops::op_kind;
    if (c.batch < 1 || c.samples < 1 || c.stacks < 1 || c.layers < 1 || c.dilation_cycle < 1 || c.dilation_cycle > 30 ||
        c.filter_width < 1 || c.residual_channels < 1 || c.dilation_channels < 1 || c.skip_channels < 1 ||
        c.classes < 1)
        throw error("wavenet config", "a size out of range", "every size >= 1 (dilation_cycle at most 30)");
    if (c.layers % c.stacks != 0)
        throw error("wavenet config", concat("layers ", c.layers, " is not a multiple of stacks ", c.stacks),
                    "layers a multiple of stacks");
    const std::int64_t B = c.batch, R = c.residual_channels, Dc = c.dilation_channels, S = c.skip_channels,
                       k = c.filter_width;

    graph::computation_graph g("wavenet_" + std::to_string(c.stacks) + "x" + std::to_string(c.layers));
    graph::builder b(g);

    // left padding of the time axis (W of NCHW), then a VALID dilated conv: causal
    auto causal_conv = [&](tensor_id x, tensor_id w, std::int64_t dilation) {
        const tensor_id padded =
            dilation * (k - 1) == 0
                ? x
                : b.add1(op_kind::pad, {x},
                         {{ops::attr_id::pads, std::vector<std::int64_t>{0, 0, 0, dilation * (k - 1), 0, 0, 0, 0}}});
        return std::pair{padded, b.conv2d(padded, w, {.padding = ops::padding_mode::valid, .dilation = {1, dilation}})};
    };

    b.set_layer(c.input_layer());
    const tensor_id audio = b.input("audio", {B, c.classes, 1, c.samples});
    tensor_id x = causal_conv(audio, b.weight("causal/w", {R, c.classes, 1, k}), 1).second;

    tensor_id skip_total = 0;
    for (std::int32_t j = 0; j < c.layers; ++j) {
        b.set_layer(c.residual_layer(j));
        const std::string p = "layer" + std::to_string(j) + "/";
        const std::int64_t d = c.dilation(j);
        const tensor_id w_f = b.weight(p + "filter", {Dc, R, 1, k});
        const tensor_id w_g = b.weight(p + "gate", {Dc, R, 1, k});
        const tensor_id w_s = b.weight(p + "skip", {S, Dc, 1, 1});
        const auto [padded, filter] = causal_conv(x, w_f, d);
        const tensor_id gate = b.conv2d(padded, w_g, {.padding = ops::padding_mode::valid, .dilation = {1, d}});
        const tensor_id z = b.ewmul(b.unary(op_kind::tanh, filter), b.unary(op_kind::sigmoid, gate));
        const tensor_id skip = b.conv2d(z, w_s);
        skip_total = j == 0 ? skip : b.ewadd(skip_total, skip);
        if (j + 1 < c.layers) x = b.ewadd(x, b.conv2d(z, b.weight(p + "dense", {R, Dc, 1, 1})));
    }

    b.set_layer(c.head_layer());
    const tensor_id h1 = b.conv2d(b.relu(skip_total), b.weight("head/w1", {S, S, 1, 1}));
    g.mark_output(b.conv2d(b.relu(h1), b.weight("head/w2", {c.classes, S, 1, 1}), {.name = "logits"}));
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
