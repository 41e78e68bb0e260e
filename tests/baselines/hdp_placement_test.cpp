// HDP's grouper and placer (baselines/hdp_placement.hpp): training reaches the optimum of a graph
// small enough to search exhaustively, the same seed gives the same result, bad settings are refused.
#include <goopt/baselines/hdp_placement.hpp>
#include <goopt/device.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

using namespace goopt;

namespace {

/// Three independent chains of two matmuls of different sizes (2048, 1792, 1536): on two devices
/// the largest chain alone balances the other two, which the exhaustive search confirms; the sizes
/// tell the grouper's features the chains apart (identical chains differ only in position).
graph::computation_graph hdp_branches() {
    graph::computation_graph g("hdp_branches");
    for (int b = 0; b < 3; ++b) {
        const std::int64_t size = 2048 - 256 * b;
        auto t = g.input(concat("x", b), {size, size});
        for (int k = 0; k < 2; ++k) {
            const auto w = g.weight(concat("w", b, k), {size, size});
            t = g.add1(ops::op_kind::matmul, {t, w});
            g.set_colocation(g.producer(w), b * 2 + k);
            g.set_colocation(g.producer(t), b * 2 + k);
        }
        g.mark_output(t);
    }
    return g;
}

/// The shortest step over every placement (colocated ops together), by exhaustive search.
template <class Sim> double hdp_exhaustive_best(Sim& s) {
    const auto& g = s.graph();
    const std::size_t n = g.num_ops(), nd = s.cluster().num_devices();
    // one decision per colocation group or free op
    std::vector<int> unit(n, -1);
    std::vector<int> group_unit(64, -1);
    int units = 0;
    for (graph::op_id o = 0; o < n; ++o) {
        const auto c = g.get_op(o).colocation;
        if (c < 0) unit[o] = units++;
        else {
            if (group_unit[static_cast<std::size_t>(c)] < 0) group_unit[static_cast<std::size_t>(c)] = units++;
            unit[o] = group_unit[static_cast<std::size_t>(c)];
        }
    }
    std::size_t total = 1;
    for (int u = 0; u < units; ++u) total *= nd;
    double best = 1e30;
    sim::placement p(n);
    std::vector<sim::device_id> dev(static_cast<std::size_t>(units));
    for (std::size_t code = 0; code < total; ++code) {
        std::size_t c = code;
        for (auto& d : dev) d = static_cast<sim::device_id>(c % nd), c /= nd;
        for (graph::op_id o = 0; o < n; ++o) p[o] = dev[static_cast<std::size_t>(unit[o])];
        const auto r = s.run(p, {.record_trace = false});
        if (!r.oom) best = std::min(best, r.step_time);
    }
    return best;
}

}  // namespace

TEST_CASE("hdp_placement: grouper and placer trained by REINFORCE reach the exhaustive optimum") {
    const auto g = hdp_branches();
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const double optimum = hdp_exhaustive_best(s);
    const double single = s.run(sim::placement(g.num_ops(), 0), {.record_trace = false}).step_time;
    REQUIRE(optimum < 0.9 * single);  // the problem is not solved by one device
    // the paper's optimizer settings (Adam at 0.1, C = 5, T = 10, k = 4), small widths
    const baselines::hdp_config c{.groups = 8, .grouper_hidden = 16, .placer_hidden = 16, .samples = 2000};
    // REINFORCE at that learning rate is unstable: of 30 seeds (session 26's machine), 17 runs end
    // with a policy within 10 % of the optimum and 13 between 1.17 and 1.49x it, and which seeds do
    // moves with the machine's rounding (seed 1 did on an earlier session's AVX2 machine, not on
    // this AVX-512 one). So the claims are over 24 seeds. With 12, a seed sweep (offsets of 1,000
    // to every seed, 40 of them) counted 2 to 10 runs within 10 % (5.2 on average, 2 at 2 offsets);
    // at that rate 1 or none of 24 is about 1 in 30,000.
    constexpr std::uint64_t seeds = 24;
    std::size_t near_optimum = 0;
    double first_sum = 0, last_sum = 0, best = single;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        CAPTURE(seed);
        std::mt19937_64 rng(seed);
        const auto r = baselines::hdp_placement(s, c, rng);
        CHECK(r.samples == 2000);
        CHECK(r.updates == 500);
        // the policy itself, not only its luckiest sample: its samples' mean over the first and last 50 updates
        REQUIRE(r.mean_step_time.size() == 500);
        double first = 0, last = 0;
        for (std::size_t u = 0; u < 50; ++u) first += r.mean_step_time[u] / 50, last += r.mean_step_time[450 + u] / 50;
        first_sum += first / optimum, last_sum += last / optimum;
        if (last < 1.1 * optimum) ++near_optimum;
        CHECK(r.best_sample >= 1);
        // the improvements end at the best sample and only ever go down
        REQUIRE(!r.improvements.empty());
        CHECK(r.improvements.back().first == r.best_sample);
        CHECK(r.improvements.back().second == r.result.step_time);
        for (std::size_t i = 1; i < r.improvements.size(); ++i) {
            CHECK(r.improvements[i].first > r.improvements[i - 1].first);
            CHECK(r.improvements[i].second < r.improvements[i - 1].second);
        }
        CHECK(r.best_sample <= r.samples);
        CHECK_NOTHROW(s.check_placement(r.placement));
        CHECK(r.result.step_time >= optimum * (1 - 1e-12));
        CHECK(s.run(r.placement, {.record_trace = false}).step_time == doctest::Approx(r.result.step_time));
        best = std::min(best, r.result.step_time);
    }
    MESSAGE(near_optimum, " of ", seeds, " policies end within 10 % of the optimum; the seeds' mean: first 50 updates ",
            first_sum / seeds, " x the optimum, last 50 ", last_sum / seeds);
    CHECK(near_optimum >= 2);
    CHECK(first_sum / seeds > 1.3);
    CHECK(last_sum < 0.9 * first_sum);
    CHECK(best == doctest::Approx(optimum).epsilon(1e-9));
}

TEST_CASE("hdp_placement: the same seed gives the same placement; bad settings are refused") {
    const auto g = hdp_branches();
    const auto cl = device::parse_cluster("3xV100:nvlink");
    sim::simulator s(g, cl);
    const baselines::hdp_config c{
        .groups = 4, .grouper_hidden = 8, .placer_hidden = 8, .samples = 41, .critical_path = true};
    std::mt19937_64 a(9), b(9);
    const auto ra = baselines::hdp_placement(s, c, a);
    const auto rb = baselines::hdp_placement(s, c, b);
    CHECK(ra.placement == rb.placement);
    CHECK(ra.result.step_time == rb.result.step_time);
    CHECK(ra.best_sample == rb.best_sample);
    CHECK(ra.samples == 41);  // the last update draws only what the budget has left
    CHECK(ra.updates == 11);
    auto bad = c;
    bad.samples = 0;
    CHECK_THROWS_AS(baselines::hdp_placement(s, bad, a), goopt::error);
    bad = c;
    bad.temperature = 0;
    CHECK_THROWS_AS(baselines::hdp_placement(s, bad, a), goopt::error);
}
