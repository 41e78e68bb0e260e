#pragma once
/// @file
/// @brief The code of the axioms about tensor layout (axioms.hpp states them): ops through concat and
/// split, and conv2d and pooling geometry (enlarged kernels, identity kernels, strides, groups).
/// TASO (SOSP'19) Table 2 and its supplementary list.

#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/egraph.hpp>
#include <goopt/subst/generation/axiom.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace goopt::subst::detail {

/// matmul(concat{0}(x,y),z) = concat{0}(matmul(x,z),matmul(y,z)) and
/// matmul(x,concat{1}(y,z)) = concat{1}(matmul(x,y),matmul(x,z)), rank 2, any activation.
/// Batched matmul [..., M, K] x [..., K, N] (batch prefixes broadcast): rows of the left operand
/// are rows of the result (axis rank - 2) and columns of the right operand its columns (axis
/// rank - 1), whatever the ranks; the concatenations of the operands are on their own such axes.
inline void matmul_concat_outer(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void matmul_concat_inner(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_concat_out(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_concat_in(axiom_matcher& m, class_id c, const e_node& n) {
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
        case op_kind::sigmoid:
        case op_kind::tanh:
        case op_kind::gelu:
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
inline void through_concat(axiom_matcher& m, class_id c, const e_node& n, op_kind f) {
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
inline void relu_concat(axiom_matcher& m, class_id c, const e_node& n) { through_concat(m, c, n, op_kind::relu); }
/// sigmoid, tanh and gelu are elementwise as relu is: each commutes with concat.
inline void activation_concat(axiom_matcher& m, class_id c, const e_node& n) {
    for (op_kind f : {op_kind::sigmoid, op_kind::tanh, op_kind::gelu})
        if (n.kind == f || n.kind == op_kind::concat) through_concat(m, c, n, f);
}
inline void smul_concat(axiom_matcher& m, class_id c, const e_node& n) { through_concat(m, c, n, op_kind::smul); }
inline void avgpool_concat(axiom_matcher& m, class_id c, const e_node& n) {
    through_concat(m, c, n, op_kind::avgpool2d);
}
inline void conv2d_concat_batch(axiom_matcher& m, class_id c, const e_node& n) {
    through_concat(m, c, n, op_kind::conv2d);
}

/// f(concat{a}(x,y), concat{a}(z,u)) = concat{a}(f(x,z), f(y,u)) for elementwise f, x and z of one
/// shape and no broadcasting.
inline void elementwise_concat(axiom_matcher& m, class_id c, const e_node& n, op_kind f) {
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
inline void ewadd_concat(axiom_matcher& m, class_id c, const e_node& n) { elementwise_concat(m, c, n, op_kind::ewadd); }
inline void ewmul_concat(axiom_matcher& m, class_id c, const e_node& n) { elementwise_concat(m, c, n, op_kind::ewmul); }

inline void concat_assoc(axiom_matcher& m, class_id c, const e_node& n) { associate(m, c, n); }

/// concat{a}(x_1, ..., x_n) = concat{a}(...concat{a}(concat{a}(x_1, x_2), x_3)..., x_n) for n >= 3, and
/// a concat whose axis counts from the end = the same concat with the axis counted from the front:
/// the other concat axioms (concat-assoc, split-concat, ...) state binary concats on one spelling of
/// the axis, and a rule may join n pieces at once (builtin_rules' flattened concats).
inline void concat_nary(axiom_matcher& m, class_id c, const e_node& n) {
    const auto a = concat_on(m, concat_axis(m, n, c));
    if (n.children.size() < 3) {
        if (n.children.size() == 2 && n.attrs != a) m.emit(c, m.op(op_kind::concat, a, {n.children[0], n.children[1]}));
        return;
    }
    term_ref chain = m.op(op_kind::concat, a, {n.children[0], n.children[1]});
    for (std::size_t i = 2; i < n.children.size(); ++i) chain = m.op(op_kind::concat, a, {chain, n.children[i]});
    m.emit(c, chain);
}

/// split{a,[p,q]}(concat{a}(x,y)) = x, y when x has p and y has q along a.
inline void split_concat(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void concat_split(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_enlarge(axiom_matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    if (at.get_ints(attr_id::stride) != ints{1, 1} || at.get_ints(attr_id::dilation) != ints{1, 1} ||
        at.get_int(attr_id::padding) != static_cast<std::int64_t>(ops::padding_mode::same))
        return;
    each(m, n.children[1], op_kind::enlarge, [&](const e_node& e) {
        m.emit(c, m.op(op_kind::conv2d, n.attrs, {n.children[0], e.children[0]}));
    });
}

/// conv2d{stride 1, same, dilation 1, none}(x, const_iconv) = x (groups 1): only the center tap is 1.
inline void conv2d_iconv(axiom_matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    if (act(m, n) != 0 || at.get_ints(attr_id::stride) != ints{1, 1} || at.get_ints(attr_id::dilation) != ints{1, 1} ||
        at.get_int(attr_id::padding) != static_cast<std::int64_t>(ops::padding_mode::same) ||
        !dense_conv(m, n.children[0], n.children[1]))
        return;
    each(m, n.children[1], op_kind::const_iconv, [&](const e_node&) { m.emit(c, n.children[0]); });
}

/// pool{kernel 1x1, stride 1}(x) = x for avgpool2d and maxpool2d without an activation: a window of
/// one cell, no padding either way (TASO's Inception-v3 ends in one: its "global" pool's kernel is
/// left at the default). Only in the simplifying direction.
inline void pool2d_identity(axiom_matcher& m, class_id c, const e_node& n) {
    const auto& at = m.at(n);
    if (act(m, n) == 0 && at.get_ints(attr_id::kernel) == ints{1, 1} && at.get_ints(attr_id::stride) == ints{1, 1})
        m.emit(c, n.children[0]);
}

/// avgpool2d{k, s, valid}(x) = conv2d{s, valid}(x, const_pool[C,1,k]): with VALID windows every
/// window covers k cells. Not with SAME: our average excludes padding (TensorFlow's
/// count_include_pad = false), so border windows divide by fewer cells than the kernel's 1/(kh*kw).
inline void pool_as_conv(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_pointwise_padding(axiom_matcher& m, class_id c, const e_node& n) {
    const auto& ws = m.g.shape(n.children[1]);
    if (ws[2] != 1 || ws[3] != 1) return;
    ops::attribute_map other = m.at(n);
    other.set(attr_id::padding, 1 - other.get_int(attr_id::padding));
    m.emit(c, m.op(op_kind::conv2d, m.g.intern(other), {n.children[0], n.children[1]}));
}

/// avgpool2d(conv2d{stride 1}(x,w)) = conv2d(avgpool2d(x),w) for a 1x1 kernel, groups 1, no
/// activation on either: mixing channels pixel by pixel commutes with averaging each channel.
inline void conv2d_pointwise_avgpool(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void concat_interchange(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_stride_inward(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void ewmul_scalar(axiom_matcher& m, class_id c, const e_node& n) {
    if (scalar(m, n.children[0]) && same_shape(m, n.children[0], n.children[1]))
        m.emit(c, m.op(op_kind::smul, m.attrs(op_kind::smul), {n.children[0], n.children[1]}));
}

/// conv2d(concat{1}(x,y), concat{0}(w,v)) = concat{1}(conv2d(x,w), conv2d(y,v)) when the grouped
/// conv's groups fall whole into x and y: x and y have whole groups of input channels, and w, v
/// the matching output channels (the shape rule derives groups from the kernel's channels).
inline void conv2d_concat_groups(axiom_matcher& m, class_id c, const e_node& n) {
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
inline bool identity_kernel(const axiom_matcher& m, class_id x, class_id w) {
    for (const auto& k : m.g.nodes(w))
        if (k.kind == op_kind::const_iconv) return dense_conv(m, x, w);
    return false;
}
inline void conv2d_iconv_crop(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_iconv_relu(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_iconv_pointwise(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_enlarged_pointwise(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void conv2d_stride_elementwise(axiom_matcher& m, class_id c, const e_node& n) {
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
inline void enlarge_elementwise(axiom_matcher& m, class_id c, const e_node& n) {
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

inline void relu_idempotent(axiom_matcher& m, class_id c, const e_node& n) {
    each(m, n.children[0], op_kind::relu, [&](const e_node&) { m.emit(c, n.children[0]); });
}

/// split{a}(relu(x))#i = relu(split{a}(x)#i): a piece of a relu is the relu of the piece (what
/// shows a piece of a merged relu'd conv to be >= 0; one direction: the other side is only needed
/// where a rule states it, and then it is in the e-graph).
inline void relu_split(axiom_matcher& m, class_id c, const e_node& n) {
    each(m, n.children[0], op_kind::relu, [&](const e_node& r) {
        m.emit(c, m.op(op_kind::relu, r.attrs, {m.op(op_kind::split, n.attrs, {r.children[0]}, n.index)}));
    });
}

/// relu(pool(relu(x))) = pool(relu(x)) for an average or max pool without an activation: a window's
/// average or maximum of values >= 0 is >= 0, whatever the padding, so the outer relu changes
/// nothing (Tensat's Inception-v3 fuses a relu into the pools of blocks whose branches are relu'd).
inline void relu_nonnegative_pool(axiom_matcher& m, class_id c, const e_node& n) {
    for (op_kind k : {op_kind::avgpool2d, op_kind::maxpool2d})
        each(m, n.children[0], k, [&](const e_node& p) {
            if (act(m, p) != 0) return;
            bool relu_input = false;
            each(m, p.children[0], op_kind::relu, [&](const e_node&) { relu_input = true; });
            if (relu_input) m.emit(c, n.children[0]);
        });
}

}  // namespace goopt::subst::detail
