// Finite-difference checks (double) of every nn layer's backward pass, and GraphSAGE's permutation
// property.
#include <goopt/nn.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

using namespace goopt;
using mat = nn::matrix<double>;

namespace {

mat random_matrix(Eigen::Index r, Eigen::Index c, std::mt19937_64& rng) {
    std::normal_distribution<double> n(0, 1);
    mat m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

/// Checks d(sum(f(x) .* r))/dx and d/dparam for every parameter; returns the worst relative error.
template <class Forward, class Backward>
double check(mat& x, const mat& r, nn::parameter_list<double> ps, Forward forward, Backward backward) {
    nn::zero_grad(ps);
    const mat dx = backward(r, forward(x));
    auto loss = [&] { return (forward(x).array() * r.array()).sum(); };
    double worst = nn::gradient_error(x, dx, loss);
    for (auto* p : ps) {
        const mat g = p->grad;
        const double e = nn::gradient_error(p->value, g, loss);
        INFO(p->name << " error " << e);
        CHECK(e < 1e-6);
        worst = std::max(worst, e);
    }
    return worst;
}

template <nn::Layer L>
double check_layer(L& layer, Eigen::Index n, Eigen::Index d, Eigen::Index out, std::mt19937_64& rng) {
    mat x = random_matrix(n, d, rng);
    const mat r = random_matrix(n, out, rng);
    nn::parameter_list<double> ps;
    layer.collect(ps);
    return check(
        x, r, ps, [&](const mat& in) { return layer.forward(in); },
        [&](const mat& dy, const mat&) { return layer.backward(dy); });
}

// a small undirected graph with a node of degree 0 and one of degree 3
nn::adjacency small_graph() { return nn::adjacency::from_edges(6, {{0, 1}, {1, 2}, {1, 3}, {3, 4}, {2, 3}}); }

}  // namespace

TEST_CASE("linear, activations, layer_norm, residual_block: backward matches finite differences") {
    std::mt19937_64 rng(1);
    nn::linear<double> fc(4, 3, rng);
    CHECK(check_layer(fc, 5, 4, 3, rng) < 1e-6);
    nn::relu<double> act;
    CHECK(check_layer(act, 5, 4, 4, rng) < 1e-6);
    nn::tanh_activation<double> th;
    CHECK(check_layer(th, 5, 4, 4, rng) < 1e-6);
    nn::layer_norm<double> ln(6, rng);
    // non-trivial gamma/beta so their gradients are checked away from the initial values
    nn::parameter_list<double> lp;
    ln.collect(lp);
    lp[0]->value = random_matrix(1, 6, rng);
    lp[1]->value = random_matrix(1, 6, rng);
    CHECK(check_layer(ln, 4, 6, 6, rng) < 1e-6);
    nn::residual_block<double> res(5, 7, rng);
    CHECK(check_layer(res, 4, 5, 5, rng) < 1e-6);
}

TEST_CASE("layer_norm output has zero mean and unit variance per row before the affine part") {
    std::mt19937_64 rng(2);
    nn::layer_norm<double> ln(8, rng);
    const mat y = ln.forward(random_matrix(3, 8, rng) * 5.0);
    for (Eigen::Index i = 0; i < 3; ++i) {
        CHECK(y.row(i).mean() == doctest::Approx(0).epsilon(1e-12));
        CHECK((y.row(i).array().square().mean()) == doctest::Approx(1.0).epsilon(1e-4));
    }
}

TEST_CASE("graph_sage: mean and max-pool backward match finite differences") {
    std::mt19937_64 rng(3);
    const auto adj = small_graph();
    for (auto agg : {nn::aggregator::mean, nn::aggregator::max_pool}) {
        nn::graph_sage<double> sage(4, 5, agg, rng);
        mat x = random_matrix(6, 4, rng);
        const mat r = random_matrix(6, 5, rng);
        nn::parameter_list<double> ps;
        sage.collect(ps);
        CHECK(ps.size() == (agg == nn::aggregator::mean ? 3u : 5u));
        const double e = check(
            x, r, ps, [&](const mat& in) { return sage.forward(in, adj); },
            [&](const mat& dy, const mat&) { return sage.backward(dy); });
        CHECK(e < 1e-6);
    }
}

TEST_CASE("graph_sage: mean aggregation by hand on a path") {
    std::mt19937_64 rng(4);
    nn::graph_sage<double> sage(1, 1, nn::aggregator::mean, rng);
    nn::parameter_list<double> ps;
    sage.collect(ps);  // self.w, self.b, neigh_w
    ps[0]->value(0, 0) = 2.0;
    ps[1]->value(0, 0) = 0.5;
    ps[2]->value(0, 0) = 3.0;
    const auto adj = nn::adjacency::from_edges(3, {{0, 1}, {1, 2}});
    mat x(3, 1);
    x << 1, 2, 4;
    const mat y = sage.forward(x, adj);
    CHECK(y(0, 0) == doctest::Approx(2 * 1 + 3 * 2 + 0.5));              // neighbour 1
    CHECK(y(1, 0) == doctest::Approx(2 * 2 + 3 * (1 + 4) / 2.0 + 0.5));  // mean of 0 and 2
    CHECK(y(2, 0) == doctest::Approx(2 * 4 + 3 * 2 + 0.5));
}

TEST_CASE("graph_sage: permuting node ids permutes the embeddings") {
    std::mt19937_64 rng(5);
    const std::size_t n = 40;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::uniform_int_distribution<std::uint32_t> node(0, n - 1);
    for (int i = 0; i < 90; ++i) edges.emplace_back(node(rng), node(rng));
    std::vector<std::uint32_t> perm(n);  // new id of old node i
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pedges;
    for (auto [a, b] : edges) pedges.emplace_back(perm[a], perm[b]);
    const auto adj = nn::adjacency::from_edges(n, edges), padj = nn::adjacency::from_edges(n, pedges);
    const mat x = random_matrix(n, 6, rng);
    mat px(n, 6);
    for (std::size_t i = 0; i < n; ++i) px.row(perm[i]) = x.row(i);
    for (auto agg : {nn::aggregator::mean, nn::aggregator::max_pool}) {
        std::mt19937_64 init(9);
        nn::graph_sage<double> l1(6, 8, agg, init), l2(8, 8, agg, init);
        const mat y = l2.forward(l1.forward(x, adj), adj);
        const mat py = l2.forward(l1.forward(px, padj), padj);
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, (py.row(perm[i]) - y.row(i)).cwiseAbs().maxCoeff());
        CHECK(worst < 1e-12);
        CHECK(y.cwiseAbs().maxCoeff() > 0.1);  // not trivially zero
    }
}

TEST_CASE("adjacency: neighbour sampling keeps at most k real neighbours") {
    std::mt19937_64 rng(6);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> star;
    for (std::uint32_t i = 1; i < 20; ++i) star.emplace_back(0, i);
    const auto adj = nn::adjacency::from_edges(20, star);
    CHECK(adj.degree(0) == 19);
    const auto s = adj.sample(5, rng);
    CHECK(s.degree(0) == 5);
    CHECK(s.degree(3) == 1);
    for (auto i = s.offsets[0]; i < s.offsets[1]; ++i) CHECK((s.indices[i] >= 1 && s.indices[i] < 20));
    CHECK_THROWS_AS(nn::adjacency::from_edges(3, {{0, 3}}), goopt::error);
}

TEST_CASE("segment_attention: backward matches finite differences (memory gradient on, 3 segments)") {
    std::mt19937_64 rng(7);
    nn::segment_attention<double> att({.dim = 6, .heads = 2, .segment = 3, .memory_gradient = true}, rng);
    CHECK(check_layer(att, 8, 6, 6, rng) < 1e-6);  // segments of 3, 3 and 2 rows
}

TEST_CASE("segment_attention: backward matches finite differences at a head width of 16") {
    // d_h = 16: the head products' vector tiles (8 doubles), 8-row tiles and leftover rows and columns
    std::mt19937_64 rng(9);
    nn::segment_attention<double> att({.dim = 32, .heads = 2, .segment = 10, .memory_gradient = true}, rng);
    CHECK(check_layer(att, 25, 32, 32, rng) < 1e-6);  // segments of 10, 10 and 5 rows
}

TEST_CASE("segment_attention: the memory's gradient is stopped, the rest is exact") {
    std::mt19937_64 rng(8);
    nn::segment_attention<double> att({.dim = 4, .heads = 2, .segment = 3}, rng);
    mat x = random_matrix(6, 4, rng);
    mat r = random_matrix(6, 4, rng);
    r.topRows(3).setZero();  // the loss looks only at segment 2, which attends to segment 1's memory
    nn::parameter_list<double> ps;
    att.collect(ps);
    nn::zero_grad(ps);
    att.forward(x);
    const mat stopped = att.backward(r);
    CHECK(stopped.topRows(3).cwiseAbs().maxCoeff() == 0.0);  // no gradient reaches segment 1
    att.set_memory_gradient(true);
    nn::zero_grad(ps);
    att.forward(x);
    const mat full = att.backward(r);
    CHECK(full.topRows(3).cwiseAbs().maxCoeff() > 1e-3);  // ... though the output depends on it
    CHECK((full.bottomRows(3) - stopped.bottomRows(3)).cwiseAbs().maxCoeff() < 1e-12);
    // one segment: output rows do not depend on later segments at all (recurrence looks back only)
    mat x2 = x;
    x2.row(5) *= 3.0;
    const mat y1 = att.forward(x), y2 = att.forward(x2);
    CHECK((y1.topRows(3) - y2.topRows(3)).cwiseAbs().maxCoeff() < 1e-14);
    CHECK((y1.row(4) - y2.row(4)).cwiseAbs().maxCoeff() > 1e-6);
}

TEST_CASE("feature_modulation and heads: backward matches finite differences") {
    std::mt19937_64 rng(10);
    nn::feature_modulation<double> mod(5, rng);
    nn::parameter_list<double> mp;
    mod.collect(mp);
    mp[0]->value = random_matrix(5, 5, rng) * 0.5;  // away from the identity start
    mp[1]->value = random_matrix(1, 5, rng);
    CHECK(check_layer(mod, 7, 5, 5, rng) < 1e-6);
    nn::categorical_head<double> head(5, 3, rng);
    CHECK(check_layer(head, 4, 5, 3, rng) < 1e-6);

    nn::value_head<double> value(5, rng);
    nn::parameter_list<double> vp;
    value.collect(vp);
    mat x = random_matrix(6, 5, rng);
    nn::zero_grad(vp);
    value.forward(x);
    const mat dx = value.backward(1.0);
    auto loss = [&] { return static_cast<double>(value.forward(x)); };
    CHECK(nn::gradient_error(x, dx, loss) < 1e-6);
    const mat gw = vp[0]->grad;
    CHECK(nn::gradient_error(vp[0]->value, gw, loss) < 1e-6);

    // cross-entropy: value by hand and gradient by finite differences
    mat logits(2, 3);
    logits << 0, 0, 0, 1, 2, 3;
    std::vector<int> labels{1, 2};
    mat g;
    const double l = nn::cross_entropy(logits, std::span<const int>(labels), g);
    const double expect = (std::log(3.0) + (std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0)) / 2;
    CHECK(l == doctest::Approx(expect));
    mat scratch;
    CHECK(nn::gradient_error(logits, g,
                             [&] { return nn::cross_entropy(logits, std::span<const int>(labels), scratch); }) < 1e-6);
    labels[0] = 3;
    CHECK_THROWS_AS(nn::cross_entropy(logits, std::span<const int>(labels), scratch), goopt::error);
}

TEST_CASE("lstm: backpropagation through time matches finite differences (every input and parameter)") {
    std::mt19937_64 rng(12);
    const std::size_t in = 3, hidden = 4, batch = 2, steps = 5;
    nn::lstm<double> cell(in, hidden, rng);
    nn::parameter_list<double> ps;
    cell.collect(ps);
    ps[1]->value = random_matrix(1, 4 * hidden, rng) * 0.5;  // every gate away from its start
    // the inputs as one matrix (steps x batch rows) so that gradient_error perturbs them all
    mat xs = random_matrix(steps * batch, in, rng);
    const mat r = random_matrix(steps * batch, hidden, rng);
    auto run = [&] {
        cell.start(batch);
        double l = 0;
        for (std::size_t t = 0; t < steps; ++t) {
            const auto rows = static_cast<Eigen::Index>(t * batch);
            const mat x = xs.middleRows(rows, batch);
            l += (cell.step(x).array() * r.middleRows(rows, batch).array()).sum();
        }
        return l;
    };
    nn::zero_grad(ps);
    run();
    std::vector<mat> dh;
    for (std::size_t t = 0; t < steps; ++t) dh.push_back(r.middleRows(static_cast<Eigen::Index>(t * batch), batch));
    const auto dx = cell.backward(dh);
    REQUIRE(dx.size() == steps);
    mat dxs(steps * batch, in);
    for (std::size_t t = 0; t < steps; ++t) dxs.middleRows(static_cast<Eigen::Index>(t * batch), batch) = dx[t];
    CHECK(nn::gradient_error(xs, dxs, run) < 1e-6);
    for (auto* p : ps) {
        const mat g = p->grad;
        INFO(p->name);
        CHECK(nn::gradient_error(p->value, g, run) < 1e-6);
    }
    // a wrongly shaped input or gradient list is refused
    cell.start(batch);
    CHECK_THROWS_AS(cell.step(random_matrix(batch + 1, in, rng)), goopt::error);
    CHECK_THROWS_AS(cell.backward(dh), goopt::error);
}
