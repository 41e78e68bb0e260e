#pragma once
/// @file
/// @brief NasRNN: the recurrent cell found by neural architecture search (Zoph & Le, ICLR'17),
/// unrolled over its sequence, as TASO (SOSP'19 §7) evaluates it: hidden size 512, 5 steps.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace goopt::models {

/// Knobs of NasRNN; the defaults are TASO's evaluation setting.
struct nasrnn_config {
    std::int64_t batch = 1;
    std::int64_t hidden = 512;  ///< hidden size, also the size of each step's input
    std::int32_t steps = 5;     ///< unrolled time steps
    /// false (TASO's graph): every step has its own 16 weight matrices, so nothing is shared between
    /// steps; true: one set of 16 matrices used by every step, as a trained RNN is.
    bool shared_weights = false;
};

/// @brief NasRNN unrolled over `steps`: inputs `x0..x{steps-1}` [batch, hidden], initial state
/// `h0` (a weight, as in TASO's graph). Each step combines x and h eight times (x·W_k + h·U_k, no
/// bias) and reduces the eight through the searched tree of relu/sigmoid/tanh activations,
/// ewadds and ewmuls into the new state. Layer = step index. Names: `step2.combine5.x`, ...
/// @return the graph; its one output is the last state [batch, hidden].
inline graph::computation_graph nasrnn(const nasrnn_config& c = {});

// ---- implementation ----

inline graph::computation_graph nasrnn(const nasrnn_config& c) {
    using graph::tensor_id;
    using ops::op_kind;
    if (c.batch < 1 || c.hidden < 1 || c.steps < 1)
        throw error("nasrnn config", "batch, hidden or steps below 1", "each >= 1");

    graph::computation_graph g("nasrnn");
    graph::builder b(g);
    const std::int64_t H = c.hidden;

    b.set_layer(-1);
    std::array<tensor_id, 8> w{}, u{};
    auto make_weights = [&](const std::string& p) {
        for (std::size_t k = 0; k < 8; ++k) {
            w[k] = b.weight(p + "w" + std::to_string(k), {H, H});
            u[k] = b.weight(p + "u" + std::to_string(k), {H, H});
        }
    };
    if (c.shared_weights) make_weights("cell.");
    b.set_layer(0);
    tensor_id h = b.weight("h0", {c.batch, H});

    for (std::int32_t s = 0; s < c.steps; ++s) {
        b.set_layer(s);
        const std::string p = "step" + std::to_string(s) + ".";
        if (!c.shared_weights) make_weights(p);
        const tensor_id x = b.input("x" + std::to_string(s), {c.batch, H});
        std::array<tensor_id, 8> t{};
        for (std::size_t k = 0; k < 8; ++k) {
            const std::string n = p + "combine" + std::to_string(k);
            t[k] = b.ewadd(b.matmul(x, w[k], ops::activation::none, n + ".x"),
                           b.matmul(h, u[k], ops::activation::none, n + ".h"), n);
        }
        auto un = [&](op_kind k, tensor_id v, const std::string& n) { return b.unary(k, v, p + n); };
        auto bin = [&](op_kind k, tensor_id l, tensor_id r, const std::string& n) { return b.binary(k, l, r, p + n); };
        // the searched reduction tree, as TASO encodes the cell, level by level
        const auto m0 =
            bin(op_kind::ewadd, un(op_kind::relu, t[0], "relu0"), un(op_kind::sigmoid, t[3], "sigmoid3"), "m0");
        const auto m1 =
            bin(op_kind::ewadd, un(op_kind::sigmoid, t[1], "sigmoid1"), un(op_kind::tanh, t[2], "tanh2"), "m1");
        const auto m2 =
            bin(op_kind::ewmul, un(op_kind::sigmoid, t[4], "sigmoid4"), un(op_kind::tanh, t[5], "tanh5"), "m2");
        const auto m3 =
            bin(op_kind::ewmul, un(op_kind::sigmoid, t[6], "sigmoid6"), un(op_kind::relu, t[7], "relu7"), "m3");
        const auto m4 =
            bin(op_kind::ewadd, un(op_kind::sigmoid, m1, "sigmoid_m1"), un(op_kind::tanh, m2, "tanh_m2"), "m4");
        const auto m5 = bin(op_kind::ewmul, un(op_kind::tanh, m0, "tanh_m0"), un(op_kind::tanh, m3, "tanh_m3"), "m5");
        const auto m6 = bin(op_kind::ewmul, un(op_kind::tanh, m4, "tanh_m4"), un(op_kind::tanh, m5, "tanh_m5"), "m6");
        h = un(op_kind::tanh, m6, "state");
    }
    g.mark_output(h);
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
