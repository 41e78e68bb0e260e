#pragma once
/// @file
/// @brief The operator axioms substitution rules are proven from, stated once: each entry has a
/// name, its statement in the rule grammar (rule.hpp) with pattern variables, and the code that
/// applies it to an e-graph. TASO (SOSP'19) Table 2 and its supplementary list, for goopt's
/// semantics of the TASO operator set (interp/kernels.hpp).
///
/// Each axiom is applied at e-nodes of its root kinds: it looks at the nodes of the children's
/// classes, and for every match asks for a term (the other side) to be added and joined with the
/// matched class. Directions: both wherever the other side does not invent structure out of nothing
/// (x = transpose(transpose(x)) would grow the e-graph without bound; identity constants and
/// split-of-concat are applied only in the simplifying direction, which suffices because both
/// sides of a rule are in the e-graph). Conditions on shapes and attributes are checked on the
/// class shapes and attribute maps before anything is added.

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

/// An input of an op an axiom adds: an e-class (>= 0) or op -(r + 1) of the same rewrite.
using term_ref = std::int64_t;

/// An op an axiom asks for, over classes and earlier ops of the same rewrite.
struct new_op {
    ops::op_kind kind{};
    std::uint32_t attrs = 0;
    std::uint16_t out = 0;
    std::uint8_t arity = 0;  ///< inputs used: the axioms build ops of at most two inputs
    std::array<term_ref, 2> inputs{};
};

/// What one match of an axiom asks for: build ops [first, first + count) of the round's op list in
/// order, then join `result` with `target`. Plain data: a round may hold millions of them.
struct rewrite {
    std::uint16_t axiom = 0;
    class_id target = 0;
    term_ref result = 0;
    std::uint32_t first = 0;
    std::uint32_t count = 0;
};

/// @brief What an axiom sees and writes while matching: the e-graph (read, and its attribute table
/// extended by intern) and the rewrites of this round, applied after all matching.
class matcher {
public:
    matcher(e_graph& graph, std::vector<rewrite>& out, std::vector<new_op>& ops) : g(graph), out_(out), ops_(ops) {
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
        GOOPT_ASSERT(in.size() <= 2);
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
    std::vector<rewrite>& out_;
    std::vector<new_op>& ops_;
    std::size_t start_ = 0;
};

/// One axiom: `statement` holds for every value of its pattern variables that satisfies the
/// condition after `when`; `apply` adds its consequences at an e-node of a kind in `roots`.
struct axiom {
    std::string_view name;
    std::string_view statement;
    std::uint64_t roots;  ///< bit k: applied at e-nodes of ops::op_kind k
    void (*apply)(matcher&, class_id, const e_node&);
};

static_assert(ops::num_op_kinds <= 64, "axiom::roots is a 64-bit mask of op kinds");

/// The root-kind mask of some op kinds.
constexpr std::uint64_t kinds_mask(std::initializer_list<ops::op_kind> ks) noexcept {
    std::uint64_t m = 0;
    for (auto k : ks) m |= std::uint64_t{1} << static_cast<unsigned>(k);
    return m;
}

// ---- the axioms' code ----

namespace detail {
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;

inline std::int64_t act(const matcher& m, const e_node& n) { return m.at(n).get_int(attr_id::activation); }
/// Axis of a concat or split node at class c, normalized to [0, rank).
inline std::int64_t axis(const matcher& m, const e_node& n, class_id of_input) {
    return static_cast<std::int64_t>(m.g.shape(of_input).axis(m.at(n).get_int(attr_id::axis)));
}
inline std::int64_t concat_axis(const matcher& m, const e_node& n, class_id c) {
    return static_cast<std::int64_t>(m.g.shape(c).axis(m.at(n).get_int(attr_id::axis)));
}
inline bool scalar(const matcher& m, class_id c) {
    const auto& s = m.g.shape(c);
    return s.rank() <= 1 && s.num_elements() == 1;
}
inline bool same_shape(const matcher& m, class_id a, class_id b) { return m.g.shape(a) == m.g.shape(b); }
/// The attributes of `n` with the fused activation set to `a`.
inline std::uint32_t with_activation(matcher& m, const e_node& n, std::int64_t a) {
    ops::attribute_map x = m.at(n);
    x.set(attr_id::activation, a);
    return m.g.intern(x);
}
inline std::uint32_t concat_on(matcher& m, std::int64_t axis) {
    return m.attrs(op_kind::concat, {{attr_id::axis, axis}});
}
/// Groups = 1: the kernel reads every input channel.
inline bool dense_conv(const matcher& m, class_id x, class_id w) { return m.g.shape(x)[1] == m.g.shape(w)[1]; }
/// The explicit permutation of a transpose node applied to a value of rank r.
inline ints perm(const matcher& m, const e_node& n, std::size_t r) {
    ints p = m.at(n).get_ints(attr_id::perm);
    if (p.empty())
        for (std::size_t i = r; i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
    return p;
}
template <class F> void each(const matcher& m, class_id c, op_kind k, F f) {
    for (const auto& n : m.g.nodes(c))
        if (n.kind == k) f(n);
}

inline void commute(matcher& m, class_id c, const e_node& n) {
    if (n.children[0] != n.children[1]) m.emit(c, m.op(n.kind, n.attrs, {n.children[1], n.children[0]}));
}

/// (x . y) . z = x . (y . z), both ways, for a binary op with its attributes (ewadd, ewmul, concat).
inline void associate(matcher& m, class_id c, const e_node& n) {
    if (n.children.size() != 2) return;
    for (const auto& l : m.g.nodes(n.children[0]))
        if (l.kind == n.kind && l.attrs == n.attrs && l.children.size() == 2)
            m.emit(c, m.op(n.kind, n.attrs, {l.children[0], m.op(n.kind, n.attrs, {l.children[1], n.children[1]})}));
    for (const auto& r : m.g.nodes(n.children[1]))
        if (r.kind == n.kind && r.attrs == n.attrs && r.children.size() == 2)
            m.emit(c, m.op(n.kind, n.attrs, {m.op(n.kind, n.attrs, {n.children[0], r.children[0]}), r.children[1]}));
}

inline void ewadd_assoc(matcher& m, class_id c, const e_node& n) { associate(m, c, n); }

/// ewmul(ewadd(x,y),z) = ewadd(ewmul(x,z),ewmul(y,z)).
inline void ewmul_distrib(matcher& m, class_id c, const e_node& n) {
    if (n.kind == op_kind::ewmul) {
        each(m, n.children[0], op_kind::ewadd, [&](const e_node& s) {
            m.emit(c, m.op(op_kind::ewadd, s.attrs,
                           {m.op(op_kind::ewmul, n.attrs, {s.children[0], n.children[1]}),
                            m.op(op_kind::ewmul, n.attrs, {s.children[1], n.children[1]})}));
        });
    } else {
        each(m, n.children[0], op_kind::ewmul, [&](const e_node& a) {
            each(m, n.children[1], op_kind::ewmul, [&](const e_node& b) {
                if (a.children[1] == b.children[1])
                    m.emit(c, m.op(op_kind::ewmul, a.attrs,
                                   {m.op(op_kind::ewadd, n.attrs, {a.children[0], b.children[0]}), a.children[1]}));
            });
        });
    }
}

inline void ewmul_one(matcher& m, class_id c, const e_node& n) {
    for (int k = 0; k < 2; ++k)
        each(m, n.children[k], op_kind::const_one, [&](const e_node&) {
            if (same_shape(m, n.children[1 - k], c)) m.emit(c, n.children[1 - k]);
        });
}

/// smul(smul(x,s),t) = smul(x,smul(s,t)).
inline void smul_assoc(matcher& m, class_id c, const e_node& n) {
    if (!scalar(m, n.children[1])) return;
    each(m, n.children[0], op_kind::smul, [&](const e_node& l) {
        m.emit(c, m.op(op_kind::smul, n.attrs,
                       {l.children[0], m.op(op_kind::smul, n.attrs, {l.children[1], n.children[1]})}));
    });
    each(m, n.children[1], op_kind::smul, [&](const e_node& r) {
        if (scalar(m, r.children[0]))
            m.emit(c, m.op(op_kind::smul, n.attrs,
                           {m.op(op_kind::smul, n.attrs, {n.children[0], r.children[0]}), r.children[1]}));
    });
}

inline void smul_scalar_comm(matcher& m, class_id c, const e_node& n) {
    if (scalar(m, n.children[0]) && same_shape(m, n.children[0], n.children[1])) commute(m, c, n);
}

/// f(ewadd(x,y), rest) = ewadd(f(x, rest), f(y, rest)) for f linear in input k (activation none
/// when f has one); at an ewadd of two f's that differ only in input k, the other way.
inline void linear_in(matcher& m, class_id c, const e_node& n, op_kind f, std::size_t k) {
    const bool has_act = ops::spec(f).has(ops::fused_activation);
    if (n.kind == f) {
        if (has_act && act(m, n) != 0) return;
        each(m, n.children[k], op_kind::ewadd, [&](const e_node& s) {
            if (!same_shape(m, s.children[0], s.children[1])) return;
            auto with = [&](class_id v) {
                boost::container::small_vector<term_ref, 2> in(n.children.begin(), n.children.end());
                in[k] = v;
                if (in.size() == 1) return m.op(f, n.attrs, {in[0]});
                return m.op(f, n.attrs, {in[0], in[1]});
            };
            const term_ref a = with(s.children[0]);
            const term_ref b = with(s.children[1]);
            m.emit(c, m.op(op_kind::ewadd, s.attrs, {a, b}));
        });
        return;
    }
    each(m, n.children[0], f, [&](const e_node& a) {
        if (has_act && act(m, a) != 0) return;
        each(m, n.children[1], f, [&](const e_node& b) {
            if (b.attrs != a.attrs || b.children.size() != a.children.size()) return;
            for (std::size_t i = 0; i < a.children.size(); ++i)
                if (i != k && a.children[i] != b.children[i]) return;
            if (!same_shape(m, a.children[k], b.children[k])) return;
            const term_ref sum = m.op(op_kind::ewadd, n.attrs, {a.children[k], b.children[k]});
            if (a.children.size() == 1) m.emit(c, m.op(f, a.attrs, {sum}));
            else if (k == 0) m.emit(c, m.op(f, a.attrs, {sum, a.children[1]}));
            else m.emit(c, m.op(f, a.attrs, {a.children[0], sum}));
        });
    });
}

/// f(smul(x,s), rest) = smul(f(x, rest), s) for f linear in input k (activation none).
inline void scalar_through(matcher& m, class_id c, const e_node& n, op_kind f, std::size_t k) {
    const bool has_act = ops::spec(f).has(ops::fused_activation);
    if (n.kind == f) {
        if (has_act && act(m, n) != 0) return;
        each(m, n.children[k], op_kind::smul, [&](const e_node& s) {
            if (!scalar(m, s.children[1])) return;
            term_ref inner = 0;
            if (n.children.size() == 1) inner = m.op(f, n.attrs, {s.children[0]});
            else if (k == 0) inner = m.op(f, n.attrs, {s.children[0], n.children[1]});
            else inner = m.op(f, n.attrs, {n.children[0], s.children[0]});
            m.emit(c, m.op(op_kind::smul, s.attrs, {inner, s.children[1]}));
        });
        return;
    }
    if (!scalar(m, n.children[1])) return;  // n is smul(A, s)
    each(m, n.children[0], f, [&](const e_node& a) {
        if (k >= a.children.size() || (has_act && act(m, a) != 0)) return;
        const term_ref scaled = m.op(op_kind::smul, n.attrs, {a.children[k], n.children[1]});
        if (a.children.size() == 1) m.emit(c, m.op(f, a.attrs, {scaled}));
        else if (k == 0) m.emit(c, m.op(f, a.attrs, {scaled, a.children[1]}));
        else m.emit(c, m.op(f, a.attrs, {a.children[0], scaled}));
    });
}

inline void smul_distrib(matcher& m, class_id c, const e_node& n) {
    // smul(., s) is linear in its first input: the ewadd case of linear_in with the scalar fixed
    linear_in(m, c, n, op_kind::smul, 0);
    linear_in(m, c, n, op_kind::smul, 1);
}
inline void smul_ewmul(matcher& m, class_id c, const e_node& n) { scalar_through(m, c, n, op_kind::ewmul, 0); }
inline void smul_matmul(matcher& m, class_id c, const e_node& n) {
    scalar_through(m, c, n, op_kind::matmul, 0);
    scalar_through(m, c, n, op_kind::matmul, 1);
}
inline void smul_conv2d(matcher& m, class_id c, const e_node& n) {
    scalar_through(m, c, n, op_kind::conv2d, 0);
    scalar_through(m, c, n, op_kind::conv2d, 1);
}
inline void smul_transpose(matcher& m, class_id c, const e_node& n) { scalar_through(m, c, n, op_kind::transpose, 0); }
inline void smul_avgpool(matcher& m, class_id c, const e_node& n) { scalar_through(m, c, n, op_kind::avgpool2d, 0); }

inline void transpose_involution(matcher& m, class_id c, const e_node& n) {
    const std::size_t r = m.g.shape(c).rank();
    const ints outer = perm(m, n, r);
    each(m, n.children[0], op_kind::transpose, [&](const e_node& t) {
        const ints inner = perm(m, t, r);
        for (std::size_t i = 0; i < r; ++i)
            if (inner[static_cast<std::size_t>(outer[i])] != static_cast<std::int64_t>(i)) return;
        m.emit(c, t.children[0]);
    });
}

/// transpose(f(x,y)) = f(transpose(x),transpose(y)) for elementwise f on equal shapes.
inline void transpose_elementwise(matcher& m, class_id c, const e_node& n, op_kind f) {
    if (n.kind == op_kind::transpose) {
        each(m, n.children[0], f, [&](const e_node& e) {
            if (!same_shape(m, e.children[0], e.children[1])) return;
            m.emit(c, m.op(f, e.attrs,
                           {m.op(op_kind::transpose, n.attrs, {e.children[0]}),
                            m.op(op_kind::transpose, n.attrs, {e.children[1]})}));
        });
        return;
    }
    each(m, n.children[0], op_kind::transpose, [&](const e_node& a) {
        each(m, n.children[1], op_kind::transpose, [&](const e_node& b) {
            if (a.attrs == b.attrs && same_shape(m, a.children[0], b.children[0]))
                m.emit(c, m.op(op_kind::transpose, a.attrs, {m.op(f, n.attrs, {a.children[0], b.children[0]})}));
        });
    });
}
inline void transpose_ewadd(matcher& m, class_id c, const e_node& n) { transpose_elementwise(m, c, n, op_kind::ewadd); }
inline void transpose_ewmul(matcher& m, class_id c, const e_node& n) { transpose_elementwise(m, c, n, op_kind::ewmul); }

/// f(g(x)) = g(f(x)) for two unary ops that commute (relu and transpose).
inline void swap_unary(matcher& m, class_id c, const e_node& n, op_kind other) {
    each(m, n.children[0], other,
         [&](const e_node& l) { m.emit(c, m.op(l.kind, l.attrs, {m.op(n.kind, n.attrs, {l.children[0]})})); });
}
inline void transpose_relu(matcher& m, class_id c, const e_node& n) {
    swap_unary(m, c, n, n.kind == op_kind::relu ? op_kind::transpose : op_kind::relu);
}

inline bool is_matrix_transpose(const matcher& m, const e_node& t, class_id c) {
    return m.g.shape(c).rank() == 2 && perm(m, t, 2) == ints{1, 0};
}

/// transpose(matmul(x,y)) = matmul(transpose(y),transpose(x)), rank 2, any fused activation.
inline void transpose_matmul(matcher& m, class_id c, const e_node& n) {
    if (n.kind == op_kind::transpose) {
        if (!is_matrix_transpose(m, n, c)) return;
        each(m, n.children[0], op_kind::matmul, [&](const e_node& p) {
            m.emit(c, m.op(op_kind::matmul, p.attrs,
                           {m.op(op_kind::transpose, n.attrs, {p.children[1]}),
                            m.op(op_kind::transpose, n.attrs, {p.children[0]})}));
        });
        return;
    }
    if (m.g.shape(c).rank() != 2) return;
    each(m, n.children[0], op_kind::transpose, [&](const e_node& a) {
        if (!is_matrix_transpose(m, a, n.children[0])) return;
        each(m, n.children[1], op_kind::transpose, [&](const e_node& b) {
            if (!is_matrix_transpose(m, b, n.children[1])) return;
            m.emit(c,
                   m.op(op_kind::transpose, a.attrs, {m.op(op_kind::matmul, n.attrs, {b.children[0], a.children[0]})}));
        });
    });
}

/// transpose{p}(concat{a}(x,y)) = concat{j}(transpose{p}(x), transpose{p}(y)) with p[j] = a.
inline void transpose_concat(matcher& m, class_id c, const e_node& n) {
    if (n.kind == op_kind::transpose) {
        const ints p = perm(m, n, m.g.shape(c).rank());
        each(m, n.children[0], op_kind::concat, [&](const e_node& k) {
            if (k.children.size() != 2) return;
            const auto a = concat_axis(m, k, n.children[0]);
            std::int64_t j = 0;
            while (p[static_cast<std::size_t>(j)] != a) ++j;
            m.emit(c, m.op(op_kind::concat, concat_on(m, j),
                           {m.op(op_kind::transpose, n.attrs, {k.children[0]}),
                            m.op(op_kind::transpose, n.attrs, {k.children[1]})}));
        });
        return;
    }
    if (n.children.size() != 2) return;
    const auto j = concat_axis(m, n, c);
    each(m, n.children[0], op_kind::transpose, [&](const e_node& a) {
        each(m, n.children[1], op_kind::transpose, [&](const e_node& b) {
            if (a.attrs != b.attrs) return;
            const ints p = perm(m, a, m.g.shape(c).rank());
            m.emit(c, m.op(op_kind::transpose, a.attrs,
                           {m.op(op_kind::concat, concat_on(m, p[static_cast<std::size_t>(j)]),
                                 {a.children[0], b.children[0]})}));
        });
    });
}

inline void transpose_const(matcher& m, class_id c, const e_node& n) {
    for (const auto& k : m.g.nodes(n.children[0])) {
        if (k.kind == op_kind::const_imm && is_matrix_transpose(m, n, c))
            m.emit(c, m.op(op_kind::const_imm, k.attrs, {}));
        if (k.kind == op_kind::const_one) {
            ints s(m.g.shape(c).begin(), m.g.shape(c).end());
            m.emit(c, m.op(op_kind::const_one, m.attrs(op_kind::const_one, {{attr_id::shape, s}}), {}));
        }
    }
}

inline void matmul_assoc(matcher& m, class_id c, const e_node& n) {
    if (act(m, n) != 0) return;
    each(m, n.children[0], op_kind::matmul, [&](const e_node& l) {
        if (l.attrs == n.attrs)
            m.emit(c, m.op(op_kind::matmul, n.attrs,
                           {l.children[0], m.op(op_kind::matmul, n.attrs, {l.children[1], n.children[1]})}));
    });
    each(m, n.children[1], op_kind::matmul, [&](const e_node& r) {
        if (r.attrs == n.attrs)
            m.emit(c, m.op(op_kind::matmul, n.attrs,
                           {m.op(op_kind::matmul, n.attrs, {n.children[0], r.children[0]}), r.children[1]}));
    });
}

inline void matmul_linear(matcher& m, class_id c, const e_node& n) {
    linear_in(m, c, n, op_kind::matmul, 0);
    linear_in(m, c, n, op_kind::matmul, 1);
}
inline void conv2d_linear(matcher& m, class_id c, const e_node& n) {
    linear_in(m, c, n, op_kind::conv2d, 0);
    linear_in(m, c, n, op_kind::conv2d, 1);
}
inline void avgpool_linear(matcher& m, class_id c, const e_node& n) { linear_in(m, c, n, op_kind::avgpool2d, 0); }

/// f{relu}(...) = relu(f{none}(...)).
inline void fused_relu(matcher& m, class_id c, const e_node& n, op_kind f) {
    if (n.kind == f) {
        if (act(m, n) != static_cast<std::int64_t>(ops::activation::relu)) return;
        const std::uint32_t plain = with_activation(m, n, 0);
        if (n.children.size() == 1)
            m.emit(c, m.op(op_kind::relu, m.attrs(op_kind::relu), {m.op(f, plain, {n.children[0]})}));
        else m.emit(c, m.op(op_kind::relu, m.attrs(op_kind::relu), {m.op(f, plain, {n.children[0], n.children[1]})}));
        return;
    }
    each(m, n.children[0], f, [&](const e_node& p) {
        if (act(m, p) != 0) return;
        const std::uint32_t fused = with_activation(m, p, static_cast<std::int64_t>(ops::activation::relu));
        if (p.children.size() == 1) m.emit(c, m.op(f, fused, {p.children[0]}));
        else m.emit(c, m.op(f, fused, {p.children[0], p.children[1]}));
    });
}
inline void matmul_relu(matcher& m, class_id c, const e_node& n) { fused_relu(m, c, n, op_kind::matmul); }
inline void conv2d_relu(matcher& m, class_id c, const e_node& n) { fused_relu(m, c, n, op_kind::conv2d); }

inline void matmul_imm(matcher& m, class_id c, const e_node& n) {
    if (act(m, n) != 0) return;
    each(m, n.children[1], op_kind::const_imm, [&](const e_node&) { m.emit(c, n.children[0]); });
    each(m, n.children[0], op_kind::const_imm, [&](const e_node&) { m.emit(c, n.children[1]); });
}

/// matmul(concat{0}(x,y),z) = concat{0}(matmul(x,z),matmul(y,z)) and
/// matmul(x,concat{1}(y,z)) = concat{1}(matmul(x,y),matmul(x,z)), rank 2, any activation.
/// Batched matmul [..., M, K] x [..., K, N] (batch prefixes broadcast): rows of the left operand
/// are rows of the result (axis rank - 2) and columns of the right operand its columns (axis
/// rank - 1), whatever the ranks; the concatenations of the operands are on their own such axes.
inline void matmul_concat_outer(matcher& m, class_id c, const e_node& n) {
    const auto r = static_cast<std::int64_t>(m.g.shape(c).rank());
    if (r < 2) return;
    auto rank = [&](class_id x) { return static_cast<std::int64_t>(m.g.shape(x).rank()); };
    if (n.kind == op_kind::matmul) {
        each(m, n.children[0], op_kind::concat, [&](const e_node& k) {
            if (k.children.size() == 2 && concat_axis(m, k, n.children[0]) == rank(n.children[0]) - 2)
                m.emit(c, m.op(op_kind::concat, concat_on(m, r - 2),
                               {m.op(op_kind::matmul, n.attrs, {k.children[0], n.children[1]}),
                                m.op(op_kind::matmul, n.attrs, {k.children[1], n.children[1]})}));
        });
        each(m, n.children[1], op_kind::concat, [&](const e_node& k) {
            if (k.children.size() == 2 && concat_axis(m, k, n.children[1]) == rank(n.children[1]) - 1)
                m.emit(c, m.op(op_kind::concat, concat_on(m, r - 1),
                               {m.op(op_kind::matmul, n.attrs, {n.children[0], k.children[0]}),
                                m.op(op_kind::matmul, n.attrs, {n.children[0], k.children[1]})}));
        });
        return;
    }
    if (n.children.size() != 2) return;
    const auto ax = concat_axis(m, n, c);
    each(m, n.children[0], op_kind::matmul, [&](const e_node& a) {
        each(m, n.children[1], op_kind::matmul, [&](const e_node& b) {
            if (a.attrs != b.attrs) return;
            if (ax == r - 2 && a.children[1] == b.children[1] && rank(a.children[0]) == rank(b.children[0]))
                m.emit(
                    c,
                    m.op(op_kind::matmul, a.attrs,
                         {m.op(op_kind::concat, concat_on(m, rank(a.children[0]) - 2), {a.children[0], b.children[0]}),
                          a.children[1]}));
            if (ax == r - 1 && a.children[0] == b.children[0] && rank(a.children[1]) == rank(b.children[1]))
                m.emit(c, m.op(op_kind::matmul, a.attrs,
                               {a.children[0], m.op(op_kind::concat, concat_on(m, rank(a.children[1]) - 1),
                                                    {a.children[1], b.children[1]})}));
        });
    });
}
inline void matmul_concat_inner(matcher& m, class_id c, const e_node& n) {
    if (m.g.shape(c).rank() != 2) return;
    if (n.kind == op_kind::matmul) {
        if (act(m, n) != 0) return;
        each(m, n.children[0], op_kind::concat, [&](const e_node& l) {
            if (l.children.size() != 2 || concat_axis(m, l, n.children[0]) != 1) return;
            each(m, n.children[1], op_kind::concat, [&](const e_node& r) {
                if (r.children.size() != 2 || concat_axis(m, r, n.children[1]) != 0) return;
                if (m.g.shape(l.children[0])[1] != m.g.shape(r.children[0])[0]) return;
                m.emit(c, m.op(op_kind::ewadd, m.attrs(op_kind::ewadd),
                               {m.op(op_kind::matmul, n.attrs, {l.children[0], r.children[0]}),
                                m.op(op_kind::matmul, n.attrs, {l.children[1], r.children[1]})}));
            });
        });
        return;
    }
    each(m, n.children[0], op_kind::matmul, [&](const e_node& a) {
        if (act(m, a) != 0) return;
        each(m, n.children[1], op_kind::matmul, [&](const e_node& b) {
            if (b.attrs != a.attrs) return;
            m.emit(c, m.op(op_kind::matmul, a.attrs,
                           {m.op(op_kind::concat, concat_on(m, 1), {a.children[0], b.children[0]}),
                            m.op(op_kind::concat, concat_on(m, 0), {a.children[1], b.children[1]})}));
        });
    });
}

/// conv2d(x, concat{0}(w,v)) = concat{1}(conv2d(x,w), conv2d(x,v)), groups 1, any attributes.
inline void conv2d_concat_out(matcher& m, class_id c, const e_node& n) {
    if (n.kind == op_kind::conv2d) {
        if (!dense_conv(m, n.children[0], n.children[1])) return;
        each(m, n.children[1], op_kind::concat, [&](const e_node& k) {
            if (k.children.size() == 2 && concat_axis(m, k, n.children[1]) == 0)
                m.emit(c, m.op(op_kind::concat, concat_on(m, 1),
                               {m.op(op_kind::conv2d, n.attrs, {n.children[0], k.children[0]}),
                                m.op(op_kind::conv2d, n.attrs, {n.children[0], k.children[1]})}));
        });
        return;
    }
    if (n.children.size() != 2 || m.g.shape(c).rank() != 4 || concat_axis(m, n, c) != 1) return;
    each(m, n.children[0], op_kind::conv2d, [&](const e_node& a) {
        each(m, n.children[1], op_kind::conv2d, [&](const e_node& b) {
            if (a.attrs == b.attrs && a.children[0] == b.children[0] && dense_conv(m, a.children[0], a.children[1]) &&
                dense_conv(m, b.children[0], b.children[1]))
                m.emit(c,
                       m.op(op_kind::conv2d, a.attrs,
                            {a.children[0], m.op(op_kind::concat, concat_on(m, 0), {a.children[1], b.children[1]})}));
        });
    });
}

/// conv2d(concat{1}(x,y), concat{1}(w,v)) = ewadd(conv2d(x,w), conv2d(y,v)), groups 1, activation none.
inline void conv2d_concat_in(matcher& m, class_id c, const e_node& n) {
    if (n.kind == op_kind::conv2d) {
        if (act(m, n) != 0) return;
        each(m, n.children[0], op_kind::concat, [&](const e_node& xs) {
            if (xs.children.size() != 2 || concat_axis(m, xs, n.children[0]) != 1) return;
            each(m, n.children[1], op_kind::concat, [&](const e_node& ws) {
                if (ws.children.size() != 2 || concat_axis(m, ws, n.children[1]) != 1) return;
                if (!dense_conv(m, xs.children[0], ws.children[0]) || !dense_conv(m, xs.children[1], ws.children[1]))
                    return;
                m.emit(c, m.op(op_kind::ewadd, m.attrs(op_kind::ewadd),
                               {m.op(op_kind::conv2d, n.attrs, {xs.children[0], ws.children[0]}),
                                m.op(op_kind::conv2d, n.attrs, {xs.children[1], ws.children[1]})}));
            });
        });
        return;
    }
    each(m, n.children[0], op_kind::conv2d, [&](const e_node& a) {
        if (act(m, a) != 0 || !dense_conv(m, a.children[0], a.children[1])) return;
        each(m, n.children[1], op_kind::conv2d, [&](const e_node& b) {
            if (b.attrs != a.attrs || !dense_conv(m, b.children[0], b.children[1])) return;
            m.emit(c, m.op(op_kind::conv2d, a.attrs,
                           {m.op(op_kind::concat, concat_on(m, 1), {a.children[0], b.children[0]}),
                            m.op(op_kind::concat, concat_on(m, 1), {a.children[1], b.children[1]})}));
        });
    });
}

/// f(concat{a}(x,y)) = concat{a}(f(x), f(y)) for f acting on each slice along axis a alone:
/// relu (any axis), smul (any axis), avgpool2d and conv2d's input (batch and, for pooling,
/// channel axes: 0 and 1), all attributes kept.
inline bool slices_independent(op_kind f, std::int64_t axis) {
    switch (f) {
        case op_kind::relu:
        case op_kind::smul:
            return true;
        case op_kind::avgpool2d:
            return axis == 0 || axis == 1;
        case op_kind::conv2d:
            return axis == 0;
        default:
            return false;
    }
}
inline void through_concat(matcher& m, class_id c, const e_node& n, op_kind f) {
    if (n.kind == f) {
        each(m, n.children[0], op_kind::concat, [&](const e_node& k) {
            if (k.children.size() != 2 || !slices_independent(f, concat_axis(m, k, n.children[0]))) return;
            if (f == op_kind::smul && !scalar(m, n.children[1])) return;
            auto apply = [&](class_id v) {
                return n.children.size() == 1 ? m.op(f, n.attrs, {v}) : m.op(f, n.attrs, {v, n.children[1]});
            };
            const term_ref a = apply(k.children[0]);
            const term_ref b = apply(k.children[1]);
            m.emit(c, m.op(op_kind::concat, k.attrs, {a, b}));
        });
        return;
    }
    if (n.children.size() != 2 || !slices_independent(f, concat_axis(m, n, c))) return;
    each(m, n.children[0], f, [&](const e_node& a) {
        each(m, n.children[1], f, [&](const e_node& b) {
            if (a.attrs != b.attrs || a.children.size() != b.children.size()) return;
            if (a.children.size() == 2 && a.children[1] != b.children[1]) return;
            if (f == op_kind::smul && !scalar(m, a.children[1])) return;
            const term_ref k = m.op(op_kind::concat, n.attrs, {a.children[0], b.children[0]});
            if (a.children.size() == 1) m.emit(c, m.op(f, a.attrs, {k}));
            else m.emit(c, m.op(f, a.attrs, {k, a.children[1]}));
        });
    });
}
inline void relu_concat(matcher& m, class_id c, const e_node& n) { through_concat(m, c, n, op_kind::relu); }
inline void smul_concat(matcher& m, class_id c, const e_node& n) { through_concat(m, c, n, op_kind::smul); }
inline void avgpool_concat(matcher& m, class_id c, const e_node& n) { through_concat(m, c, n, op_kind::avgpool2d); }
inline void conv2d_concat_batch(matcher& m, class_id c, const e_node& n) { through_concat(m, c, n, op_kind::conv2d); }

/// f(concat{a}(x,y), concat{a}(z,u)) = concat{a}(f(x,z), f(y,u)) for elementwise f, x and z of one
/// shape and no broadcasting.
inline void elementwise_concat(matcher& m, class_id c, const e_node& n, op_kind f) {
    if (n.kind == f) {
        if (!same_shape(m, n.children[0], n.children[1])) return;
        each(m, n.children[0], op_kind::concat, [&](const e_node& a) {
            if (a.children.size() != 2) return;
            each(m, n.children[1], op_kind::concat, [&](const e_node& b) {
                if (b.attrs != a.attrs || b.children.size() != 2 || !same_shape(m, a.children[0], b.children[0]))
                    return;
                m.emit(c, m.op(op_kind::concat, a.attrs,
                               {m.op(f, n.attrs, {a.children[0], b.children[0]}),
                                m.op(f, n.attrs, {a.children[1], b.children[1]})}));
            });
        });
        return;
    }
    if (n.children.size() != 2) return;
    each(m, n.children[0], f, [&](const e_node& a) {
        if (!same_shape(m, a.children[0], a.children[1]) || !same_shape(m, a.children[0], n.children[0])) return;
        each(m, n.children[1], f, [&](const e_node& b) {
            if (!same_shape(m, b.children[0], b.children[1]) || !same_shape(m, b.children[0], n.children[1])) return;
            m.emit(c, m.op(f, a.attrs,
                           {m.op(op_kind::concat, n.attrs, {a.children[0], b.children[0]}),
                            m.op(op_kind::concat, n.attrs, {a.children[1], b.children[1]})}));
        });
    });
}
inline void ewadd_concat(matcher& m, class_id c, const e_node& n) { elementwise_concat(m, c, n, op_kind::ewadd); }
inline void ewmul_concat(matcher& m, class_id c, const e_node& n) { elementwise_concat(m, c, n, op_kind::ewmul); }

inline void concat_assoc(matcher& m, class_id c, const e_node& n) { associate(m, c, n); }

/// split{a,[p,q]}(concat{a}(x,y)) = x, y when x has p and y has q along a.
inline void split_concat(matcher& m, class_id c, const e_node& n) {
    const auto& sizes = m.at(n).get_ints(attr_id::sizes);
    if (sizes.size() != 2) return;
    const auto a = axis(m, n, n.children[0]);
    each(m, n.children[0], op_kind::concat, [&](const e_node& k) {
        if (k.children.size() != 2 || concat_axis(m, k, n.children[0]) != a) return;
        const auto sa = static_cast<std::size_t>(a);
        if (m.g.shape(k.children[0])[sa] == sizes[0] && m.g.shape(k.children[1])[sa] == sizes[1])
            m.emit(c, k.children[n.index]);
    });
}

/// concat{a}(split{a}(x)#0, split{a}(x)#1) = x for a split into two.
inline void concat_split(matcher& m, class_id c, const e_node& n) {
    if (n.children.size() != 2) return;
    const auto a = concat_axis(m, n, c);
    each(m, n.children[0], op_kind::split, [&](const e_node& s) {
        if (s.index != 0 || m.at(s).get_ints(attr_id::sizes).size() != 2 || axis(m, s, s.children[0]) != a) return;
        for (const auto& t : m.g.nodes(n.children[1]))
            if (t.kind == op_kind::split && t.index == 1 && t.attrs == s.attrs && t.children == s.children)
                m.emit(c, s.children[0]);
    });
}

/// conv2d{stride 1, same, dilation 1}(x, enlarge(w)) = conv2d(x, w): the zero ring adds nothing and
/// SAME padding grows by half the ring on each side, so every tap reads the same input cell.
inline void conv2d_enlarge(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    if (at.get_ints(attr_id::stride) != ints{1, 1} || at.get_ints(attr_id::dilation) != ints{1, 1} ||
        at.get_int(attr_id::padding) != static_cast<std::int64_t>(ops::padding_mode::same))
        return;
    each(m, n.children[1], op_kind::enlarge, [&](const e_node& e) {
        m.emit(c, m.op(op_kind::conv2d, n.attrs, {n.children[0], e.children[0]}));
    });
}

/// conv2d{stride 1, same, dilation 1, none}(x, const_iconv) = x (groups 1): only the center tap is 1.
inline void conv2d_iconv(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    if (act(m, n) != 0 || at.get_ints(attr_id::stride) != ints{1, 1} || at.get_ints(attr_id::dilation) != ints{1, 1} ||
        at.get_int(attr_id::padding) != static_cast<std::int64_t>(ops::padding_mode::same) ||
        !dense_conv(m, n.children[0], n.children[1]))
        return;
    each(m, n.children[1], op_kind::const_iconv, [&](const e_node&) { m.emit(c, n.children[0]); });
}

/// avgpool2d{k, s, valid}(x) = conv2d{s, valid}(x, const_pool[C,1,k]): with VALID windows every
/// window covers k cells. Not with SAME: our average excludes padding (TensorFlow's
/// count_include_pad = false), so border windows divide by fewer cells than the kernel's 1/(kh*kw).
inline void pool_as_conv(matcher& m, class_id c, const e_node& n) {
    const auto valid = static_cast<std::int64_t>(ops::padding_mode::valid);
    if (n.kind == op_kind::avgpool2d) {
        const auto& at = m.at(n);
        if (at.get_int(attr_id::padding) != valid) return;
        const auto& k = at.get_ints(attr_id::kernel);
        const term_ref w = m.op(
            op_kind::const_pool,
            m.attrs(op_kind::const_pool, {{attr_id::shape, ints{m.g.shape(n.children[0])[1], 1, k[0], k[1]}}}), {});
        m.emit(c, m.op(op_kind::conv2d,
                       m.attrs(op_kind::conv2d, {{attr_id::stride, at.get(attr_id::stride)},
                                                 {attr_id::padding, valid},
                                                 {attr_id::activation, at.get(attr_id::activation)}}),
                       {n.children[0], w}));
        return;
    }
    const auto& at = m.at(n);
    if (at.get_int(attr_id::padding) != valid || at.get_ints(attr_id::dilation) != ints{1, 1}) return;
    const auto& ws = m.g.shape(n.children[1]);
    if (ws[1] != 1 || ws[0] != m.g.shape(n.children[0])[1]) return;
    each(m, n.children[1], op_kind::const_pool, [&](const e_node&) {
        m.emit(c, m.op(op_kind::avgpool2d,
                       m.attrs(op_kind::avgpool2d, {{attr_id::kernel, ints{ws[2], ws[3]}},
                                                    {attr_id::stride, at.get(attr_id::stride)},
                                                    {attr_id::padding, valid},
                                                    {attr_id::activation, at.get(attr_id::activation)}}),
                       {n.children[0]}));
    });
}

/// conv2d{padding=same}(x,w) = conv2d{padding=valid}(x,w) for a 1x1 kernel: SAME pads nothing then.
inline void conv2d_pointwise_padding(matcher& m, class_id c, const e_node& n) {
    const auto& ws = m.g.shape(n.children[1]);
    if (ws[2] != 1 || ws[3] != 1) return;
    ops::attribute_map other = m.at(n);
    other.set(attr_id::padding, 1 - other.get_int(attr_id::padding));
    m.emit(c, m.op(op_kind::conv2d, m.g.intern(other), {n.children[0], n.children[1]}));
}

/// avgpool2d(conv2d{stride 1}(x,w)) = conv2d(avgpool2d(x),w) for a 1x1 kernel, groups 1, no
/// activation on either: mixing channels pixel by pixel commutes with averaging each channel.
inline void conv2d_pointwise_avgpool(matcher& m, class_id c, const e_node& n) {
    auto pointwise = [&](const e_node& k) {
        const auto& at = m.at(k);
        const auto& ws = m.g.shape(k.children[1]);
        return ws[2] == 1 && ws[3] == 1 && at.get_ints(attr_id::stride) == ints{1, 1} && act(m, k) == 0 &&
               dense_conv(m, k.children[0], k.children[1]);
    };
    if (n.kind == op_kind::avgpool2d) {
        if (act(m, n) != 0) return;
        each(m, n.children[0], op_kind::conv2d, [&](const e_node& k) {
            if (pointwise(k))
                m.emit(c, m.op(op_kind::conv2d, k.attrs,
                               {m.op(op_kind::avgpool2d, n.attrs, {k.children[0]}), k.children[1]}));
        });
        return;
    }
    if (!pointwise(n)) return;
    each(m, n.children[0], op_kind::avgpool2d, [&](const e_node& p) {
        if (act(m, p) == 0)
            m.emit(c,
                   m.op(op_kind::avgpool2d, p.attrs, {m.op(op_kind::conv2d, n.attrs, {p.children[0], n.children[1]})}));
    });
}

/// concat{a}(concat{b}(x,y), concat{b}(z,u)) = concat{b}(concat{a}(x,z), concat{a}(y,u)) for a != b
/// when x and z have one extent along b: the two ways to assemble a block matrix.
inline void concat_interchange(matcher& m, class_id c, const e_node& n) {
    if (n.children.size() != 2) return;
    const auto a = concat_axis(m, n, c);
    each(m, n.children[0], op_kind::concat, [&](const e_node& l) {
        if (l.children.size() != 2) return;
        const auto b = concat_axis(m, l, n.children[0]);
        if (b == a) return;
        each(m, n.children[1], op_kind::concat, [&](const e_node& r) {
            if (r.attrs != l.attrs || r.children.size() != 2) return;
            const auto sb = static_cast<std::size_t>(b);
            if (m.g.shape(l.children[0])[sb] != m.g.shape(r.children[0])[sb]) return;
            m.emit(c, m.op(op_kind::concat, l.attrs,
                           {m.op(op_kind::concat, n.attrs, {l.children[0], r.children[0]}),
                            m.op(op_kind::concat, n.attrs, {l.children[1], r.children[1]})}));
        });
    });
}

/// conv2d{stride s}(conv2d{stride 1, valid}(x,w), v) = conv2d(conv2d{stride s, valid}(x,w), v) for
/// a 1x1 v with dilation 1: a strided 1x1 conv keeps every s-th pixel, and keeping every s-th
/// output of a VALID conv is that conv with stride s (not so for SAME: its padding depends on s).
inline void conv2d_stride_inward(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    const auto& vs = m.g.shape(n.children[1]);
    if (vs[2] != 1 || vs[3] != 1 || at.get_ints(attr_id::stride) == ints{1, 1} ||
        at.get_ints(attr_id::dilation) != ints{1, 1})
        return;
    each(m, n.children[0], op_kind::conv2d, [&](const e_node& k) {
        const auto& ka = m.at(k);
        if (ka.get_ints(attr_id::stride) != ints{1, 1} ||
            ka.get_int(attr_id::padding) != static_cast<std::int64_t>(ops::padding_mode::valid))
            return;
        ops::attribute_map inner = ka, outer = at;
        inner.set(attr_id::stride, at.get(attr_id::stride));
        outer.set(attr_id::stride, ints{1, 1});
        m.emit(c, m.op(op_kind::conv2d, m.g.intern(outer),
                       {m.op(op_kind::conv2d, m.g.intern(inner), {k.children[0], k.children[1]}), n.children[1]}));
    });
}

/// ewmul(s,t) = smul(s,t) for scalars of one shape.
inline void ewmul_scalar(matcher& m, class_id c, const e_node& n) {
    if (scalar(m, n.children[0]) && same_shape(m, n.children[0], n.children[1]))
        m.emit(c, m.op(op_kind::smul, m.attrs(op_kind::smul), {n.children[0], n.children[1]}));
}

/// conv2d(concat{1}(x,y), concat{0}(w,v)) = concat{1}(conv2d(x,w), conv2d(y,v)) when the grouped
/// conv's groups fall whole into x and y: x and y have whole groups of input channels, and w, v
/// the matching output channels (the shape rule derives groups from the kernel's channels).
inline void conv2d_concat_groups(matcher& m, class_id c, const e_node& n) {
    auto fits = [&](class_id x, class_id y, class_id w, class_id v) {
        const auto cg = m.g.shape(w)[1];
        if (m.g.shape(v)[1] != cg) return false;
        const auto cx = m.g.shape(x)[1], cy = m.g.shape(y)[1], ow = m.g.shape(w)[0], ov = m.g.shape(v)[0];
        if (cx % cg != 0 || cy % cg != 0) return false;
        const auto gx = cx / cg, gy = cy / cg;
        return ow % gx == 0 && ov % gy == 0 && ow / gx == ov / gy;
    };
    if (n.kind == op_kind::conv2d) {
        each(m, n.children[0], op_kind::concat, [&](const e_node& xs) {
            if (xs.children.size() != 2 || concat_axis(m, xs, n.children[0]) != 1) return;
            each(m, n.children[1], op_kind::concat, [&](const e_node& ws) {
                if (ws.children.size() != 2 || concat_axis(m, ws, n.children[1]) != 0) return;
                if (!fits(xs.children[0], xs.children[1], ws.children[0], ws.children[1])) return;
                m.emit(c, m.op(op_kind::concat, xs.attrs,
                               {m.op(op_kind::conv2d, n.attrs, {xs.children[0], ws.children[0]}),
                                m.op(op_kind::conv2d, n.attrs, {xs.children[1], ws.children[1]})}));
            });
        });
        return;
    }
    if (n.children.size() != 2 || m.g.shape(c).rank() != 4 || concat_axis(m, n, c) != 1) return;
    each(m, n.children[0], op_kind::conv2d, [&](const e_node& a) {
        each(m, n.children[1], op_kind::conv2d, [&](const e_node& b) {
            if (a.attrs != b.attrs || !fits(a.children[0], b.children[0], a.children[1], b.children[1])) return;
            m.emit(c, m.op(op_kind::conv2d, a.attrs,
                           {m.op(op_kind::concat, n.attrs, {a.children[0], b.children[0]}),
                            m.op(op_kind::concat, concat_on(m, 0), {a.children[1], b.children[1]})}));
        });
    });
}

/// A conv with the identity kernel of size k (any stride s, SAME or VALID) picks one cell per
/// window, its center; the window's placement depends only on k, s, the padding and the input
/// extent. So after a stride-1 SAME window op of window k (centered, so the picked center's window
/// is the outer window itself) it equals that op with the outer stride and padding:
/// conv2d{p,s}(conv2d{same}(x,w), const_iconv) = conv2d{p,s}(x,w) (w enlarged to k when smaller),
/// conv2d{p,s}(avgpool2d{same}(x), const_iconv) = avgpool2d{p,s}(x). Activations: the inner's and
/// then the outer's, when at most one is not none or both are relu.
inline std::int64_t combined_activation(std::int64_t inner, std::int64_t outer) {
    if (inner == 0) return outer;
    if (outer == 0 || (outer == inner && inner == static_cast<std::int64_t>(ops::activation::relu))) return inner;
    return -1;
}
inline bool identity_kernel(const matcher& m, class_id x, class_id w) {
    for (const auto& k : m.g.nodes(w))
        if (k.kind == op_kind::const_iconv) return dense_conv(m, x, w);
    return false;
}
inline void conv2d_iconv_crop(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    const auto same = static_cast<std::int64_t>(ops::padding_mode::same);
    if (at.get_ints(attr_id::dilation) != ints{1, 1} || !identity_kernel(m, n.children[0], n.children[1])) return;
    const auto& ks = m.g.shape(n.children[1]);
    const std::int64_t k0 = ks[2], k1 = ks[3];
    for (const auto& p : m.g.nodes(n.children[0])) {
        if (p.kind != op_kind::conv2d && p.kind != op_kind::avgpool2d) continue;
        const auto& pa = m.at(p);
        if (pa.get_int(attr_id::padding) != same || pa.get_ints(attr_id::stride) != ints{1, 1}) continue;
        const auto a = combined_activation(act(m, p), act(m, n));
        if (a < 0) continue;
        ops::attribute_map out = p.kind == op_kind::conv2d ? at : pa;
        out.set(attr_id::activation, a);
        out.set(attr_id::stride, at.get(attr_id::stride));
        out.set(attr_id::padding, at.get(attr_id::padding));
        if (p.kind == op_kind::conv2d) {
            if (pa.get_ints(attr_id::dilation) != ints{1, 1}) continue;
            const auto& ws = m.g.shape(p.children[1]);
            if (ws[2] > k0 || ws[3] > k1 || (k0 - ws[2]) % 2 != 0 || (k1 - ws[3]) % 2 != 0) continue;
            const term_ref w =
                ws[2] == k0 && ws[3] == k1
                    ? term_ref{p.children[1]}
                    : m.op(op_kind::enlarge, m.attrs(op_kind::enlarge, {{attr_id::kernel, ints{k0, k1}}}),
                           {p.children[1]});
            m.emit(c, m.op(op_kind::conv2d, m.g.intern(out), {p.children[0], w}));
        } else if (pa.get_ints(attr_id::kernel) == ints{k0, k1}) {
            m.emit(c, m.op(op_kind::avgpool2d, m.g.intern(out), {p.children[0]}));
        }
    }
}

/// conv2d{act}(relu(x), const_iconv) = conv2d{relu}(x, const_iconv) for act none or relu: the
/// identity kernel only moves cells (and pads zeros, which relu keeps).
inline void conv2d_iconv_relu(matcher& m, class_id c, const e_node& n) {
    if (!identity_kernel(m, n.children[0], n.children[1])) return;
    const auto relu = static_cast<std::int64_t>(ops::activation::relu);
    const auto a = act(m, n);
    if (a == 0)
        each(m, n.children[0], op_kind::relu, [&](const e_node& r) {
            m.emit(c, m.op(op_kind::conv2d, with_activation(m, n, relu), {r.children[0], n.children[1]}));
        });
    else if (a == relu)
        m.emit(c, m.op(op_kind::conv2d, with_activation(m, n, 0),
                       {m.op(op_kind::relu, m.attrs(op_kind::relu), {n.children[0]}), n.children[1]}));
}

/// conv2d{stride=s}(conv2d{padding=p,stride=t}(x,const_iconv), w) = conv2d{padding=p,stride=s*t}(x,enlarge(w))
/// for a 1x1 w, groups 1, dilation 1, inner activation none, and s = 1 when p is same: the picked
/// centers are the taps of w enlarged to the identity kernel's size.
inline void conv2d_iconv_pointwise(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    const auto& ws = m.g.shape(n.children[1]);
    if (ws[2] != 1 || ws[3] != 1 || at.get_ints(attr_id::dilation) != ints{1, 1} ||
        !dense_conv(m, n.children[0], n.children[1]))
        return;
    const auto& s = at.get_ints(attr_id::stride);
    each(m, n.children[0], op_kind::conv2d, [&](const e_node& p) {
        const auto& pa = m.at(p);
        if (act(m, p) != 0 || pa.get_ints(attr_id::dilation) != ints{1, 1} ||
            !identity_kernel(m, p.children[0], p.children[1]))
            return;
        const auto& t = pa.get_ints(attr_id::stride);
        const bool valid = pa.get_int(attr_id::padding) == static_cast<std::int64_t>(ops::padding_mode::valid);
        if (!valid && s != ints{1, 1}) return;
        const auto& ks = m.g.shape(p.children[1]);
        ops::attribute_map out = pa;
        out.set(attr_id::stride, ints{s[0] * t[0], s[1] * t[1]});
        out.set(attr_id::activation, at.get(attr_id::activation));
        m.emit(c, m.op(op_kind::conv2d, m.g.intern(out),
                       {p.children[0],
                        m.op(op_kind::enlarge, m.attrs(op_kind::enlarge, {{attr_id::kernel, ints{ks[2], ks[3]}}}),
                             {n.children[1]})}));
    });
}

/// The other way: conv2d{padding=p,stride=t}(x,enlarge(w)) = conv2d(conv2d{padding=p,stride=t}(x,const_iconv),w)
/// for a 1x1 w, groups 1, dilation 1 (the identity kernel only where an enlarged 1x1 kernel is).
inline void conv2d_enlarged_pointwise(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    if (at.get_ints(attr_id::dilation) != ints{1, 1}) return;
    const auto& ks = m.g.shape(n.children[1]);
    const auto ch = m.g.shape(n.children[0])[1];
    each(m, n.children[1], op_kind::enlarge, [&](const e_node& e) {
        const auto& ws = m.g.shape(e.children[0]);
        if (ws[2] != 1 || ws[3] != 1 || ws[1] != ch) return;
        ops::attribute_map inner = at, outer = at;
        inner.set(attr_id::activation, std::int64_t{0});
        outer.set(attr_id::stride, ints{1, 1});
        const term_ref id = m.op(op_kind::const_iconv,
                                 m.attrs(op_kind::const_iconv, {{attr_id::shape, ints{ch, ch, ks[2], ks[3]}}}), {});
        m.emit(c, m.op(op_kind::conv2d, m.g.intern(outer),
                       {m.op(op_kind::conv2d, m.g.intern(inner), {n.children[0], id}), e.children[0]}));
    });
}

/// conv2d{stride=s}(f(A,B), v) = conv2d(f(A_s,B_s), v) for a 1x1 v and f elementwise (ewadd, ewmul,
/// relu), where A_s is A's stride-1 VALID conv with stride s: a strided 1x1 conv keeps every s-th
/// pixel, which commutes with elementwise ops (the two-op case is conv2d-stride-inward).
inline void conv2d_stride_elementwise(matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    const auto& vs = m.g.shape(n.children[1]);
    if (vs[2] != 1 || vs[3] != 1 || at.get_ints(attr_id::stride) == ints{1, 1} ||
        at.get_ints(attr_id::dilation) != ints{1, 1})
        return;
    const auto valid = static_cast<std::int64_t>(ops::padding_mode::valid);
    auto strided = [&](class_id a, auto&& f) {
        for (const auto& k : m.g.nodes(a)) {
            if (k.kind != op_kind::conv2d) continue;
            const auto& ka = m.at(k);
            if (ka.get_ints(attr_id::stride) != ints{1, 1} || ka.get_int(attr_id::padding) != valid) continue;
            ops::attribute_map inner = ka;
            inner.set(attr_id::stride, at.get(attr_id::stride));
            f(k, m.g.intern(inner));
        }
    };
    ops::attribute_map outer_map = at;
    outer_map.set(attr_id::stride, ints{1, 1});
    const std::uint32_t outer = m.g.intern(outer_map);
    for (const auto& e : m.g.nodes(n.children[0])) {
        if (e.kind == op_kind::relu) {
            strided(e.children[0], [&](const e_node& k, std::uint32_t ia) {
                m.emit(c,
                       m.op(op_kind::conv2d, outer,
                            {m.op(op_kind::relu, e.attrs, {m.op(op_kind::conv2d, ia, {k.children[0], k.children[1]})}),
                             n.children[1]}));
            });
        } else if (e.kind == op_kind::ewadd || e.kind == op_kind::ewmul) {
            if (!same_shape(m, e.children[0], e.children[1])) continue;
            strided(e.children[0], [&](const e_node& k0, std::uint32_t ia0) {
                strided(e.children[1], [&](const e_node& k1, std::uint32_t ia1) {
                    const term_ref l = m.op(op_kind::conv2d, ia0, {k0.children[0], k0.children[1]});
                    const term_ref r = m.op(op_kind::conv2d, ia1, {k1.children[0], k1.children[1]});
                    m.emit(c, m.op(op_kind::conv2d, outer, {m.op(e.kind, e.attrs, {l, r}), n.children[1]}));
                });
            });
        }
    }
}

/// f(enlarge(w), enlarge(v)) = enlarge(f(w,v)) for ewadd and ewmul, and smul(enlarge(w),s) =
/// enlarge(smul(w,s)): the ring of zeros stays zero.
inline void enlarge_elementwise(matcher& m, class_id c, const e_node& n) {
    if (n.kind == op_kind::enlarge) {
        for (const auto& e : m.g.nodes(n.children[0])) {
            if (e.kind == op_kind::ewadd || e.kind == op_kind::ewmul) {
                if (same_shape(m, e.children[0], e.children[1]))
                    m.emit(c, m.op(e.kind, e.attrs,
                                   {m.op(op_kind::enlarge, n.attrs, {e.children[0]}),
                                    m.op(op_kind::enlarge, n.attrs, {e.children[1]})}));
            } else if (e.kind == op_kind::smul && scalar(m, e.children[1])) {
                m.emit(c,
                       m.op(op_kind::smul, e.attrs, {m.op(op_kind::enlarge, n.attrs, {e.children[0]}), e.children[1]}));
            }
        }
        return;
    }
    if (n.kind == op_kind::smul) {
        if (!scalar(m, n.children[1])) return;
        each(m, n.children[0], op_kind::enlarge, [&](const e_node& e) {
            m.emit(c, m.op(op_kind::enlarge, e.attrs, {m.op(op_kind::smul, n.attrs, {e.children[0], n.children[1]})}));
        });
        return;
    }
    each(m, n.children[0], op_kind::enlarge, [&](const e_node& a) {
        each(m, n.children[1], op_kind::enlarge, [&](const e_node& b) {
            if (a.attrs == b.attrs && same_shape(m, a.children[0], b.children[0]))
                m.emit(c, m.op(op_kind::enlarge, a.attrs, {m.op(n.kind, n.attrs, {a.children[0], b.children[0]})}));
        });
    });
}

inline void relu_idempotent(matcher& m, class_id c, const e_node& n) {
    each(m, n.children[0], op_kind::relu, [&](const e_node&) { m.emit(c, n.children[0]); });
}

}  // namespace detail

/// The axioms, each stated once. Pattern variables: x, y, z, u tensors, s, t scalars, w, v kernels.
inline constexpr std::array axioms{
    axiom{"ewadd-comm", "ewadd(x,y) = ewadd(y,x)", kinds_mask({ops::op_kind::ewadd}), detail::commute},
    axiom{"ewadd-assoc", "ewadd(ewadd(x,y),z) = ewadd(x,ewadd(y,z))", kinds_mask({ops::op_kind::ewadd}),
          detail::ewadd_assoc},
    axiom{"ewmul-comm", "ewmul(x,y) = ewmul(y,x)", kinds_mask({ops::op_kind::ewmul}), detail::commute},
    axiom{"ewmul-assoc", "ewmul(ewmul(x,y),z) = ewmul(x,ewmul(y,z))", kinds_mask({ops::op_kind::ewmul}),
          detail::ewadd_assoc},
    axiom{"ewmul-distrib", "ewmul(ewadd(x,y),z) = ewadd(ewmul(x,z),ewmul(y,z))",
          kinds_mask({ops::op_kind::ewmul, ops::op_kind::ewadd}), detail::ewmul_distrib},
    axiom{"ewmul-one", "ewmul(x,const_one) = x when const_one has x's shape", kinds_mask({ops::op_kind::ewmul}),
          detail::ewmul_one},
    axiom{"smul-assoc", "smul(smul(x,s),t) = smul(x,smul(s,t))", kinds_mask({ops::op_kind::smul}), detail::smul_assoc},
    axiom{"smul-scalar-comm", "smul(s,t) = smul(t,s) when s and t are scalars of one shape",
          kinds_mask({ops::op_kind::smul}), detail::smul_scalar_comm},
    axiom{"smul-distrib",
          "smul(ewadd(x,y),s) = ewadd(smul(x,s),smul(y,s)), smul(x,ewadd(s,t)) = ewadd(smul(x,s),smul(x,t)) "
          "when the summands have one shape",
          kinds_mask({ops::op_kind::smul, ops::op_kind::ewadd}), detail::smul_distrib},
    axiom{"smul-ewmul", "ewmul(smul(x,s),y) = smul(ewmul(x,y),s)",
          kinds_mask({ops::op_kind::ewmul, ops::op_kind::smul}), detail::smul_ewmul},
    axiom{"smul-matmul", "matmul(smul(x,s),y) = smul(matmul(x,y),s) = matmul(x,smul(y,s)) when activation=none",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::smul}), detail::smul_matmul},
    axiom{"smul-conv2d", "conv2d(smul(x,s),w) = smul(conv2d(x,w),s) = conv2d(x,smul(w,s)) when activation=none",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::smul}), detail::smul_conv2d},
    axiom{"smul-transpose", "transpose(smul(x,s)) = smul(transpose(x),s)",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::smul}), detail::smul_transpose},
    axiom{"smul-avgpool2d", "avgpool2d(smul(x,s)) = smul(avgpool2d(x),s) when activation=none",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::smul}), detail::smul_avgpool},
    axiom{"transpose-involution", "transpose{perm=p}(transpose{perm=q}(x)) = x when q after p is the identity",
          kinds_mask({ops::op_kind::transpose}), detail::transpose_involution},
    axiom{"transpose-ewadd", "transpose(ewadd(x,y)) = ewadd(transpose(x),transpose(y)) when x and y have one shape",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::ewadd}), detail::transpose_ewadd},
    axiom{"transpose-ewmul", "transpose(ewmul(x,y)) = ewmul(transpose(x),transpose(y)) when x and y have one shape",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::ewmul}), detail::transpose_ewmul},
    axiom{"transpose-relu", "transpose(relu(x)) = relu(transpose(x))",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::relu}), detail::transpose_relu},
    axiom{"transpose-matmul", "transpose(matmul(x,y)) = matmul(transpose(y),transpose(x)) when x, y are matrices",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::matmul}), detail::transpose_matmul},
    axiom{"transpose-concat",
          "transpose{perm=p}(concat{axis=p[j]}(x,y)) = concat{axis=j}(transpose{perm=p}(x),transpose{perm=p}(y))",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::concat}), detail::transpose_concat},
    axiom{"transpose-const",
          "transpose(const_imm) = const_imm, transpose(const_one) = const_one of the transposed shape",
          kinds_mask({ops::op_kind::transpose}), detail::transpose_const},
    axiom{"matmul-assoc", "matmul(matmul(x,y),z) = matmul(x,matmul(y,z)) when activation=none",
          kinds_mask({ops::op_kind::matmul}), detail::matmul_assoc},
    axiom{"matmul-linear",
          "matmul(ewadd(x,y),z) = ewadd(matmul(x,z),matmul(y,z)), likewise in the second input, when activation=none",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::ewadd}), detail::matmul_linear},
    axiom{"matmul-relu", "matmul{activation=relu}(x,y) = relu(matmul(x,y))",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::relu}), detail::matmul_relu},
    axiom{"matmul-imm", "matmul(x,const_imm) = x = matmul(const_imm,x) when activation=none",
          kinds_mask({ops::op_kind::matmul}), detail::matmul_imm},
    axiom{"matmul-concat-outer",
          "matmul(concat{axis=-2}(x,y),z) = concat{axis=-2}(matmul(x,z),matmul(y,z)), matmul(x,concat{axis=-1}(y,z)) = "
          "concat{axis=-1}(matmul(x,y),matmul(x,z)), batched or not (rows and columns count from the end)",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::concat}), detail::matmul_concat_outer},
    axiom{"matmul-concat-inner",
          "matmul(concat{axis=1}(x,y),concat{axis=0}(z,u)) = ewadd(matmul(x,z),matmul(y,u)) when x has z's rows as "
          "columns, matrices, activation=none",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::ewadd}), detail::matmul_concat_inner},
    axiom{"conv2d-linear",
          "conv2d(ewadd(x,y),w) = ewadd(conv2d(x,w),conv2d(y,w)), likewise in the kernel, when activation=none",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::ewadd}), detail::conv2d_linear},
    axiom{"conv2d-relu", "conv2d{activation=relu}(x,w) = relu(conv2d(x,w))",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::relu}), detail::conv2d_relu},
    axiom{"conv2d-concat-out", "conv2d(x,concat{axis=0}(w,v)) = concat{axis=1}(conv2d(x,w),conv2d(x,v)) when groups=1",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::concat}), detail::conv2d_concat_out},
    axiom{"conv2d-concat-in",
          "conv2d(concat{axis=1}(x,y),concat{axis=1}(w,v)) = ewadd(conv2d(x,w),conv2d(y,v)) when groups=1, "
          "activation=none",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::ewadd}), detail::conv2d_concat_in},
    axiom{"conv2d-concat-batch", "conv2d(concat{axis=0}(x,y),w) = concat{axis=0}(conv2d(x,w),conv2d(y,w))",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::concat}), detail::conv2d_concat_batch},
    axiom{"conv2d-enlarge", "conv2d(x,enlarge(w)) = conv2d(x,w) when stride=[1,1], padding=same, dilation=[1,1]",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_enlarge},
    axiom{"conv2d-iconv",
          "conv2d(x,const_iconv) = x when stride=[1,1], padding=same, dilation=[1,1], activation=none, groups=1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv},
    axiom{"conv2d-pointwise-padding", "conv2d{padding=same}(x,w) = conv2d{padding=valid}(x,w) when w is 1x1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_pointwise_padding},
    axiom{"conv2d-pointwise-avgpool2d",
          "avgpool2d(conv2d(x,w)) = conv2d(avgpool2d(x),w) when w is 1x1, stride=[1,1], groups=1, activation=none on "
          "both",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::conv2d}), detail::conv2d_pointwise_avgpool},
    axiom{"concat-interchange",
          "concat{axis=a}(concat{axis=b}(x,y),concat{axis=b}(z,u)) = "
          "concat{axis=b}(concat{axis=a}(x,z),concat{axis=a}(y,u)) "
          "when a != b and x, z have one extent along b",
          kinds_mask({ops::op_kind::concat}), detail::concat_interchange},
    axiom{
        "conv2d-stride-inward",
        "conv2d{stride=s}(conv2d{padding=valid}(x,w),v) = conv2d(conv2d{stride=s,padding=valid}(x,w),v) when v is 1x1, "
        "dilation=[1,1] on the outer, stride=[1,1] on the inner",
        kinds_mask({ops::op_kind::conv2d}), detail::conv2d_stride_inward},
    axiom{"ewmul-scalar", "ewmul(s,t) = smul(s,t) when s and t are scalars of one shape",
          kinds_mask({ops::op_kind::ewmul}), detail::ewmul_scalar},
    axiom{"conv2d-concat-groups",
          "conv2d(concat{axis=1}(x,y),concat{axis=0}(w,v)) = concat{axis=1}(conv2d(x,w),conv2d(y,v)) when the groups "
          "fall "
          "whole into x, y and w, v",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::concat}), detail::conv2d_concat_groups},
    axiom{"conv2d-iconv-crop",
          "conv2d{padding=p,stride=s}(conv2d{padding=same}(x,w),const_iconv) = conv2d{padding=p,stride=s}(x,w), "
          "conv2d{padding=p,stride=s}(avgpool2d{padding=same}(x),const_iconv) = avgpool2d{padding=p,stride=s}(x) when "
          "the "
          "inner op has stride=[1,1] and the window size of const_iconv (w enlarged to it), groups=1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv_crop},
    axiom{"conv2d-iconv-relu", "conv2d(relu(x),const_iconv) = conv2d{activation=relu}(x,const_iconv) when groups=1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv_relu},
    axiom{"conv2d-iconv-pointwise",
          "conv2d{stride=s}(conv2d{padding=p,stride=t}(x,const_iconv),w) = conv2d{padding=p,stride=s*t}(x,enlarge(w)) "
          "when w "
          "is 1x1, groups=1, inner activation=none, and s=[1,1] when p=same",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv_pointwise},
    axiom{
        "conv2d-enlarged-pointwise",
        "conv2d{padding=p,stride=t}(x,enlarge(w)) = conv2d(conv2d{padding=p,stride=t}(x,const_iconv),w) when w is 1x1, "
        "groups=1, dilation=[1,1] (conv2d-iconv-pointwise the other way)",
        kinds_mask({ops::op_kind::conv2d}), detail::conv2d_enlarged_pointwise},
    axiom{"conv2d-stride-elementwise",
          "conv2d{stride=s}(f(conv2d{padding=valid}(x,w),conv2d{padding=valid}(y,u)),v) = "
          "conv2d(f(conv2d{stride=s,padding=valid}(x,w),conv2d{stride=s,padding=valid}(y,u)),v) for f ewadd, ewmul "
          "(likewise relu of one conv) when v is 1x1, dilation=[1,1] on the outer, stride=[1,1] on the inner",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_stride_elementwise},
    axiom{"enlarge-elementwise",
          "ewadd(enlarge(w),enlarge(v)) = enlarge(ewadd(w,v)), likewise ewmul, smul(enlarge(w),s) = enlarge(smul(w,s))",
          kinds_mask({ops::op_kind::enlarge, ops::op_kind::ewadd, ops::op_kind::ewmul, ops::op_kind::smul}),
          detail::enlarge_elementwise},
    axiom{"avgpool2d-as-conv2d",
          "avgpool2d{kernel=k,padding=valid}(x) = conv2d{padding=valid}(x,const_pool{shape=[C,1,k]}) "
          "(not when padding=same: the average excludes padded cells)",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::conv2d}), detail::pool_as_conv},
    axiom{"avgpool2d-linear", "avgpool2d(ewadd(x,y)) = ewadd(avgpool2d(x),avgpool2d(y)) when activation=none",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::ewadd}), detail::avgpool_linear},
    axiom{"avgpool2d-concat",
          "avgpool2d(concat{axis=a}(x,y)) = concat{axis=a}(avgpool2d(x),avgpool2d(y)) when a is 0 or 1",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::concat}), detail::avgpool_concat},
    axiom{"relu-idempotent", "relu(relu(x)) = relu(x)", kinds_mask({ops::op_kind::relu}), detail::relu_idempotent},
    axiom{"relu-concat", "relu(concat(x,y)) = concat(relu(x),relu(y))",
          kinds_mask({ops::op_kind::relu, ops::op_kind::concat}), detail::relu_concat},
    axiom{"smul-concat", "smul(concat(x,y),s) = concat(smul(x,s),smul(y,s))",
          kinds_mask({ops::op_kind::smul, ops::op_kind::concat}), detail::smul_concat},
    axiom{"ewadd-concat", "ewadd(concat(x,y),concat(z,u)) = concat(ewadd(x,z),ewadd(y,u)) when x and z have one shape",
          kinds_mask({ops::op_kind::ewadd, ops::op_kind::concat}), detail::ewadd_concat},
    axiom{"ewmul-concat", "ewmul(concat(x,y),concat(z,u)) = concat(ewmul(x,z),ewmul(y,u)) when x and z have one shape",
          kinds_mask({ops::op_kind::ewmul, ops::op_kind::concat}), detail::ewmul_concat},
    axiom{"concat-assoc", "concat(concat(x,y),z) = concat(x,concat(y,z))", kinds_mask({ops::op_kind::concat}),
          detail::concat_assoc},
    axiom{"split-concat", "split{axis=a,sizes=[p,q]}(concat{axis=a}(x,y))#0 = x, #1 = y when x has p and y q along a",
          kinds_mask({ops::op_kind::split}), detail::split_concat},
    axiom{"concat-split", "concat{axis=a}(split{axis=a}(x)#0,split{axis=a}(x)#1) = x",
          kinds_mask({ops::op_kind::concat}), detail::concat_split},
};

/// The index of the axiom named `name`; axioms.size() when there is none.
constexpr std::size_t find_axiom(std::string_view name) noexcept {
    for (std::size_t i = 0; i < axioms.size(); ++i)
        if (axioms[i].name == name) return i;
    return axioms.size();
}

namespace detail {
consteval bool axiom_names_unique() {
    for (std::size_t i = 0; i < axioms.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (axioms[i].name == axioms[j].name) return false;
    return true;
}
static_assert(axiom_names_unique(), "two axioms share a name");
}  // namespace detail

}  // namespace goopt::subst
