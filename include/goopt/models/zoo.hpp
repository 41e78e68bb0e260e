#pragma once
/// @file
/// @brief The registry of built-in benchmark graphs: TASO's inference workloads and GO's training
/// workloads at the papers' settings, so that every benchmark program measures the same graphs.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/models/amoebanet.hpp>
#include <goopt/models/bert.hpp>
#include <goopt/models/gnmt.hpp>
#include <goopt/models/inception_v3.hpp>
#include <goopt/models/nasnet_a.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/resnet.hpp>
#include <goopt/models/rnnlm.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/models/taso_graphs.hpp>
#include <goopt/models/training_graph.hpp>
#include <goopt/models/transformer_xl.hpp>
#include <goopt/models/vit.hpp>
#include <goopt/models/wavenet.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace goopt::models {

/// One benchmark graph: how to build it, and what it is.
struct zoo_entry {
    std::string name;    ///< e.g. "gnmt8": unique, used on command lines and in result files
    std::string family;  ///< model family ("gnmt", "resnet", ...): expert placements are per family
    bool training;       ///< a training step (forward + backward + Adam update) or inference only
    std::function<graph::computation_graph()> build;         ///< the benchmark graph
    std::function<graph::computation_graph()> forward = {};  ///< training entries: the forward graph
};

namespace detail {
template <class Build> zoo_entry training_entry(std::string name, std::string family, Build forward) {
    return {std::move(name), std::move(family), true, [forward] { return make_training_graph(forward()); }, forward};
}
}  // namespace detail

/// TASO's inference workloads (TASO, SOSP'19, §7): batch 1, the builders' default settings.
inline std::vector<zoo_entry> taso_workloads() {
    return {
        {"resnet50", "resnet", false, [] { return resnet50(); }},
        {"resnext50", "resnext", false, [] { return resnext50(); }},
        {"inception_v3", "inception", false, [] { return inception_v3(); }},
        {"squeezenet", "squeezenet", false, [] { return squeezenet(); }},
        {"nasnet_a", "nasnet", false, [] { return nasnet_a(); }},
        {"nasrnn", "nasrnn", false, [] { return nasrnn(); }},
        {"bert_base", "bert", false, [] { return bert(); }},
    };
}

/// TASO's inference workloads as TASO's model files build them (models/taso_graphs.hpp: relu fused
/// into the convs, no batchnorm, no biases), the graphs of Tensat's published gains; `nasrnn_taso`
/// is nasrnn() itself (already TASO's graph). TASO has no SqueezeNet file.
inline std::vector<zoo_entry> taso_file_workloads() {
    return {
        {"resnet50_taso", "resnet", false, [] { return resnet50_taso(); }},
        {"resnext50_taso", "resnext", false, [] { return resnext50_taso(); }},
        {"inception_v3_taso", "inception", false, [] { return inception_v3_taso(); }},
        {"inception_v3_tensat", "inception", false, [] { return inception_v3_tensat(); }},
        {"nasnet_a_taso", "nasnet", false, [] { return nasnet_a_taso(); }},
        {"nasrnn_taso", "nasrnn", false, [] { return nasrnn(); }},
        {"bert_taso", "bert", false, [] { return bert_taso(); }},
    };
}

/// GO's workloads (GO, NeurIPS'20, §4) as training-step graphs with Adam updates.
inline std::vector<zoo_entry> go_workloads() {
    using detail::training_entry;
    std::vector<zoo_entry> r;
    r.push_back(training_entry("inception_v3_train", "inception", [] { return inception_v3(); }));
    r.push_back(training_entry("amoebanet_train", "amoebanet", [] { return amoebanet(); }));
    for (int layers : {2, 4})
        r.push_back(
            training_entry("rnnlm" + std::to_string(layers), "rnnlm", [layers] { return rnnlm({.layers = layers}); }));
    for (int layers : {2, 4, 8})
        r.push_back(
            training_entry("gnmt" + std::to_string(layers), "gnmt", [layers] { return gnmt({.layers = layers}); }));
    for (int layers : {2, 4, 8})
        r.push_back(training_entry("transformer_xl" + std::to_string(layers), "transformer_xl",
                                   [layers] { return transformer_xl({.layers = layers}); }));
    r.push_back(training_entry("wavenet_2x18", "wavenet", [] { return wavenet({.stacks = 2, .layers = 18}); }));
    r.push_back(training_entry("wavenet_4x36", "wavenet", [] { return wavenet({.stacks = 4, .layers = 36}); }));
    return r;
}

/// Sequence length (source and target) of the zoo's `gnmt8_long`, the scale workload.
inline constexpr std::int64_t gnmt_long_steps = 110;

/// @brief The scale workload: GO's largest graph (~80,000 ops, NeurIPS'20 §4) is the 8-layer GNMT's
/// training step; ours has ~60,000 ops at 80 steps, so `gnmt8_long` unrolls gnmt_long_steps on each
/// side (ops grow linearly with the steps). Kept out of go_workloads(), whose every entry the
/// baseline and simulator benchmarks run by default.
inline std::vector<zoo_entry> scale_workloads() {
    return {detail::training_entry("gnmt8_long", "gnmt", [] {
        return gnmt({.source_steps = gnmt_long_steps, .target_steps = gnmt_long_steps, .layers = 8});
    })};
}

/// @brief Workloads from neither paper, kept out of taso_workloads() and go_workloads() so that
/// their benchmarks keep the papers' sets: ViT-B/16 (Dosovitskiy et al., ICLR'21) at batch 1, for
/// inference and as a training step (issue #25's client placed a ViT-B/16 training step).
inline std::vector<zoo_entry> extra_workloads() {
    return {
        {"vit_b16", "vit", false, [] { return vit(); }},
        detail::training_entry("vit_b16_train", "vit", [] { return vit(); }),
    };
}

/// Every built-in graph: TASO's workloads, the same as TASO's files build them, then GO's, then the
/// scale workload, then the extra ones.
inline std::vector<zoo_entry> zoo() {
    auto r = taso_workloads();
    for (auto& e : taso_file_workloads()) r.push_back(std::move(e));
    for (auto& e : go_workloads()) r.push_back(std::move(e));
    for (auto& e : scale_workloads()) r.push_back(std::move(e));
    for (auto& e : extra_workloads()) r.push_back(std::move(e));
    return r;
}

/// The entry with this name; goopt::error listing the known names otherwise.
inline zoo_entry find_workload(const std::string& name) {
    std::string known;
    for (auto& e : zoo()) {
        if (e.name == name) return e;
        known += concat(known.empty() ? "" : ", ", e.name);
    }
    throw error("models::find_workload", concat("unknown model '", name, "'"), concat("one of ", known));
}

}  // namespace goopt::models
