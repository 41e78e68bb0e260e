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
#include <span>
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
///
/// With a `reference` placement (one device per op; e.g. the heuristic the decoder follows), also:
/// - device q: the reference's compute on q (its ops' times there) over the mean per device;
/// - pair (o, q): 1 where the reference puts o on q; the share of o's input bytes whose producer it
///   puts on q; the share of o's consumers it puts on q.
/// Why: on a cluster of equal devices every other column is the same for every device, so a pair
/// head would give each op one logit on all devices and could never prefer one (its softmax over
/// the devices cancels it). A reference tells the devices apart the way a placement does, and stays
/// equivariant: renaming the devices in the reference renames the rows. Without one these columns are 0.
/// @throws goopt::error (sim::simulator::check_placement's) for a reference that is not a placement of
/// `s`'s graph on its cluster.
template <device::DeviceModel D, cost::CostModel<D> Cost>
nn::placement_features<float> placement_features(const sim::simulator<D, Cost>& s,
                                                 std::span<const sim::device_id> reference = {}) {
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

    if (!reference.empty()) s.check_placement(reference);  // its length, its devices, its colocation groups
    std::vector<double> load(k, 0.0);                      // the reference's compute per device
    double mean_load = 0;
    for (graph::op_id o = 0; o < n && !reference.empty(); ++o) {
        if (g.get_op(o).spec().has(ops::source)) continue;
        const double t = s.op_time(o, reference[o]);
        if (!std::isfinite(t)) continue;
        load[reference[o]] += t;
        mean_load += t / static_cast<double>(k);
    }
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
            k > 1 ? static_cast<double>(reached) / static_cast<double>(k - 1) : 1.0,
            mean_load > 0 ? load[q] / mean_load : 0.0};
        for (std::size_t j = 0; j < nn::num_device_features; ++j)
            f.devices(q, static_cast<Eigen::Index>(j)) = static_cast<float>(row[j]);
    }
    f.pairs = nn::matrix<float>::Zero(static_cast<Eigen::Index>(n * k), nn::num_pair_features);
    std::vector<double> input_share(k), consumer_share(k);
    for (graph::op_id o = 0; o < n; ++o) {
        const auto& op = g.get_op(o);
        double out = 0;
        for (graph::tensor_id t : op.outputs) out += static_cast<double>(g.type_of(t).bytes());
        std::fill(input_share.begin(), input_share.end(), 0.0);
        std::fill(consumer_share.begin(), consumer_share.end(), 0.0);
        if (!reference.empty()) {
            double in_bytes = 0, uses = 0;
            for (graph::tensor_id t : op.inputs) {
                const graph::op_id from = g.get_tensor(t).producer;
                if (from == graph::no_op) continue;
                const double b = static_cast<double>(g.type_of(t).bytes());
                input_share[reference[from]] += b;
                in_bytes += b;
            }
            for (graph::tensor_id t : op.outputs)
                for (const graph::use& u : g.get_tensor(t).uses) {
                    consumer_share[reference[u.op]] += 1;
                    uses += 1;
                }
            for (sim::device_id q = 0; q < k; ++q) {
                if (in_bytes > 0) input_share[q] /= in_bytes;
                if (uses > 0) consumer_share[q] /= uses;
            }
        }
        for (sim::device_id q = 0; q < k; ++q) {
            const double t = s.op_time(o, q), cap = c.device(q).mem_capacity();
            const double row[nn::num_pair_features] = {
                fastest[o] > 0 && std::isfinite(t) ? std::log(t / fastest[o]) : 0.0,
                std::isfinite(t) ? std::log1p(t / unit) : 0.0,
                std::isfinite(cap) && cap > 0 ? std::log1p(out * static_cast<double>(n) / cap) : 0.0,
                t <= fastest[o] ? 1.0 : 0.0,
                !reference.empty() && reference[o] == q ? 1.0 : 0.0,
                input_share[q],
                consumer_share[q]};
            for (std::size_t j = 0; j < nn::num_pair_features; ++j)
                f.pairs(static_cast<Eigen::Index>(o * k + q), static_cast<Eigen::Index>(j)) =
                    static_cast<float>(row[j]);
        }
    }
    return f;
}

/// @brief Whether a pair head reading `f` can score the devices of some op differently: false where
/// there are at least two devices, every device's row is the same and, for every op, so is every
/// device's pair row (a cluster of equal devices and no reference placement). Then the head gives
/// each op one logit on all its devices, which a softmax over the devices cancels: nothing it learns
/// can move a decision.
template <std::floating_point S> bool tells_devices_apart(const nn::placement_features<S>& f) {
    const Eigen::Index k = f.devices.rows();
    if (k < 2) return true;
    for (Eigen::Index q = 1; q < k; ++q)
        if (f.devices.row(q) != f.devices.row(0)) return true;
    for (Eigen::Index first = 0; first < f.pairs.rows(); first += k)
        for (Eigen::Index q = 1; q < k; ++q)
            if (f.pairs.row(first + q) != f.pairs.row(first)) return true;
    return false;
}

}  // namespace goopt::tasks
