// tasks::placement_features: the columns a pair head reads, by hand on a small graph; why a cluster of
// equal devices needs a reference placement (without one the pair head's logits are the same on every
// device, so they cannot move a decision); the reference a placement task takes by default; and a
// pair head that learns to reproduce a placement only through it.
#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/sim.hpp>
#include <goopt/tasks.hpp>

#include <doctest/doctest.h>

#include "k80_and_v100.hpp"

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {

/// x -> a -> b, a -> c, b + c -> d: ops x (input), w (weight), a, b, c, d.
graph::computation_graph diamond() {
    graph::computation_graph g("diamond");
    const auto x = g.input("x", {64, 64});
    const auto a = g.add1(op_kind::matmul, {x, g.weight("w", {64, 64})});
    const auto b = g.add1(op_kind::relu, {a});
    const auto c = g.add1(op_kind::tanh, {a});
    g.mark_output(g.add1(op_kind::ewadd, {b, c}));
    return g;
}

/// The rows of `m` for op `o` on `k` devices are all equal.
bool same_on_every_device(const nn::matrix<float>& pairs, graph::op_id o, std::size_t k) {
    for (std::size_t q = 1; q < k; ++q)
        if (pairs.row(static_cast<Eigen::Index>(o * k + q)) != pairs.row(static_cast<Eigen::Index>(o * k)))
            return false;
    return true;
}

}  // namespace

TEST_CASE("placement_features: the reference's columns by hand; none without a reference") {
    const auto g = diamond();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const std::size_t n = g.num_ops(), k = 2;
    REQUIRE(n == 6);  // x, w, a (matmul), b (relu), c (tanh), d (ewadd)
    const graph::op_id a = 2, b = 3, c = 4, d = 5;

    const auto plain = tasks::placement_features(s);
    REQUIRE(plain.devices.cols() == static_cast<Eigen::Index>(nn::num_device_features));
    REQUIRE(plain.pairs.cols() == static_cast<Eigen::Index>(nn::num_pair_features));
    // equal devices and no reference: nothing tells the devices apart
    CHECK(plain.devices.row(0) == plain.devices.row(1));
    for (graph::op_id o = 0; o < n; ++o) CHECK(same_on_every_device(plain.pairs, o, k));
    CHECK(plain.pairs.rightCols(3).isZero());
    CHECK(plain.devices.rightCols(1).isZero());

    // x, w, a, b on device 0; c, d on device 1
    const sim::placement ref{0, 0, 0, 0, 1, 1};
    const auto f = tasks::placement_features(s, ref);
    CHECK(f.pairs.leftCols(4) == plain.pairs.leftCols(4));  // the other columns do not change
    CHECK(f.devices.leftCols(6) == plain.devices.leftCols(6));
    auto at = [&](graph::op_id o, std::size_t q, Eigen::Index j) {
        return static_cast<double>(f.pairs(static_cast<Eigen::Index>(o * k + q), j));
    };
    for (graph::op_id o = 0; o < n; ++o)
        for (std::size_t q = 0; q < k; ++q) CHECK(at(o, q, 4) == (ref[o] == q ? 1.0 : 0.0));
    // a reads x and w, both on device 0; its consumers b (device 0) and c (device 1)
    CHECK(at(a, 0, 5) == 1.0);
    CHECK(at(a, 1, 5) == 0.0);
    CHECK(at(a, 0, 6) == doctest::Approx(0.5));
    CHECK(at(a, 1, 6) == doctest::Approx(0.5));
    // d reads b (device 0) and c (device 1), tensors of one size; it has no consumer
    CHECK(at(d, 0, 5) == doctest::Approx(0.5));
    CHECK(at(d, 1, 6) == 0.0);
    CHECK(at(c, 1, 6) == 1.0);
    // compute per device over the mean: device 0 runs a and b, device 1 runs c and d
    const double load0 = s.op_time(a, 0) + s.op_time(b, 0), load1 = s.op_time(c, 1) + s.op_time(d, 1);
    const double mean = (load0 + load1) / 2;
    CHECK(static_cast<double>(f.devices(0, 6)) == doctest::Approx(load0 / mean).epsilon(1e-6));
    CHECK(static_cast<double>(f.devices(1, 6)) == doctest::Approx(load1 / mean).epsilon(1e-6));

    // equivariant: the reference with the devices renamed gives the rows renamed
    const sim::placement swapped{1, 1, 1, 1, 0, 0};
    const auto fs = tasks::placement_features(s, swapped);
    CHECK(fs.devices.row(0) == f.devices.row(1));
    CHECK(fs.devices.row(1) == f.devices.row(0));
    for (graph::op_id o = 0; o < n; ++o)
        for (std::size_t q = 0; q < k; ++q)
            CHECK(fs.pairs.row(static_cast<Eigen::Index>(o * k + q)) ==
                  f.pairs.row(static_cast<Eigen::Index>(o * k + (1 - q))));

    // a reference of another length or naming no device is refused
    CHECK_THROWS_WITH_AS(tasks::placement_features(s, sim::placement{0, 0}), doctest::Contains("one per op (6)"),
                         error);
    CHECK_THROWS_WITH_AS(tasks::placement_features(s, sim::placement{0, 0, 0, 0, 2, 0}),
                         doctest::Contains("on device 2"), error);
}

TEST_CASE("a pair head on equal devices: the same logit on every device without a reference, not with one") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    std::mt19937_64 rng(7);
    nn::policy_config pc{.hidden = 16,
                         .sage_layers = 1,
                         .shared_attention_layers = 1,
                         .heads = 2,
                         .segment = 16,
                         .head = nn::first_head::pair};
    pc.task_choices = {cl.num_devices()};
    nn::go_policy<float> net(pc, rng);
    auto spread = [&](const nn::placement_features<float>& f) {  // the largest gap between an op's devices
        const auto logits = net.evaluate(f, {}).logits[0];
        return (logits.rowwise().maxCoeff() - logits.rowwise().minCoeff()).maxCoeff();
    };
    CHECK(spread(tasks::placement_features(s)) == 0.0f);
    CHECK(spread(tasks::placement_features(s, baselines::m_etf(s).placement)) > 1e-3f);
    CHECK_FALSE(tasks::tells_devices_apart(tasks::placement_features(s)));
    CHECK(tasks::tells_devices_apart(tasks::placement_features(s, baselines::m_etf(s).placement)));
    // devices of different kinds tell themselves apart without a reference
    const auto mixed = test::k80_and_v100();
    CHECK(tasks::tells_devices_apart(tasks::placement_features(sim::simulator(g, mixed))));
}

TEST_CASE("placement_task's reference: the explicit one, else the anchor, else the guided decoder's greedy plan") {
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    std::mt19937_64 rng(1);
    const tasks::placement_task_config guided{.schedule = tasks::ready_order::critical_path,
                                              .decoder = tasks::placement_decoder::guided};
    const auto metf = baselines::m_etf(s).placement;
    const auto heft = baselines::heft(s).placement;
    REQUIRE(metf != heft);
    auto features_of = [&](const tasks::placement_task_config& c) {
        tasks::placement_task task(g, cl, cost::roofline_model{}, c);
        return task.observe(rng);
    };
    auto same = [](const nn::placement_features<float>& x, const nn::placement_features<float>& y) {
        return x.devices == y.devices && x.pairs == y.pairs;
    };
    CHECK(same(features_of(guided), tasks::placement_features(s, metf)));  // zero logits, greedy: m-ETF
    auto anchored = guided;
    anchored.anchor = heft;
    CHECK(same(features_of(anchored), tasks::placement_features(s, heft)));
    auto given = anchored;
    given.feature_reference = metf;
    CHECK(same(features_of(given), tasks::placement_features(s, metf)));
    // the independent decoder takes only a given one
    CHECK(same(features_of({}), tasks::placement_features(s)));
    CHECK(same(features_of({.feature_reference = heft}), tasks::placement_features(s, heft)));
    CHECK_THROWS_WITH_AS(features_of({.feature_reference = sim::placement{0, 1}}), doctest::Contains("entries"), error);
}

TEST_CASE("a pair head learns to reproduce a placement on equal devices only with a reference") {
    // The warm start imitates HEFT's placement of wavenet_2x18 on 4 equal devices with the
    // independent decoder. Without a reference every device has the same logit, so the mode's
    // devices are ties and the agreement stays at the largest share HEFT gives one device; with HEFT's
    // placement as the reference the policy reproduces it. (An equivariant policy reproduces a
    // placement only relative to its reference: another heuristic's device numbers are an arbitrary
    // renaming of HEFT's, so with m-ETF's as the reference the agreement stays at 0.43 here.)
    const auto g = models::find_workload("wavenet_2x18").build();
    const auto cl = device::parse_cluster("4xV100:nvlink");
    sim::simulator s(g, cl);
    const auto heft = baselines::heft(s).placement;
    auto config = [&](sim::placement reference) {
        tasks::placement_config c{
            .ppo = {.updates = 0, .samples_per_update = 8, .minibatch = 8, .epochs = 1, .learning_rate = 3e-3},
            .policy = {.hidden = 32,
                       .sage_layers = 1,
                       .shared_attention_layers = 1,
                       .heads = 2,
                       .segment = 32,
                       .head = nn::first_head::pair},
            .task = {.feature_reference = std::move(reference)},
            .progress = {.status = rl::status_mode::never}};
        c.warm_start = heft;
        c.ppo.imitation_steps = 200;
        c.ppo.imitation_learning_rate = 1e-2;
        return c;
    };
    std::mt19937_64 r1(3), r2(3);
    // train_placement refuses the pair head without a reference; the trainer underneath shows why
    CHECK_THROWS_WITH_AS(tasks::train_placement(g, cl, cost::roofline_model{}, config({}), r1),
                         doctest::Contains("cannot tell apart"), error);
    // and so does pre-training, naming the pair
    auto pre = config({});
    pre.warm_start.clear();
    pre.ppo.imitation_steps = 0;
    pre.checkpoint = std::filesystem::temp_directory_path() / "goopt_placement_features_never_written.ckpt";
    std::filesystem::remove(pre.checkpoint);
    const std::vector<graph::computation_graph> graphs{g};
    CHECK_THROWS_WITH_AS(tasks::pretrain_placement_policy(std::span<const graph::computation_graph>(graphs),
                                                          std::span<const device::cluster<device::device_spec>>(&cl, 1),
                                                          cost::roofline_model{}, pre, {}, r1),
                         doctest::Contains("graph 'wavenet_2x18.train' on 4xV100:nvlink"), error);
    CHECK_FALSE(std::filesystem::exists(pre.checkpoint));
    const auto plain = config({});
    tasks::placement_task bare(g, cl, cost::roofline_model{}, plain.task);
    CHECK_FALSE(tasks::tells_devices_apart(bare.features()));
    nn::policy_config pc = plain.policy;
    pc.task_choices = {cl.num_devices()};
    nn::go_policy<float> net(pc, r1);
    const auto without = tasks::train(bare, net, {.ppo = plain.ppo, .imitate = bare.actions_of(heft)}, r1);
    const auto with = tasks::train_placement(g, cl, cost::roofline_model{}, config(heft), r2);
    // the largest share of the deciding ops HEFT puts on one device bounds a tie's agreement
    tasks::placement_task task(g, cl);
    std::vector<std::size_t> on(cl.num_devices(), 0);
    std::size_t deciding = 0;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (task.active()[o]) {
            ++on[heft[o]];
            ++deciding;
        }
    const double tie_share =
        static_cast<double>(*std::max_element(on.begin(), on.end())) / static_cast<double>(deciding);
    CHECK(tie_share < 0.9);
    CHECK(without.imitation_agreement <= tie_share + 1e-9);
    CHECK(with.imitation_agreement >= 0.95);
}
