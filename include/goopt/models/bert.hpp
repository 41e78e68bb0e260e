#pragma once
/// @file
/// @brief BERT-base (Devlin et al., NAACL'19) as an inference graph: embeddings, a stack of
/// Transformer encoder layers (Vaswani et al., NeurIPS'17) and the pooler. TASO (SOSP'19 §7)
/// evaluates a BERT encoder; this is the full published model at TASO's batch size 1.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/transformer_encoder.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of BERT; the defaults are BERT-base (uncased vocabulary) at batch 1, sequence 128.
struct bert_config {
    std::int64_t batch = 1;
    std::int64_t seq_length = 128;  ///< tokens per sequence; at most max_positions
    std::int32_t layers = 12;
    std::int64_t hidden = 768;
    std::int64_t heads = 12;           ///< must divide hidden
    std::int64_t intermediate = 3072;  ///< feed-forward width (4 x hidden in BERT)
    std::int64_t vocab = 30522;
    std::int64_t max_positions = 512;
    std::int64_t type_vocab = 2;
    double layernorm_epsilon = 1e-12;
};

/// @brief BERT encoder. Inputs `input_ids` and `token_type_ids` [batch, seq] (i64). Embeddings: two
/// gathers plus the first seq rows of the position table (a slice), summed, layernorm. Each layer
/// (post-layernorm, as BERT): Q, K, V projections (matmul + bias) reshaped to [batch, seq, heads,
/// head] and transposed to [batch, heads, seq, head] (K to [batch, heads, head, seq]), scores =
/// Q·K, softmax, ·V, transposed and reshaped back, output projection, residual add, layernorm;
/// feed-forward (matmul + bias, gelu, matmul + bias), residual add, layernorm. The 1/sqrt(head)
/// score scaling is folded into W_q and its bias (as inference exporters do), and no attention mask
/// is applied (every token is real), so neither costs an op. Pooler: the first token, dense, tanh.
/// Weights are stored [in, out]; names follow Hugging Face (`encoder.layer.3.attention.self.query`).
/// Layer: 0 embeddings, 1..layers the encoder layers, layers + 1 the pooler.
/// @return the graph; outputs()[0] is the last hidden state [batch, seq, hidden], outputs()[1] the
///         pooled output [batch, hidden].
inline graph::computation_graph bert(const bert_config& c = {});

// ---- implementation ----

inline graph::computation_graph bert(const bert_config& c) {
    using graph::tensor_id;
    using ops::op_kind;
    if (c.batch < 1 || c.seq_length < 1 || c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.intermediate < 1 ||
        c.vocab < 1 || c.max_positions < 1 || c.type_vocab < 1)
        throw error("bert config", "a size below 1", "every size >= 1");
    if (c.hidden % c.heads != 0)
        throw error("bert config", concat("hidden ", c.hidden, " is not a multiple of heads ", c.heads),
                    "hidden a multiple of heads");
    if (c.seq_length > c.max_positions)
        throw error("bert config", concat("seq_length ", c.seq_length), concat("<= max_positions ", c.max_positions));

    graph::computation_graph g("bert");
    graph::builder b(g);
    const std::int64_t B = c.batch, S = c.seq_length, H = c.hidden, NH = c.heads;

    auto dense = [&](tensor_id x, std::int64_t out, const std::string& n) { return models::dense(b, x, out, n); };
    auto layernorm = [&](tensor_id x, const std::string& n) { return models::layernorm(b, x, c.layernorm_epsilon, n); };

    b.set_layer(0);
    const auto ids = b.input("input_ids", {B, S}, ops::dtype::i64);
    const auto types = b.input("token_type_ids", {B, S}, ops::dtype::i64);
    const auto word_table = b.weight("embeddings.word_embeddings.weight", {c.vocab, H});
    const auto position_table = b.weight("embeddings.position_embeddings.weight", {c.max_positions, H});
    const auto type_table = b.weight("embeddings.token_type_embeddings.weight", {c.type_vocab, H});
    auto x = b.add1(op_kind::gather, {word_table, ids}, {{ops::attr_id::axis, std::int64_t{0}}},
                    "embeddings.word_embeddings");
    const auto t = b.add1(op_kind::gather, {type_table, types}, {{ops::attr_id::axis, std::int64_t{0}}},
                          "embeddings.token_type_embeddings");
    const auto positions = b.add1(
        op_kind::slice, {position_table},
        {{ops::attr_id::begin, std::vector<std::int64_t>{0, 0}}, {ops::attr_id::end, std::vector<std::int64_t>{S, H}}},
        "embeddings.position_embeddings");
    x = b.ewadd(x, t, "embeddings.add_types");
    x = b.ewadd(x, positions, "embeddings.add_positions");
    x = layernorm(x, "embeddings.LayerNorm");

    for (std::int32_t l = 0; l < c.layers; ++l) {
        b.set_layer(l + 1);
        const std::string p = "encoder.layer." + std::to_string(l) + ".";
        const auto ctx = self_attention(b, x, NH, p + "attention.self.");
        auto y = dense(ctx, H, p + "attention.output.dense");
        y = b.ewadd(y, x, p + "attention.output.residual");
        x = layernorm(y, p + "attention.output.LayerNorm");
        y = dense(x, c.intermediate, p + "intermediate.dense");
        y = b.unary(op_kind::gelu, y, p + "intermediate.gelu");
        y = dense(y, H, p + "output.dense");
        y = b.ewadd(y, x, p + "output.residual");
        x = layernorm(y, p + "output.LayerNorm");
    }
    g.mark_output(x);

    b.set_layer(c.layers + 1);
    auto first = b.add1(op_kind::slice, {x},
                        {{ops::attr_id::begin, std::vector<std::int64_t>{0, 0, 0}},
                         {ops::attr_id::end, std::vector<std::int64_t>{B, 1, H}}},
                        "pooler.first_token");
    first = b.reshape(first, {B, H}, "pooler.reshape");
    const auto pooled = b.unary(op_kind::tanh, dense(first, H, "pooler.dense"), "pooler.tanh");
    g.mark_output(pooled);
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
