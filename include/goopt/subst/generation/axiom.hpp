#pragma once
/// @file
/// @brief What an axiom is (a name, a statement, root kinds and the code that applies it to an
/// e-graph), the matcher its code reads the e-graph and writes rewrites through, and the small
/// helpers that code is written with. The axioms themselves: axioms.hpp.

#include <goopt/error.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/egraph.hpp>
#include <goopt/subst/world.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace goopt::subst {
inline namespace generation {

/// An input of an op an axiom adds: an e-class (>= 0) or op -(r + 1) of the same rewrite.
using term_ref = std::int64_t;

/// An op an axiom asks for, over classes and earlier ops of the same rewrite.
struct new_op {
    ops::op_kind kind{};
    std::uint32_t attrs = 0;
    std::uint16_t out = 0;
    std::uint8_t arity = 0;  ///< inputs used: the axioms build ops of at most three inputs
    std::array<term_ref, 3> inputs{};
};

/// What one match of an axiom asks for: build ops [first, first + count) of the round's op list in
/// order, then join `result` with `target`. Plain data: a round may hold millions of them.
struct axiom_rewrite {
    std::uint16_t axiom = 0;
    class_id target = 0;
    term_ref result = 0;
    std::uint32_t first = 0;
    std::uint32_t count = 0;
};

/// @brief What an axiom sees and writes while matching: the e-graph (read, and its attribute table
/// extended by intern) and the rewrites of this round, applied after all matching.
class axiom_matcher {
public:
    axiom_matcher(e_graph& graph, std::vector<axiom_rewrite>& out, std::vector<new_op>& ops)
        : g(graph), out_(out), ops_(ops) {
        start_ = ops_.size();
    }

    e_graph& g;
    std::uint16_t axiom = 0;  ///< the index of the axiom matching now

    /// Attribute id of `attrs` completed with `k`'s defaults.
    std::uint32_t attrs(ops::op_kind k, ops::attribute_map attrs = {}) {
        return g.intern(with_defaults(k, std::move(attrs)));
    }
    const ops::attribute_map& at(const e_node& n) const { return g.attributes(n.attrs); }
    /// An op of the rewrite being built; its inputs are classes or earlier ops of the same rewrite.
    term_ref op(ops::op_kind k, std::uint32_t attrs, std::initializer_list<term_ref> in, std::uint16_t out = 0) {
        GOOPT_ASSERT(in.size() <= 3);
        new_op o{k, attrs, out, static_cast<std::uint8_t>(in.size()), {}};
        std::copy(in.begin(), in.end(), o.inputs.begin());
        ops_.push_back(o);
        return -static_cast<term_ref>(ops_.size() - start_);
    }
    /// Finishes the rewrite: the term `result` (built with op(), or a class) equals class `target`.
    void emit(class_id target, term_ref result) {
        out_.push_back({axiom, target, result, static_cast<std::uint32_t>(start_),
                        static_cast<std::uint32_t>(ops_.size() - start_)});
        start_ = ops_.size();
    }
    /// Drops ops built since the last emit (an axiom that gave up half way).
    void discard() { ops_.resize(start_); }

private:
    std::vector<axiom_rewrite>& out_;
    std::vector<new_op>& ops_;
    std::size_t start_ = 0;
};

/// A set of op kinds as a constexpr bit mask (std::bitset's setters are not constexpr in C++20).
struct kind_mask {
    std::array<std::uint64_t, 2> words{};
    constexpr bool has(ops::op_kind k) const noexcept {
        const auto i = static_cast<unsigned>(k);
        return (words[i / 64] >> (i % 64) & 1u) != 0;
    }
};
static_assert(ops::num_op_kinds <= 128, "kind_mask holds 128 op kinds");

/// One axiom: `statement` holds for every value of its pattern variables that satisfies the
/// condition after `when`; `apply` adds its consequences at an e-node of a kind in `roots`.
struct axiom {
    std::string_view name;
    std::string_view statement;
    kind_mask roots;  ///< applied at e-nodes of these op kinds
    void (*apply)(axiom_matcher&, class_id, const e_node&);
};

/// The root-kind mask of some op kinds.
constexpr kind_mask kinds_mask(std::initializer_list<ops::op_kind> ks) noexcept {
    kind_mask m;
    for (auto k : ks) m.words[static_cast<unsigned>(k) / 64] |= std::uint64_t{1} << (static_cast<unsigned>(k) % 64);
    return m;
}

// ---- helpers the axioms' code is written with ----

}  // namespace generation

namespace detail {
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;

inline std::int64_t act(const axiom_matcher& m, const e_node& n) { return m.at(n).get_int(attr_id::activation); }
/// Axis of a concat or split node at class c, normalized to [0, rank).
inline std::int64_t axis(const axiom_matcher& m, const e_node& n, class_id of_input) {
    return static_cast<std::int64_t>(m.g.shape(of_input).axis(m.at(n).get_int(attr_id::axis)));
}
inline std::int64_t concat_axis(const axiom_matcher& m, const e_node& n, class_id c) {
    return static_cast<std::int64_t>(m.g.shape(c).axis(m.at(n).get_int(attr_id::axis)));
}
inline bool scalar(const axiom_matcher& m, class_id c) {
    const auto& s = m.g.shape(c);
    return s.rank() <= 1 && s.num_elements() == 1;
}
inline bool same_shape(const axiom_matcher& m, class_id a, class_id b) { return m.g.shape(a) == m.g.shape(b); }
/// The attributes of `n` with the fused activation set to `a`.
inline std::uint32_t with_activation(axiom_matcher& m, const e_node& n, std::int64_t a) {
    ops::attribute_map x = m.at(n);
    x.set(attr_id::activation, a);
    return m.g.intern(x);
}
inline std::uint32_t concat_on(axiom_matcher& m, std::int64_t axis) {
    return m.attrs(op_kind::concat, {{attr_id::axis, axis}});
}
/// Groups = 1: the kernel reads every input channel.
inline bool dense_conv(const axiom_matcher& m, class_id x, class_id w) { return m.g.shape(x)[1] == m.g.shape(w)[1]; }
/// The explicit permutation of a transpose node applied to a value of rank r.
inline ints perm(const axiom_matcher& m, const e_node& n, std::size_t r) {
    ints p = m.at(n).get_ints(attr_id::perm);
    if (p.empty())
        for (std::size_t i = r; i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
    return p;
}
template <class F> void each(const axiom_matcher& m, class_id c, op_kind k, F f) {
    for (const auto& n : m.g.nodes(c))
        if (n.kind == k) f(n);
}

inline void commute(axiom_matcher& m, class_id c, const e_node& n) {
    if (n.children[0] != n.children[1]) m.emit(c, m.op(n.kind, n.attrs, {n.children[1], n.children[0]}));
}

/// (x . y) . z = x . (y . z), both ways, for a binary op with its attributes (ewadd, ewmul, concat).
inline void associate(axiom_matcher& m, class_id c, const e_node& n) {
    if (n.children.size() != 2) return;
    for (const auto& l : m.g.nodes(n.children[0]))
        if (l.kind == n.kind && l.attrs == n.attrs && l.children.size() == 2)
            m.emit(c, m.op(n.kind, n.attrs, {l.children[0], m.op(n.kind, n.attrs, {l.children[1], n.children[1]})}));
    for (const auto& r : m.g.nodes(n.children[1]))
        if (r.kind == n.kind && r.attrs == n.attrs && r.children.size() == 2)
            m.emit(c, m.op(n.kind, n.attrs, {m.op(n.kind, n.attrs, {n.children[0], r.children[0]}), r.children[1]}));
}

}  // namespace detail

inline namespace generation {}  // namespace generation
}  // namespace goopt::subst
