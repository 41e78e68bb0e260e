#include <goopt/baselines/metis_placement.hpp>
#include <goopt/device/cluster_spec.hpp>

#include <doctest/doctest.h>

using namespace goopt;
using ops::op_kind;

TEST_CASE("METIS splits two independent heavy chains onto two devices, cutting nothing") {
    graph::computation_graph g;
    for (int chain = 0; chain < 2; ++chain) {
        auto x = g.input(concat("x", chain), {512, 512});
        for (int i = 0; i < 6; ++i) {
            const auto w = g.weight(concat("w", chain, "_", i), {512, 512});
            x = g.add1(op_kind::matmul, {x, w});
            const std::int32_t grp = chain * 10 + i;
            g.set_colocation(g.producer(w), grp);
            g.set_colocation(g.producer(x), grp);
        }
    }
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cl);
    const auto p = baselines::metis_placement(s);
    CHECK_NOTHROW(s.check_placement(p));  // colocation kept, devices in range
    const auto r = s.run(p);
    CHECK(r.bytes_moved == 0);          // each chain whole on one device
    CHECK(p[0] != p[g.num_ops() - 1]);  // and the two chains on different devices
    // balanced: both devices equally busy, so the step is half the single-device step
    CHECK(r.busy_time[0] == doctest::Approx(r.busy_time[1]));
    CHECK(r.step_time == doctest::Approx(s.run(sim::placement(g.num_ops(), 0)).step_time / 2));
    CHECK(baselines::metis_placement(s) == p);  // deterministic
    const auto one = device::parse_cluster("1xV100:nvlink");
    sim::simulator s1(g, one);
    CHECK(baselines::metis_placement(s1) == sim::placement(g.num_ops(), 0));
}
