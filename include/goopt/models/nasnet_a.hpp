#pragma once
/// @file
/// @brief NASNet-A (Zoph et al., CVPR'18, "Learning Transferable Architectures") in the form TASO
/// (SOSP'19 §7) evaluates it: the searched normal and reduction cells, stacked, without stem or
/// batchnorm, with relu fused into the 1x1 convs.

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/classifier_head.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of NASNet-A; the defaults are TASO's evaluation graph: a 128x56x56 feature map, 3 stacks
/// of N = 5 normal cells each followed by a reduction cell, filters 128 doubling per stack.
struct nasnet_a_config {
    std::int64_t batch = 1;
    std::int64_t channels = 128;  ///< channels of the input feature map = filters of the first stack
    std::int64_t image = 56;      ///< input height = width
    std::int32_t stacks = 3;      ///< each stack: `cells` normal cells, then a reduction cell
    std::int32_t cells = 5;       ///< N, normal cells per stack
    std::int64_t num_classes = 1000;
};

/// @brief NASNet-A cells as TASO builds them. A cell takes the two previous cells' outputs (prev,
/// cur), squeezes cur to the cell's filters F (1x1 conv + relu) and fits prev to it (1x1 conv + relu,
/// or 3x3/2 when its map is larger). A separable conv is a grouped kxk conv with F groups followed
/// by a 1x1 conv. Normal cell: 5 sums of pairs of {sep3x3, identity, avgpool3x3} over (cur, prev),
/// concatenated (5F channels). Reduction cell (filters 2F of the stack before): sums of sep7x7/2,
/// sep5x5/2, max and average pools /2 and of the cell's own intermediate sums, concatenated (5 x 2F
/// channels at half the size). Head: global average pool, fc -> logits. Layer = cell index in
/// order (0-based), head = number of cells; names `cell7.sep3.depthwise`, `cell7.add2`, ...
/// @return the graph; its one output is the logits [batch, num_classes].
inline graph::computation_graph nasnet_a(const nasnet_a_config& c = {});

// ---- implementation ----

inline graph::computation_graph nasnet_a(const nasnet_a_config& c) {
    using graph::tensor_id;
    using ops::padding_mode;
    if (c.batch < 1 || c.channels < 1 || c.image < 1 || c.stacks < 1 || c.cells < 1 || c.num_classes < 1)
        throw error("nasnet_a config", "batch, channels, image, stacks, cells or num_classes below 1", "each >= 1");

    graph::computation_graph g("nasnet_a");
    graph::builder b(g);
    auto channels_of = [&](tensor_id t) { return g.type_of(t).dims[1]; };
    auto conv = [&](tensor_id x, std::int64_t out, std::int64_t in_per_group, std::int64_t k, std::int64_t stride,
                    ops::activation act, const std::string& name) {
        const auto w = b.weight(name + ".weight", {out, in_per_group, k, k});
        return b.conv2d(x, w, {.stride = {stride, stride}, .activation = act, .name = name});
    };
    auto squeeze = [&](tensor_id x, std::int64_t out, const std::string& name) {
        return conv(x, out, channels_of(x), 1, 1, ops::activation::relu, name);
    };
    auto fit = [&](tensor_id cur, tensor_id prev, const std::string& name) {
        if (g.type_of(prev).dims[2] == g.type_of(cur).dims[2]) return squeeze(prev, channels_of(cur), name);
        return conv(prev, channels_of(cur), channels_of(prev), 3, 2, ops::activation::relu, name);
    };
    auto sep = [&](tensor_id x, std::int64_t out, std::int64_t k, std::int64_t stride, const std::string& name) {
        const std::int64_t in = channels_of(x);
        if (in % out != 0)
            throw error("nasnet_a", concat("separable conv ", name, " has ", in, " input channels"),
                        concat("a multiple of ", out));
        const auto t = conv(x, out, in / out, k, stride, ops::activation::none, name + ".depthwise");
        return conv(t, out, out, 1, 1, ops::activation::none, name + ".pointwise");
    };
    auto pool = [&](bool max, tensor_id x, std::int64_t stride, const std::string& name) {
        const graph::pool2d_options o{.kernel = {3, 3}, .stride = {stride, stride}, .name = name};
        return max ? b.maxpool2d(x, o) : b.avgpool2d(x, o);
    };

    std::int32_t cell = 0;
    auto normal_cell = [&](tensor_id prev, tensor_id cur, std::int64_t f) {
        b.set_layer(cell);
        const std::string n = "cell" + std::to_string(cell++) + ".";
        cur = squeeze(cur, f, n + "squeeze");
        prev = fit(cur, prev, n + "fit");
        const tensor_id t[10] = {sep(cur, f, 3, 1, n + "sep0"),        cur,
                                 sep(prev, f, 3, 1, n + "sep1"),       sep(cur, f, 3, 1, n + "sep2"),
                                 pool(false, cur, 1, n + "avgpool0"),  prev,
                                 pool(false, prev, 1, n + "avgpool1"), pool(false, prev, 1, n + "avgpool2"),
                                 sep(prev, f, 3, 1, n + "sep3"),       sep(prev, f, 3, 1, n + "sep4")};
        std::vector<tensor_id> sums;
        for (int i = 0; i < 5; ++i) sums.push_back(b.ewadd(t[2 * i], t[2 * i + 1], n + "add" + std::to_string(i)));
        return b.concat(sums, 1, n + "concat");
    };
    auto reduction_cell = [&](tensor_id prev, tensor_id cur, std::int64_t f) {
        b.set_layer(cell);
        const std::string n = "cell" + std::to_string(cell++) + ".";
        cur = squeeze(cur, f, n + "squeeze");
        prev = fit(cur, prev, n + "fit");
        std::vector<tensor_id> sums;
        auto add = [&](tensor_id l, tensor_id r) {
            sums.push_back(b.ewadd(l, r, n + "add" + std::to_string(sums.size())));
            return sums.back();
        };
        const auto s0 = add(sep(prev, f, 7, 2, n + "sep0"), sep(cur, f, 5, 2, n + "sep1"));
        const auto s1 = add(pool(true, cur, 2, n + "maxpool0"), sep(prev, f, 7, 2, n + "sep2"));
        add(pool(false, cur, 2, n + "avgpool0"), sep(prev, f, 5, 2, n + "sep3"));
        add(pool(true, cur, 2, n + "maxpool1"), sep(s0, f, 3, 1, n + "sep4"));
        add(pool(false, s0, 1, n + "avgpool1"), s1);
        return b.concat(sums, 1, n + "concat");
    };

    b.set_layer(0);
    tensor_id x = b.input("input", {c.batch, c.channels, c.image, c.image});
    std::int64_t filters = c.channels;
    for (std::int32_t s = 0; s < c.stacks; ++s) {
        tensor_id prev = x, cur = x;
        for (std::int32_t j = 0; j < c.cells; ++j) {
            const tensor_id next = normal_cell(prev, cur, filters);
            prev = cur;
            cur = next;
        }
        filters *= 2;
        x = reduction_cell(prev, cur, filters);
    }

    b.set_layer(cell);
    x = classifier_head(b, x, c.num_classes);
    g.mark_output(x);
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
