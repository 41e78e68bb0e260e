#pragma once
/// @file
/// @brief The pieces every Transformer encoder (Vaswani et al., NeurIPS'17) is made of, shared by
/// BERT (post-norm) and ViT (pre-norm), which differ only in where the layernorms sit.

#include <goopt/graph/builder.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// x W + b with W [in, out] (`n.weight`) and b [out] (`n.bias`): a matmul and an ewadd.
inline graph::tensor_id dense(graph::builder& b, graph::tensor_id x, std::int64_t out, const std::string& n) {
    const std::int64_t in = b.graph().type_of(x).dims.back();
    const auto y = b.matmul(x, b.weight(n + ".weight", {in, out}), ops::activation::none, n);
    return b.ewadd(y, b.weight(n + ".bias", {out}), n + ".add");
}

/// Layernorm over the last axis with gamma `n.weight` and beta `n.bias`.
inline graph::tensor_id layernorm(graph::builder& b, graph::tensor_id x, double epsilon, const std::string& n) {
    const std::int64_t h = b.graph().type_of(x).dims.back();
    const auto gamma = b.weight(n + ".weight", {h});
    const auto beta = b.weight(n + ".bias", {h});
    return b.add1(ops::op_kind::layernorm, {x, gamma, beta},
                  {{ops::attr_id::axis, std::int64_t{-1}}, {ops::attr_id::epsilon, epsilon}}, n);
}

/// @brief Multi-head self-attention of x [batch, seq, hidden] up to the merged heads (the output
/// projection is the caller's): Q, K, V dense (`p + "query"`, ...), each reshaped to [batch, seq,
/// heads, head] and transposed to [batch, heads, seq, head] (K to [batch, heads, head, seq]),
/// scores = Q·K, softmax, ·V, transposed and reshaped back to [batch, seq, hidden]. The
/// 1/sqrt(head) scaling is folded into W_q and its bias, as inference exporters do. 17 ops.
inline graph::tensor_id self_attention(graph::builder& b, graph::tensor_id x, std::int64_t heads,
                                       const std::string& p) {
    using graph::tensor_id;
    const auto& d = b.graph().type_of(x).dims;
    const std::int64_t B = d[0], S = d[1], H = d[2], D = H / heads;
    auto split = [&](tensor_id v, std::vector<std::int64_t> perm, const std::string& n) {
        return b.transpose(b.reshape(v, {B, S, heads, D}, p + n + ".reshape"), std::move(perm), p + n + ".transpose");
    };
    const auto q = split(dense(b, x, H, p + "query"), {0, 2, 1, 3}, "query");
    const auto k = split(dense(b, x, H, p + "key"), {0, 2, 3, 1}, "key");
    const auto v = split(dense(b, x, H, p + "value"), {0, 2, 1, 3}, "value");
    const auto scores = b.matmul(q, k, ops::activation::none, p + "scores");
    const auto probs = b.softmax(scores, -1, p + "softmax");
    auto ctx = b.matmul(probs, v, ops::activation::none, p + "context");
    ctx = b.transpose(ctx, {0, 2, 1, 3}, p + "context.transpose");
    return b.reshape(ctx, {B, S, H}, p + "context.reshape");
}

}  // namespace goopt::models
