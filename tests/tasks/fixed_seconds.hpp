#pragma once
// A device and cost model for the scheduling tests (tests/tasks/ and tests/sim/'s schedule bound):
// each op takes the seconds its test gives it, so a schedule's step can be worked out by hand (one
// definition: a module's test files share one translation unit).
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/dtype.hpp>

#include <span>
#include <vector>

namespace goopt::test {

/// A device with nothing but a memory capacity: op times come from fixed_seconds_cost.
struct fixed_seconds_device {
    double peak_flops(ops::dtype) const { return 1e12; }
    double mem_bandwidth() const { return 1e12; }
    double mem_capacity() const { return 1e12; }
    double launch_overhead() const { return 0; }
};

/// Fixed seconds per op id; a fused group takes the sum of its members'.
struct fixed_seconds_cost {
    std::vector<double> seconds;
    template <class D> double op_time(const graph::computation_graph&, graph::op_id o, const D&) const {
        return seconds[o];
    }
    template <class D>
    double group_time(const graph::computation_graph&, std::span<const graph::op_id> ops, const D&) const {
        double s = 0;
        for (graph::op_id o : ops) s += seconds[o];
        return s;
    }
};

}  // namespace goopt::test
