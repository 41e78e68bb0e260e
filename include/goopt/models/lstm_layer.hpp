#pragma once
/// @file
/// @brief An LSTM layer unrolled over time from elementwise pieces (matmul, ewadd, split, sigmoid,
/// tanh, ewmul), as TensorFlow's BasicLSTMCell appears in a graph, rather than the composite
/// `lstm_cell` op: GO's workloads are TensorFlow graphs at that granularity, and a placer needs
/// to see (and may split) the pieces. Hochreiter & Schmidhuber (1997); gate order i, f, g, o as in
/// ops::op_kind::lstm_cell, with TensorFlow's forget-gate bias of 1 added before the sigmoid.

#include <goopt/graph/builder.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace goopt::models {

/// Parameters of one LSTM layer: input projection w [I, 4H], recurrent projection u [H, 4H],
/// bias b [4H] (gates i, f, g, o), and the constant 1 added to the forget gate.
struct lstm_weights {
    graph::tensor_id w = 0, u = 0, b = 0, forget_bias = 0;
    std::int64_t hidden = 0;
};

/// Hidden and cell state of an LSTM layer at one step, each [B, H].
struct lstm_state {
    graph::tensor_id h = 0, c = 0;
};

/// Number of non-source ops that lstm_step adds per step: 2 matmul, 4 ewadd, 1 split, 3 sigmoid,
/// 2 tanh, 3 ewmul.
inline constexpr std::size_t lstm_step_ops = 15;

/// @brief Adds the weights of an LSTM layer (`<prefix>/w`, `/u`, `/b`) and its forget-bias
/// constant, stamped with the builder's current layer.
inline lstm_weights lstm_parameters(graph::builder& b, const std::string& prefix, std::int64_t input_size,
                                    std::int64_t hidden) {
    lstm_weights p;
    p.hidden = hidden;
    p.w = b.weight(prefix + "/w", {input_size, 4 * hidden});
    p.u = b.weight(prefix + "/u", {hidden, 4 * hidden});
    p.b = b.weight(prefix + "/b", {4 * hidden});
    // TensorFlow's forget_bias = 1.0 is exactly an all-ones tensor; one per layer keeps every op of
    // a layer with that layer when placing by layer.
    p.forget_bias = b.constant(ops::op_kind::const_one, {1}, prefix + "/forget_bias");
    return p;
}

/// @brief A zero-state stand-in: graph inputs `<prefix>/h0` and `<prefix>/c0` of shape [B, H]. TF
/// feeds the state carried over from the previous batch (truncated BPTT) or zeros the same way.
inline lstm_state lstm_initial_state(graph::builder& b, const std::string& prefix, std::int64_t batch,
                                     std::int64_t hidden) {
    return {b.input(prefix + "/h0", {batch, hidden}), b.input(prefix + "/c0", {batch, hidden})};
}

/// @brief One LSTM step: gates = x w + h u + b; c' = sigmoid(f + 1) c + sigmoid(i) tanh(g);
/// h' = sigmoid(o) tanh(c'). Adds exactly lstm_step_ops ops, stamped with the current layer.
/// @param x input [B, I]; @param s state of the previous step.
inline lstm_state lstm_step(graph::builder& b, const lstm_weights& p, graph::tensor_id x, lstm_state s) {
    using ops::op_kind;
    const auto xw = b.matmul(x, p.w);
    const auto hu = b.matmul(s.h, p.u);
    const auto gates = b.ewadd(b.ewadd(xw, hu), p.b);
    const auto g4 = b.split(gates, 1, {p.hidden, p.hidden, p.hidden, p.hidden});
    const auto i = b.unary(op_kind::sigmoid, g4[0]);
    const auto f = b.unary(op_kind::sigmoid, b.ewadd(g4[1], p.forget_bias));
    const auto g = b.unary(op_kind::tanh, g4[2]);
    const auto o = b.unary(op_kind::sigmoid, g4[3]);
    const auto c = b.ewadd(b.ewmul(f, s.c), b.ewmul(i, g));
    const auto h = b.ewmul(o, b.unary(op_kind::tanh, c));
    return {h, c};
}

/// @brief Unrolls a layer over a sequence of inputs, each [B, I].
/// @param reverse run from the last step to the first (the backward half of a bidirectional layer);
///        the outputs are still returned in time order.
/// @param final receives the state after the last step processed, when not null.
/// @return the hidden state of every step, in time order.
inline std::vector<graph::tensor_id> lstm_layer(graph::builder& b, const lstm_weights& p,
                                                std::span<const graph::tensor_id> xs, lstm_state init,
                                                bool reverse = false, lstm_state* final = nullptr) {
    std::vector<graph::tensor_id> hs(xs.size());
    lstm_state s = init;
    for (std::size_t k = 0; k < xs.size(); ++k) {
        const std::size_t t = reverse ? xs.size() - 1 - k : k;
        s = lstm_step(b, p, xs[t], s);
        hs[t] = s.h;
    }
    if (final) *final = s;
    return hs;
}

/// @brief Embeds time-major token ids [T, B] (i64) with table [V, E] and unstacks the result into
/// T tensors [B, E]: one gather, one split (none when T = 1), T reshapes, as a static unroll does.
inline std::vector<graph::tensor_id> embed_and_unstack(graph::builder& b, graph::tensor_id table,
                                                       graph::tensor_id tokens) {
    const graph::tensor_id in[] = {table, tokens};
    const auto emb = b.add(ops::op_kind::gather, in, {{ops::attr_id::axis, std::int64_t{0}}})[0];
    const auto& d = b.graph().type_of(emb).dims;  // [T, B, E]
    const std::int64_t steps = d[0], batch = d[1], width = d[2];
    if (steps == 1) return {b.reshape(emb, {batch, width})};
    auto parts = b.split(emb, 0, std::vector<std::int64_t>(static_cast<std::size_t>(steps), 1));
    for (auto& t : parts) t = b.reshape(t, {batch, width});
    return parts;
}

}  // namespace goopt::models
