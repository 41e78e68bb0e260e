#pragma once
/// @file
/// @brief The standard fusions: what an inference runtime does to a graph without any search
/// (cuDNN's conv-bias-activation, TensorRT's layer fusion, onnxruntime's Conv+BatchNorm folding and
/// Conv/Gemm + activation fusion): the batchnorm after a convolution folded into its kernel and
/// bias, an added bias (or residual) taken into the product's epilogue, and the activation after a
/// product fused into it. The baseline a substitution search's gain is measured against when the
/// question is what the search adds beyond these (docs/substitution.md).
///
/// Applied unconditionally, not by cost, as a runtime applies them: each is one of
/// subst::builtin_rules' families (activation_fusion, batchnorm_fold, addend_fusion), applied where
/// it matches until none does; each application is proven (or, for the ops the axioms do not
/// cover, checked numerically) at the matched shapes like every other rewrite.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/subst/rewriting/builtin_rules.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rewriting/soundness_cache.hpp>
#include <goopt/subst/rule.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace goopt::subst {
inline namespace rewriting {

/// The built-in families that are standard fusions (every other family off, a new one included).
inline constexpr builtin_options standard_fusion_families = [] {
    builtin_options o = builtin_options::none();
    o.activation_fusion = o.batchnorm_fold = o.addend_fusion = true;
    return o;
}();

/// What standard_fusions() did.
struct standard_fusions_stats {
    std::size_t applied = 0;         ///< fusions applied
    std::size_t refused = 0;         ///< matches left where a fusion is not sound (subst::rewrite_refused)
    std::vector<std::string> rules;  ///< the rule of each fusion applied, in order (to_string(rule))
};

/// @brief `g` after the standard fusions: batchnorm folded into the convolution before it, added
/// biases and activations fused into the product before them, wherever they match, until none does.
/// @param check_flops numeric evidence allowed for a fusion the axioms cannot decide (batchnorm,
/// sigmoid) when both sides' evaluation costs at most this many FLOPs (rewrite_space::check_flops).
/// @param stats when given, what was applied and refused.
inline graph::computation_graph standard_fusions(const graph::computation_graph& g, double check_flops = 2e7,
                                                 standard_fusions_stats* stats = nullptr);

// ---- implementation ----

inline graph::computation_graph standard_fusions(const graph::computation_graph& g, double check_flops,
                                                 standard_fusions_stats* stats) {
    soundness_cache cache;
    const rewrite_options opts{.cache = &cache, .soundness = {.numeric_fallback_flops = check_flops}};
    standard_fusions_stats s;
    graph::computation_graph current = g;
    // Every application removes a kernel from the step or moves an addend towards the sources, so
    // the loop ends; the bound only guards against a family that would undo another.
    const std::size_t most = 4 * g.num_ops() + 16;
    for (bool changed = true; changed && s.applied < most;) {
        changed = false;
        s.refused = 0;  // of the last pass: the matches no fusion could be applied at
        // the instances are made afresh after each application: the graph's ids change
        for (const auto& b : builtin_rules(current, standard_fusion_families)) {
            try {
                current = apply(current, b.rule, b.where, opts);
            } catch (const rewrite_refused&) {
                ++s.refused;
                continue;
            }
            ++s.applied;
            s.rules.push_back(to_string(b.rule));
            changed = true;
            break;
        }
    }
    if (stats) *stats = s;
    return current;
}

}  // namespace rewriting
}  // namespace goopt::subst
