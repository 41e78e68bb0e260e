#pragma once
/// @file
/// @brief An e-graph for equality saturation over the operator table: hash-consed e-nodes in
/// e-classes joined by a union-find, congruence restored by a deferred rebuild, and each class's
/// shape as its analysis. egg (POPL'21) §3-4; Tensat (MLSys'21) applies it to tensor graphs.

#include <goopt/error.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/rule.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::subst {

/// Index of an e-class; after e_graph::find, the canonical one.
using class_id = std::uint32_t;

/// One operator application whose inputs are e-classes, or a variable leaf.
struct e_node {
    /// ops::op_kind::input for a leaf: variable `index` of the rule being proven.
    ops::op_kind kind{};
    /// Output index of a multi-output op (split), the variable index of a leaf, else 0.
    std::uint16_t index = 0;
    /// The node's attribute map, as an id in its e_graph's attribute table (so nodes hash cheaply).
    std::uint32_t attrs = 0;
    boost::container::small_vector<class_id, 2> children;

    bool is_variable() const noexcept { return kind == ops::op_kind::input; }
    friend bool operator==(const e_node& a, const e_node& b) noexcept {
        return a.kind == b.kind && a.index == b.index && a.attrs == b.attrs && a.children == b.children;
    }
    friend bool operator<(const e_node& a, const e_node& b) noexcept {
        return std::tie(a.kind, a.index, a.attrs) < std::tie(b.kind, b.index, b.attrs) ||
               (std::tie(a.kind, a.index, a.attrs) == std::tie(b.kind, b.index, b.attrs) &&
                std::lexicographical_compare(a.children.begin(), a.children.end(), b.children.begin(),
                                             b.children.end()));
    }
};

/// Hash of an e-node from its fields only (never from addresses), so runs are reproducible.
struct e_node_hash {
    std::size_t operator()(const e_node& n) const noexcept {
        std::uint64_t h = mix((static_cast<std::uint64_t>(n.kind) << 48) ^ (std::uint64_t{n.index} << 32) ^ n.attrs);
        for (auto c : n.children) h = mix(h ^ c);
        return static_cast<std::size_t>(h);
    }
};

/// @brief An e-graph over the ops of ops::op_table. Every class carries the shape its nodes compute
/// (ops::spec(kind).infer on the children's shapes); a node whose shape rule throws is never added,
/// and two classes of different shapes are never merged. Not thread-safe; distinct e-graphs share
/// nothing, so several threads may each use their own.
class e_graph {
public:
    e_graph() { intern({}); }

    /// @brief The id of `attrs` in the attribute table (equal maps, one id).
    std::uint32_t intern(const ops::attribute_map& attrs) {
        for (std::uint32_t i = 0; i < attrs_.size(); ++i)
            if (attrs_[i] == attrs) return i;
        attrs_.push_back(attrs);
        return static_cast<std::uint32_t>(attrs_.size() - 1);
    }
    /// The attribute map of id `a` (a stable reference: the table only grows).
    const ops::attribute_map& attributes(std::uint32_t a) const { return attrs_.at(a); }

    /// @brief The class of variable `index`, of shape `dims`.
    class_id add_variable(std::uint16_t index, const ops::shape& dims) {
        e_node n{ops::op_kind::input, index, 0, {}};
        if (auto it = memo_.find(n); it != memo_.end()) return find(it->second);
        return insert(std::move(n), dims);
    }

    /// @brief The class of output `out` of `kind` applied to `children` with attributes `attrs`
    /// (an id from intern()); adds the node unless an equal one exists.
    /// @return nullopt when the op's shape rule rejects the inputs.
    std::optional<class_id> add(ops::op_kind kind, std::uint32_t attrs, std::uint16_t out,
                                std::span<const class_id> children) {
        e_node n{kind, out, attrs, {}};
        for (auto c : children) n.children.push_back(find(c));
        if (auto it = memo_.find(n); it != memo_.end()) return find(it->second);
        const ops::op_spec& s = ops::spec(kind);
        if (kind == ops::op_kind::input || kind == ops::op_kind::weight || kind == ops::op_kind::constant)
            return std::nullopt;  // inputs, weights and imported constants are variables here, not ops
        if (s.has(ops::source) && kind != ops::op_kind::const_pool && kind != ops::op_kind::const_iconv &&
            kind != ops::op_kind::const_imm && kind != ops::op_kind::const_one)
            return children.empty() ? add_constant(kind, attrs) : std::nullopt;  // a filled constant
        if (children.size() < s.min_inputs || (s.max_inputs != ops::variadic && children.size() > s.max_inputs))
            return std::nullopt;
        boost::container::small_vector<ops::tensor_type, 2> types;
        for (auto c : n.children) types.push_back(ops::tensor_type{classes_[c].dims});
        ops::shape dims;
        try {
            const auto r = s.infer(std::span<const ops::tensor_type>(types.data(), types.size()), attrs_.at(attrs));
            if (out >= r.size()) return std::nullopt;
            dims = r[out].dims;
        } catch (const error&) {
            return std::nullopt;
        }
        return insert(std::move(n), dims);
    }

    /// @brief The class of output `out` of `kind` applied to `children`, of shape `dims` known from
    /// elsewhere (a model graph's own op, whose types the class shapes cannot show, such as a gather
    /// of integer indices); adds the node unless an equal one exists.
    class_id add_known(ops::op_kind kind, std::uint32_t attrs, std::uint16_t out, std::span<const class_id> children,
                       const ops::shape& dims) {
        e_node n{kind, out, attrs, {}};
        for (auto c : children) n.children.push_back(find(c));
        if (auto it = memo_.find(n); it != memo_.end()) return find(it->second);
        return insert(std::move(n), dims);
    }

    /// @brief The class of a source op other than a variable (a filled constant of a rewritten
    /// graph), whose shape its attributes give; adds the leaf unless an equal one exists.
    /// @return nullopt when the op is not a source or its shape rule rejects the attributes.
    std::optional<class_id> add_constant(ops::op_kind kind, std::uint32_t attrs) {
        e_node n{kind, 0, attrs, {}};
        if (auto it = memo_.find(n); it != memo_.end()) return find(it->second);
        const ops::op_spec& s = ops::spec(kind);
        if (!s.has(ops::source) || kind == ops::op_kind::input) return std::nullopt;
        try {
            const auto r = s.infer(std::span<const ops::tensor_type>{}, attrs_.at(attrs));
            if (r.size() != 1) return std::nullopt;
            return insert(std::move(n), r[0].dims);
        } catch (const error&) {
            return std::nullopt;
        }
    }

    /// The canonical id of `c`'s class (path compression).
    class_id find(class_id c) {
        class_id r = c;
        while (parent_[r] != r) r = parent_[r];
        while (parent_[c] != r) c = std::exchange(parent_[c], r);
        return r;
    }
    /// The canonical id without compressing (for const users).
    class_id find_const(class_id c) const {
        while (parent_[c] != c) c = parent_[c];
        return c;
    }

    /// @brief Joins the classes of `a` and `b`; congruence is restored by the next rebuild().
    /// @return true when they were different classes and are now one; false when they already were
    /// one or when their shapes differ (then nothing changes and shape_conflicts() counts it: a
    /// sound axiom never asks for it).
    bool merge(class_id a, class_id b) {
        a = find(a);
        b = find(b);
        if (a == b) return false;
        if (!(classes_[a].dims == classes_[b].dims)) {
            ++conflicts_;
            return false;
        }
        if (b < a) std::swap(a, b);  // the older class survives: ids stay small and stable
        parent_[b] = a;
        auto& na = classes_[a].nodes;
        auto& nb = classes_[b].nodes;
        na.insert(na.end(), std::make_move_iterator(nb.begin()), std::make_move_iterator(nb.end()));
        std::vector<e_node>().swap(nb);
        dirty_ = true;
        return true;
    }

    /// @brief Restores the invariants after merges: every node's children canonical, each class's
    /// nodes sorted and distinct, and congruent nodes (same op on the same classes) in one class.
    /// Merges are collected during a round and closed here, as egg does; unlike egg's worklist of
    /// parents, every class is re-canonicalized (no parent lists to keep), which is cheap at the
    /// few hundred to few thousand e-nodes a proof of a small rule holds.
    void rebuild() {
        if (!dirty_) return;
        std::vector<std::pair<class_id, class_id>> unions;
        do {
            unions.clear();
            memo_.clear();
            num_nodes_ = 0;
            for (class_id c = 0; c < classes_.size(); ++c) {
                if (parent_[c] != c) continue;
                auto& ns = classes_[c].nodes;
                for (auto& n : ns)
                    for (auto& ch : n.children) ch = find(ch);
                std::sort(ns.begin(), ns.end());
                ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
                num_nodes_ += ns.size();
                for (const auto& n : ns) {
                    auto [it, fresh] = memo_.try_emplace(n, c);
                    if (!fresh && find(it->second) != c) unions.emplace_back(find(it->second), c);
                }
            }
            for (auto [a, b] : unions) merge(a, b);
        } while (!unions.empty());
        dirty_ = false;
    }

    /// Nodes of class `c` (canonical id; children canonical after rebuild()).
    const std::vector<e_node>& nodes(class_id c) const { return classes_[find_const(c)].nodes; }
    /// Shape of the values of class `c`.
    const ops::shape& shape(class_id c) const { return classes_[find_const(c)].dims; }
    /// Canonical class ids, ascending.
    std::vector<class_id> classes() const {
        std::vector<class_id> r;
        for (class_id c = 0; c < classes_.size(); ++c)
            if (parent_[c] == c) r.push_back(c);
        return r;
    }
    /// Number of e-nodes (exact after rebuild(); an upper bound between rebuilds).
    std::size_t num_nodes() const noexcept { return num_nodes_; }
    /// Number of classes ever created (merged ones included): a bound on class ids.
    std::size_t num_class_ids() const noexcept { return classes_.size(); }
    /// Number of merges refused because the shapes differed.
    std::size_t shape_conflicts() const noexcept { return conflicts_; }

private:
    struct e_class {
        std::vector<e_node> nodes;
        ops::shape dims;
    };

    class_id insert(e_node n, const ops::shape& dims) {
        const auto c = static_cast<class_id>(classes_.size());
        memo_.emplace(n, c);
        classes_.push_back({{std::move(n)}, dims});
        parent_.push_back(c);
        ++num_nodes_;
        return c;
    }

    std::deque<ops::attribute_map> attrs_;
    std::vector<e_class> classes_;
    std::vector<class_id> parent_;
    std::unordered_map<e_node, class_id, e_node_hash> memo_;  // looked up only, never iterated
    std::size_t num_nodes_ = 0;
    std::size_t conflicts_ = 0;
    bool dirty_ = false;
};

/// @brief Up to `per_class` terms of at most `max_ops` ops for every class of `g` (canonical id,
/// ascending), each as a one-output rule_graph over the variables of the rule the e-graph holds
/// (variable leaves become variable references), found by a bottom-up fixed
/// point in class-id order; deterministic. What the soundness tests evaluate: every term of a class must agree.
/// @return pairs (class id, its terms).
inline std::vector<std::pair<class_id, std::vector<rule_graph>>> extract_terms(const e_graph& g, std::size_t per_class,
                                                                               std::size_t max_ops);

// ---- implementation ----

namespace detail {
/// A term of a class: node `node` of the class with, per child, the index of a term of the child.
struct extracted {
    std::uint32_t node;
    boost::container::small_vector<std::uint32_t, 2> kids;
    std::size_t ops;
    friend bool operator==(const extracted& a, const extracted& b) { return a.node == b.node && a.kids == b.kids; }
};

inline value_ref emit_term(const e_graph& g, const std::vector<std::vector<extracted>>& terms, class_id c,
                           std::uint32_t t, rule_graph& out) {
    const extracted& x = terms[c][t];
    const e_node& n = g.nodes(c)[x.node];
    if (n.is_variable()) return value_ref{variable_op, n.index};
    rule_op op{n.kind, g.attributes(n.attrs), {}, 1};
    for (std::size_t k = 0; k < n.children.size(); ++k)
        op.inputs.push_back(emit_term(g, terms, n.children[k], x.kids[k], out));
    if (ops::spec(n.kind).num_outputs == 0)  // outputs given by the attributes (split: one per size)
        op.num_outputs = static_cast<std::uint16_t>(op.attrs.get_ints(ops::attr_id::sizes).size());
    out.ops.push_back(std::move(op));
    return value_ref{static_cast<std::uint16_t>(out.ops.size() - 1), n.index};
}
}  // namespace detail

inline std::vector<std::pair<class_id, std::vector<rule_graph>>> extract_terms(const e_graph& g, std::size_t per_class,
                                                                               std::size_t max_ops) {
    const auto ids = g.classes();
    std::vector<std::vector<detail::extracted>> terms(g.num_class_ids());
    for (bool changed = true; changed;) {
        changed = false;
        for (class_id c : ids) {
            const auto& ns = g.nodes(c);
            for (std::uint32_t i = 0; i < ns.size() && terms[c].size() < per_class; ++i) {
                const e_node& n = ns[i];
                const std::size_t own = n.is_variable() ? 0 : 1;
                // every combination of the children's terms (an odometer over their indices)
                boost::container::small_vector<std::uint32_t, 2> pick(n.children.size(), 0);
                bool empty = false;
                for (auto ch : n.children) empty = empty || terms[ch].empty();
                if (empty) continue;
                while (terms[c].size() < per_class) {
                    std::size_t size = own;
                    for (std::size_t k = 0; k < pick.size(); ++k) size += terms[n.children[k]][pick[k]].ops;
                    detail::extracted x{i, pick, size};
                    if (size <= max_ops && std::find(terms[c].begin(), terms[c].end(), x) == terms[c].end()) {
                        terms[c].push_back(std::move(x));
                        changed = true;
                    }
                    std::size_t k = pick.size();
                    while (k > 0 && ++pick[k - 1] == terms[n.children[k - 1]].size()) pick[--k] = 0;
                    if (k == 0) break;
                }
            }
        }
    }
    std::vector<std::pair<class_id, std::vector<rule_graph>>> out;
    for (class_id c : ids) {
        std::vector<rule_graph> gs;
        for (std::uint32_t t = 0; t < terms[c].size(); ++t) {
            rule_graph rg;
            rg.outputs.push_back(detail::emit_term(g, terms, c, t, rg));
            gs.push_back(std::move(rg));
        }
        out.emplace_back(c, std::move(gs));
    }
    return out;
}

}  // namespace goopt::subst
