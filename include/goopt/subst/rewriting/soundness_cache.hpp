#pragma once
/// @file
/// @brief The one decision of whether a rule may be rewritten at a match, and the one memo of it
/// that every search and apply() share: a rule is sound at a match when the axioms prove it at the
/// matched shapes (instantiate()); a rule made for the graph at hand (a built-in) may instead pass
/// on numeric evidence, its two sides agreeing on the float interpreter there.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/rewriting/instantiate.hpp>
#include <goopt/subst/rule.hpp>

#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

namespace goopt::subst {
inline namespace rewriting {

/// How a rule is decided at a match.
struct soundness_options {
    instantiation_limits limits{};  ///< bounds of solving and proving the rule at the match
    /// Where the axioms cannot decide (ops they do not cover, such as batchnorm, sigmoid or a filled
    /// constant), accept a rule whose sides, at the matched shapes and attributes as given, agree on
    /// the float interpreter (double, two random inputs), if that evaluation costs at most this
    /// many FLOPs. 0: proofs only. For rules made for the graph at hand (a search's built-in
    /// transformations); numeric agreement is evidence, not proof.
    double numeric_fallback_flops = 0;
    std::uint64_t seed = 0x5eed;  ///< inputs of the numeric evidence
};

/// @brief `r` at match `m` of `g` when it is sound there: proven (instantiate()), or, failing
/// that and where `o` allows, with numeric evidence; else why not.
inline std::variant<rule, std::string> decide_soundness(const graph::computation_graph& g, const rule& r,
                                                        const match& m, const soundness_options& o = {});

/// @brief A thread-safe memo of decide_soundness(), so that a search pays for a proof once per rule
/// and matched signature (variable types and source attributes), not once per match.
/// Keys are made by the cache from the graph and the match, or given by a caller that can make
/// them cheaper (eqsat's e-graph: attribute and class ids); a given key must hold everything the
/// decision depends on: the rule, the matched ops' attributes, the variables' shapes and types and
/// whether numeric evidence is allowed.
class soundness_cache {
public:
    using decision = std::variant<rule, std::string>;
    /// decide_soundness(g, r, m, o), remembered under the key of (r, m in g, o).
    const decision& decide(const graph::computation_graph& g, const rule& r, const match& m,
                           const soundness_options& o = {});
    /// decide_soundness(g, r, m, o), remembered under the caller's `key`.
    const decision& decide(std::string key, const graph::computation_graph& g, const rule& r, const match& m,
                           const soundness_options& o = {});
    /// The decision remembered under the caller's `key`, or nullptr.
    const decision* find(const std::string& key);
    /// Decisions made (the memo's misses).
    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return memo_.size();
    }
    /// Decisions looked up instead of made.
    std::size_t hits() const {
        std::lock_guard lock(mutex_);
        return hits_;
    }

private:
    mutable std::mutex mutex_;
    // node-based: a reference into it stays valid while others are added
    std::unordered_map<std::string, decision> memo_;
    std::size_t hits_ = 0;
};

// ---- implementation ----

}  // namespace rewriting

namespace detail {

/// `r` at the match's shapes and source attributes, its target as given, when its two sides agree
/// on the float interpreter there within o.numeric_fallback_flops.
inline std::optional<rule> numeric_fallback(const graph::computation_graph& g, const rule& r, const match& m,
                                            const soundness_options& o) {
    if (m.ops.size() != r.source.ops.size() || m.variables.size() != r.variables.size()) return std::nullopt;
    rule at = r;
    for (std::size_t i = 0; i < at.variables.size(); ++i) {
        if (m.variables[i] >= g.num_tensors()) return std::nullopt;
        at.variables[i].dims = g.type_of(m.variables[i]).dims;
    }
    for (std::size_t i = 0; i < at.source.ops.size(); ++i) {
        if (m.ops[i] >= g.num_ops()) return std::nullopt;
        at.source.ops[i].attrs = g.get_op(m.ops[i]).attrs;
    }
    try {
        const auto s = to_graph(at, at.source);
        const auto t = to_graph(at, at.target);
        double flops = 0;
        for (graph::op_id op = 0; op < s.num_ops(); ++op) flops += s.flops(op);
        for (graph::op_id op = 0; op < t.num_ops(); ++op) flops += t.flops(op);
        if (flops > o.numeric_fallback_flops) return std::nullopt;
        std::mt19937_64 rng(o.seed);
        for (int trial = 0; trial < 2; ++trial)
            if (float_mismatch(s, t, rng, 1e-9)) return std::nullopt;
    } catch (const error&) {
        return std::nullopt;
    }
    return at;
}

}  // namespace detail

inline namespace rewriting {

inline std::variant<rule, std::string> decide_soundness(const graph::computation_graph& g, const rule& r,
                                                        const match& m, const soundness_options& o) {
    auto inst = instantiate(g, r, m, o.limits);
    if (std::holds_alternative<std::string>(inst) && o.numeric_fallback_flops > 0)
        if (auto checked = detail::numeric_fallback(g, r, m, o)) inst = std::move(*checked);
    return inst;
}

inline const soundness_cache::decision& soundness_cache::decide(const graph::computation_graph& g, const rule& r,
                                                                const match& m, const soundness_options& o) {
    std::string key = to_string(r);
    key += '|';
    for (auto t : m.variables)
        if (t < g.num_tensors()) {
            const auto& type = g.type_of(t);
            key += concat(type.dims.to_string(), ':', static_cast<int>(type.type), ';');
        }
    key += '|';
    for (std::size_t i = 0; i < m.ops.size() && i < r.source.ops.size(); ++i)
        if (m.ops[i] < g.num_ops()) key += attributes_text(r.source.ops[i].kind, g.get_op(m.ops[i]).attrs) + ";";
    key += concat('|', o.numeric_fallback_flops);
    return decide(std::move(key), g, r, m, o);
}

inline const soundness_cache::decision* soundness_cache::find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = memo_.find(key);
    if (it == memo_.end()) return nullptr;
    ++hits_;
    return &it->second;
}

inline const soundness_cache::decision& soundness_cache::decide(std::string key, const graph::computation_graph& g,
                                                                const rule& r, const match& m,
                                                                const soundness_options& o) {
    if (const auto* known = find(key)) return *known;
    auto result = decide_soundness(g, r, m, o);  // outside the lock: proofs may run in parallel
    std::lock_guard lock(mutex_);
    return memo_.emplace(std::move(key), std::move(result)).first->second;
}

}  // namespace rewriting
}  // namespace goopt::subst
