#pragma once
/// @file
/// @brief GNMT: Google's neural machine translation model (Wu et al. 2016, "Google's Neural Machine
/// Translation System", §3-4), encoder and decoder unrolled over their sequences, one of GO's
/// (NeurIPS'20 §4) workloads in its 2-, 4- and 8-layer forms.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/lstm_layer.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of GNMT. Sizes as we read Wu et al. 2016 (not checked against GO's code): 1024 LSTM units, 1024-wide
/// embeddings and attention, a 32K wordpiece vocabulary, batches of 128 sentence pairs, 8 encoder and 8 decoder layers.
/// Sequence lengths: GO does not publish them, and they set the graph's size (ops grow linearly
/// with them). We take 80 wordpieces on each side, sized to GO's scale: GO's 8-layer training
/// graph has ~80,000 ops; here the 8-layer forward graph has ~23,200 ops at 80 steps and the
/// training transform (models::make_training_graph) turns it into ~60,000 (at 60 steps it was
/// 45,000, under the 50,000-op target). Real WMT batches are bucketed by length; 80 is a long
/// bucket, not a measured average.
struct gnmt_config {
    std::int64_t batch = 128;
    std::int64_t source_steps = 80;  ///< encoder unroll length
    std::int64_t target_steps = 80;  ///< decoder unroll length (teacher forcing)
    std::int32_t layers = 8;         ///< encoder layers (bidirectional first) = decoder layers; 2, 4, 8 in GO
    std::int64_t hidden = 1024;      ///< LSTM units, per direction in the bidirectional layer
    std::int64_t embedding = 1024;
    std::int64_t attention = 1024;  ///< width of the additive attention's hidden layer
    std::int64_t source_vocab = 32000;
    std::int64_t target_vocab = 32000;
    std::int32_t residual_from = 2;  ///< first (0-based) layer with a residual connection: Wu et al.'s "layer 3"

    /// Layer numbering (one index per placement unit): encoder layer i -> i (both directions of
    /// the bidirectional layer 0 share index 0), decoder layer i -> layers + i, attention ->
    /// 2 layers, source embedding -> 2 layers + 1, target embedding -> 2 layers + 2, output
    /// projection (softmax) -> 2 layers + 3. The expert placement "encoder and decoder layer i on
    /// device i mod n" is (index mod layers) mod n for indices below 2 layers.
    constexpr std::int32_t encoder_layer(std::int32_t i) const noexcept { return i; }
    constexpr std::int32_t decoder_layer(std::int32_t i) const noexcept { return layers + i; }
    constexpr std::int32_t attention_layer() const noexcept { return 2 * layers; }
    constexpr std::int32_t source_embedding_layer() const noexcept { return 2 * layers + 1; }
    constexpr std::int32_t target_embedding_layer() const noexcept { return 2 * layers + 2; }
    constexpr std::int32_t softmax_layer() const noexcept { return 2 * layers + 3; }
};

/// Ops of the additive attention at one decoder step (see gnmt()).
inline constexpr std::size_t gnmt_attention_step_ops = 9;

/// @brief GNMT forward graph (training with teacher forcing), ending at the logits.
///
/// Encoder: source tokens [S, B] (i64) -> embedding; layer 0 bidirectional (a forward and a
/// backward LSTM over the sequence, outputs concatenated per step, 2H wide); layers 1..L-1
/// unidirectional; from layer `residual_from` on, a layer's output is added to its input.
/// The top layer's outputs are stacked into the attention memory [B, S, H]; its keys memory W_k
/// [B, S, A] are computed once.
///
/// Decoder, step t: layer 0 consumes the target embedding; its output y0_t is the attention query
/// (Wu et al. use the bottom decoder layer's output for attention; we use the current step's, as
/// tensorflow/nmt's GNMT attention does, not the previous step's). Attention (9 ops): q = y0_t W_q;
/// e = tanh(keys + q); scores = e v; a = softmax(scores); context = a . memory. Layers 1..L-1
/// consume concat(previous layer's output, context) (2H wide), with residual connections from
/// `residual_from`. Decoder layer i starts from encoder layer i's final state (layer 0: the forward
/// direction's). Every step projects the top output to logits y W + b [B, V]; the steps'
/// logits are concatenated into the one output [T * B, V].
///
/// Simplifications: no bias and no normalization in the attention (Wu et al. use a normalized
/// Bahdanau-style attention), no dropout (TensorFlow builds it from random ops we do not model),
/// the full softmax on the 32K vocabulary. Encoder initial states are graph inputs
/// (`enc<i>[_fw|_bw]/h0`, `/c0`).
/// @throws goopt::error for a config with a size < 1 or layers < 2.
inline graph::computation_graph gnmt(const gnmt_config& c = {});

// ---- implementation ----

inline graph::computation_graph gnmt(const gnmt_config& c) {
    using graph::tensor_id;
    if (c.batch < 1 || c.source_steps < 1 || c.target_steps < 1 || c.hidden < 1 || c.embedding < 1 || c.attention < 1 ||
        c.source_vocab < 1 || c.target_vocab < 1 || c.residual_from < 1)
        throw error("gnmt config", "batch, steps, hidden, embedding, attention, vocab or residual_from below 1",
                    "each >= 1");
    if (c.layers < 2) throw error("gnmt config", concat("layers is ", c.layers), ">= 2");
    const std::int64_t B = c.batch, S = c.source_steps, H = c.hidden, A = c.attention;
    const auto L = static_cast<std::size_t>(c.layers);

    graph::computation_graph g("gnmt_" + std::to_string(c.layers) + "layer");
    const std::size_t est =
        (static_cast<std::size_t>(S) + static_cast<std::size_t>(c.target_steps)) * (L + 1) * (lstm_step_ops + 3);
    g.reserve(est + 256, est + 256);
    graph::builder b(g);

    // ---- encoder
    b.set_layer(c.source_embedding_layer());
    const tensor_id src = b.input("source_tokens", {S, B}, ops::dtype::i64);
    const tensor_id src_table = b.weight("source_embedding", {c.source_vocab, c.embedding});
    const std::vector<tensor_id> xs = embed_and_unstack(b, src_table, src);

    std::vector<lstm_state> enc_final(L);
    b.set_layer(c.encoder_layer(0));
    const auto fw = lstm_parameters(b, "enc0_fw", c.embedding, H);
    const auto bw = lstm_parameters(b, "enc0_bw", c.embedding, H);
    const auto hf = lstm_layer(b, fw, xs, lstm_initial_state(b, "enc0_fw", B, H), false, &enc_final[0]);
    const auto hb = lstm_layer(b, bw, xs, lstm_initial_state(b, "enc0_bw", B, H), true);
    std::vector<tensor_id> ys(xs.size());
    for (std::size_t t = 0; t < xs.size(); ++t) {
        const tensor_id pair[] = {hf[t], hb[t]};
        ys[t] = b.concat(pair, 1);
    }
    for (std::size_t l = 1; l < L; ++l) {
        const auto li = static_cast<std::int32_t>(l);
        b.set_layer(c.encoder_layer(li));
        const std::string prefix = "enc" + std::to_string(l);
        const auto p = lstm_parameters(b, prefix, l == 1 ? 2 * H : H, H);
        auto hs = lstm_layer(b, p, ys, lstm_initial_state(b, prefix, B, H), false, &enc_final[l]);
        if (li >= c.residual_from)
            for (std::size_t t = 0; t < hs.size(); ++t) hs[t] = b.ewadd(hs[t], ys[t]);
        ys = std::move(hs);
    }

    // ---- attention memory and keys, computed once
    b.set_layer(c.attention_layer());
    std::vector<tensor_id> rows(ys.size());
    for (std::size_t t = 0; t < ys.size(); ++t) rows[t] = b.reshape(ys[t], {B, 1, H});
    const tensor_id memory = rows.size() == 1 ? rows[0] : b.concat(rows, 1, "attention/memory");  // [B, S, H]
    const tensor_id w_k = b.weight("attention/w_k", {H, A});
    const tensor_id w_q = b.weight("attention/w_q", {H, A});
    const tensor_id v = b.weight("attention/v", {A, 1});
    const tensor_id keys = b.reshape(b.matmul(b.reshape(memory, {B * S, H}), w_k), {B, S, A}, "attention/keys");

    // ---- decoder, step-major: layer i at step t needs the attention context of step t
    b.set_layer(c.target_embedding_layer());
    const tensor_id tgt = b.input("target_tokens", {c.target_steps, B}, ops::dtype::i64);
    const tensor_id tgt_table = b.weight("target_embedding", {c.target_vocab, c.embedding});
    const std::vector<tensor_id> xt = embed_and_unstack(b, tgt_table, tgt);

    std::vector<lstm_weights> dec(L);
    std::vector<lstm_state> state = enc_final;
    for (std::size_t l = 0; l < L; ++l) {
        b.set_layer(c.decoder_layer(static_cast<std::int32_t>(l)));
        dec[l] = lstm_parameters(b, "dec" + std::to_string(l), l == 0 ? c.embedding : 2 * H, H);
    }
    b.set_layer(c.softmax_layer());
    const tensor_id w_out = b.weight("softmax/w", {H, c.target_vocab});
    const tensor_id b_out = b.weight("softmax/b", {c.target_vocab});

    std::vector<tensor_id> logits;
    logits.reserve(xt.size());
    for (const tensor_id x : xt) {
        b.set_layer(c.decoder_layer(0));
        state[0] = lstm_step(b, dec[0], x, state[0]);
        tensor_id y = state[0].h;

        b.set_layer(c.attention_layer());
        const tensor_id q = b.reshape(b.matmul(y, w_q), {B, 1, A});
        const tensor_id e = b.unary(ops::op_kind::tanh, b.ewadd(keys, q));  // [B, S, A]
        const tensor_id scores = b.reshape(b.matmul(e, v), {B, 1, S});      // [B, 1, S]
        const tensor_id weights = b.softmax(scores, -1);
        const tensor_id context = b.reshape(b.matmul(weights, memory), {B, H});  // [B, H]

        for (std::size_t l = 1; l < L; ++l) {
            const auto li = static_cast<std::int32_t>(l);
            b.set_layer(c.decoder_layer(li));
            const tensor_id in[] = {y, context};
            state[l] = lstm_step(b, dec[l], b.concat(in, 1), state[l]);
            y = li >= c.residual_from ? b.ewadd(state[l].h, y) : state[l].h;
        }
        b.set_layer(c.softmax_layer());
        logits.push_back(b.ewadd(b.matmul(y, w_out), b_out));
    }
    b.set_layer(c.softmax_layer());
    g.mark_output(logits.size() == 1 ? logits[0] : b.concat(logits, 0, "logits"));
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
