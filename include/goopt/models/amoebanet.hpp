#pragma once
/// @file
/// @brief AmoebaNet-A (Real et al., AAAI'19, "Regularized Evolution for Image Classifier
/// Architecture Search", Fig. 4-5): the evolved normal and reduction cells stacked on ImageNet;
/// one of GO's (NeurIPS'20 §4) workloads.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of AmoebaNet-A. Defaults: the paper's ImageNet model AmoebaNet-A (N = 6, F = 190) at
/// 331 x 331, with a NASNet-style ImageNet stem (3x3/2 VALID conv of 32 filters, then two
/// reduction cells at F/4 and F/2) and 1000 classes. GO does not state its batch; 64 is our
/// choice (HDP's and GO's image workloads train with batches of that order).
struct amoebanet_config {
    std::int64_t batch = 64;
    std::int64_t image = 331;
    std::int32_t normal_cells = 6;  ///< N: normal cells per stage (3 stages)
    std::int64_t filters = 190;     ///< F: filters of the first stage; doubled by each reduction
    std::int64_t stem_filters = 32;
    std::int32_t stem_cells = 2;  ///< reduction cells at F / 2^stem_cells ... F / 2 before stage 1
    std::int64_t num_classes = 1000;

    /// Cells in order: stem cells, N normal, reduction, N normal, reduction, N normal.
    constexpr std::int32_t num_cells() const noexcept { return stem_cells + 3 * normal_cells + 2; }
    /// Layer numbering: cell k (in the order above) -> k, the stem conv -> num_cells(), the head
    /// (relu, global average pool, fc) -> num_cells() + 1.
    constexpr std::int32_t cell_layer(std::int32_t k) const noexcept { return k; }
    constexpr std::int32_t stem_layer() const noexcept { return num_cells(); }
    constexpr std::int32_t head_layer() const noexcept { return num_cells() + 1; }
};

/// Operations of the AmoebaNet-A cells (Real et al. Fig. 4). sep_KxK is TensorFlow's
/// "separable_KxK_2": twice relu, depthwise KxK conv, 1x1 conv, batchnorm.
enum class amoeba_op : std::uint8_t { none, avg_pool_3x3, max_pool_3x3, sep_3x3, sep_5x5, sep_7x7, conv_1x7_7x1 };

/// One cell: five pairs (op on hidden state, op on hidden state, summed into a new state);
/// states 0 and 1 are the cell's two inputs (older, newer), pair p creates state p + 2; the cell
/// output is the concatenation of `concat` states along channels.
struct amoeba_cell {
    std::array<amoeba_op, 10> ops;
    std::array<std::int32_t, 10> inputs;
    std::array<bool, 7> concat;
};

/// AmoebaNet-A's evolved normal and reduction cells (operations, the hidden state each one reads,
/// the states concatenated at the end), as in the TensorFlow model released with the paper. The
/// reduction cell's concatenated states ({2,...,6}) are the least certain entry. With them, the
/// default model has 96.0M trainable parameters (F = 448: 519.6M), ~11% over the paper's 86.7M
/// (469M); the ratio is the same at both widths and we have not found its cause.
inline constexpr amoeba_cell amoebanet_a_normal{
    {amoeba_op::avg_pool_3x3, amoeba_op::max_pool_3x3, amoeba_op::sep_3x3, amoeba_op::none, amoeba_op::none,
     amoeba_op::avg_pool_3x3, amoeba_op::sep_3x3, amoeba_op::sep_5x5, amoeba_op::avg_pool_3x3, amoeba_op::sep_3x3},
    {0, 0, 1, 1, 0, 1, 0, 2, 5, 0},
    {false, true, false, true, true, false, true}};
inline constexpr amoeba_cell amoebanet_a_reduction{
    {amoeba_op::sep_3x3, amoeba_op::avg_pool_3x3, amoeba_op::max_pool_3x3, amoeba_op::sep_7x7, amoeba_op::max_pool_3x3,
     amoeba_op::max_pool_3x3, amoeba_op::sep_3x3, amoeba_op::conv_1x7_7x1, amoeba_op::avg_pool_3x3, amoeba_op::sep_7x7},
    {1, 0, 0, 2, 1, 0, 4, 0, 1, 0},
    {false, false, true, true, true, true, true}};

/// @brief AmoebaNet-A forward graph, ending at the logits [B, num_classes].
///
/// Each cell: the newer input through relu, 1x1 conv, batchnorm to the cell's filters f; the older
/// input likewise, or through a factorized reduction (relu, two strided 1x1-pool + 1x1-conv paths,
/// the second shifted by one pixel, concat, batchnorm) when its spatial size is twice the newer's.
/// In a reduction cell, ops reading states 0 and 1 have stride 2. Ops: pooling (3x3, SAME) followed
/// by relu, 1x1 conv, batchnorm when its channels differ from f; `none` is no op, or relu, 1x1 conv
/// (stride 2 in a reduction), batchnorm when shape must change; separable convs as depthwise
/// conv2d (groups = channels, weight [C, 1, k, k]) + 1x1 conv; 1x7 then 7x1 conv as two plain
/// conv2d. Convolutions have no bias (batchnorm follows). Head: relu, global average pool, fc.
/// Simplifications: no auxiliary head, no drop-path, inference-form batchnorm (running mean and
/// variance are weights, so parameter_bytes() counts them); odd filters split a factorized
/// reduction f/2 + (f - f/2) so that it keeps f channels.
/// @throws goopt::error for a config with a size < 1 or an image too small for the reductions.
inline graph::computation_graph amoebanet(const amoebanet_config& c = {});

// ---- implementation ----

inline graph::computation_graph amoebanet(const amoebanet_config& c) {
    using graph::tensor_id;
    using ops::op_kind;
    if (c.batch < 1 || c.image < 3 || c.normal_cells < 1 || c.filters < 4 || c.stem_filters < 1 || c.stem_cells < 0 ||
        c.num_classes < 1)
        throw error("amoebanet config", "a size out of range",
                    "batch, normal_cells, stem_filters, num_classes >= 1, image >= 3, filters >= 4, stem_cells >= 0");
    graph::computation_graph g("amoebanet_a");
    graph::builder b(g);
    std::int32_t cell_index = 0;
    std::string p;  // name prefix of the current cell
    int counter = 0;
    auto next = [&](const char* what) { return p + what + std::to_string(counter++); };
    auto channels = [&](tensor_id x) { return g.type_of(x).dims[1]; };
    auto spatial = [&](tensor_id x) { return g.type_of(x).dims[2]; };

    auto bn = [&](tensor_id x) {
        const std::int64_t ch = channels(x);
        const std::string n = next("bn");
        return b.batchnorm(x, b.weight(n + "/scale", {ch}), b.weight(n + "/bias", {ch}), b.weight(n + "/mean", {ch}),
                           b.weight(n + "/var", {ch}));
    };
    auto conv = [&](tensor_id x, std::int64_t out, std::int64_t kh, std::int64_t kw, std::int64_t stride) {
        return b.conv2d(x, b.weight(next("conv") + "/w", {out, channels(x), kh, kw}), {.stride = {stride, stride}});
    };
    auto relu_conv_bn = [&](tensor_id x, std::int64_t f, std::int64_t stride) {
        return bn(conv(b.relu(x), f, 1, 1, stride));
    };
    auto separable = [&](tensor_id x, std::int64_t k, std::int64_t f, std::int64_t stride) {
        for (int rep = 0; rep < 2; ++rep) {
            const std::int64_t ch = channels(x);
            const tensor_id dw = b.conv2d(b.relu(x), b.weight(next("depthwise") + "/w", {ch, 1, k, k}),
                                          {.stride = {rep == 0 ? stride : 1, rep == 0 ? stride : 1}});
            x = bn(conv(dw, f, 1, 1, 1));
        }
        return x;
    };
    auto factorized_reduction = [&](tensor_id x, std::int64_t f) {
        const tensor_id r = b.relu(x);
        const std::int64_t h = spatial(r), w = g.type_of(r).dims[3];
        const graph::pool2d_options half{.kernel = {1, 1}, .stride = {2, 2}, .padding = ops::padding_mode::valid};
        const tensor_id p1 = conv(b.avgpool2d(r, half), f / 2, 1, 1, 1);
        // shift by one pixel: pad bottom/right, drop the first row and column
        const tensor_id padded =
            b.add1(op_kind::pad, {r}, {{ops::attr_id::pads, std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 1, 1}}});
        const tensor_id shifted =
            b.add1(op_kind::slice, {padded},
                   {{ops::attr_id::begin, std::vector<std::int64_t>{0, 0, 1, 1}},
                    {ops::attr_id::end, std::vector<std::int64_t>{c.batch, channels(r), h + 1, w + 1}}});
        const tensor_id p2 = conv(b.avgpool2d(shifted, half), f - f / 2, 1, 1, 1);
        const tensor_id both[] = {p1, p2};
        return bn(b.concat(both, 1));
    };
    auto apply = [&](amoeba_op op, tensor_id x, std::int64_t f, std::int64_t stride) -> tensor_id {
        switch (op) {
            case amoeba_op::none:
                return stride > 1 || channels(x) != f ? relu_conv_bn(x, f, stride) : x;
            case amoeba_op::avg_pool_3x3:
            case amoeba_op::max_pool_3x3: {
                const graph::pool2d_options o{.kernel = {3, 3}, .stride = {stride, stride}};
                const tensor_id y = op == amoeba_op::avg_pool_3x3 ? b.avgpool2d(x, o) : b.maxpool2d(x, o);
                return channels(y) != f ? relu_conv_bn(y, f, 1) : y;
            }
            case amoeba_op::sep_3x3:
                return separable(x, 3, f, stride);
            case amoeba_op::sep_5x5:
                return separable(x, 5, f, stride);
            case amoeba_op::sep_7x7:
                return separable(x, 7, f, stride);
            case amoeba_op::conv_1x7_7x1:
                return bn(conv(conv(b.relu(x), f, 1, 7, stride), f, 7, 1, 1));
        }
        return x;
    };
    auto cell = [&](const amoeba_cell& spec, tensor_id prev, tensor_id cur, std::int64_t f, bool reduction) {
        b.set_layer(c.cell_layer(cell_index));
        p = "cell" + std::to_string(cell_index++) + "/";
        counter = 0;
        std::vector<tensor_id> states;
        if (spatial(prev) != spatial(cur)) states.push_back(factorized_reduction(prev, f));
        else states.push_back(channels(prev) != f ? relu_conv_bn(prev, f, 1) : prev);
        states.push_back(relu_conv_bn(cur, f, 1));
        for (std::size_t pair = 0; pair < 5; ++pair) {
            tensor_id sum[2];
            for (std::size_t side = 0; side < 2; ++side) {
                const std::size_t k = 2 * pair + side;
                const auto in = static_cast<std::size_t>(spec.inputs[k]);
                sum[side] = apply(spec.ops[k], states[in], f, reduction && in < 2 ? 2 : 1);
            }
            states.push_back(b.ewadd(sum[0], sum[1]));
        }
        std::vector<tensor_id> out;
        for (std::size_t s = 0; s < states.size(); ++s)
            if (spec.concat[s]) out.push_back(states[s]);
        return b.concat(out, 1);
    };

    b.set_layer(c.stem_layer());
    p = "stem/";
    const tensor_id image = b.input("image", {c.batch, 3, c.image, c.image});
    const tensor_id stem = bn(b.conv2d(image, b.weight("stem/conv/w", {c.stem_filters, 3, 3, 3}),
                                       {.stride = {2, 2}, .padding = ops::padding_mode::valid}));
    tensor_id prev = stem, cur = stem;
    for (std::int32_t s = 0; s < c.stem_cells; ++s) {
        const std::int64_t f = c.filters >> (c.stem_cells - s);
        if (f < 2)
            throw error("amoebanet config",
                        concat("filters ", c.filters, " are too few for ", c.stem_cells, " stem cells"),
                        "more filters or fewer stem cells");
        const tensor_id next_cur = cell(amoebanet_a_reduction, prev, cur, f, true);
        prev = cur;
        cur = next_cur;
    }
    std::int64_t f = c.filters;
    for (int stage = 0; stage < 3; ++stage) {
        if (stage > 0) {
            f *= 2;
            const tensor_id next_cur = cell(amoebanet_a_reduction, prev, cur, f, true);
            prev = cur;
            cur = next_cur;
        }
        for (std::int32_t n = 0; n < c.normal_cells; ++n) {
            const tensor_id next_cur = cell(amoebanet_a_normal, prev, cur, f, false);
            prev = cur;
            cur = next_cur;
        }
    }

    b.set_layer(c.head_layer());
    const tensor_id pooled = b.unary(op_kind::global_avgpool, b.relu(cur));
    const std::int64_t width = channels(pooled);
    const tensor_id flat = b.reshape(pooled, {c.batch, width});
    const tensor_id fc_w = b.weight("head/fc/w", {width, c.num_classes});
    const tensor_id fc_b = b.weight("head/fc/b", {c.num_classes});
    g.mark_output(b.ewadd(b.matmul(flat, fc_w), fc_b, "logits"));
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
