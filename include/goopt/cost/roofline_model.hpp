#pragma once
/// @file
/// @brief The roofline cost model (Williams, Waterman, Patterson, CACM 2009): an op is bound either by
/// arithmetic or by memory traffic, plus a fixed launch overhead.

#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>

#include <algorithm>
#include <span>

namespace goopt::cost {

/// time(op) = launch overhead + max(FLOPs / peak FLOP/s for the op's dtype, bytes accessed / bandwidth).
/// FLOPs and bytes come from the op table's formulas. Source ops (inputs, weights, constants) cost
/// nothing: they launch no kernel in a step. The op's dtype is that of its first output.
///
/// A fused group is one kernel: one launch, the members' arithmetic, and memory traffic without the
/// tensors that stay inside the group (each internal read is saved, and the write too when no op
/// outside the group and no graph output needs the tensor).
struct roofline_model {
    template <device::DeviceModel D>
    double op_time(const graph::computation_graph& g, graph::op_id o, const D& d) const {
        const graph::op& x = g.get_op(o);
        if (x.spec().has(ops::source)) return 0.0;
        return device::device_traits<D>::launch_overhead(d) +
               std::max(g.flops(o) / peak(g, o, d), g.bytes_accessed(o) / static_cast<double>(d.mem_bandwidth()));
    }

    template <device::DeviceModel D>
    double group_time(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d) const {
        if (group.size() == 1) return op_time(g, group[0], d);
        double compute = 0, bytes = 0;
        bool launches = false;
        for (graph::op_id o : group) {
            if (g.get_op(o).spec().has(ops::source)) continue;
            launches = true;
            compute += g.flops(o) / peak(g, o, d);
            bytes += g.bytes_accessed(o);
        }
        if (!launches) return 0.0;
        bytes -= internal_bytes(g, group);
        return device::device_traits<D>::launch_overhead(d) +
               std::max(compute, std::max(bytes, 0.0) / static_cast<double>(d.mem_bandwidth()));
    }

    /// Memory traffic a fused group saves: reads of tensors made inside the group by ops inside it, and
    /// writes of tensors nobody outside the group reads.
    static double internal_bytes(const graph::computation_graph& g, std::span<const graph::op_id> group) {
        auto inside = [&](graph::op_id o) { return std::find(group.begin(), group.end(), o) != group.end(); };
        double saved = 0;
        for (graph::op_id o : group) {
            if (g.get_op(o).spec().has(ops::source)) continue;
            for (graph::tensor_id t : g.get_op(o).outputs) {
                const auto& tt = g.get_tensor(t);
                const double b = static_cast<double>(tt.type.bytes());
                bool escapes = std::find(g.outputs().begin(), g.outputs().end(), t) != g.outputs().end();
                for (const graph::use& u : tt.uses) {
                    if (inside(u.op)) saved += b;
                    else escapes = true;
                }
                if (!escapes) saved += b;
            }
        }
        return saved;
    }

private:
    template <class D> static double peak(const graph::computation_graph& g, graph::op_id o, const D& d) {
        const graph::op& x = g.get_op(o);
        const ops::dtype t = x.outputs.empty() ? ops::dtype::f32 : g.type_of(x.outputs[0]).type;
        return static_cast<double>(d.peak_flops(t));
    }
};

}  // namespace goopt::cost
