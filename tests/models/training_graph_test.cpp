// The training-graph transform: its gradients against central differences of the loss (double
// precision, every element of every weight), the update rules against hand-computed numbers, the
// structure (one update per weight, colocation, layers, shapes), and the error for an op without a
// gradient rule.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/interp.hpp>
#include <goopt/models/training_graph.hpp>

#include "finite_differences.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace goopt;
using graph::op_id;
using graph::tensor_id;
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;
using feeds = interp::feed_map<double>;

namespace {

constexpr std::int64_t valid = 1;

/// Conv stack: strided SAME conv, batchnorm, relu, grouped VALID conv with a fused tanh, an
/// enlarged 1x1 kernel, average pooling (fused relu) and max pooling, concat / split, gelu,
/// sigmoid, global average pooling, reshape / flatten, matmul (fused sigmoid) + broadcast bias,
/// softmax. Two outputs.
graph::computation_graph vision_model() {
    graph::computation_graph g("vision");
    auto x = g.input("x", {2, 4, 7, 7});
    auto c1 = g.add1(op_kind::conv2d, {x, g.weight("conv1.w", {6, 4, 3, 3})}, {{attr_id::stride, ints{2, 2}}}, "conv1");
    g.set_layer(g.producer(c1), 0);
    auto bn = g.add1(
        op_kind::batchnorm,
        {c1, g.weight("bn.scale", {6}), g.weight("bn.bias", {6}), g.weight("bn.mean", {6}), g.weight("bn.var", {6})},
        {}, "bn");
    auto r = g.add1(op_kind::relu, {bn}, {}, "relu");
    // groups = 6 / 3 = 2, VALID 3x3 on 4x4 -> 2x2, fused tanh
    auto c2 = g.add1(op_kind::conv2d, {r, g.weight("conv2.w", {6, 3, 3, 3})},
                     {{attr_id::padding, valid}, {attr_id::activation, std::int64_t(3)}}, "conv2");
    g.set_layer(g.producer(c2), 1);
    // a 1x1 kernel enlarged to 3x3, stride 2 SAME on 4x4 -> 2x2
    auto big =
        g.add1(op_kind::enlarge, {g.weight("conv3.w", {6, 6, 1, 1})}, {{attr_id::kernel, ints{3, 3}}}, "enlarge");
    auto c3 = g.add1(op_kind::conv2d, {r, big}, {{attr_id::stride, ints{2, 2}}}, "conv3");
    auto ap =
        g.add1(op_kind::avgpool2d, {r},
               {{attr_id::kernel, ints{3, 3}}, {attr_id::stride, ints{2, 2}}, {attr_id::activation, std::int64_t(1)}},
               "avgpool");  // fused relu
    auto mp =
        g.add1(op_kind::maxpool2d, {r},
               {{attr_id::kernel, ints{2, 2}}, {attr_id::stride, ints{2, 2}}, {attr_id::padding, valid}}, "maxpool");
    auto cat = g.add1(op_kind::concat, {c2, c3, ap, mp}, {{attr_id::axis, std::int64_t(1)}}, "concat");  // [2,24,2,2]
    auto parts =
        g.add(op_kind::split, {cat}, {{attr_id::axis, std::int64_t(1)}, {attr_id::sizes, ints{10, 14}}}, "split");
    auto ge = g.add1(op_kind::gelu, {parts[0]}, {}, "gelu");
    auto sg = g.add1(op_kind::sigmoid, {parts[1]}, {}, "sigmoid");
    auto cat2 = g.add1(op_kind::concat, {ge, sg}, {{attr_id::axis, std::int64_t(1)}}, "concat2");
    auto flat = g.add1(op_kind::flatten, {cat2}, {}, "flatten");  // [2, 96]
    auto fc =
        g.add1(op_kind::matmul, {flat, g.weight("fc.w", {96, 5})}, {{attr_id::activation, std::int64_t(2)}}, "fc");
    g.set_layer(g.producer(fc), 2);
    auto logits = g.add1(op_kind::ewadd, {fc, g.weight("fc.b", {5})}, {}, "fc.bias");
    g.set_layer(g.producer(logits), 2);
    auto sm = g.add1(op_kind::softmax, {logits}, {}, "softmax");
    g.mark_output(sm);
    auto gap = g.add1(op_kind::global_avgpool, {r}, {}, "gap");
    auto gr = g.add1(op_kind::reshape, {gap}, {{attr_id::shape, ints{2, 6}}}, "gap.reshape");
    g.mark_output(gr);
    return g;
}

/// Sequence model: embedding (gather), layernorm, self-attention with batched and broadcast
/// matmuls, transpose, softmax, ewadd / ewmul with broadcasting, two LSTM steps sharing weights
/// (the last cell state unused), a GRU step, and sub / div / smul / sqrt / pad / slice / reductions.
graph::computation_graph sequence_model() {
    graph::computation_graph g("sequence");
    auto idx = g.input("tokens", {2, 3}, ops::dtype::i64);
    auto e = g.add1(op_kind::gather, {g.weight("emb", {5, 4}), idx}, {}, "embed");
    auto ln = g.add1(op_kind::layernorm, {e, g.weight("ln.gamma", {4}), g.weight("ln.beta", {4})}, {}, "ln");
    auto q = g.add1(op_kind::matmul, {ln, g.weight("wq", {4, 4})}, {}, "q");  // broadcast [2,3,4] x [4,4]
    auto k = g.add1(op_kind::matmul, {ln, g.weight("wk", {4, 4})}, {}, "k");
    auto kt = g.add1(op_kind::transpose, {k}, {{attr_id::perm, ints{0, 2, 1}}}, "kt");
    auto s = g.add1(op_kind::matmul, {q, kt}, {}, "scores");  // batched [2,3,4] x [2,4,3]
    auto p = g.add1(op_kind::softmax, {s}, {}, "attn");
    auto ctx = g.add1(op_kind::matmul, {p, ln}, {}, "ctx");
    auto biased = g.add1(op_kind::ewadd, {ctx, g.weight("ctx.b", {4})}, {}, "ctx.bias");
    auto gated = g.add1(op_kind::ewmul, {biased, g.weight("gate", {3, 1})}, {}, "gate.mul");  // [2,3,4] * [3,1]
    auto x = g.add1(op_kind::reshape, {gated}, {{attr_id::shape, ints{6, 4}}}, "x");
    auto w = g.weight("lstm.w", {4, 12}), u = g.weight("lstm.u", {3, 12}), b = g.weight("lstm.b", {12});
    auto h0 = g.input("h0", {6, 3}), c0 = g.input("c0", {6, 3});
    auto s1 = g.add(op_kind::lstm_cell, {x, h0, c0, w, u, b}, {}, "lstm.0");
    g.set_layer(g.producer(s1[0]), 3);
    auto s2 = g.add(op_kind::lstm_cell, {x, s1[0], s1[1], w, u, b}, {}, "lstm.1");
    g.set_layer(g.producer(s2[0]), 3);
    auto hg =
        g.add1(op_kind::gru_cell,
               {x, s2[0], g.weight("gru.w", {4, 9}), g.weight("gru.u", {3, 9}), g.weight("gru.b", {9})}, {}, "gru");
    g.mark_output(hg);
    // elementwise tail on the second hidden state
    auto d = g.add1(op_kind::sub, {s2[0], g.weight("shift", {3})}, {}, "sub");
    auto den = g.add1(op_kind::sigmoid, {g.weight("den", {6, 1})}, {}, "den.sigmoid");
    auto qd = g.add1(op_kind::div, {d, den}, {}, "div");
    auto root = g.add1(op_kind::sqrt, {g.add1(op_kind::sigmoid, {qd}, {}, "pos")}, {}, "sqrt");
    auto sc = g.add1(op_kind::smul, {root, g.weight("scale", {})}, {}, "smul");
    auto padded = g.add1(op_kind::pad, {sc}, {{attr_id::pads, ints{1, 0, 0, 2}}}, "pad");  // [7,5]
    auto sl = g.add1(op_kind::slice, {padded}, {{attr_id::begin, ints{0, 1}}, {attr_id::end, ints{5, 5}}}, "slice");
    auto t = g.add1(op_kind::tanh, {sl}, {}, "tanh");
    auto rs =
        g.add1(op_kind::reduce_sum, {t}, {{attr_id::axes, ints{1}}, {attr_id::keepdims, std::int64_t(0)}}, "rsum");
    g.mark_output(rs);
    auto sq = g.add1(op_kind::ewmul, {t, t}, {}, "square");  // one tensor in both slots
    auto rm = g.add1(op_kind::reduce_mean, {sq}, {{attr_id::axes, ints{0}}}, "rmean");
    g.mark_output(rm);
    return g;
}

/// The kinds an ONNX import adds to a transformer or a MobileNet: pow (a decomposed LayerNorm's
/// square, and a weight exponent), erf (exact GELU), clip (ReLU6), reduce_max, log, add_n, and
/// YOLO's and MobileNetV3's activations: leaky_relu, hard_sigmoid, hard_swish (on 4h, so that
/// some inputs lie outside its curved part), exp; prelu (a slope per column, and a slope that widens
/// its input), softplus, elu and abs; lrn (h as 3 channels of 2 x 2), instance_norm (3 channels of 4),
/// softsign, max and min (each with an operand broadcast).
graph::computation_graph imported_kinds_model() {
    graph::computation_graph g("imported");
    auto x = g.input("x", {3, 4});
    auto h = g.add1(op_kind::matmul, {x, g.weight("w", {4, 4})}, {}, "h");
    auto base = g.add1(op_kind::sigmoid, {h}, {}, "base");  // positive, so x^e is defined for any e
    auto two = g.add1(op_kind::const_fill, {}, {{attr_id::shape, ints{}}, {attr_id::value, 2.0}}, "two");
    auto sq = g.add1(op_kind::pow, {h, two}, {}, "square");                 // any sign of h
    auto pw = g.add1(op_kind::pow, {base, g.weight("e", {4})}, {}, "pow");  // exponent broadcast
    auto er = g.add1(op_kind::erf, {h}, {}, "erf");
    auto cl = g.add1(op_kind::clip, {h}, {{attr_id::min, -0.3}, {attr_id::max, 0.4}}, "clip");
    auto lg = g.add1(op_kind::log, {base}, {}, "log");
    auto lk = g.add1(op_kind::leaky_relu, {h}, {{attr_id::alpha, 0.1}}, "leaky_relu");
    auto hs = g.add1(op_kind::hard_sigmoid, {h}, {{attr_id::alpha, 0.7}, {attr_id::beta, 0.4}}, "hard_sigmoid");
    auto four = g.add1(op_kind::const_fill, {}, {{attr_id::shape, ints{}}, {attr_id::value, 4.0}}, "four");
    auto hw = g.add1(op_kind::hard_swish, {g.add1(op_kind::ewmul, {h, four}, {}, "h4")}, {}, "hard_swish");
    auto ex = g.add1(op_kind::exp, {h}, {}, "exp");
    auto pr = g.add1(op_kind::prelu, {h, g.weight("slope", {4})}, {}, "prelu");
    auto pw2 = g.add1(op_kind::prelu, {g.weight("narrow", {4}), h}, {}, "prelu_widened");
    auto sp = g.add1(op_kind::softplus, {h}, {}, "softplus");
    auto el = g.add1(op_kind::elu, {h}, {{attr_id::alpha, 0.7}}, "elu");
    auto ab = g.add1(op_kind::abs, {h}, {}, "abs");
    const auto as = [&](tensor_id t, ints s, const char* name) {
        return g.add1(op_kind::reshape, {t}, {{attr_id::shape, std::move(s)}}, name);
    };
    auto ln = as(g.add1(op_kind::lrn, {as(h, {1, 3, 2, 2}, "h_image")},
                        {{attr_id::size, std::int64_t{3}}, {attr_id::alpha, 0.5}, {attr_id::beta, 0.75}}, "lrn"),
                 {3, 4}, "lrn_rows");
    auto in = as(g.add1(op_kind::instance_norm,
                        {as(h, {1, 3, 4}, "h_channels"), g.weight("in_scale", {3}), g.weight("in_bias", {3})},
                        {{attr_id::epsilon, 1e-3}}, "instance_norm"),
                 {3, 4}, "instance_norm_rows");
    auto ss = g.add1(op_kind::softsign, {h}, {}, "softsign");
    auto hi = g.add1(op_kind::max, {h, g.weight("floor", {4})}, {}, "elementwise_max");
    auto lo = g.add1(op_kind::min, {g.weight("ceiling", {4}), h}, {}, "elementwise_min");
    auto sum =
        g.add(op_kind::add_n,
              std::vector<tensor_id>{sq, pw, er, cl, lg, lk, hs, hw, ex, pr, pw2, sp, el, ab, ln, in, ss, hi, lo}, {},
              "sum")[0];
    auto mx =
        g.add1(op_kind::reduce_max, {sum}, {{attr_id::axes, ints{1}}, {attr_id::keepdims, std::int64_t(0)}}, "max");
    g.mark_output(mx);
    g.mark_output(g.add1(op_kind::reduce_max, {h}, {{attr_id::keepdims, std::int64_t(1)}}, "max_all"));
    return g;
}

/// Random feeds for the training graph, with variances and Adam's second moments positive.
feeds training_feeds(const graph::computation_graph& train, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    feeds f = interp::random_feeds<double>(train, rng);
    for (auto& [name, v] : f)
        if (name.ends_with("var") || name.ends_with(".adam_v"))
            for (double& e : v.storage()) e = std::abs(e) + 0.5;
    return f;
}

/// Update ops of a training graph, by the name of the weight they update.
std::map<std::string, op_id> updates_by_weight(const graph::computation_graph& train) {
    std::map<std::string, op_id> r;
    for (op_id o = 0; o < train.num_ops(); ++o) {
        const auto& op = train.get_op(o);
        if (op.kind != op_kind::sgd_update && op.kind != op_kind::adam_update) continue;
        const auto& w = train.get_op(train.producer(op.inputs[0]));
        CHECK(w.kind == op_kind::weight);
        CHECK(r.emplace(w.name, o).second);  // at most one update per weight
    }
    return r;
}

/// Every gradient the training graph computes for a weight of `fwd` against central differences.
void check_gradients(const graph::computation_graph& fwd, std::uint64_t seed) {
    const auto train = models::make_training_graph(fwd);
    graph::validate(train);
    feeds f = training_feeds(train, seed);
    const auto values = interp::evaluate<double>(train, f);
    // the loss output is the transform's: sum of the outputs' means
    const tensor_id loss = train.outputs()[fwd.outputs().size()];
    CHECK(train.get_op(train.producer(loss)).name == "loss");
    CHECK(values[loss]() == doctest::Approx(testing::training_loss(fwd, f)).epsilon(1e-12));
    const auto updates = updates_by_weight(train);
    std::size_t checked = 0;
    double largest = 0;
    for (const op_id w : fwd.ops_of_kind(op_kind::weight)) {
        const std::string& name = fwd.get_op(w).name;
        CAPTURE(name);
        REQUIRE(updates.count(name) == 1);
        const auto& grad = values[train.get_op(updates.at(name)).inputs[1]];
        REQUIRE(grad.size() == f.at(name).size());
        for (std::size_t i = 0; i < grad.size(); ++i) {
            CAPTURE(i);
            const double fd = testing::central_difference(fwd, f, name, i);
            CHECK(std::abs(grad.data()[i] - fd) <= 1e-7 + 1e-5 * std::abs(fd));
            largest = std::max(largest, std::abs(fd));
            ++checked;
        }
    }
    MESSAGE(fwd.name() << ": " << checked << " gradient elements checked");
    CHECK(largest > 1e-3);  // the check saw real gradients, not a graph of zeros
}

}  // namespace

TEST_CASE("gradients of a conv / pooling / batchnorm / softmax model match finite differences") {
    check_gradients(vision_model(), 1);
    check_gradients(vision_model(), 2);
}

TEST_CASE("gradients of an embedding / attention / LSTM / GRU model match finite differences") {
    check_gradients(sequence_model(), 3);
    check_gradients(sequence_model(), 4);
}

TEST_CASE(
    "gradients of pow / erf / clip / reduce_max / log / add_n / activations (ONNX imports) match finite "
    "differences") {
    check_gradients(imported_kinds_model(), 5);
    check_gradients(imported_kinds_model(), 6);
    // pow's exponent gradient is 0 where the base is not positive (no derivative in e there)
    graph::computation_graph g;
    auto p = g.add1(op_kind::pow, {g.input("x", {3}), g.weight("e", {})}, {}, "p");
    g.mark_output(p);
    const auto train = models::make_training_graph(g, {.optimizer = models::optimizer_kind::sgd});
    feeds f{{"x", interp::value<double>{-2.0, 0.0, 3.0}}, {"e", interp::value<double>(2.0)}};
    const auto v = interp::evaluate<double>(train, f);
    const auto& de = v[train.get_op(updates_by_weight(train).at("e")).inputs[1]];
    CHECK(de() == doctest::Approx(9.0 * std::log(3.0) / 3.0));  // mean of (4*0, 0, 9 log 3)
}

TEST_CASE("gradients of the fused kernels (what substitution search makes) match finite differences") {
    // conv2d_bias with a per-channel bias and relu, with a residual addend and gelu (whose gradient
    // recomputes the pre-activation); matmul_bias with a bias row and sigmoid, and with gelu
    graph::computation_graph g("fused");
    const auto x = g.input("x", {2, 3, 5, 5});
    const auto c1 = g.add1(op_kind::conv2d_bias, {x, g.weight("k1", {4, 3, 3, 3}), g.weight("b1", {4, 1, 1})},
                           {{attr_id::activation, std::int64_t(1)}}, "conv1");
    const auto c2 = g.add1(op_kind::conv2d_bias, {c1, g.weight("k2", {4, 4, 1, 1}), c1},
                           {{attr_id::activation, std::int64_t(4)}}, "conv2");
    const auto h = g.add1(op_kind::reshape, {c2}, {{attr_id::shape, ints{2, 100}}}, "flat");
    const auto m1 = g.add1(op_kind::matmul_bias, {h, g.weight("u1", {100, 6}), g.weight("c1", {6})},
                           {{attr_id::activation, std::int64_t(2)}}, "fc1");
    g.mark_output(g.add1(op_kind::matmul_bias, {m1, g.weight("u2", {6, 3}), g.weight("c2", {1, 3})},
                         {{attr_id::activation, std::int64_t(4)}}, "fc2"));
    check_gradients(g, 7);
}

TEST_CASE("sgd_update and adam_update against hand-computed steps") {
    graph::computation_graph g;
    auto w = g.input("w", {3}), grad = g.input("g", {3}), m = g.input("m", {3}), v = g.input("v", {3});
    auto scalar = [&](double value) {
        return g.add1(op_kind::const_fill, {}, {{attr_id::shape, ints{}}, {attr_id::value, value}});
    };
    auto lr = scalar(0.1);
    auto sgd = g.add1(op_kind::sgd_update, {w, grad, lr});
    auto adam = g.add(op_kind::adam_update, {w, grad, m, v, lr, scalar(0.5), scalar(0.75)}, {{attr_id::epsilon, 0.5}});
    feeds f;
    f.emplace("w", xt::xarray<double>{1.0, 2.0, 3.0});
    f.emplace("g", xt::xarray<double>{2.0, -4.0, 0.0});
    f.emplace("m", xt::xarray<double>{1.0, 0.0, 2.0});
    f.emplace("v", xt::xarray<double>{0.0, 0.0, 0.0});
    const auto values = interp::evaluate<double>(g, f);
    // w - 0.1 g
    const std::vector<double> sgd_w{0.8, 2.4, 3.0};
    // m' = 0.5 m + 0.5 g = [1.5, -2, 1]; v' = 0.75 v + 0.25 g^2 = [1, 4, 0];
    // w' = w - 0.1 m' / (sqrt(v') + 0.5) = [1 - 0.15 / 1.5, 2 + 0.2 / 2.5, 3 - 0.1 / 0.5]
    const std::vector<double> adam_w{0.9, 2.08, 2.8}, adam_m{1.5, -2, 1}, adam_v{1, 4, 0};
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        CHECK(values[sgd].data()[i] == doctest::Approx(sgd_w[i]));
        CHECK(values[adam[0]].data()[i] == doctest::Approx(adam_w[i]));
        CHECK(values[adam[1]].data()[i] == doctest::Approx(adam_m[i]));
        CHECK(values[adam[2]].data()[i] == doctest::Approx(adam_v[i]));
    }
}

TEST_CASE("a transformed graph takes one SGD step: loss = mean(w * x), so w' = w - lr * x / 3") {
    graph::computation_graph fwd;
    auto w = fwd.weight("w", {3});
    fwd.mark_output(fwd.add1(op_kind::ewmul, {w, fwd.input("x", {3})}));
    const auto train =
        models::make_training_graph(fwd, {.optimizer = models::optimizer_kind::sgd, .learning_rate = 0.3});
    graph::validate(train);
    feeds f;
    f.emplace("w", xt::xarray<double>{1.0, 2.0, 3.0});
    f.emplace("x", xt::xarray<double>{3.0, -6.0, 0.0});
    const auto out = interp::run<double>(train, f);
    REQUIRE(out.size() == 3);  // the forward output, the loss, w'
    CHECK(out[1]() == doctest::Approx((3.0 - 12.0) / 3));
    CHECK(out[2](0) == doctest::Approx(1.0 - 0.3 * 1.0));
    CHECK(out[2](1) == doctest::Approx(2.0 + 0.3 * 2.0));
    CHECK(out[2](2) == doctest::Approx(3.0));
}

TEST_CASE("structure: one update per weight, optimizer state, colocation, layers, shapes") {
    for (const auto opt : {models::optimizer_kind::adam, models::optimizer_kind::sgd}) {
        const bool adam = opt == models::optimizer_kind::adam;
        CAPTURE(adam);
        for (const auto& fwd : {vision_model(), sequence_model()}) {
            CAPTURE(fwd.name());
            const auto train = models::make_training_graph(fwd, {.optimizer = opt});
            CHECK(graph::problems(train).empty());
            // the forward ops are kept as they were
            for (op_id o = 0; o < fwd.num_ops(); ++o) CHECK(train.get_op(o).name == fwd.get_op(o).name);
            const auto updates = updates_by_weight(train);
            const auto weights = fwd.ops_of_kind(op_kind::weight);
            CHECK(updates.size() == weights.size());
            // adam adds two state weights per weight, sgd none
            CHECK(train.ops_of_kind(op_kind::weight).size() == weights.size() * (adam ? 3 : 1));
            CHECK(train.parameter_bytes() == fwd.parameter_bytes() * (adam ? 3 : 1));
            std::map<std::int32_t, std::set<op_id>> groups;
            for (const op_id w : weights) {
                const auto& wop = train.get_op(w);
                CAPTURE(wop.name);
                const op_id u = updates.at(wop.name);
                const auto& up = train.get_op(u);
                CHECK(up.kind == (adam ? op_kind::adam_update : op_kind::sgd_update));
                CHECK(up.name == wop.name + (adam ? ".adam_update" : ".sgd_update"));
                const tensor_id grad = up.inputs[1];
                CHECK(train.type_of(grad) == train.type_of(wop.outputs[0]));
                const op_id producer = train.producer(grad);
                CHECK(producer >= fwd.num_ops());  // a gradient op, not a forward op
                std::vector<op_id> members{w, producer, u};
                if (adam) {
                    const auto& m = train.get_op(train.producer(up.inputs[2]));
                    const auto& v = train.get_op(train.producer(up.inputs[3]));
                    CHECK(m.kind == op_kind::weight);
                    CHECK(m.name == wop.name + ".adam_m");
                    CHECK(v.name == wop.name + ".adam_v");
                    members.push_back(train.producer(up.inputs[2]));
                    members.push_back(train.producer(up.inputs[3]));
                }
                CHECK(wop.colocation >= 0);
                for (const op_id o : members) CHECK(train.get_op(o).colocation == wop.colocation);
                groups[wop.colocation].insert(w);
            }
            // weights share a group only when one op computes both their gradients
            for (const auto& [group, ws] : groups) {
                if (ws.size() == 1) continue;
                CAPTURE(group);
                std::set<op_id> producers;
                for (const op_id w : ws)
                    producers.insert(train.producer(train.get_op(updates.at(train.get_op(w).name)).inputs[1]));
                CHECK(producers.size() < ws.size());
            }
            // a gradient op named grad/<op>/... sits in <op>'s layer
            std::map<std::string, std::int32_t> layer_of;
            for (const auto& o : fwd.ops()) layer_of[o.name] = o.layer;
            std::size_t grads = 0;
            for (op_id o = static_cast<op_id>(fwd.num_ops()); o < train.num_ops(); ++o) {
                const auto& op = train.get_op(o);
                if (!op.name.starts_with("grad/") || op.name.starts_with("grad/loss/") ||
                    op.name.starts_with("grad/const/"))
                    continue;
                const std::string rest = op.name.substr(5);
                const std::string fname = rest.substr(0, rest.rfind('/'));
                CAPTURE(op.name);
                REQUIRE(layer_of.count(fname) == 1);
                CHECK(op.layer == layer_of[fname]);
                ++grads;
            }
            CHECK(grads > fwd.num_ops() / 2);
        }
    }
}

TEST_CASE("the gradient rules pick the exact existing ops: matmul's is two matmuls and transposes") {
    graph::computation_graph fwd;
    auto x = fwd.input("x", {8, 16});
    auto y = fwd.add1(op_kind::matmul, {x, fwd.weight("w", {16, 4})}, {}, "fc");
    fwd.mark_output(fwd.add1(op_kind::matmul, {y, fwd.weight("w2", {4, 2})}, {}, "fc2"));
    const auto train = models::make_training_graph(fwd, {.optimizer = models::optimizer_kind::sgd});
    std::map<op_kind, int> count;
    for (op_id o = static_cast<op_id>(fwd.num_ops()); o < train.num_ops(); ++o) ++count[train.get_op(o).kind];
    // fc2: dW2 = y^T dz, dy = dz W2^T; fc: dW = x^T dy only (x is an input: no dx)
    CHECK(count[op_kind::matmul] == 3);
    CHECK(count[op_kind::transpose] == 3);
    CHECK(count[op_kind::sgd_update] == 2);
    CHECK(count[op_kind::reduce_mean] == 1);  // the loss
    // loss seed, learning rate
    CHECK(count[op_kind::const_fill] == 2);
    CHECK(count[op_kind::add_n] == 1);  // the loss
    CHECK(train.num_ops() == fwd.num_ops() + 12);
}

TEST_CASE("an op without a gradient rule between a weight and the loss is an error naming it") {
    graph::computation_graph fwd("bad");
    auto w = fwd.weight("w", {4});
    auto e = fwd.add1(op_kind::erf_grad, {w, w}, {}, "e");  // a gradient kind: no rule of its own
    fwd.mark_output(fwd.add1(op_kind::relu, {e}, {}, "r"));
    CHECK_THROWS_WITH_AS(models::make_training_graph(fwd), doctest::Contains("op 'e' (erf_grad)"), error);
    CHECK_THROWS_WITH_AS(models::make_training_graph(fwd), doctest::Contains("no gradient rule"), error);

    // the same op with no weight upstream needs no gradient
    graph::computation_graph ok;
    auto x = ok.add1(op_kind::erf, {ok.input("x", {4})}, {}, "e");
    ok.mark_output(ok.add1(op_kind::ewmul, {x, ok.weight("w", {4})}));
    const auto train = models::make_training_graph(ok);
    for (const auto& op : train.ops()) CHECK(op.name.find("grad/e/") == std::string::npos);
    CHECK(train.ops_of_kind(op_kind::adam_update).size() == 1);

    // a graph without a floating-point output has no loss
    graph::computation_graph none;
    none.mark_output(none.input("i", {2}, ops::dtype::i64));
    CHECK_THROWS_WITH_AS(models::make_training_graph(none), doctest::Contains("no floating-point output"), error);
}

TEST_CASE("FLOPs of the gradient ops: a conv's two gradients each cost its forward multiply-adds") {
    graph::computation_graph fwd;
    auto x = fwd.input("x", {1, 4, 7, 7});
    auto y = fwd.add1(op_kind::conv2d, {x, fwd.weight("w", {8, 2, 3, 3})}, {{attr_id::stride, ints{2, 2}}}, "conv");
    auto h =
        fwd.add(op_kind::lstm_cell, {fwd.input("xi", {8, 32}), fwd.input("h", {8, 16}), fwd.input("c", {8, 16}),
                                     fwd.weight("lw", {32, 64}), fwd.weight("lu", {16, 64}), fwd.weight("lb", {64})});
    fwd.mark_output(y);
    fwd.mark_output(h[0]);
    // make x need a gradient too: feed it through a weight
    graph::computation_graph deep;
    auto w0 = deep.weight("w0", {1, 4, 7, 7});
    auto x2 = deep.add1(op_kind::ewmul, {deep.input("x", {1, 4, 7, 7}), w0});
    deep.mark_output(deep.add1(op_kind::conv2d, {x2, deep.weight("w", {8, 2, 3, 3})}, {{attr_id::stride, ints{2, 2}}}));
    const auto train = models::make_training_graph(deep);
    const auto ti = train.ops_of_kind(op_kind::conv2d_grad_input), tw = train.ops_of_kind(op_kind::conv2d_grad_weight);
    REQUIRE(ti.size() == 1);
    REQUIRE(tw.size() == 1);
    // 2 * |dy| * (C / groups) * kh * kw = 2 * (8 * 4 * 4) * 2 * 9
    CHECK(train.flops(ti[0]) == doctest::Approx(2.0 * 128 * 18));
    CHECK(train.flops(tw[0]) == doctest::Approx(2.0 * 128 * 18));
    CHECK(train.flops(train.producer(train.outputs()[0])) == doctest::Approx(2.0 * 128 * 18));
    const auto t2 = models::make_training_graph(fwd);
    const auto cell = t2.ops_of_kind(op_kind::lstm_cell_grad);
    REQUIRE(cell.size() == 1);
    // recomputed gates plus the weight and input gradients: 3 * 2 * B * (I + H) * 4H, + 30 B H elementwise
    CHECK(t2.flops(cell[0]) == doctest::Approx(3.0 * 2 * 8 * 48 * 64 + 30.0 * 8 * 16));
}
