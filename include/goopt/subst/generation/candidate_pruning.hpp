#pragma once
/// @file
/// @brief What the pruning of candidate rules works with (generate_rules.hpp, stages 3-6): renamings of
/// the variables, structural keys of terms, common subgraphs and supergraphs, the normal order of a
/// rule's terms. TASO (SOSP'19) §4.

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/generation/enumerate_graphs.hpp>
#include <goopt/subst/generation/prover.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/world.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>
namespace goopt::subst::detail {

/// Every renaming of the variables that keeps shapes: the product of the permutations within each
/// group of equally shaped variables.
inline std::vector<std::vector<std::uint16_t>> shape_preserving_renamings(const world& w) {
    const std::size_t n = w.variables.size();
    std::vector<std::vector<std::uint16_t>> groups;
    std::vector<bool> done(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        std::vector<std::uint16_t> g;
        for (std::size_t j = i; j < n; ++j)
            if (!done[j] && w.variables[j].dims == w.variables[i].dims) {
                g.push_back(static_cast<std::uint16_t>(j));
                done[j] = true;
            }
        groups.push_back(std::move(g));
    }
    std::vector<std::vector<std::uint16_t>> perms{std::vector<std::uint16_t>(n)};
    for (std::size_t i = 0; i < n; ++i) perms[0][i] = static_cast<std::uint16_t>(i);
    for (const auto& g : groups) {
        std::vector<std::vector<std::uint16_t>> next;
        for (const auto& base : perms) {
            auto images = g;
            do {
                auto p = base;
                for (std::size_t k = 0; k < g.size(); ++k) p[g[k]] = images[k];
                next.push_back(std::move(p));
            } while (std::next_permutation(images.begin(), images.end()));
        }
        perms = std::move(next);
    }
    return perms;
}

/// Structural key of every op of `p` with variable v named rename[v]; commutative inputs in key
/// order, so the key of a term does not depend on how its commutative ops list their inputs.
inline void op_keys(const world& w, const pattern& p, std::span<const std::uint16_t> rename,
                    std::vector<std::uint64_t>& keys) {
    keys.clear();
    auto value_key = [&](value_ref v) {
        return v.is_variable() ? variable_key(rename[v.index]) : output_key(keys[v.op], v.index);
    };
    for (const auto& o : p.ops) {
        std::uint64_t h = kind_key(o.kind, o.choice);
        boost::container::small_vector<std::uint64_t, 2> in;
        for (auto v : o.inputs) in.push_back(value_key(v));
        if (w.one_order_for_commutative && ops::spec(o.kind).has(ops::commutative)) std::sort(in.begin(), in.end());
        for (auto k : in) h = mix(h ^ k);
        keys.push_back(h);
    }
}

inline std::uint64_t structure_hash(const world& w, const pattern& p, std::span<const std::uint16_t> rename,
                                    std::vector<std::uint64_t>& keys) {
    op_keys(w, p, rename, keys);
    std::vector<std::uint64_t> outs;
    for (auto v : p.outputs) outs.push_back(output_key(keys[v.op], v.index));
    return combine_unordered(outs);
}

inline std::uint64_t unordered_pair_hash(std::uint64_t a, std::uint64_t b) {
    if (a > b) std::swap(a, b);
    return mix(a * 0x9e3779b97f4a7c15ULL + mix(b));
}
/// Output hashes of `p` at the fingerprint inputs, per op output.
inline std::vector<std::vector<std::uint64_t>> value_hashes(const world& w, const pattern& p,
                                                            std::span<const mod_tensor> vars) {
    std::vector<std::vector<std::uint64_t>> h;
    for (const auto& outs : evaluate_pattern(w, p, vars)) {
        h.emplace_back();
        for (const auto& t : outs) h.back().push_back(value_hash(t));
    }
    return h;
}

using value_hash_table = std::vector<std::vector<std::uint64_t>>;

/// Value hash of `v` in a graph whose op outputs hash to `h`.
inline std::uint64_t hash_of(const value_hash_table& h, std::span<const mod_tensor> vars, value_ref v) {
    return v.is_variable() ? value_hash(vars[v.index]) : h[v.op][v.index];
}

/// Disjoint sets of the graphs of one bucket: which are already known equal.
class union_find {
public:
    explicit union_find(std::size_t n) : parent_(n) {
        for (std::size_t i = 0; i < n; ++i) parent_[i] = static_cast<std::uint32_t>(i);
    }
    std::uint32_t find(std::uint32_t x) {
        while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
        return x;
    }
    void unite(std::uint32_t a, std::uint32_t b) {
        a = find(a);
        b = find(b);
        if (a != b) parent_[std::max(a, b)] = std::min(a, b);
    }

private:
    std::vector<std::uint32_t> parent_;
};

/// Whether two sorted key lists share a key (the two graphs share an op: common subgraph).
inline bool share_a_key(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
    for (std::size_t x = 0, y = 0; x < a.size() && y < b.size();) {
        if (a[x] == b[y]) return true;
        if (a[x] < b[y]) ++x;
        else ++y;
    }
    return false;
}

/// `b`'s outputs in the order of `a`'s equal-valued ones; nullopt when the output values differ
/// (equal fingerprints make the output multisets equal unless the 64-bit hash collided).
inline std::optional<std::vector<value_ref>> align_outputs(const pattern& a, const value_hash_table& ha,
                                                           const pattern& b, const value_hash_table& hb,
                                                           std::span<const mod_tensor> vars) {
    std::vector<value_ref> bo;
    std::vector<bool> used(b.outputs.size(), false);
    for (auto va : a.outputs)
        for (std::size_t k = 0; k < b.outputs.size(); ++k)
            if (!used[k] && hash_of(hb, vars, b.outputs[k]) == hash_of(ha, vars, va)) {
                used[k] = true;
                bo.push_back(b.outputs[k]);
                break;
            }
    if (bo.size() != a.outputs.size() || bo.size() != b.outputs.size()) return std::nullopt;
    return bo;
}

/// Common supergraph: every output pair is the same op applied to equal values, f(A) vs f(B); then
/// A vs B is a smaller candidate that implies this one.
inline bool common_supergraph(const world& w, const pattern& a, const value_hash_table& ha, const pattern& b,
                              const value_hash_table& hb, const std::vector<value_ref>& b_outputs,
                              std::span<const mod_tensor> vars) {
    for (std::size_t k = 0; k < a.outputs.size(); ++k) {
        if (a.outputs[k].is_variable() || b_outputs[k].is_variable()) return false;
        const auto& oa = a.ops[a.outputs[k].op];
        const auto& ob = b.ops[b_outputs[k].op];
        if (oa.kind != ob.kind || oa.choice != ob.choice || a.outputs[k].index != b_outputs[k].index ||
            oa.inputs.size() != ob.inputs.size())
            return false;
        boost::container::small_vector<std::uint64_t, 2> ia, ib;
        for (auto v : oa.inputs) ia.push_back(hash_of(ha, vars, v));
        for (auto v : ob.inputs) ib.push_back(hash_of(hb, vars, v));
        if (w.one_order_for_commutative && ops::spec(oa.kind).has(ops::commutative)) {
            std::sort(ia.begin(), ia.end());
            std::sort(ib.begin(), ib.end());
        }
        if (ia != ib) return false;
    }
    return true;
}

/// A candidate pair within a bucket, ordered so that smaller rules come first.
struct edge {
    std::size_t max_ops, total_ops;
    std::uint64_t canon;
    std::uint32_t source, target;  // the source has at least as many ops as the target
    friend bool operator<(const edge& x, const edge& y) {
        return std::tie(x.max_ops, x.total_ops, x.canon, x.source, x.target) <
               std::tie(y.max_ops, y.total_ops, y.canon, y.source, y.target);
    }
};

/// `p` in a normal form of its terms: a commutative op's inputs in the order of their structural
/// keys (where the world takes one order of them), and the ops renumbered in the order a
/// left-to-right post-order walk of the output terms meets them. Two spellings of one graph with
/// the same outputs in the same order become equal.
inline pattern in_term_order(const world& w, const pattern& p) {
    std::vector<std::uint64_t> keys;
    std::vector<std::uint16_t> identity(w.variables.size());
    for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<std::uint16_t>(i);
    op_keys(w, p, identity, keys);
    auto key = [&](value_ref v) { return v.is_variable() ? variable_key(v.index) : output_key(keys[v.op], v.index); };
    pattern q;
    std::vector<std::uint16_t> at(p.ops.size(), variable_op);
    auto visit = [&](auto& self, std::uint16_t op) -> void {
        if (at[op] != variable_op) return;
        pattern_op o = p.ops[op];
        if (w.one_order_for_commutative && ops::spec(o.kind).has(ops::commutative))
            std::stable_sort(o.inputs.begin(), o.inputs.end(),
                             [&](value_ref a, value_ref b) { return key(a) < key(b); });
        for (auto v : o.inputs)
            if (!v.is_variable()) self(self, v.op);
        for (auto& v : o.inputs)
            if (!v.is_variable()) v.op = at[v.op];
        at[op] = static_cast<std::uint16_t>(q.ops.size());
        q.ops.push_back(std::move(o));
    };
    for (auto v : p.outputs)
        if (!v.is_variable()) visit(visit, v.op);
    for (std::size_t i = 0; i < p.ops.size(); ++i)
        visit(visit, static_cast<std::uint16_t>(i));  // not read by an output
    for (auto v : p.outputs) q.outputs.push_back(v.is_variable() ? v : value_ref{at[v.op], v.index});
    return q;
}

}  // namespace goopt::subst::detail
