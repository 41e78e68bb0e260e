#pragma once
/// @file
/// @brief Transformer-XL (Dai et al., ACL'19, §3.2-3.3): a decoder-only Transformer language model
/// with segment-level recurrence and relative positional attention, one segment's forward graph;
/// one of GO's (NeurIPS'20 §4) workloads in its 2-, 4- and 8-layer forms.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>

#include <cstdint>
#include <string>

namespace goopt::models {

/// Knobs of Transformer-XL. Defaults are the paper's base model on enwik8 (character level:
/// d_model 512, 8 heads of 64, inner 2048, segment and memory length 512, batch 22, 204 symbols);
/// GO varies only the number of layers (2, 4, 8), the paper's model has 12. We take enwik8's
/// setting rather than WikiText-103's because WT-103's 267K-word vocabulary relies on an
/// adaptive softmax, which this op set would model only crudely.
struct transformer_xl_config {
    std::int64_t batch = 22;
    std::int64_t segment = 512;  ///< tokens per segment (tgt_len)
    std::int64_t memory = 512;   ///< cached hidden states of the previous segment (mem_len)
    std::int32_t layers = 8;
    std::int64_t model = 512;  ///< d_model
    std::int64_t heads = 8;
    std::int64_t head_dim = 64;
    std::int64_t inner = 2048;  ///< feed-forward width
    std::int64_t vocab = 204;

    /// Layer numbering: decoder layer i -> i, embedding -> layers, output projection -> layers + 1.
    constexpr std::int32_t decoder_layer(std::int32_t i) const noexcept { return i; }
    constexpr std::int32_t embedding_layer() const noexcept { return layers; }
    constexpr std::int32_t softmax_layer() const noexcept { return layers + 1; }
};

/// Non-source ops of one Transformer-XL layer as transformer_xl() builds it.
inline constexpr std::size_t transformer_xl_layer_ops = 39;

/// @brief Transformer-XL forward graph of one segment, ending at the logits [B, T, V].
///
/// Inputs: tokens [B, T] (i64); per layer `layer<i>/memory` [B, M, D], the previous segment's
/// input to that layer; `pos_emb` [M + T, D], the sinusoidal relative position embedding (fed,
/// as it is computed, not trained); per layer `layer<i>/attn_mask` [T, M + T] (0 where attention is
/// allowed, a large negative number above the causal diagonal) and `layer<i>/attn_scale` [1]
/// (1 / sqrt(head_dim)): TensorFlow holds these as constants, our op table has no general
/// constant, so they are graph inputs (no parameters, no FLOPs).
///
/// Layer i: the memory passes an `identity` op that marks TensorFlow's stop_gradient (the
/// training transform must not differentiate through it; our op set has no dedicated
/// stop-gradient op), is concatenated with the layer input h along time ([B, M + T, D]) for keys
/// and values; q = h W_q, k, v = [m; h] W_k, W_v; r = pos_emb W_r. Scores = (q + u) k^T (content)
/// + rel_shift((q + v') r^T) (position, Dai et al.'s terms (a)+(c) and (b)+(d)), with the
/// paper's relative shift built from pad, reshape, slice, reshape; then scale, mask, softmax,
/// context, output projection, residual add, layernorm (post-norm, as the paper), and the
/// feed-forward relu(x W1 + b1) W2 + b2 with residual add and layernorm.
///
/// Simplifications: u, v' (r_w_bias, r_r_bias) are per layer (the reference code can tie them);
/// the new memory (each layer's input) is not marked as an output; no dropout; the logits use
/// their own projection rather than the tied embedding.
/// @throws goopt::error for a config with a size < 1.
inline graph::computation_graph transformer_xl(const transformer_xl_config& c = {});

// ---- implementation ----

inline graph::computation_graph transformer_xl(const transformer_xl_config& c) {
    using graph::tensor_id;
    using ops::op_kind;
    if (c.batch < 1 || c.segment < 1 || c.memory < 1 || c.layers < 1 || c.model < 1 || c.heads < 1 || c.head_dim < 1 ||
        c.inner < 1 || c.vocab < 1)
        throw error("transformer_xl config", "a size below 1", "every size >= 1");
    const std::int64_t B = c.batch, T = c.segment, M = c.memory, K = c.memory + c.segment, D = c.model, N = c.heads,
                       E = c.head_dim, HE = c.heads * c.head_dim;

    graph::computation_graph g("transformer_xl_" + std::to_string(c.layers) + "layer");
    graph::builder b(g);

    b.set_layer(c.embedding_layer());
    const tensor_id tokens = b.input("tokens", {B, T}, ops::dtype::i64);
    const tensor_id table = b.weight("embedding", {c.vocab, D});
    const tensor_id emb_in[] = {table, tokens};
    tensor_id h = b.add(op_kind::gather, emb_in, {{ops::attr_id::axis, std::int64_t{0}}}, "embed")[0];  // [B,T,D]
    const tensor_id pos_emb = b.input("pos_emb", {K, D});

    for (std::int32_t i = 0; i < c.layers; ++i) {
        b.set_layer(c.decoder_layer(i));
        const std::string p = "layer" + std::to_string(i) + "/";
        const tensor_id mem = b.input(p + "memory", {B, M, D});
        const tensor_id mask = b.input(p + "attn_mask", {T, K});
        const tensor_id scale = b.input(p + "attn_scale", {1});
        const tensor_id w_q = b.weight(p + "w_q", {D, HE});
        const tensor_id w_k = b.weight(p + "w_k", {D, HE});
        const tensor_id w_v = b.weight(p + "w_v", {D, HE});
        const tensor_id w_r = b.weight(p + "w_r", {D, HE});
        const tensor_id r_w_bias = b.weight(p + "r_w_bias", {N, 1, E});
        const tensor_id r_r_bias = b.weight(p + "r_r_bias", {N, 1, E});
        const tensor_id w_o = b.weight(p + "w_o", {HE, D});
        const tensor_id ln1_g = b.weight(p + "ln1/gamma", {D});
        const tensor_id ln1_b = b.weight(p + "ln1/beta", {D});
        const tensor_id w_1 = b.weight(p + "ff/w1", {D, c.inner});
        const tensor_id b_1 = b.weight(p + "ff/b1", {c.inner});
        const tensor_id w_2 = b.weight(p + "ff/w2", {c.inner, D});
        const tensor_id b_2 = b.weight(p + "ff/b2", {D});
        const tensor_id ln2_g = b.weight(p + "ln2/gamma", {D});
        const tensor_id ln2_b = b.weight(p + "ln2/beta", {D});

        // 1 + 1: stop-gradient on the memory, keys/values over memory and segment
        const tensor_id cat_in[] = {b.unary(op_kind::identity, mem, p + "stop_gradient"), h};
        const tensor_id cat = b.concat(cat_in, 1);  // [B, K, D]
        // 3 x 3: projections, split into heads
        const tensor_id q = b.transpose(b.reshape(b.matmul(h, w_q), {B, T, N, E}), {0, 2, 1, 3});    // [B,N,T,E]
        const tensor_id k = b.transpose(b.reshape(b.matmul(cat, w_k), {B, K, N, E}), {0, 2, 3, 1});  // [B,N,E,K]
        const tensor_id v = b.transpose(b.reshape(b.matmul(cat, w_v), {B, K, N, E}), {0, 2, 1, 3});  // [B,N,K,E]
        // 3: relative position keys
        const tensor_id r = b.transpose(b.reshape(b.matmul(pos_emb, w_r), {K, N, E}), {1, 2, 0});  // [N,E,K]
        // 2 + 2 + 4 + 1: content and position terms, relative shift, their sum
        const tensor_id ac = b.matmul(b.ewadd(q, r_w_bias), k);  // [B,N,T,K]
        const tensor_id bd_raw = b.matmul(b.ewadd(q, r_r_bias), r);
        const tensor_id padded =
            b.add1(op_kind::pad, {bd_raw}, {{ops::attr_id::pads, std::vector<std::int64_t>{0, 0, 0, 1, 0, 0, 0, 0}}});
        const tensor_id tall = b.reshape(padded, {B, N, K + 1, T});
        const tensor_id cut = b.add1(op_kind::slice, {tall},
                                     {{ops::attr_id::begin, std::vector<std::int64_t>{0, 0, 1, 0}},
                                      {ops::attr_id::end, std::vector<std::int64_t>{B, N, K + 1, T}}});
        const tensor_id bd = b.reshape(cut, {B, N, T, K});
        const tensor_id score = b.ewadd(ac, bd);
        // 3 + 2: scale, mask, softmax; weighted values
        const tensor_id prob = b.softmax(b.ewadd(b.binary(op_kind::smul, score, scale), mask), -1);
        const tensor_id ctx = b.reshape(b.transpose(b.matmul(prob, v), {0, 2, 1, 3}), {B, T, HE});
        // 3: output projection, residual, layernorm
        const tensor_id a = b.layernorm(b.ewadd(h, b.matmul(ctx, w_o)), ln1_g, ln1_b);
        // 7: position-wise feed-forward, residual, layernorm
        const tensor_id ff1 = b.relu(b.ewadd(b.matmul(a, w_1), b_1));
        const tensor_id ff2 = b.ewadd(b.matmul(ff1, w_2), b_2);
        h = b.layernorm(b.ewadd(a, ff2), ln2_g, ln2_b);
    }

    b.set_layer(c.softmax_layer());
    const tensor_id w_out = b.weight("softmax/w", {D, c.vocab});
    const tensor_id b_out = b.weight("softmax/b", {c.vocab});
    g.mark_output(b.ewadd(b.matmul(h, w_out), b_out, "logits"));
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
