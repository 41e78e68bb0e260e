// nn::pair_head (one score per (op, device) pair) and go_policy with it: backward against finite
// differences, any device count from one set of weights, and device order is only a relabelling.
#include "random_graph.hpp"

#include <goopt/nn.hpp>

#include <doctest/doctest.h>

#include <numeric>
#include <random>
#include <vector>

using namespace goopt;
using goopt_test::random_graph;
using mat = nn::matrix<double>;

namespace {

mat gaussian(Eigen::Index r, Eigen::Index c, std::mt19937_64& rng) {
    std::normal_distribution<double> n(0, 1);
    mat m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

nn::placement_features<double> with_devices(const nn::graph_features<double>& g, std::size_t k, std::mt19937_64& rng) {
    nn::placement_features<double> f;
    static_cast<nn::graph_features<double>&>(f) = g;
    f.devices = gaussian(static_cast<Eigen::Index>(k), nn::num_device_features, rng);
    f.pairs = gaussian(g.x.rows() * static_cast<Eigen::Index>(k), nn::num_pair_features, rng);
    return f;
}

}  // namespace

TEST_CASE("pair_head: backward matches finite differences (ops read in a permuted order)") {
    std::mt19937_64 rng(5);
    const Eigen::Index n = 5, k = 3, dim = 4;
    nn::pair_head<double> head(dim, 6, rng, "pair", "out");
    nn::parameter_list<double> ps;
    head.collect(ps);
    ps[3]->value = gaussian(1, 6, rng) * 0.5;  // a non-zero hidden bias: some units on, some off
    REQUIRE(ps[4]->name == "out.bilinear");
    CHECK(ps[4]->value.isZero());                              // zero at first: the MLP alone decides
    ps[4]->value = gaussian(dim, nn::num_pair_features, rng);  // non-zero, so that dL/dh goes through it too
    mat h = gaussian(n, dim, rng);
    const mat devices = gaussian(k, nn::num_device_features, rng), pairs = gaussian(n * k, nn::num_pair_features, rng);
    const std::vector<std::uint32_t> rows{3, 0, 4, 1, 2};
    const mat r = gaussian(n, k, rng);
    auto loss = [&] { return (head.forward(h, devices, pairs, rows).array() * r.array()).sum(); };
    nn::zero_grad(ps);
    head.forward(h, devices, pairs, rows);
    const mat dh = head.backward(r);
    CHECK(nn::gradient_error(h, dh, loss) < 1e-6);
    for (auto* p : ps) {
        const mat g = p->grad;
        INFO(p->name);
        CHECK(g.cwiseAbs().maxCoeff() > 0);
        CHECK(nn::gradient_error(p->value, g, loss) < 1e-6);
    }
}

TEST_CASE("pair_head: bad shapes are errors naming what is expected") {
    std::mt19937_64 rng(6);
    nn::pair_head<double> head(4, 3, rng, "pair", "out");
    const mat h = gaussian(2, 4, rng), devices = gaussian(2, nn::num_device_features, rng);
    const std::vector<std::uint32_t> rows{0, 1};
    CHECK_THROWS_WITH_AS(head.forward(h, devices, gaussian(3, nn::num_pair_features, rng), rows),
                         doctest::Contains("one row per (op, device)"), goopt::error);
    CHECK_THROWS_AS(head.forward(h, gaussian(2, 2, rng), gaussian(4, nn::num_pair_features, rng), rows), goopt::error);
}

TEST_CASE("go_policy with a pair head: whole-policy backward matches finite differences (double)") {
    std::mt19937_64 rng(12);
    const auto g = random_graph(9, rng);
    const auto f = with_devices(nn::node_features<double>(g), 3, rng);
    nn::go_policy<double> pol(
        {.hidden = 8, .heads = 2, .segment = 4, .memory_gradient = true, .head = nn::first_head::pair, .pair_width = 5},
        rng);
    CHECK(pol.any_device_count());
    auto ps = pol.parameters();
    for (auto* p : ps)
        if (p->name.rfind("modulation", 0) == 0) p->value = gaussian(p->value.rows(), p->value.cols(), rng) * 0.3;
    const std::vector<nn::matrix<double>> r{gaussian(9, 3, rng)};
    const double c = 0.4;
    auto loss = [&] {
        const auto out = pol.evaluate(f, {});
        return (out.logits[0].array() * r[0].array()).sum() + c * out.value;
    };
    nn::zero_grad(ps);
    CHECK(pol.evaluate(f, {}).logits[0].cols() == 3);
    pol.backward(r, c);
    for (auto* p : ps) {
        const mat grad = p->grad;
        INFO(p->name);
        CHECK(nn::gradient_error(p->value, grad, loss) < 1e-5);
    }
}

TEST_CASE("go_policy with a pair head: one set of weights for 2, 4 and 8 devices; device order is a relabelling") {
    std::mt19937_64 rng(13);
    const auto g = random_graph(20, rng);
    const auto base = nn::node_features<double>(g);
    nn::go_policy<double> pol({.hidden = 8, .heads = 2, .segment = 8, .head = nn::first_head::pair}, rng);
    for (std::size_t k : {2u, 4u, 8u}) {
        const auto f = with_devices(base, k, rng);
        const mat logits = pol.evaluate(f, {}).logits[0];
        CHECK(logits.rows() == 20);
        CHECK(static_cast<std::size_t>(logits.cols()) == k);
        // the devices in reverse order: the columns reverse, nothing else changes
        auto rev = f;
        for (std::size_t q = 0; q < k; ++q) {
            rev.devices.row(static_cast<Eigen::Index>(q)) = f.devices.row(static_cast<Eigen::Index>(k - 1 - q));
            for (Eigen::Index o = 0; o < 20; ++o)
                rev.pairs.row(o * static_cast<Eigen::Index>(k) + static_cast<Eigen::Index>(q)) =
                    f.pairs.row(o * static_cast<Eigen::Index>(k) + static_cast<Eigen::Index>(k - 1 - q));
        }
        const mat back = pol.evaluate(rev, {}).logits[0];
        CHECK((back.rowwise().reverse() - logits).cwiseAbs().maxCoeff() < 1e-12);
    }
    // graph features alone cannot feed a pair head
    CHECK_THROWS_WITH_AS(pol.evaluate(base, {}), doctest::Contains("placement_features"), goopt::error);
}
