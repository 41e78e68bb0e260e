#pragma once
/// @file
/// @brief TASO's inference workloads as TASO's own model files (examples/*.py of its repository)
/// build them, the graphs Tensat's published gains were measured on: convolutions with the relu
/// fused at build time (conv2d's activation attribute), no batchnorm, no biases, no classifier
/// head, TASO's SAME/VALID padding. Beside the zoo's torchvision-style graphs (models/resnet.hpp,
/// ...), which keep batchnorm, biases and activations as separate ops, so that a search's gain can
/// be compared with Tensat's on the same graphs (docs/substitution.md). NasRNN needs no builder
/// here: models::nasrnn() is already TASO's graph (no biases, per-step weights, the state a weight).

#include <goopt/error.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace goopt::models {

/// Knobs of resnet50_taso() and resnext50_taso(); the defaults are TASO's files' settings.
struct resnet_taso_config {
    std::int64_t batch = 1;
    /// ResNet-50: the input's height = width (TASO's file starts at the first stage: [1, 64, 56, 56]);
    /// ResNeXt-50: the image's (224, stem conv and max pool first).
    std::int64_t image = 0;                          ///< 0: 56 (ResNet-50) or 224 (ResNeXt-50)
    std::array<std::int32_t, 4> blocks{3, 4, 6, 3};  ///< blocks per stage
    std::int64_t width = 0;  ///< first stage's bottleneck width; 0: 64 (ResNet-50) or 128 (ResNeXt-50)
};

/// @brief ResNet-50 as TASO's resnet50.py: input [batch, 64, 56, 56] (no stem), 16 bottleneck
/// blocks of 1x1, 3x3 (stride on it) and 1x1 convs, relu fused into the first two; a 1x1
/// projection conv, relu fused, where the stride or the channels change; relu(add). The output
/// is the last block's [batch, 2048, 7, 7] (no pool, no classifier).
inline graph::computation_graph resnet50_taso(const resnet_taso_config& c = {});

/// @brief ResNeXt-50 32x4d as TASO's resnext50.py: 7x7/2 conv (relu fused) and 3x3/2 max pool,
/// then 16 blocks whose 3x3 convs have 32 groups, bottleneck widths 128..1024 and outputs twice
/// that; projection and relu(add) as resnet50_taso(). Output [batch, 2048, 7, 7].
inline graph::computation_graph resnext50_taso(const resnet_taso_config& c = {});

/// Knobs of inception_v3_taso(); TASO's file builds batch 32, its paper and Tensat evaluate batch 1.
struct inception_taso_config {
    std::int64_t batch = 1;
    std::int64_t image = 299;
    std::int64_t channel_divisor = 1;  ///< every conv's output channels divided by this (small instances)
};

/// @brief Inception-v3 as TASO's inceptionv3.py: every conv with relu fused, padding VALID where the
/// torchvision conv has none and a kernel larger than 1x1, else SAME; the stem, three A, one B,
/// four C, one D and two E blocks; the file's "global" average pool is a 1x1 pool of stride 1 (its
/// kernel argument is left at the default), kept as such. Output [batch, 2048, 8, 8].
inline graph::computation_graph inception_v3_taso(const inception_taso_config& c = {});

/// @brief Inception-v3 as Tensat's own model file (its repository's model/inceptionv3.model, a
/// serialized TASO graph: the graph Tensat's published Inception-v3 gain was measured on), which
/// differs from inception_v3_taso() in how the blocks join and pool: the A and C blocks join their
/// four branches pairwise, concat(concat(a, b), concat(c, d)), and pool by a 3x3 average with relu
/// fused; the B block pools by a 3x3/2 average and puts it first, concat(pool, concat(a, d)); the E
/// blocks join each 1x3 / 3x1 pair first and pool by a 3x3 maximum; the last pool is an 8x8
/// average. Output [batch, 2048, 1, 1] at image 299.
inline graph::computation_graph inception_v3_tensat(const inception_taso_config& c = {});

/// Knobs of nasnet_a_taso(); the defaults are TASO's nasnet_a.py.
struct nasnet_taso_config {
    std::int64_t batch = 1;
    std::int64_t image = 224;
    std::int64_t channels = 128;  ///< the first stack's cell width (doubled by each reduction cell)
    std::int32_t stacks = 3;      ///< stacks of normal cells, each followed by a reduction cell
    std::int32_t cells = 5;       ///< normal cells per stack
};

/// @brief NASNet-A as TASO's nasnet_a.py: 7x7/2 conv (relu) and 3x3/2 max pool, then per stack
/// `cells` normal cells and a reduction cell of twice the width. A separable conv is a grouped
/// conv of one group per output channel followed by a 1x1 conv (no activation); each cell first
/// squeezes its inputs to its width by a 1x1 conv with relu (a 3x3/2 conv where the sizes differ)
/// and ends in a concat of its five sums.
inline graph::computation_graph nasnet_a_taso(const nasnet_taso_config& c = {});

/// Knobs of bert_taso(); the defaults are TASO's bert.py.
struct bert_taso_config {
    std::int64_t batch = 16;
    std::int64_t seq_length = 64;
    std::int64_t hidden = 1024;
    std::int64_t heads = 16;
    std::int32_t layers = 8;
};

/// @brief BERT as TASO's bert.py: input [batch * seq, hidden], relu, then `layers` attention
/// layers. Each computes Q, K, V (three matmuls), reshapes and transposes them to heads, multiplies
/// Q by K (untransposed: the file's shapes agree only because seq_length = hidden / heads), then
/// by V, transposes and reshapes back; the layer's output is the input times a fourth matrix, so
/// the attention result feeds nothing: TASO keeps it as a graph output (a tensor nothing reads),
/// and so does this graph (each layer's attention result is marked an output after the last layer's).
/// @throws goopt::error unless hidden is a multiple of heads and seq_length = hidden / heads.
inline graph::computation_graph bert_taso(const bert_taso_config& c = {});

// ---- implementation ----

namespace detail {

/// A builder with TASO's conv2d(input, new_weight(...), strides, padding, activation) and
/// new_weight's unnamed weights (named w0, w1, ... here).
struct taso_builder {
    graph::computation_graph& g;
    graph::builder b{g};
    int weights = 0;

    // concat, not "w" + std::to_string(): GCC 12 warns falsely (-Wrestrict) on a one-letter literal + string
    graph::tensor_id weight(const ops::shape& s) { return b.weight(concat("w", weights++), s); }

    /// conv2d with `out` filters of k0 x k1 over `groups` groups of the input's channels.
    graph::tensor_id conv(graph::tensor_id x, std::int64_t out, std::array<std::int64_t, 2> k,
                          std::array<std::int64_t, 2> stride, ops::padding_mode pad, ops::activation act,
                          std::int64_t groups = 1) {
        const std::int64_t in = g.type_of(x).dims[1];
        return b.conv2d(x, weight({out, in / groups, k[0], k[1]}),
                        {.stride = stride, .padding = pad, .activation = act});
    }
};

inline graph::computation_graph build_resnet_taso(const std::string& model, const resnet_taso_config& c, bool next) {
    using graph::tensor_id;
    using ops::activation;
    constexpr auto same = ops::padding_mode::same;
    const std::int64_t image = c.image > 0 ? c.image : next ? 224 : 56;
    const std::int64_t width = c.width > 0 ? c.width : next ? 128 : 64;
    // ResNeXt's blocks: 32 groups and an output twice the bottleneck width; ResNet's: 4x
    const std::int64_t groups = next ? 32 : 1, expansion = next ? 2 : 4;
    if (c.batch < 1 || image < 1)
        throw error(concat(model, " config"), "batch or image below 1", "each >= 1 (0: the file's default image)");
    if (width % groups != 0)
        throw error(concat(model, " config"), concat("width ", width), concat("a multiple of the ", groups, " groups"));
    for (auto n : c.blocks)
        if (n < 1)
            throw error(concat(model, " config"), concat("a stage of ", n, " blocks"), "at least one block per stage");

    graph::computation_graph g(model);
    taso_builder t{g};
    auto& b = t.b;
    b.set_layer(0);
    tensor_id x = b.input("input", {c.batch, next ? 3 : 64, image, image});
    if (next) {
        x = t.conv(x, 64, {7, 7}, {2, 2}, same, activation::relu);
        x = b.maxpool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = same});
    }
    std::int32_t block = 0;
    for (int s = 0; s < 4; ++s) {
        const std::int64_t mid = width << s, out = expansion * mid;
        for (std::int32_t i = 0; i < c.blocks[static_cast<std::size_t>(s)]; ++i) {
            b.set_layer(++block);
            const std::int64_t stride = (i == 0 && s > 0) ? 2 : 1;
            tensor_id y = t.conv(x, mid, {1, 1}, {1, 1}, same, activation::relu);
            y = t.conv(y, mid, {3, 3}, {stride, stride}, same, activation::relu, groups);
            y = t.conv(y, out, {1, 1}, {1, 1}, same, activation::none);
            if (stride > 1 || g.type_of(x).dims[1] != out)
                x = t.conv(x, out, {1, 1}, {stride, stride}, same, activation::relu);
            x = b.relu(b.ewadd(x, y));
        }
    }
    g.mark_output(x);
    graph::validate(g);
    return g;
}

}  // namespace detail

inline graph::computation_graph resnet50_taso(const resnet_taso_config& c) {
    return detail::build_resnet_taso("resnet50_taso", c, false);
}

inline graph::computation_graph resnext50_taso(const resnet_taso_config& c) {
    return detail::build_resnet_taso("resnext50_taso", c, true);
}

namespace detail {

/// inception_v3_taso() (`tensat_file` false) or inception_v3_tensat() (true): the same layers, joined
/// and pooled as either file does.
inline graph::computation_graph build_inception_taso(const char* name, const inception_taso_config& c,
                                                     bool tensat_file) {
    using graph::tensor_id;
    using ops::activation;
    if (c.batch < 1 || c.image < 75 || c.channel_divisor < 1)
        throw error(concat(name, " config"), "batch or channel_divisor below 1, or image below 75",
                    "batch, channel_divisor >= 1 and image >= 75 (the stem's and reductions' sizes)");
    graph::computation_graph g(name);
    detail::taso_builder t{g};
    auto& b = t.b;
    // the file's conv2d(): relu always; VALID where there is no padding and the kernel is larger than 1x1
    auto conv = [&](tensor_id v, std::int64_t out, std::array<std::int64_t, 2> k, std::array<std::int64_t, 2> pad = {},
                    std::int64_t stride = 1) {
        const bool valid = pad[0] + pad[1] == 0 && k[0] + k[1] > 2;
        return t.conv(v, std::max<std::int64_t>(1, out / c.channel_divisor), k, {stride, stride},
                      valid ? ops::padding_mode::valid : ops::padding_mode::same, activation::relu);
    };
    auto max_pool = [&](tensor_id v) {
        return b.maxpool2d(v, {.kernel = {3, 3}, .stride = {2, 2}, .padding = ops::padding_mode::valid});
    };
    auto avg_pool = [&](tensor_id v) {
        return b.avgpool2d(v, {.kernel = {3, 3},
                               .stride = {1, 1},
                               .padding = ops::padding_mode::same,
                               .activation = tensat_file ? activation::relu : activation::none});
    };
    auto cat = [&](std::vector<tensor_id> vs) { return b.concat(vs, 1); };
    // a block's four branches: one concat (TASO's file) or two levels of pairs (Tensat's)
    auto cat4 = [&](tensor_id p, tensor_id q, tensor_id r, tensor_id u) {
        return tensat_file ? cat({cat({p, q}), cat({r, u})}) : cat({p, q, r, u});
    };

    std::int32_t layer = 0;
    b.set_layer(layer);
    tensor_id v = b.input("input", {c.batch, 3, c.image, c.image});
    v = conv(v, 32, {3, 3}, {}, 2);
    v = conv(v, 32, {3, 3});
    v = conv(v, 64, {3, 3}, {1, 1});
    v = max_pool(v);
    v = conv(v, 80, {1, 1});
    v = conv(v, 192, {3, 3});
    v = max_pool(v);

    auto block_a = [&](tensor_id x, std::int64_t pool_features) {
        b.set_layer(++layer);
        const tensor_id a = conv(x, 64, {1, 1});
        const tensor_id f = conv(conv(x, 48, {1, 1}), 64, {5, 5}, {2, 2});
        const tensor_id d = conv(conv(conv(x, 64, {1, 1}), 96, {3, 3}, {1, 1}), 96, {3, 3}, {1, 1});
        return cat4(a, f, d, conv(avg_pool(x), pool_features, {1, 1}));
    };
    auto block_b = [&](tensor_id x) {
        b.set_layer(++layer);
        const tensor_id a = conv(x, 384, {3, 3}, {}, 2);
        const tensor_id d = conv(conv(conv(x, 64, {1, 1}), 96, {3, 3}, {1, 1}), 96, {3, 3}, {}, 2);
        if (tensat_file)
            return cat({b.avgpool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = ops::padding_mode::valid}),
                        cat({a, d})});
        return cat({a, d, max_pool(x)});
    };
    auto block_c = [&](tensor_id x, std::int64_t c7) {
        b.set_layer(++layer);
        const tensor_id a = conv(x, 192, {1, 1});
        tensor_id s = conv(x, c7, {1, 1});
        s = conv(conv(s, c7, {1, 7}, {0, 3}), 192, {7, 1}, {3, 0});
        tensor_id d = conv(x, c7, {1, 1});
        d = conv(conv(d, c7, {7, 1}, {3, 0}), c7, {1, 7}, {0, 3});
        d = conv(conv(d, c7, {7, 1}, {3, 0}), 192, {1, 7}, {0, 3});
        return cat4(a, s, d, conv(avg_pool(x), 192, {1, 1}));
    };
    auto block_d = [&](tensor_id x) {
        b.set_layer(++layer);
        const tensor_id a = conv(conv(x, 192, {1, 1}), 320, {3, 3}, {}, 2);
        tensor_id s = conv(conv(conv(x, 192, {1, 1}), 192, {1, 7}, {0, 3}), 192, {7, 1}, {3, 0});
        s = conv(s, 192, {3, 3}, {}, 2);
        return cat({a, s, max_pool(x)});
    };
    auto block_e = [&](tensor_id x) {
        b.set_layer(++layer);
        const tensor_id a = conv(x, 320, {1, 1});
        const tensor_id s = conv(x, 384, {1, 1});
        const tensor_id d = conv(conv(x, 448, {1, 1}), 384, {3, 3}, {1, 1});
        const tensor_id s1 = conv(s, 384, {1, 3}, {0, 1}), s3 = conv(s, 384, {3, 1}, {1, 0});
        const tensor_id d1 = conv(d, 384, {1, 3}, {0, 1}), d3 = conv(d, 384, {3, 1}, {1, 0});
        if (tensat_file) {
            const tensor_id p =
                b.maxpool2d(x, {.kernel = {3, 3}, .stride = {1, 1}, .padding = ops::padding_mode::same});
            return cat({a, cat({s1, s3}), cat({d1, d3}), conv(p, 192, {1, 1})});
        }
        return cat({a, s1, s3, d1, d3, conv(avg_pool(x), 192, {1, 1})});
    };
    for (std::int64_t p : {32, 64, 64}) v = block_a(v, p);
    v = block_b(v);
    for (std::int64_t c7 : {128, 160, 160, 192}) v = block_c(v, c7);
    v = block_d(v);
    v = block_e(block_e(v));
    b.set_layer(++layer);
    const std::int64_t last = tensat_file ? g.type_of(v).dims[2] : 1;  // Tensat's file: a global pool
    v = b.avgpool2d(v, {.kernel = {last, last}, .stride = {1, 1}, .padding = ops::padding_mode::valid});
    g.mark_output(v);
    graph::validate(g);
    return g;
}

}  // namespace detail

inline graph::computation_graph inception_v3_taso(const inception_taso_config& c) {
    return detail::build_inception_taso("inception_v3_taso", c, false);
}

inline graph::computation_graph inception_v3_tensat(const inception_taso_config& c) {
    return detail::build_inception_taso("inception_v3_tensat", c, true);
}

inline graph::computation_graph nasnet_a_taso(const nasnet_taso_config& c) {
    using graph::tensor_id;
    using ops::activation;
    constexpr auto same = ops::padding_mode::same;
    if (c.batch < 1 || c.image < 1 || c.channels < 1 || c.stacks < 1 || c.cells < 1)
        throw error("nasnet_a_taso config", "batch, image, channels, stacks or cells below 1", "each >= 1");
    graph::computation_graph g("nasnet_a_taso");
    detail::taso_builder t{g};
    auto& b = t.b;
    auto dims = [&](tensor_id v) { return g.type_of(v).dims; };
    auto squeeze = [&](std::int64_t out, tensor_id v) {
        return t.conv(v, out, {1, 1}, {1, 1}, same, activation::relu);
    };
    // prev brought to cur's width (and size, by a 3x3/2 conv where they differ)
    auto fit = [&](tensor_id cur, tensor_id prev) {
        if (dims(prev)[2] == dims(cur)[2]) return squeeze(dims(cur)[1], prev);
        return t.conv(prev, dims(cur)[1], {3, 3}, {2, 2}, same, activation::relu);
    };
    auto sep = [&](tensor_id v, std::int64_t out, std::int64_t k, std::int64_t stride) {
        const tensor_id d = t.conv(v, out, {k, k}, {stride, stride}, same, activation::none, out);
        return t.conv(d, out, {1, 1}, {1, 1}, same, activation::none);
    };
    auto avg = [&](tensor_id v, std::int64_t stride) {
        return b.avgpool2d(v, {.kernel = {3, 3}, .stride = {stride, stride}, .padding = same});
    };
    auto max = [&](tensor_id v) { return b.maxpool2d(v, {.kernel = {3, 3}, .stride = {2, 2}, .padding = same}); };
    // the file's ts lists, built in its order, summed pairwise
    auto sum_pairs = [&](const std::vector<tensor_id>& ts) {
        std::vector<tensor_id> sums;
        for (std::size_t i = 0; i + 1 < ts.size(); i += 2) sums.push_back(b.ewadd(ts[i], ts[i + 1]));
        return sums;
    };
    auto normal = [&](tensor_id prev, tensor_id cur, std::int64_t out) {
        cur = squeeze(out, cur);
        prev = fit(cur, prev);
        std::vector<tensor_id> ts;
        ts.push_back(sep(cur, out, 3, 1));
        ts.push_back(cur);
        ts.push_back(sep(prev, out, 3, 1));
        ts.push_back(sep(cur, out, 3, 1));
        ts.push_back(avg(cur, 1));
        ts.push_back(prev);
        ts.push_back(avg(prev, 1));
        ts.push_back(avg(prev, 1));
        ts.push_back(sep(prev, out, 3, 1));
        ts.push_back(sep(prev, out, 3, 1));
        return b.concat(sum_pairs(ts), 1);
    };
    auto reduction = [&](tensor_id prev, tensor_id cur, std::int64_t out) {
        cur = squeeze(out, cur);
        prev = fit(cur, prev);
        std::vector<tensor_id> ts;
        ts.push_back(sep(prev, out, 7, 2));
        ts.push_back(sep(cur, out, 5, 2));
        const tensor_id first = b.ewadd(ts[0], ts[1]);
        std::vector<tensor_id> o{first};
        ts = {max(cur)};
        ts.push_back(sep(prev, out, 7, 2));
        ts.push_back(avg(cur, 2));
        ts.push_back(sep(prev, out, 5, 2));
        ts.push_back(max(cur));
        ts.push_back(sep(first, out, 3, 1));
        for (auto v : sum_pairs(ts)) o.push_back(v);
        o.push_back(b.ewadd(avg(first, 1), o[1]));
        return b.concat(o, 1);
    };

    std::int32_t layer = 0;
    b.set_layer(layer);
    tensor_id x = b.input("input", {c.batch, 3, c.image, c.image});
    x = t.conv(x, 64, {7, 7}, {2, 2}, same, activation::relu);
    x = max(x);
    std::int64_t out = c.channels;
    for (std::int32_t s = 0; s < c.stacks; ++s) {
        tensor_id prev = x, cur = x;
        for (std::int32_t j = 0; j < c.cells; ++j) {
            b.set_layer(++layer);
            const tensor_id next = normal(prev, cur, out);
            prev = cur;
            cur = next;
        }
        out *= 2;
        b.set_layer(++layer);
        x = reduction(prev, cur, out);
    }
    g.mark_output(x);
    graph::validate(g);
    return g;
}

inline graph::computation_graph bert_taso(const bert_taso_config& c) {
    using graph::tensor_id;
    if (c.batch < 1 || c.seq_length < 1 || c.hidden < 1 || c.heads < 1 || c.layers < 1)
        throw error("bert_taso config", "batch, seq_length, hidden, heads or layers below 1", "each >= 1");
    if (c.hidden % c.heads != 0 || c.seq_length != c.hidden / c.heads)
        throw error("bert_taso config", concat("hidden ", c.hidden, ", heads ", c.heads, ", seq_length ", c.seq_length),
                    "hidden a multiple of heads and seq_length = hidden / heads (TASO's file multiplies Q by K "
                    "untransposed)");
    graph::computation_graph g("bert_taso");
    detail::taso_builder t{g};
    auto& b = t.b;
    const std::int64_t d = c.hidden, dk = d / c.heads, rows = c.batch * c.seq_length;
    b.set_layer(0);
    tensor_id x = b.relu(b.input("input", {rows, d}));
    std::vector<tensor_id> attention;
    for (std::int32_t l = 0; l < c.layers; ++l) {
        b.set_layer(l + 1);
        auto heads = [&](tensor_id v) {
            v = b.reshape(b.matmul(x, t.weight({d, d})), {c.batch, c.seq_length, c.heads, dk});
            return b.transpose(v, {0, 2, 1, 3});
        };
        const tensor_id q = heads(x), k = heads(x), v = heads(x);
        tensor_id a = b.matmul(b.matmul(q, k), v);
        attention.push_back(b.reshape(b.transpose(a, {0, 2, 1, 3}), {rows, d}));
        x = b.matmul(x, t.weight({d, d}));
    }
    g.mark_output(x);
    for (auto a : attention) g.mark_output(a);
    graph::validate(g);
    return g;
}

}  // namespace goopt::models
