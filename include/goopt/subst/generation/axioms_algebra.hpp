#pragma once
/// @file
/// @brief The code of the algebraic axioms (axioms.hpp states them): commutativity, associativity and
/// distributivity of the elementwise ops, scalar multiplication through linear ops, transpose laws,
/// linearity of matmul, conv2d and pooling, and fused activations. TASO (SOSP'19) Table 2.

#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/egraph.hpp>
#include <goopt/subst/generation/axiom.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace goopt::subst::detail {

inline void ewadd_assoc(axiom_matcher& m, class_id c, const e_node& n) { associate(m, c, n); }

/// ewmul(ewadd(x,y),z) = ewadd(ewmul(x,z),ewmul(y,z)).
inline void ewmul_distrib(axiom_matcher& m, class_id c, const e_node& n) {
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

inline void ewmul_one(axiom_matcher& m, class_id c, const e_node& n) {
    for (int k = 0; k < 2; ++k)
        each(m, n.children[k], op_kind::const_one, [&](const e_node&) {
            if (same_shape(m, n.children[1 - k], c)) m.emit(c, n.children[1 - k]);
        });
}

/// smul(smul(x,s),t) = smul(x,smul(s,t)).
inline void smul_assoc(axiom_matcher& m, class_id c, const e_node& n) {
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

inline void smul_scalar_comm(axiom_matcher& m, class_id c, const e_node& n) {
    if (scalar(m, n.children[0]) && same_shape(m, n.children[0], n.children[1])) commute(m, c, n);
}

/// f(ewadd(x,y), rest) = ewadd(f(x, rest), f(y, rest)) for f linear in input k (activation none
/// when f has one); at an ewadd of two f's that differ only in input k, the other way.
inline void linear_in(axiom_matcher& m, class_id c, const e_node& n, op_kind f, std::size_t k) {
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
inline void scalar_through(axiom_matcher& m, class_id c, const e_node& n, op_kind f, std::size_t k) {
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

inline void smul_distrib(axiom_matcher& m, class_id c, const e_node& n) {
    // smul(., s) is linear in its first input: the ewadd case of linear_in with the scalar fixed
    linear_in(m, c, n, op_kind::smul, 0);
    linear_in(m, c, n, op_kind::smul, 1);
}
inline void smul_ewmul(axiom_matcher& m, class_id c, const e_node& n) { scalar_through(m, c, n, op_kind::ewmul, 0); }
inline void smul_matmul(axiom_matcher& m, class_id c, const e_node& n) {
    scalar_through(m, c, n, op_kind::matmul, 0);
    scalar_through(m, c, n, op_kind::matmul, 1);
}
inline void smul_conv2d(axiom_matcher& m, class_id c, const e_node& n) {
    scalar_through(m, c, n, op_kind::conv2d, 0);
    scalar_through(m, c, n, op_kind::conv2d, 1);
}
inline void smul_transpose(axiom_matcher& m, class_id c, const e_node& n) {
    scalar_through(m, c, n, op_kind::transpose, 0);
}
inline void smul_avgpool(axiom_matcher& m, class_id c, const e_node& n) {
    scalar_through(m, c, n, op_kind::avgpool2d, 0);
}

inline void transpose_involution(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void transpose_elementwise(axiom_matcher& m, class_id c, const e_node& n, op_kind f) {
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
inline void transpose_ewadd(axiom_matcher& m, class_id c, const e_node& n) {
    transpose_elementwise(m, c, n, op_kind::ewadd);
}
inline void transpose_ewmul(axiom_matcher& m, class_id c, const e_node& n) {
    transpose_elementwise(m, c, n, op_kind::ewmul);
}

/// f(g(x)) = g(f(x)) for two unary ops that commute (relu and transpose).
inline void swap_unary(axiom_matcher& m, class_id c, const e_node& n, op_kind other) {
    each(m, n.children[0], other,
         [&](const e_node& l) { m.emit(c, m.op(l.kind, l.attrs, {m.op(n.kind, n.attrs, {l.children[0]})})); });
}
inline void transpose_relu(axiom_matcher& m, class_id c, const e_node& n) {
    swap_unary(m, c, n, n.kind == op_kind::relu ? op_kind::transpose : op_kind::relu);
}

inline bool is_matrix_transpose(const axiom_matcher& m, const e_node& t, class_id c) {
    return m.g.shape(c).rank() == 2 && perm(m, t, 2) == ints{1, 0};
}

/// transpose(matmul(x,y)) = matmul(transpose(y),transpose(x)), rank 2, any fused activation.
inline void transpose_matmul(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void transpose_concat(axiom_matcher& m, class_id c, const e_node& n) {
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

inline void transpose_const(axiom_matcher& m, class_id c, const e_node& n) {
    for (const auto& k : m.g.nodes(n.children[0])) {
        if (k.kind == op_kind::const_imm && is_matrix_transpose(m, n, c))
            m.emit(c, m.op(op_kind::const_imm, k.attrs, {}));
        if (k.kind == op_kind::const_one) {
            ints s(m.g.shape(c).begin(), m.g.shape(c).end());
            m.emit(c, m.op(op_kind::const_one, m.attrs(op_kind::const_one, {{attr_id::shape, s}}), {}));
        }
    }
}

inline void matmul_assoc(axiom_matcher& m, class_id c, const e_node& n) {
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

inline void matmul_linear(axiom_matcher& m, class_id c, const e_node& n) {
    linear_in(m, c, n, op_kind::matmul, 0);
    linear_in(m, c, n, op_kind::matmul, 1);
}
inline void conv2d_linear(axiom_matcher& m, class_id c, const e_node& n) {
    linear_in(m, c, n, op_kind::conv2d, 0);
    linear_in(m, c, n, op_kind::conv2d, 1);
}
inline void avgpool_linear(axiom_matcher& m, class_id c, const e_node& n) { linear_in(m, c, n, op_kind::avgpool2d, 0); }

/// The op kind that applies fused activation `a` on its own (relu, sigmoid, tanh, gelu); input for none.
inline op_kind activation_op(std::int64_t a) {
    switch (static_cast<ops::activation>(a)) {
        case ops::activation::relu:
            return op_kind::relu;
        case ops::activation::sigmoid:
            return op_kind::sigmoid;
        case ops::activation::tanh:
            return op_kind::tanh;
        case ops::activation::gelu:
            return op_kind::gelu;
        case ops::activation::none:
            break;
    }
    return op_kind::input;
}
/// The fused activation an op kind applies on its own; 0 (none) for every other kind.
inline std::int64_t activation_of_op(op_kind k) {
    for (std::int64_t a = 1; a <= static_cast<std::int64_t>(ops::activation::gelu); ++a)
        if (activation_op(a) == k) return a;
    return 0;
}
/// `f` with attributes `attrs` over the children of `n` (one to three of them).
inline term_ref over_children(axiom_matcher& m, op_kind f, std::uint32_t attrs, const e_node& n) {
    if (n.children.size() == 1) return m.op(f, attrs, {n.children[0]});
    if (n.children.size() == 2) return m.op(f, attrs, {n.children[0], n.children[1]});
    return m.op(f, attrs, {n.children[0], n.children[1], n.children[2]});
}

/// f{act}(...) = act(f{none}(...)) for every fused activation: what the attribute means.
inline void fused_activation(axiom_matcher& m, class_id c, const e_node& n, op_kind f) {
    if (n.kind == f) {
        const op_kind k = activation_op(act(m, n));
        if (k == op_kind::input) return;
        m.emit(c, m.op(k, m.attrs(k), {over_children(m, f, with_activation(m, n, 0), n)}));
        return;
    }
    const std::int64_t a = activation_of_op(n.kind);
    if (a == 0 || n.attrs != m.attrs(n.kind)) return;
    each(m, n.children[0], f, [&](const e_node& p) {
        if (act(m, p) == 0) m.emit(c, over_children(m, f, with_activation(m, p, a), p));
    });
}
inline void matmul_activation(axiom_matcher& m, class_id c, const e_node& n) {
    fused_activation(m, c, n, op_kind::matmul);
}
inline void conv2d_activation(axiom_matcher& m, class_id c, const e_node& n) {
    fused_activation(m, c, n, op_kind::conv2d);
}
inline void matmul_bias_activation(axiom_matcher& m, class_id c, const e_node& n) {
    fused_activation(m, c, n, op_kind::matmul_bias);
}
inline void conv2d_bias_activation(axiom_matcher& m, class_id c, const e_node& n) {
    fused_activation(m, c, n, op_kind::conv2d_bias);
}
/// Pools fuse an activation too (TASO's pool2d has the attribute): pool{f}(x) = f(pool(x)).
inline void pool2d_activation(axiom_matcher& m, class_id c, const e_node& n) {
    fused_activation(m, c, n, op_kind::avgpool2d);
    fused_activation(m, c, n, op_kind::maxpool2d);
}

/// f_bias{none}(x,w,c) = ewadd(f{none}(x,w),c), c broadcast to the product (the shape rule's
/// condition): what the fused addend means. One direction suffices: both sides of a rule are in
/// the e-graph, and the fused side unfolds onto the other.
inline void addend_definition(axiom_matcher& m, class_id c, const e_node& n, op_kind plain) {
    if (act(m, n) != 0 || n.children.size() != 3) return;
    m.emit(c, m.op(op_kind::ewadd, m.attrs(op_kind::ewadd),
                   {m.op(plain, n.attrs, {n.children[0], n.children[1]}), n.children[2]}));
}
inline void conv2d_bias_definition(axiom_matcher& m, class_id c, const e_node& n) {
    addend_definition(m, c, n, op_kind::conv2d);
}
inline void matmul_bias_definition(axiom_matcher& m, class_id c, const e_node& n) {
    addend_definition(m, c, n, op_kind::matmul);
}

/// k = s / sqrt(v + eps) of a batchnorm over [C] parameters (the fold's per-channel factor).
inline term_ref batchnorm_factor(axiom_matcher& m, class_id s, class_id v, double eps) {
    const term_ref e =
        m.op(op_kind::const_fill, m.attrs(op_kind::const_fill, {{attr_id::shape, ints{1}}, {attr_id::value, eps}}), {});
    return m.op(
        op_kind::div, m.attrs(op_kind::div),
        {s, m.op(op_kind::sqrt, m.attrs(op_kind::sqrt), {m.op(op_kind::ewadd, m.attrs(op_kind::ewadd), {v, e})})});
}
/// The attributes of a reshape of [C] to [C,1,1], which broadcasts along an NCHW tensor's channels.
inline std::uint32_t channel_column(axiom_matcher& m, std::int64_t channels) {
    return m.attrs(op_kind::reshape, {{attr_id::shape, ints{channels, 1, 1}}});
}

/// batchnorm(y,s,b,mu,v) = ewadd(ewmul(y, reshape(k,[C,1,1])), reshape(sub(b, ewmul(mu,k)),[C,1,1]))
/// with k = s / sqrt(v + eps), for y [N,C,H,W] and parameters [C]: inference batchnorm as the
/// per-channel affine map it is (the fold of a batchnorm into a conv rests on it).
inline void batchnorm_affine(axiom_matcher& m, class_id c, const e_node& n) {
    const auto& y = m.g.shape(n.children[0]);
    if (y.rank() != 4) return;
    const ops::shape per_channel{y[1]};
    for (std::size_t i = 1; i < 5; ++i)
        if (!(m.g.shape(n.children[i]) == per_channel)) return;
    const term_ref k = batchnorm_factor(m, n.children[1], n.children[4], m.at(n).get_real(attr_id::epsilon));
    const std::uint32_t column = channel_column(m, y[1]);
    const term_ref scaled =
        m.op(op_kind::ewmul, m.attrs(op_kind::ewmul), {n.children[0], m.op(op_kind::reshape, column, {k})});
    const term_ref shift = m.op(op_kind::sub, m.attrs(op_kind::sub),
                                {n.children[2], m.op(op_kind::ewmul, m.attrs(op_kind::ewmul), {n.children[3], k})});
    m.emit(c, m.op(op_kind::ewadd, m.attrs(op_kind::ewadd), {scaled, m.op(op_kind::reshape, column, {shift})}));
}

/// ewmul(conv2d(x,w), reshape(k,[O,1,1])) = conv2d(x, w scaled per output channel by k), the
/// scaled kernel written transpose{3,0,1,2}(ewmul(transpose{1,2,3,0}(w), k)), for k [O], activation
/// none: output channel o of a convolution is linear in filter o alone.
inline void conv2d_channel_scale(axiom_matcher& m, class_id c, const e_node& n) {
    for (int side = 0; side < 2; ++side)
        each(m, n.children[side], op_kind::conv2d, [&](const e_node& cv) {
            if (act(m, cv) != 0) return;
            const auto& w = m.g.shape(cv.children[1]);
            if (w.rank() != 4) return;
            each(m, n.children[1 - side], op_kind::reshape, [&](const e_node& r) {
                if (!(m.g.shape(r.children[0]) == ops::shape{w[0]}) ||
                    !(m.g.shape(n.children[1 - side]) == ops::shape{w[0], 1, 1}))
                    return;
                const term_ref wt =
                    m.op(op_kind::transpose, m.attrs(op_kind::transpose, {{attr_id::perm, ints{1, 2, 3, 0}}}),
                         {cv.children[1]});
                const term_ref ws =
                    m.op(op_kind::transpose, m.attrs(op_kind::transpose, {{attr_id::perm, ints{3, 0, 1, 2}}}),
                         {m.op(op_kind::ewmul, m.attrs(op_kind::ewmul), {wt, r.children[0]})});
                m.emit(c, m.op(op_kind::conv2d, cv.attrs, {cv.children[0], ws}));
            });
        });
}

inline void matmul_imm(axiom_matcher& m, class_id c, const e_node& n) {
    if (act(m, n) != 0) return;
    each(m, n.children[1], op_kind::const_imm, [&](const e_node&) { m.emit(c, n.children[0]); });
    each(m, n.children[0], op_kind::const_imm, [&](const e_node&) { m.emit(c, n.children[1]); });
}

}  // namespace goopt::subst::detail
