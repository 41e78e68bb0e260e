#pragma once
/// @file
/// @brief Human-expert placements from the layer each op belongs to, as the GO paper's HP baseline
/// (NeurIPS'20 §5; the GNMT convention is Wu et al. 2016, §3.3: one LSTM layer per GPU).

#include <goopt/baselines/colocation.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/sim/placement.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

namespace goopt::baselines {

/// How experts split a model family over devices.
enum class model_family : std::uint8_t {
    /// RNNLM, GNMT, NasRNN, Transformer(-XL), BERT, WaveNet: layer i on device i mod n (pipelining the
    /// time steps of stacked recurrent layers; round-robin over attention blocks).
    layered,
    /// ResNet, ResNeXt, Inception, SqueezeNet, NasNet, AmoebaNet: contiguous blocks of layers, as even
    /// as the layer count allows (block b of B on device b * n / B): a model-parallel pipeline.
    contiguous,
};

/// The convention for a model family name of the model zoo (models::zoo_entry::family): contiguous
/// blocks for convolutional families (resnet, resnext, inception, squeezenet, nasnet, amoebanet),
/// layer i mod n for the rest (rnnlm, gnmt, nasrnn, transformer_xl, bert, wavenet, and unknown names).
inline model_family family_convention(std::string_view family) {
    for (std::string_view cnn : {"resnet", "resnext", "inception", "squeezenet", "nasnet", "amoebanet"})
        if (family == cnn) return model_family::contiguous;
    return model_family::layered;
}

/// @brief The expert placement of `g` on `num_devices` devices.
/// Ops without a layer follow the producer of their first input; sources without a layer go to the
/// device of their first consumer (device 0 if none). Colocation groups then follow apply_colocation.
inline sim::placement expert_placement(const graph::computation_graph& g, std::size_t num_devices,
                                       model_family family) {
    if (num_devices == 0) throw error("expert_placement", "num_devices is 0", "at least 1");
    const std::size_t n = g.num_ops();
    std::int32_t max_layer = -1;
    for (const auto& o : g.ops()) max_layer = std::max(max_layer, o.layer);
    const auto layers = static_cast<std::size_t>(max_layer + 1);
    auto device_of_layer = [&](std::int32_t l) -> sim::device_id {
        const auto u = static_cast<std::size_t>(l);
        return static_cast<sim::device_id>(family == model_family::layered ? u % num_devices
                                                                           : u * num_devices / layers);
    };
    constexpr sim::device_id unset = ~sim::device_id{0};
    sim::placement p(n, unset);
    for (std::size_t v : graph::topological_order(g)) {
        const auto& o = g.get_op(static_cast<graph::op_id>(v));
        if (o.layer >= 0) p[v] = device_of_layer(o.layer);
        else if (!o.inputs.empty()) p[v] = p[g.producer(o.inputs[0])];
    }
    for (graph::op_id v = 0; v < n; ++v) {
        if (p[v] != unset) continue;
        p[v] = 0;
        for (graph::tensor_id t : g.get_op(v).outputs)
            if (!g.get_tensor(t).uses.empty()) {
                const auto d = p[g.get_tensor(t).uses[0].op];
                p[v] = d == unset ? 0 : d;
                break;
            }
    }
    apply_colocation(g, p);
    return p;
}

}  // namespace goopt::baselines
