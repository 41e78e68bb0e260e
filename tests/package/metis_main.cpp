// Links goopt::metis from the installed package: METIS places two independent matmul chains on two
// devices, and the placement keeps each chain whole (no bytes cross devices).
#include <goopt/baselines/metis_placement.hpp>
#include <goopt/device/cluster_spec.hpp>

#include <iostream>
#include <string>

int main() try {
    using goopt::ops::op_kind;
    goopt::graph::computation_graph g;
    for (int chain = 0; chain < 2; ++chain) {
        auto x = g.input("x" + std::to_string(chain), {256, 256});
        for (int i = 0; i < 4; ++i) {
            const auto w = g.weight("w" + std::to_string(chain) + "_" + std::to_string(i), {256, 256});
            x = g.add1(op_kind::matmul, {x, w});
            g.set_colocation(g.producer(w), chain * 10 + i);
            g.set_colocation(g.producer(x), chain * 10 + i);
        }
    }
    const auto cluster = goopt::device::parse_cluster("2xV100:nvlink");
    goopt::sim::simulator s(g, cluster);
    const auto p = goopt::baselines::metis_placement(s);
    s.check_placement(p);
    const auto r = s.run(p);
    std::cout << "metis placement: " << r.bytes_moved << " bytes moved, step " << r.step_time << " s\n";
    return r.bytes_moved == 0 && p.front() != p.back() ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
}
