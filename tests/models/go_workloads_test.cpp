// GO's workloads (RNNLM, GNMT, Transformer-XL, WaveNet, AmoebaNet-A) as forward graphs: op counts
// and structure against hand-derived numbers, parameters, shapes, layer stamping, configs that
// change the graph, and small configs evaluated by the interpreter (LSTM pieces against the
// composite lstm_cell op, WaveNet's receptive field, Transformer-XL's causality).
#include <goopt/interp/interpreter.hpp>
#include <goopt/models/amoebanet.hpp>
#include <goopt/models/gnmt.hpp>
#include <goopt/models/lstm_layer.hpp>
#include <goopt/models/rnnlm.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/models/transformer_xl.hpp>
#include <goopt/models/wavenet.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

// (a named namespace around the whole file: the module's test files compile as one translation unit)
namespace go_workloads_test {

std::map<op_kind, std::size_t> kinds(const graph::computation_graph& g) {
    std::map<op_kind, std::size_t> n;
    for (const auto& o : g.ops()) ++n[o.kind];
    return n;
}

std::size_t non_source_ops(const graph::computation_graph& g) {
    std::size_t n = 0;
    for (const auto& o : g.ops()) n += !o.spec().has(ops::source);
    return n;
}

/// Every op carries a layer in [0, last], and every index in that range is used.
void check_layers(const graph::computation_graph& g, std::int32_t last) {
    std::vector<bool> used(static_cast<std::size_t>(last) + 1, false);
    std::size_t outside = 0;
    for (const auto& o : g.ops()) {
        if (o.layer < 0 || o.layer > last) ++outside;
        else used[static_cast<std::size_t>(o.layer)] = true;
    }
    CHECK(outside == 0);
    for (std::size_t i = 0; i < used.size(); ++i) CHECK_MESSAGE(used[i], "layer " << i << " has no op");
}

std::size_t ops_in_layer(const graph::computation_graph& g, std::int32_t layer, op_kind k) {
    std::size_t n = 0;
    for (const auto& o : g.ops()) n += o.layer == layer && o.kind == k;
    return n;
}

bool all_finite(const interp::value<double>& v) {
    for (double x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

ops::shape output_shape(const graph::computation_graph& g) {
    REQUIRE(g.outputs().size() == 1);
    return g.type_of(g.outputs()[0]).dims;
}

TEST_CASE("lstm_step: 15 elementwise pieces that compute the composite lstm_cell with forget bias 1") {
    graph::computation_graph g;
    graph::builder b(g);
    const auto x = b.input("x", {2, 3});
    const models::lstm_state s0{b.input("h", {2, 4}), b.input("c", {2, 4})};
    const auto p = models::lstm_parameters(b, "l", 3, 4);
    const std::size_t before = g.num_ops();
    const auto s1 = models::lstm_step(b, p, x, s0);
    CHECK(g.num_ops() - before == models::lstm_step_ops);
    const auto k = kinds(g);
    CHECK(k.at(op_kind::matmul) == 2);
    CHECK(k.at(op_kind::ewadd) == 4);
    CHECK(k.at(op_kind::split) == 1);
    CHECK(k.at(op_kind::sigmoid) == 3);
    CHECK(k.at(op_kind::tanh) == 2);
    CHECK(k.at(op_kind::ewmul) == 3);
    g.mark_output(s1.h);
    g.mark_output(s1.c);

    // the same step as one composite op, whose bias carries the forget gate's +1
    graph::computation_graph ref;
    const auto rx = ref.input("x", {2, 3}), rh = ref.input("h", {2, 4}), rc = ref.input("c", {2, 4});
    const auto rw = ref.weight("l/w", {3, 16}), ru = ref.weight("l/u", {4, 16}), rb = ref.weight("l/b", {16});
    const auto cell = ref.add(op_kind::lstm_cell, {rx, rh, rc, rw, ru, rb});
    ref.mark_output(cell[0]);
    ref.mark_output(cell[1]);

    std::mt19937_64 rng(7);
    auto feeds = interp::random_feeds<double>(g, rng);
    auto ref_feeds = feeds;
    for (std::size_t j = 4; j < 8; ++j) ref_feeds.at("l/b")(j) += 1.0;
    const auto out = interp::run(g, feeds);
    const auto expect = interp::run(ref, ref_feeds);
    for (std::size_t o = 0; o < 2; ++o)
        for (std::size_t i = 0; i < out[o].size(); ++i)
            CHECK(out[o].flat(i) == doctest::Approx(expect[o].flat(i)).epsilon(1e-12));
}

TEST_CASE("lstm_layer: one cell per step, reverse keeps time order") {
    graph::computation_graph g;
    graph::builder b(g);
    const auto tokens = b.input("tokens", {4, 2}, ops::dtype::i64);
    const auto xs = models::embed_and_unstack(b, b.weight("emb", {5, 3}), tokens);
    REQUIRE(xs.size() == 4);
    const auto p = models::lstm_parameters(b, "l", 3, 6);
    models::lstm_state fin;
    const auto hs = models::lstm_layer(b, p, xs, models::lstm_initial_state(b, "l", 2, 6), true, &fin);
    REQUIRE(hs.size() == 4);
    CHECK(kinds(g).at(op_kind::split) == 1 + 4);
    for (auto h : hs) CHECK(g.type_of(h).dims == ops::shape{2, 6});
    // reversed: step 0's output is computed last, and it is the final state
    CHECK(fin.h == hs[0]);
    CHECK(g.producer(hs[0]) > g.producer(hs[3]));
}

TEST_CASE("rnnlm: cells = layers x steps, hand-derived parameters, shapes, layers") {
    const models::rnnlm_config c{.batch = 2, .steps = 3, .layers = 2, .hidden = 4, .embedding = 5, .vocab = 7};
    const auto g = models::rnnlm(c);
    const auto k = kinds(g);
    CHECK(k.at(op_kind::split) == 2 * 3 + 1);       // one per cell + the token unstack
    CHECK(k.at(op_kind::matmul) == 2 * 2 * 3 + 3);  // two per cell + one projection per step
    CHECK(k.at(op_kind::gather) == 1);
    // embedding 7x5; layer 0: w 5x16, u 4x16, b 16; layer 1: w 4x16, u 4x16, b 16; softmax 4x7 + 7
    CHECK(g.parameter_bytes() == 4 * (35 + 160 + 144 + 35));
    CHECK(output_shape(g) == ops::shape{3 * 2, 7});
    CHECK(non_source_ops(g) ==
          2 * 3 * models::lstm_step_ops + 3 * 2 /*projection*/ + 1 /*concat*/ + 1 + 1 + 3 /*gather, split, reshapes*/);
    check_layers(g, c.softmax_layer());
    CHECK(ops_in_layer(g, c.lstm_layer_index(1), op_kind::split) == 3);

    const auto g4 = models::rnnlm({.batch = 2, .steps = 3, .layers = 4, .hidden = 4, .embedding = 5, .vocab = 7});
    CHECK(kinds(g4).at(op_kind::split) == 4 * 3 + 1);
    CHECK(g4.parameter_bytes() == g.parameter_bytes() + 4 * 2 * 144);

    // defaults: 2 x 2048 LSTM, 10K vocabulary, 35 steps
    const auto d = models::rnnlm();
    CHECK(kinds(d).at(op_kind::split) == 2 * 35 + 1);
    CHECK(d.parameter_bytes() == 4 * (10000LL * 2048 + 2 * (2 * 2048LL * 8192 + 8192) + 2048LL * 10000 + 10000));
    CHECK_THROWS_AS(models::rnnlm({.layers = 0}), error);

    std::mt19937_64 rng(1);
    const auto out = interp::run(g, interp::random_feeds<double>(g, rng));
    REQUIRE(out.size() == 1);
    CHECK(out[0].shape(0) == 6);
    CHECK(all_finite(out[0]));
}

TEST_CASE("gnmt: encoder and decoder cells, attention at every decoder step, residuals, parameters") {
    const models::gnmt_config c{.batch = 2,
                                .source_steps = 3,
                                .target_steps = 2,
                                .layers = 3,
                                .hidden = 4,
                                .embedding = 5,
                                .attention = 6,
                                .source_vocab = 7,
                                .target_vocab = 9};
    const auto g = models::gnmt(c);
    const auto k = kinds(g);
    const std::size_t enc_cells = (3 + 1) * 3, dec_cells = 3 * 2;  // bidirectional layer 0 has two LSTMs
    CHECK(k.at(op_kind::split) == enc_cells + dec_cells + 2);      // + the two token unstacks
    CHECK(k.at(op_kind::softmax) == 2);                            // attention at each decoder step
    CHECK(k.at(op_kind::matmul) == 2 * (enc_cells + dec_cells) + 1 /*keys*/ + 3 * 2 /*attention*/ + 2 /*logits*/);
    // concat: bidirectional outputs per step, the memory, [y; context] for decoder layers 1..2 per
    // step, the logits
    CHECK(k.at(op_kind::concat) == 3 + 1 + 2 * 2 + 1);
    // ewadd: 4 per cell, residuals from layer 2 (one encoder layer x 3 steps, one decoder layer x 2
    // steps), attention's keys + query per step, logits bias per step
    CHECK(k.at(op_kind::ewadd) == 4 * (enc_cells + dec_cells) + 3 + 2 + 2 + 2);
    CHECK(ops_in_layer(g, c.attention_layer(), op_kind::softmax) == 2);
    CHECK(ops_in_layer(g, c.encoder_layer(0), op_kind::split) == 2 * 3);
    CHECK(ops_in_layer(g, c.decoder_layer(2), op_kind::split) == 2);
    check_layers(g, c.softmax_layer());
    // hand-derived: embeddings 7x5 + 9x5; enc0 fw/bw (5x16 + 4x16 + 16) each; enc1 (8x16 + 4x16 + 16);
    // enc2 (4x16 + 4x16 + 16); attention 4x6 + 4x6 + 6; dec0 (5x16 + 80); dec1, dec2 (8x16 + 80);
    // softmax 4x9 + 9
    CHECK(g.parameter_bytes() == 4 * (35 + 45 + 2 * 160 + 208 + 144 + 54 + 160 + 2 * 208 + 45));
    CHECK(output_shape(g) == ops::shape{2 * 2, 9});

    // without residuals from layer 2 (residual_from = layers): 5 fewer ewadds
    auto no_res = c;
    no_res.residual_from = 3;
    CHECK(kinds(models::gnmt(no_res)).at(op_kind::ewadd) == k.at(op_kind::ewadd) - 5);

    // decoder layer 0 starts from the encoder's final state: the first use of dec0/u (the first
    // decoder step's recurrent matmul) reads a hidden state made in encoder layer 0
    const auto dec_u = g.find("dec0/u");
    REQUIRE(dec_u);
    const auto rec_matmul = g.get_tensor(g.get_op(*dec_u).outputs[0]).uses.at(0).op;
    const auto& h_maker = g.get_op(g.producer(g.get_op(rec_matmul).inputs[0]));
    CHECK(h_maker.kind == op_kind::ewmul);
    CHECK(h_maker.layer == c.encoder_layer(0));

    std::mt19937_64 rng(2);
    const auto out = interp::run(g, interp::random_feeds<double>(g, rng));
    REQUIRE(out.size() == 1);
    CHECK(out[0].shape(0) == 4);
    CHECK(out[0].shape(1) == 9);
    CHECK(all_finite(out[0]));
}

TEST_CASE("gnmt defaults: 8 + 8 layers unrolled over 80 steps, GO's scale") {
    const models::gnmt_config c;
    const auto g = models::gnmt();
    CHECK(kinds(g).at(op_kind::split) == 9 * 80 + 8 * 80 + 2);
    CHECK(kinds(g).at(op_kind::softmax) == 80);
    CHECK(non_source_ops(g) >= 23000);
    check_layers(g, c.softmax_layer());
    CHECK(output_shape(g) == ops::shape{80 * 128, 32000});
    // 2 and 4 layers: fewer cells
    CHECK(kinds(models::gnmt({.layers = 2})).at(op_kind::split) == 3 * 80 + 2 * 80 + 2);
    CHECK(kinds(models::gnmt({.layers = 4})).at(op_kind::split) == 5 * 80 + 4 * 80 + 2);
    CHECK_THROWS_AS(models::gnmt({.layers = 1}), error);

    // the scale target for the 8-layer GNMT training step (GO reports ~80,000 ops)
    CHECK(models::make_training_graph(g).num_ops() >= 50000);
}

TEST_CASE("transformer_xl: per-layer structure, stop-gradient on the memory, parameters") {
    const models::transformer_xl_config c{.batch = 2,
                                          .segment = 3,
                                          .memory = 2,
                                          .layers = 2,
                                          .model = 4,
                                          .heads = 2,
                                          .head_dim = 3,
                                          .inner = 5,
                                          .vocab = 6};
    const auto g = models::transformer_xl(c);
    const auto k = kinds(g);
    CHECK(non_source_ops(g) == 2 * models::transformer_xl_layer_ops + 3);
    CHECK(k.at(op_kind::layernorm) == 2 * 2);
    CHECK(k.at(op_kind::softmax) == 2);
    CHECK(k.at(op_kind::identity) == 2);         // the stop-gradient marks
    CHECK(k.at(op_kind::pad) == 2);              // the relative shift
    CHECK(k.at(op_kind::matmul) == 2 * 10 + 1);  // q, k, v, r, content, position, context, out, ff x2
    for (const auto& o : g.ops())
        if (o.kind == op_kind::identity) {
            CHECK(o.name.ends_with("stop_gradient"));
            CHECK(g.get_op(g.producer(o.inputs[0])).name.ends_with("/memory"));
        }
    // embedding 6x4; per layer: 4 projections 4x6, biases 2x(2x1x3), w_o 6x4, 2 layernorms 2x4,
    // feed-forward 4x5 + 5 + 5x4 + 4; output 4x6 + 6
    CHECK(g.parameter_bytes() == 4 * (24 + 2 * (96 + 12 + 24 + 16 + 49) + 30));
    CHECK(output_shape(g) == ops::shape{2, 3, 6});
    check_layers(g, c.softmax_layer());
    CHECK(ops_in_layer(g, c.decoder_layer(1), op_kind::layernorm) == 2);

    // defaults (enc8-style base, 8 layers): hand-derived parameters
    const auto d = models::transformer_xl();
    CHECK(d.parameter_bytes() == 4LL * (204 * 512 + 8 * 3413504LL + 512 * 204 + 204));
    CHECK(kinds(models::transformer_xl({.layers = 4})).at(op_kind::layernorm) == 8);

    // causality: with a causal mask, the last token does not change earlier positions' logits
    std::mt19937_64 rng(3);
    auto feeds = interp::random_feeds<double>(g, rng);
    const std::int64_t T = 3, M = 2;
    for (int i = 0; i < 2; ++i) {
        const std::string p = "layer" + std::to_string(i) + "/";
        auto& mask = feeds.at(p + "attn_mask");
        for (std::int64_t q = 0; q < T; ++q)
            for (std::int64_t j = 0; j < T + M; ++j) mask(q, j) = j <= q + M ? 0.0 : -1e9;
        feeds.at(p + "attn_scale")(0) = 1.0 / std::sqrt(3.0);
    }
    auto& tok = feeds.at("tokens");
    tok(0, 0) = 0;
    tok(0, 1) = 1;
    tok(0, 2) = 2;
    tok(1, 0) = 3;
    tok(1, 1) = 4;
    tok(1, 2) = 5;
    const auto a = interp::run(g, feeds)[0];
    tok(0, 2) = 5;
    tok(1, 2) = 0;
    const auto bb = interp::run(g, feeds)[0];
    REQUIRE(all_finite(a));
    double early = 0, last = 0;
    for (std::int64_t n = 0; n < 2; ++n)
        for (std::int64_t v = 0; v < 6; ++v) {
            for (std::int64_t t = 0; t < 2; ++t) early = std::max(early, std::abs(a(n, t, v) - bb(n, t, v)));
            last = std::max(last, std::abs(a(n, 2, v) - bb(n, 2, v)));
        }
    CHECK(early < 1e-12);
    CHECK(last > 1e-6);
}

TEST_CASE("wavenet: dilated causal convolutions, gates, skips, receptive field") {
    const models::wavenet_config c{.batch = 1,
                                   .samples = 12,
                                   .stacks = 1,
                                   .layers = 2,
                                   .filter_width = 2,
                                   .residual_channels = 3,
                                   .dilation_channels = 4,
                                   .skip_channels = 5,
                                   .classes = 6};
    const auto g = models::wavenet(c);
    const auto k = kinds(g);
    CHECK(k.at(op_kind::conv2d) == 1 + 4 + 3 + 2);  // causal, 4 per layer (3 in the last), head
    CHECK(k.at(op_kind::pad) == 1 + 2);
    CHECK(k.at(op_kind::tanh) == 2);
    CHECK(k.at(op_kind::sigmoid) == 2);
    CHECK(k.at(op_kind::ewmul) == 2);
    CHECK(k.at(op_kind::ewadd) == 1 /*residual of layer 0*/ + 1 /*skip sum*/);
    // causal 3x6x2; layer 0: filter and gate 4x3x2, skip 5x4, dense 3x4; layer 1 without dense;
    // head 5x5 and 6x5
    CHECK(g.parameter_bytes() == 4 * (36 + 80 + 68 + 25 + 30));
    CHECK(output_shape(g) == ops::shape{1, 6, 1, 12});
    check_layers(g, c.head_layer());
    std::vector<std::int64_t> dilations;
    for (const auto& o : g.ops())
        if (o.kind == op_kind::conv2d && o.layer < c.layers && g.type_of(o.inputs[1]).dims[3] == 2)
            dilations.push_back(o.attrs.get_ints(ops::attr_id::dilation)[1]);
    CHECK(dilations == std::vector<std::int64_t>{1, 1, 2, 2});  // filter and gate of layers 0, 1

    // receptive field: 2 (causal conv) + 1 + 2 (dilations) = 5 samples: input s reaches outputs s..s+4
    std::mt19937_64 rng(4);
    auto feeds = interp::random_feeds<double>(g, rng);
    const auto a = interp::run(g, feeds)[0];
    for (std::int64_t q = 0; q < 6; ++q) feeds.at("audio")(0, q, 0, 3) += 0.5;
    const auto bb = interp::run(g, feeds)[0];
    for (std::int64_t t = 0; t < 12; ++t) {
        double diff = 0;
        for (std::int64_t q = 0; q < 6; ++q) diff = std::max(diff, std::abs(a(0, q, 0, t) - bb(0, q, 0, t)));
        if (t < 3 || t > 7) CHECK_MESSAGE(diff == 0.0, "t = " << t);
        else CHECK_MESSAGE(diff > 1e-9, "t = " << t);
    }

    // GO's sizes: 9 layers per stack, dilations 1..256
    const models::wavenet_config two{.stacks = 2, .layers = 18};
    CHECK(two.dilation(0) == 1);
    CHECK(two.dilation(8) == 256);
    CHECK(two.dilation(9) == 1);
    const auto d2 = models::wavenet(two);
    CHECK(kinds(d2).at(op_kind::conv2d) == 1 + 18 * 4 - 1 + 2);
    check_layers(d2, two.head_layer());
    const auto d4 = models::wavenet({.stacks = 4, .layers = 36});
    CHECK(kinds(d4).at(op_kind::conv2d) == 1 + 36 * 4 - 1 + 2);
    CHECK(models::wavenet_config{.stacks = 1, .layers = 12}.dilation(11) == 2);  // 1..512, then 1, 2
    CHECK_THROWS_AS(models::wavenet({.stacks = 4, .layers = 18}), error);
}

TEST_CASE("amoebanet: AmoebaNet-A cells, separable convs as depthwise + 1x1, shapes, layers") {
    const models::amoebanet_config c{
        .batch = 1, .image = 32, .normal_cells = 1, .filters = 8, .stem_filters = 4, .num_classes = 5};
    const auto g = models::amoebanet(c);
    CHECK(c.num_cells() == 7);
    std::size_t depthwise = 0, k1x7 = 0, k7x1 = 0;
    for (const auto& o : g.ops()) {
        if (o.kind != op_kind::conv2d) continue;
        const auto& w = g.type_of(o.inputs[1]).dims;
        depthwise += w[1] == 1 && g.type_of(o.inputs[0]).dims[1] > 1;
        k1x7 += w[2] == 1 && w[3] == 7;
        k7x1 += w[2] == 7 && w[3] == 1;
    }
    CHECK(depthwise == 7 * 8);  // 4 separable ops x 2 repetitions in each of 7 cells
    CHECK(k1x7 == 4);           // one 1x7-7x1 per reduction cell (2 stem + 2)
    CHECK(k7x1 == 4);
    CHECK(kinds(g).at(op_kind::ewadd) == 7 * 5 + 1);  // five pairs per cell + fc bias
    // normal cells concatenate 4 states, reduction cells 5: the last (normal) cell gives 4 x 4F
    CHECK(output_shape(g) == ops::shape{1, 5});
    const auto fc = g.find("head/fc/w");
    REQUIRE(fc);
    CHECK(g.type_of(g.get_op(*fc).outputs[0]).dims == ops::shape{4 * 32, 5});
    check_layers(g, c.head_layer());
    for (std::int32_t cell = 0; cell < c.num_cells(); ++cell) CHECK(ops_in_layer(g, cell, op_kind::concat) >= 1);

    // N changes the number of normal cells: 3 more cells
    const auto g2 = models::amoebanet(
        {.batch = 1, .image = 32, .normal_cells = 2, .filters = 8, .stem_filters = 4, .num_classes = 5});
    CHECK(kinds(g2).at(op_kind::ewadd) == 10 * 5 + 1);

    std::mt19937_64 rng(5);
    auto feeds = interp::random_feeds<double>(g, rng);
    for (auto& [name, v] : feeds)
        if (name.ends_with("/var"))
            for (double& x : v) x = std::abs(x) + 0.5;  // a variance is positive
    const auto out = interp::run(g, feeds);
    REQUIRE(out.size() == 1);
    CHECK(all_finite(out[0]));

    // defaults: N = 6, F = 190 at 331 x 331
    const auto d = models::amoebanet();
    CHECK(output_shape(d) == ops::shape{64, 1000});
    CHECK(kinds(d).at(op_kind::ewadd) == 22 * 5 + 1);
}

}  // namespace go_workloads_test
