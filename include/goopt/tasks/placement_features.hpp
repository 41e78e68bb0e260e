#pragma once
/// @file
/// @brief The features a device-count-free placement head reads (nn::pair_head): per device and per
/// (op, device) pair, each a ratio within the cluster or the graph, so that 2, 4 or 8 devices and a
/// user's own device types give values of the same scale (GiPH, MLSys'23; WeCAN, 2025).

#include <goopt/cost/concepts.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/nn/pair_head.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace goopt::tasks {

/// @brief `g`'s node features plus, for the devices of `s`'s cluster:
/// - device q (nn::num_device_features): log of its float32 peak FLOP/s, memory bandwidth and memory
///   capacity over the cluster's mean (0 for a cluster of equal devices); log1p of the graph's bytes
///   (every tensor once) over the cluster's devices, per byte of q's capacity (memory pressure);
///   log1p of the mean time to send the graph's mean tensor from q to another device, in mean op
///   times (communication against computation); the share of the other devices q reaches.
/// - pair (o, q) (nn::num_pair_features): log of o's time on q over its time on its fastest device;
///   log1p of o's time on q in mean op times; log1p of o's output bytes over q's capacity, times
///   the op count (1: a graph of such ops fills q); 1 where q is o's fastest device.
/// Op times are the simulator's (its cost model's); the mean op time is that of the computing ops
/// on their fastest devices.
template <device::DeviceModel D, cost::CostModel<D> Cost>
nn::placement_features<float> placement_features(const sim::simulator<D, Cost>& s) {
    const graph::computation_graph& g = s.graph();
    const device::cluster<D>& c = s.cluster();
    const std::size_t n = g.num_ops(), k = c.num_devices();
    nn::placement_features<float> f;
    static_cast<nn::graph_features<float>&>(f) = nn::node_features<float>(g);
    auto ratio = [](double x, double mean) { return x > 0 && mean > 0 && std::isfinite(x) ? std::log(x / mean) : 0.0; };
    double flops = 0, bandwidth = 0, capacity = 0;
    std::size_t finite_capacity = 0;
    for (const D& d : c.devices()) {
        flops += d.peak_flops(ops::dtype::f32) / static_cast<double>(k);
        bandwidth += d.mem_bandwidth() / static_cast<double>(k);
        if (std::isfinite(static_cast<double>(d.mem_capacity()))) {
            capacity += d.mem_capacity();
            ++finite_capacity;
        }
    }
    if (finite_capacity) capacity /= static_cast<double>(finite_capacity);
    double graph_bytes = 0, tensor_bytes = 0;
    for (graph::tensor_id t = 0; t < g.num_tensors(); ++t) graph_bytes += static_cast<double>(g.type_of(t).bytes());
    if (g.num_tensors()) tensor_bytes = graph_bytes / static_cast<double>(g.num_tensors());
    double unit = 0;  // mean fastest op time
    std::size_t computing = 0;
    std::vector<double> fastest(n, 0);
    for (graph::op_id o = 0; o < n; ++o) {
        double t = std::numeric_limits<double>::infinity();
        for (sim::device_id q = 0; q < k; ++q) t = std::min(t, s.op_time(o, q));
        fastest[o] = t;
        if (g.get_op(o).spec().has(ops::source)) continue;
        unit += t;
        ++computing;
    }
    unit = std::max(computing ? unit / static_cast<double>(computing) : 0.0, 1e-12);

    f.devices = nn::matrix<float>::Zero(static_cast<Eigen::Index>(k), nn::num_device_features);
    for (sim::device_id q = 0; q < k; ++q) {
        const D& d = c.device(q);
        const double cap = d.mem_capacity();
        double send = 0;
        std::size_t reached = 0;
        for (sim::device_id r = 0; r < k; ++r) {
            if (r == q || c.route(q, r) == device::no_link) continue;
            send += c.get_link(c.route(q, r)).transfer_time(tensor_bytes);
            ++reached;
        }
        const double row[nn::num_device_features] = {
            ratio(d.peak_flops(ops::dtype::f32), flops),
            ratio(d.mem_bandwidth(), bandwidth),
            ratio(cap, capacity),
            std::isfinite(cap) && cap > 0 ? std::log1p(graph_bytes / static_cast<double>(k) / cap) : 0.0,
            reached ? std::log1p(send / static_cast<double>(reached) / unit) : 0.0,
            k > 1 ? static_cast<double>(reached) / static_cast<double>(k - 1) : 1.0};
        for (std::size_t j = 0; j < nn::num_device_features; ++j)
            f.devices(q, static_cast<Eigen::Index>(j)) = static_cast<float>(row[j]);
    }
    f.pairs = nn::matrix<float>::Zero(static_cast<Eigen::Index>(n * k), nn::num_pair_features);
    for (graph::op_id o = 0; o < n; ++o) {
        double out = 0;
        for (graph::tensor_id t : g.get_op(o).outputs) out += static_cast<double>(g.type_of(t).bytes());
        for (sim::device_id q = 0; q < k; ++q) {
            const double t = s.op_time(o, q), cap = c.device(q).mem_capacity();
            const double row[nn::num_pair_features] = {
                fastest[o] > 0 && std::isfinite(t) ? std::log(t / fastest[o]) : 0.0,
                std::isfinite(t) ? std::log1p(t / unit) : 0.0,
                std::isfinite(cap) && cap > 0 ? std::log1p(out * static_cast<double>(n) / cap) : 0.0,
                t <= fastest[o] ? 1.0 : 0.0};
            for (std::size_t j = 0; j < nn::num_pair_features; ++j)
                f.pairs(static_cast<Eigen::Index>(o * k + q), static_cast<Eigen::Index>(j)) =
                    static_cast<float>(row[j]);
        }
    }
    return f;
}

}  // namespace goopt::tasks
