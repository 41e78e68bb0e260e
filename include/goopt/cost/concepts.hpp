#pragma once
/// @file
/// @brief What the simulator needs of a cost model.

#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <concepts>
#include <span>

namespace goopt::cost {

/// Time, in seconds, of one op, or of one fused group of ops run as one kernel, on one device.
/// Models: cost::roofline_model, cost::table_model, cost::measured_model.
/// @code
///   c.op_time(g, op, d)       -> double  // seconds, finite, >= 0
///   c.group_time(g, ops, d)   -> double  // ops: std::span<const graph::op_id>, one kernel
/// @endcode
template <class C, class D>
concept CostModel = device::DeviceModel<D> && requires(const C& c, const graph::computation_graph& g, graph::op_id o,
                                                       std::span<const graph::op_id> group, const D& d) {
    { c.op_time(g, o, d) } -> std::convertible_to<double>;
    { c.group_time(g, group, d) } -> std::convertible_to<double>;
};

}  // namespace goopt::cost
