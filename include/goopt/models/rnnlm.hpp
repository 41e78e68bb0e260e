#pragma once
/// @file
/// @brief RNNLM: a stacked-LSTM word language model unrolled over its sequence, one of GO's
/// (NeurIPS'20 §4) workloads in its 2- and 4-layer forms (taken by GO from Mirhoseini et al.,
/// ICML'17, "Device Placement Optimization with Reinforcement Learning").

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/lstm_layer.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of RNNLM. GO does not list its RNNLM sizes; Mirhoseini et al. (ICML'17) describe their
/// RNNLM as Jozefowicz et al. (2016)'s LSTM language model with 2 or 4 layers of 2048 units and a
/// batch of 64, which we take as defaults (from our reading of those papers, not checked against
/// GO's code). The vocabulary (10,000) and the 35 unrolled steps are Zaremba et al. (2014)'s
/// Penn Treebank setting, a standard small-vocabulary RNNLM; a larger vocabulary only makes the
/// softmax matmul larger, not the graph different.
struct rnnlm_config {
    std::int64_t batch = 64;
    std::int64_t steps = 35;        ///< unrolled time steps
    std::int32_t layers = 2;        ///< 2 or 4 in GO
    std::int64_t hidden = 2048;     ///< LSTM units per layer
    std::int64_t embedding = 2048;  ///< word embedding width (= hidden, as in the papers)
    std::int64_t vocab = 10000;

    /// Layer index of LSTM layer i (0-based): i, so "LSTM layer i on device i mod n" reads directly.
    constexpr std::int32_t lstm_layer_index(std::int32_t i) const noexcept { return i; }
    /// The embedding lookup and the input unstacking.
    constexpr std::int32_t embedding_layer() const noexcept { return layers; }
    /// The per-step output projections and the concatenated logits.
    constexpr std::int32_t softmax_layer() const noexcept { return layers + 1; }
};

/// @brief RNNLM forward graph: tokens [T, B] (i64, time-major) -> embedding gather -> `layers`
/// stacked LSTM layers unrolled over T steps (lstm_step, 15 ops per cell; initial states are graph
/// inputs `lstm<i>/h0`, `lstm<i>/c0`) -> per-step logits h W + b [B, V] -> concat into the one output
/// [T * B, V] (row t * B + n is step t of sequence n). The graph ends at the logits: the training
/// transform adds the loss.
/// @throws goopt::error for a config with a size < 1.
inline graph::computation_graph rnnlm(const rnnlm_config& c = {});

// ---- implementation ----

inline graph::computation_graph rnnlm(const rnnlm_config& c) {
    using graph::tensor_id;
    if (c.batch < 1 || c.steps < 1 || c.layers < 1 || c.hidden < 1 || c.embedding < 1 || c.vocab < 1)
        throw error("rnnlm config", "batch, steps, layers, hidden, embedding or vocab below 1", "each >= 1");
    graph::computation_graph g(concat("rnnlm_", c.layers, "layer"));
    const auto per_step = static_cast<std::size_t>(c.layers) * (lstm_step_ops + 1) + 4;
    g.reserve(static_cast<std::size_t>(c.steps) * per_step + 64,
              static_cast<std::size_t>(c.steps) * (per_step + 8) + 64);
    graph::builder b(g);

    b.set_layer(c.embedding_layer());
    const tensor_id tokens = b.input("tokens", {c.steps, c.batch}, ops::dtype::i64);
    const tensor_id table = b.weight("embedding", {c.vocab, c.embedding});
    std::vector<tensor_id> xs = embed_and_unstack(b, table, tokens);

    for (std::int32_t l = 0; l < c.layers; ++l) {
        b.set_layer(c.lstm_layer_index(l));
        const std::string prefix = "lstm" + std::to_string(l);
        const auto p = lstm_parameters(b, prefix, l == 0 ? c.embedding : c.hidden, c.hidden);
        xs = lstm_layer(b, p, xs, lstm_initial_state(b, prefix, c.batch, c.hidden));
    }

    b.set_layer(c.softmax_layer());
    const tensor_id w = b.weight("softmax/w", {c.hidden, c.vocab});
    const tensor_id bias = b.weight("softmax/b", {c.vocab});
    std::vector<tensor_id> logits;
    logits.reserve(xs.size());
    for (tensor_id h : xs) logits.push_back(b.ewadd(b.matmul(h, w), bias));
    g.mark_output(logits.size() == 1 ? logits[0] : b.concat(logits, 0, "logits"));
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
