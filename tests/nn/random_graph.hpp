#pragma once
// Random computation graphs for the policy network's tests (shared by tests/nn/*_test.cpp).

#include <goopt/graph/computation_graph.hpp>

#include <cstddef>
#include <random>
#include <vector>

namespace goopt_test {

/// A random graph of `n` ops over [1, 8] tensors: an input, then relu/tanh/sigmoid/ewadd on random
/// tensors among the latest six.
inline goopt::graph::computation_graph random_graph(std::size_t n, std::mt19937_64& rng) {
    using goopt::ops::op_kind;
    goopt::graph::computation_graph g("random");
    std::vector<goopt::graph::tensor_id> ts{g.input("x", goopt::ops::shape{1, 8})};
    const op_kind kinds[] = {op_kind::relu, op_kind::tanh, op_kind::sigmoid, op_kind::ewadd};
    std::uniform_int_distribution<int> kind(0, 3);
    while (g.num_ops() < n) {
        std::uniform_int_distribution<std::size_t> pick(ts.size() > 6 ? ts.size() - 6 : 0, ts.size() - 1);
        const op_kind k = kinds[kind(rng)];
        if (k == op_kind::ewadd) ts.push_back(g.add1(k, {ts[pick(rng)], ts[pick(rng)]}));
        else ts.push_back(g.add1(k, {ts[pick(rng)]}));
    }
    return g;
}

}  // namespace goopt_test
