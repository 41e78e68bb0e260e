#pragma once
// Random layered DAGs of small elementwise and matmul ops for property tests of the simulator and
// the baselines (shared by tests/sim and tests/baselines).

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/sim/placement.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace goopt_test {

/// `layers` layers of `width` ops; each op reads one or two tensors from earlier layers; every op
/// gets its layer; weights feed matmuls and share a colocation group with them.
inline goopt::graph::computation_graph random_dag(std::mt19937_64& rng, int layers, int width) {
    using goopt::ops::op_kind;
    goopt::graph::computation_graph g("random");
    std::vector<goopt::graph::tensor_id> pool;
    for (int i = 0; i < width; ++i) pool.push_back(g.input(goopt::concat("x", i), {16, 16}));
    std::int32_t coloc = 0;
    for (int l = 0; l < layers; ++l) {
        std::vector<goopt::graph::tensor_id> made;
        for (int i = 0; i < width; ++i) {
            auto pick = [&] { return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)]; };
            const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
            goopt::graph::tensor_id t;
            if (kind == 0) {
                t = g.add1(op_kind::relu, {pick()});
            } else if (kind == 1) {
                t = g.add1(op_kind::ewadd, {pick(), pick()});
            } else if (kind == 2) {
                t = g.add1(op_kind::sigmoid, {pick()});
            } else {
                // appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on the chain of +
                std::string name = "w";
                name += std::to_string(l);
                name += '_';
                name += std::to_string(i);
                const auto w = g.weight(name, {16, 16});
                t = g.add1(op_kind::matmul, {pick(), w});
                g.set_colocation(g.producer(w), coloc);
                g.set_colocation(g.producer(t), coloc);
                g.set_layer(g.producer(w), l);
                ++coloc;
            }
            g.set_layer(g.producer(t), l);
            made.push_back(t);
        }
        pool.insert(pool.end(), made.begin(), made.end());
    }
    g.mark_output(pool.back());
    return g;
}

/// A placement of `g` on `devices` devices that keeps colocation groups together, each op (or group)
/// on a random device.
inline goopt::sim::placement random_grouped_placement(const goopt::graph::computation_graph& g, std::size_t devices,
                                                      std::mt19937_64& rng) {
    goopt::sim::placement p(g.num_ops());
    std::unordered_map<std::int32_t, goopt::sim::device_id> group;
    for (goopt::graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto d = static_cast<goopt::sim::device_id>(rng() % devices);
        const auto grp = g.get_op(o).colocation;
        p[o] = grp < 0 ? d : group.emplace(grp, d).first->second;
    }
    return p;
}

}  // namespace goopt_test
