#pragma once
// Small random graphs for the learning tests of tests/tasks/ (one definition: the module's test files
// share one translation unit).
#include <goopt/graph/computation_graph.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace goopt::test {

/// A small random DAG of matmuls and elementwise ops on one square size (the same graph for a given
/// seed on every platform: std::mt19937_64 is specified bit for bit), for learning tests whose
/// optimum a brute force finds.
inline graph::computation_graph random_dag(std::uint64_t seed, int count) {
    std::mt19937_64 r(seed);
    graph::computation_graph g("random_dag");
    const std::int64_t sizes[] = {256, 512, 1024};
    const std::int64_t size = sizes[r() % 3];
    std::vector<graph::tensor_id> ts{g.input("x", {size, size})};
    for (int k = 0; k < count; ++k) {
        const auto a = ts[r() % ts.size()];
        if (r() % 2) ts.push_back(g.add1(ops::op_kind::matmul, {a, g.weight("w" + std::to_string(k), {size, size})}));
        else if (r() % 2) ts.push_back(g.add1(ops::op_kind::relu, {a}));
        else ts.push_back(g.add1(ops::op_kind::ewadd, {a, ts[r() % ts.size()]}));
    }
    std::vector<graph::tensor_id> ends;  // every tensor nothing reads is summed into the output
    for (auto t : ts)
        if (g.get_tensor(t).uses.empty()) ends.push_back(t);
    auto sum = ends[0];
    for (std::size_t i = 1; i < ends.size(); ++i) sum = g.add1(ops::op_kind::ewadd, {sum, ends[i]});
    g.mark_output(sum);
    return g;
}

/// The fastest step of `task` (a two-device tasks::placement_task on `g`) over every placement of
/// g's computing ops, sources with their first reader: the brute-force optimum a learning test
/// compares against (at most 14 computing ops).
template <class PlacementTask> double two_device_optimum(PlacementTask& task, const graph::computation_graph& g) {
    std::vector<graph::op_id> computing;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (!g.get_op(o).spec().has(ops::source)) computing.push_back(o);
    if (computing.size() > 14) throw std::invalid_argument("two_device_optimum: more than 14 computing ops");
    double optimum = 1e300;
    std::vector<int> acts(g.num_ops(), 0);
    for (std::size_t mask = 0; mask < (std::size_t{1} << computing.size()); ++mask) {
        for (std::size_t i = 0; i < computing.size(); ++i) acts[computing[i]] = static_cast<int>((mask >> i) & 1);
        for (graph::op_id o = 0; o < g.num_ops(); ++o)
            if (g.get_op(o).spec().has(ops::source)) acts[o] = acts[g.get_tensor(g.get_op(o).outputs[0]).uses[0].op];
        optimum = std::min(optimum, task.score(task.decide(acts), 0).step_time);
    }
    return optimum;
}

}  // namespace goopt::test
