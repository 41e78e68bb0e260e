#pragma once
/// @file
/// @brief TASO's hard-coded graph transformations (TASO's `Graph::optimize`: conv + activation,
/// conv + batchnorm, enlarge-and-merge convs; TENSAT adds matmul merges) as subst::rule values,
/// instantiated at the attributes and shapes a graph uses. TASO (SOSP'19) §5, Tensat (MLSys'21) §4.
///
/// A generated rule is found at the generation world's shapes; these families carry attributes
/// that depend on the shapes they rewrite (a split's sizes, a reshape's target, a conv's stride),
/// so they are instantiated per graph: each rule is an ordinary rule whose variables have the
/// shapes of the ops it was instantiated from, and tests check every family on the interpreter.
///
/// The batchnorm fold computes the folded kernel and bias with ops on the weight tensors only
/// (transpose, ewmul, div, sqrt, sub, reshape, a const_fill of epsilon): a graph's weight-only ops
/// are weight preprocessing, constant-folded before inference as TASO's `preprocess_weights` does,
/// and subst::inference_cost does not count them.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/rewriting/cycle_check.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace goopt::subst {
inline namespace rewriting {

/// Which families builtin_rules() instantiates (all by default).
struct builtin_options {
    bool activation_fusion = true;  ///< act(p(x,w[,c])) => p{activation=act}(x,w[,c]), p a product
    bool batchnorm_fold = true;     ///< batchnorm(conv2d(x,w),s,b,m,v) => conv2d_bias(x,w',b')
    bool addend_fusion = true;      ///< ewadd(conv2d|matmul(x,w),c) => conv2d_bias|matmul_bias(x,w,c);
                                    ///< ewadd(p(x,w,c),r) => p(x,w,ewadd(c,r)) for those two
    bool merge_convs = true;    ///< convs of one input => split(conv(x, concat(kernels))), enlarging smaller kernels
    bool sum_convs = true;      ///< ewadd(conv(x,w1),conv(x,w2)) => conv(x, ewadd(w1, enlarge(w2)))
    bool merge_matmuls = true;  ///< matmuls of one input => split(matmul(x, concat(weights)))
    bool batch_matmuls = true;  ///< matmuls of one weight => split(matmul(concat(inputs), w)), rank 2
    bool merge_elementwise = true;  ///< f(split(a)#i, split(b)#i) for every i => split(f(a,b))#i
    bool split_elementwise = true;  ///< f(split(a)#i) for several i => split(f(a))#i; f(split(a)#i, w_i) for every i =>
                                    ///< split(f(a, concat(w)))#i
    bool concat_of_split = true;    ///< concat(split(a)#0, ..., split(a)#n-1) along the split's axis => a
    bool flatten_concats = true;    ///< concat(.., concat(y_1..y_k), ..) along one axis => concat(.., y_1..y_k, ..)
    bool sum_of_products = true;    ///< p(x_1,w_1) + ... + p(x_n,w_n) => p(concat(x_1..x_n), concat(w_1..w_n)), p a
                                    ///< conv2d or matmul, for a whole tree of ewadds
    bool pool_conv_commute = true;  ///< conv2d{act}(avgpool2d(x), w 1x1) <=> avgpool2d{act}(conv2d(x, w)), and
                                    ///< from avgpool2d{relu}(x) where x >= 0 by construction
    bool identity_pool = true;      ///< pool{kernel 1x1, stride 1}(x) => x
    std::size_t max_group = 8;      ///< most ops one merge rule joins

    /// No family: set the ones wanted.
    static constexpr builtin_options none() {
        return {.activation_fusion = false,
                .batchnorm_fold = false,
                .addend_fusion = false,
                .merge_convs = false,
                .sum_convs = false,
                .merge_matmuls = false,
                .batch_matmuls = false,
                .merge_elementwise = false,
                .split_elementwise = false,
                .concat_of_split = false,
                .flatten_concats = false,
                .sum_of_products = false,
                .pool_conv_commute = false,
                .identity_pool = false};
    }
};

/// One built-in rule instance and the place in its graph it was instantiated from.
struct builtin_rewrite {
    struct rule rule;
    struct match where;  ///< the graph ops of the rule's source ops and the tensors of its variables
};

/// @brief The built-in rules that can fire on `g`, each with the match it was instantiated from
/// (so that a search applies it there without searching for it), in a deterministic order. Every
/// rule's variables have the shapes of the graph tensors they are bound to.
inline std::vector<builtin_rewrite> builtin_rules(const graph::computation_graph& g, const builtin_options& opts = {});

/// @brief The merge of parallel matmuls of one input: matmul(x0, w_i) for each i =>
/// split(matmul(x0, concat(w_0..w_n-1)))#i, for x0 of shape `x`, matrices `weights` and the
/// matmuls' attributes `attrs` (variables x0, w0, ..., in that order).
inline rule matmul_merge_rule(const ops::shape& x, std::span<const ops::shape> weights,
                              const ops::attribute_map& attrs);

// ---- implementation ----

}  // namespace rewriting

namespace detail {

/// Builds one side of a rule op by op.
struct side_builder {
    rule_graph& side;
    value_ref add(ops::op_kind k, ops::attribute_map attrs, std::vector<value_ref> in, std::uint16_t outs = 1) {
        side.ops.push_back(rule_op{k, std::move(attrs), std::move(in), outs});
        return value_ref{static_cast<std::uint16_t>(side.ops.size() - 1), 0};
    }
    static value_ref out(value_ref v, std::uint16_t i) { return value_ref{v.op, i}; }
};

inline value_ref var(std::uint16_t i) { return value_ref{variable_op, i}; }

/// `prefix` followed by `i` (piecewise: GCC 12 warns, -Wrestrict, on "w" + std::to_string(i)).
inline std::string numbered(const char* prefix, std::size_t i) {
    std::string s(prefix);
    s += std::to_string(i);
    return s;
}

inline ops::attribute_map attrs_of(std::initializer_list<std::pair<ops::attr_id, ops::attr_value>> list) {
    ops::attribute_map a;
    for (const auto& [id, v] : list) a.set(id, v);
    return a;
}

/// The variables of a rule being built, one per distinct graph tensor in the order first used:
/// binder(t) is t's variable, named prefix + its index (kernel: only kernel slots take it).
struct variable_binder {
    const graph::computation_graph& g;
    rule& r;
    const char* prefix;
    std::vector<graph::tensor_id> tensors{};
    value_ref operator()(graph::tensor_id t, bool kernel = false) {
        const auto at = std::find(tensors.begin(), tensors.end(), t);
        if (at != tensors.end()) return var(static_cast<std::uint16_t>(at - tensors.begin()));
        tensors.push_back(t);
        r.variables.push_back({numbered(prefix, tensors.size() - 1), g.type_of(t).dims, kernel});
        return var(static_cast<std::uint16_t>(tensors.size() - 1));
    }
};

/// `a` with the fused activation set to `act`.
inline ops::attribute_map with_activation(ops::attribute_map a, std::int64_t act) {
    a.set(ops::attr_id::activation, act);
    return a;
}

/// Collects rule instances with their matches, leaving out any whose target would read a value
/// computed from an output it replaces: applied, such an instance is a cycle, which apply() would
/// refuse and an e-graph would filter, each after deciding the rule at its shapes. One check here
/// covers every family, however its match was assembled.
struct rule_set {
    explicit rule_set(const graph::computation_graph& g) : cycles(g) {}

    std::vector<builtin_rewrite> rules;
    cycle_check cycles;

    void add(rule r, std::vector<graph::op_id> ops, std::vector<graph::tensor_id> variables) {
        if (cycles.cyclic_after_rewrite(r, ops, variables)) return;
        rules.push_back({std::move(r), match{std::move(ops), std::move(variables)}});
    }
};

inline std::int64_t activation_of(const graph::op& o) {
    return o.attrs.has(ops::attr_id::activation) ? o.attrs.get_int(ops::attr_id::activation) : 0;
}

/// The fused activation an elementwise op kind is, or none (0).
inline std::int64_t activation_for(ops::op_kind k) {
    switch (k) {
        case ops::op_kind::relu:
            return static_cast<std::int64_t>(ops::activation::relu);
        case ops::op_kind::sigmoid:
            return static_cast<std::int64_t>(ops::activation::sigmoid);
        case ops::op_kind::tanh:
            return static_cast<std::int64_t>(ops::activation::tanh);
        case ops::op_kind::gelu:
            return static_cast<std::int64_t>(ops::activation::gelu);
        default:
            return 0;
    }
}

/// Whether `k` is a product with a fused epilogue (activation, and for the _bias kinds an addend).
inline bool fusable_product(ops::op_kind k) {
    return k == ops::op_kind::conv2d || k == ops::op_kind::matmul || k == ops::op_kind::conv2d_bias ||
           k == ops::op_kind::matmul_bias;
}

/// The product's inputs as rule variables x0, w0 (marked a kernel) and, for the _bias kinds, c0.
inline void product_variables(const graph::computation_graph& g, const graph::op& op, rule& r) {
    const char* names[] = {"x0", "w0", "c0"};
    for (std::size_t i = 0; i < op.inputs.size(); ++i)
        r.variables.push_back({names[i], g.type_of(op.inputs[i]).dims, i == 1});
}

inline std::vector<value_ref> product_inputs(const graph::op& op) {
    std::vector<value_ref> in;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) in.push_back(var(static_cast<std::uint16_t>(i)));
    return in;
}

inline void activation_rules(const graph::computation_graph& g, rule_set& out) {
    for (const auto& op : g.ops()) {
        if (!fusable_product(op.kind) || activation_of(op) != 0) continue;
        for (const auto& u : g.get_tensor(op.outputs[0]).uses) {
            const auto& a = g.get_op(u.op);
            const auto act = activation_for(a.kind);
            if (act == 0) continue;
            rule r;
            product_variables(g, op, r);
            side_builder s{r.source};
            const auto k = s.add(op.kind, op.attrs, product_inputs(op));
            r.source.outputs = {s.add(a.kind, a.attrs, {k})};
            side_builder t{r.target};
            r.target.outputs = {t.add(op.kind, with_activation(op.attrs, act), product_inputs(op))};
            out.add(std::move(r), {g.producer(op.outputs[0]), u.op},
                    std::vector<graph::tensor_id>(op.inputs.begin(), op.inputs.end()));
        }
    }
}

/// act(concat(p_1(...), ..., p_n(...))) => concat(p_1{act}(...), ..., p_n{act}(...)) for products
/// p_i without an activation: the activation moved into the kernels that feed a concat
/// (SqueezeNet's fire modules, Inception's blocks), one kernel less.
inline void activation_concat_rules(const graph::computation_graph& g, rule_set& out) {
    for (const auto& a : g.ops()) {
        const auto act = activation_for(a.kind);
        if (act == 0) continue;
        const auto cat = g.producer(a.inputs[0]);
        const auto& cc = g.get_op(cat);
        if (cc.kind != ops::op_kind::concat) continue;
        bool all = true;
        for (auto t : cc.inputs) {
            const auto& p = g.get_op(g.producer(t));
            all = all && fusable_product(p.kind) && activation_of(p) == 0 && g.get_tensor(t).uses.size() == 1;
        }
        if (!all) continue;
        rule r;
        variable_binder variable{g, r, "v"};
        side_builder s{r.source};
        side_builder t{r.target};
        std::vector<value_ref> plain, fused;
        std::vector<graph::op_id> ops_matched;
        for (auto in : cc.inputs) {
            const auto po = g.producer(in);
            const auto& p = g.get_op(po);
            std::vector<value_ref> args;
            for (std::size_t i = 0; i < p.inputs.size(); ++i) args.push_back(variable(p.inputs[i], i == 1));
            plain.push_back(s.add(p.kind, p.attrs, args));
            fused.push_back(t.add(p.kind, with_activation(p.attrs, act), args));
            ops_matched.push_back(po);
        }
        r.source.outputs = {s.add(a.kind, a.attrs, {s.add(ops::op_kind::concat, cc.attrs, plain)})};
        r.target.outputs = {t.add(ops::op_kind::concat, cc.attrs, fused)};
        ops_matched.push_back(cat);
        ops_matched.push_back(g.producer(a.outputs[0]));
        out.add(std::move(r), std::move(ops_matched), std::move(variable.tensors));
    }
}

/// ewadd(conv2d|matmul(x,w), c) => conv2d_bias|matmul_bias(x,w,c), activation none, c broadcast to
/// the product's output: a bias (or a residual) added in the product's epilogue, one kernel instead
/// of two (cuDNN's conv-bias-activation, cuBLASLt's bias epilogue, GEMM's beta * C). And for the
/// fused kinds, ewadd(p(x,w,c), r) => p(x,w,ewadd(c,r)): a second addend (a residual after a folded
/// bias) joins the first, so that the activation after it fuses as well (ResNet's relu(conv + bias
/// + shortcut)).
inline void addend_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    for (const auto& add : g.ops()) {
        if (add.kind != K::ewadd || add.inputs[0] == add.inputs[1]) continue;
        for (std::size_t side = 0; side < 2; ++side) {
            const auto p = g.producer(add.inputs[side]);
            const auto& op = g.get_op(p);
            if (!fusable_product(op.kind) || activation_of(op) != 0) continue;
            const graph::tensor_id c = add.inputs[1 - side];
            if (!ops::shape_rules::broadcasts_to(g.type_of(c).dims, g.type_of(op.outputs[0]).dims)) continue;
            const bool fused = op.inputs.size() == 3;  // join a second addend into the first
            rule r;
            product_variables(g, op, r);  // x0, w0 (and c0 for the fused kinds)
            r.variables.push_back({fused ? "r0" : "c0", g.type_of(c).dims});
            const auto addend = var(static_cast<std::uint16_t>(op.inputs.size()));
            side_builder s{r.source};
            const auto y = s.add(op.kind, op.attrs, product_inputs(op));
            r.source.outputs = {side == 0 ? s.add(K::ewadd, add.attrs, {y, addend})
                                          : s.add(K::ewadd, add.attrs, {addend, y})};
            side_builder t{r.target};
            const auto kind = op.kind == K::conv2d ? K::conv2d_bias : op.kind == K::matmul ? K::matmul_bias : op.kind;
            const auto sum = fused ? t.add(K::ewadd, add.attrs, {var(2), addend}) : addend;
            r.target.outputs = {t.add(kind, op.attrs, {var(0), var(1), sum})};
            std::vector<graph::tensor_id> vars(op.inputs.begin(), op.inputs.end());
            vars.push_back(c);
            out.add(std::move(r), {p, g.producer(add.outputs[0])}, std::move(vars));
        }
    }
}

inline void batchnorm_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    for (const auto& bn : g.ops()) {
        if (bn.kind != K::batchnorm) continue;
        const auto conv = g.producer(bn.inputs[0]);
        const auto& c = g.get_op(conv);
        if (c.kind != K::conv2d || activation_of(c) != 0) continue;
        const auto& wd = g.type_of(c.inputs[1]).dims;
        if (wd.rank() != 4) continue;
        const std::int64_t o = wd[0];
        rule r;
        r.variables = {{"x0", g.type_of(c.inputs[0]).dims}, {"w0", wd, true}};
        for (std::size_t i = 1; i < 5; ++i)
            r.variables.push_back({numbered("w", i), g.type_of(bn.inputs[i]).dims, true});
        side_builder s{r.source};
        const auto y = s.add(K::conv2d, c.attrs, {var(0), var(1)});
        r.source.outputs = {s.add(K::batchnorm, bn.attrs, {y, var(2), var(3), var(4), var(5)})};
        // k = scale / sqrt(var + eps); w' = w * k per output channel; b' = bias - mean * k
        side_builder t{r.target};
        const double eps = bn.attrs.get_real(A::epsilon);
        const auto e = t.add(K::const_fill, attrs_of({{A::shape, std::vector<std::int64_t>{1}}, {A::value, eps}}), {});
        const auto k = t.add(K::div, {}, {var(2), t.add(K::sqrt, {}, {t.add(K::ewadd, {}, {var(5), e})})});
        const auto wt = t.add(K::transpose, attrs_of({{A::perm, std::vector<std::int64_t>{1, 2, 3, 0}}}), {var(1)});
        const auto ws = t.add(K::transpose, attrs_of({{A::perm, std::vector<std::int64_t>{3, 0, 1, 2}}}),
                              {t.add(K::ewmul, {}, {wt, k})});
        const auto b = t.add(K::sub, {}, {var(3), t.add(K::ewmul, {}, {var(4), k})});
        const auto b3 = t.add(K::reshape, attrs_of({{A::shape, std::vector<std::int64_t>{o, 1, 1}}}), {b});
        r.target.outputs = {t.add(K::conv2d_bias, c.attrs, {var(0), ws, b3})};
        out.add(std::move(r), {conv, g.producer(bn.outputs[0])},
                {c.inputs[0], c.inputs[1], bn.inputs[1], bn.inputs[2], bn.inputs[3], bn.inputs[4]});
    }
}

/// Whether a conv's kernel can be enlarged to `kh` x `kw` without changing it: SAME padding,
/// stride 1, no dilation, odd square-centered kernels (TASO's enlarge condition).
inline bool enlargeable(const graph::computation_graph& g, const graph::op& c, std::int64_t kh, std::int64_t kw) {
    using A = ops::attr_id;
    const auto& w = g.type_of(c.inputs[1]).dims;
    const auto& st = c.attrs.get_ints(A::stride);
    const auto& dl = c.attrs.get_ints(A::dilation);
    return c.attrs.get_int(A::padding) == static_cast<std::int64_t>(ops::padding_mode::same) &&
           st == std::vector<std::int64_t>{1, 1} && dl == std::vector<std::int64_t>{1, 1} && w[2] % 2 == 1 &&
           w[3] % 2 == 1 && kh % 2 == 1 && kw % 2 == 1 && w[2] <= kh && w[3] <= kw;
}

/// Conv attributes without the kernel-size question: equal when two convs may share one kernel.
inline bool same_conv_attrs(const graph::op& a, const graph::op& b) { return a.attrs == b.attrs; }

/// Kernel `w` (variable `v`) enlarged to kh x kw in side `t`, or `v` itself when it has that size.
inline value_ref enlarged(side_builder& t, value_ref v, const ops::shape& w, std::int64_t kh, std::int64_t kw) {
    if (w[2] == kh && w[3] == kw) return v;
    return t.add(ops::op_kind::enlarge, attrs_of({{ops::attr_id::kernel, std::vector<std::int64_t>{kh, kw}}}), {v});
}

inline void conv_merge_rules(const graph::computation_graph& g, const builtin_options& opts, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    const auto preprocessing = weight_only(g);  // merging ops on weights only gains nothing
    // convs by input tensor
    std::map<graph::tensor_id, std::vector<graph::op_id>> by_input;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto& c = g.get_op(o);
        if (c.kind != K::conv2d) continue;
        const auto& w = g.type_of(c.inputs[1]).dims;
        if (w.rank() != 4 || g.type_of(c.inputs[0]).dims[1] != w[1] || preprocessing[o]) continue;  // groups == 1 only
        by_input[c.inputs[0]].push_back(o);
    }
    for (const auto& [x, convs] : by_input) {
        // groups of convs with equal attributes; within a group, the kernels either all of one size
        // or all enlargeable to the largest
        std::vector<std::vector<graph::op_id>> groups;
        for (auto o : convs) {
            bool placed = false;
            for (auto& grp : groups)
                if (same_conv_attrs(g.get_op(grp[0]), g.get_op(o))) {
                    grp.push_back(o);
                    placed = true;
                    break;
                }
            if (!placed) groups.push_back({o});
        }
        for (const auto& grp : groups) {
            std::int64_t kh = 0, kw = 0;
            for (auto o : grp) {
                const auto& w = g.type_of(g.get_op(o).inputs[1]).dims;
                kh = std::max(kh, w[2]);
                kw = std::max(kw, w[3]);
            }
            auto fits = [&](graph::op_id o) {
                const auto& w = g.type_of(g.get_op(o).inputs[1]).dims;
                return (w[2] == kh && w[3] == kw) || enlargeable(g, g.get_op(o), kh, kw);
            };
            std::vector<graph::op_id> members;
            for (auto o : grp)
                if (fits(o)) members.push_back(o);
            const auto& attrs = g.get_op(grp[0]).attrs;
            // merge: the whole group (up to max_group), and every pair
            std::vector<std::vector<graph::op_id>> sets;
            if (members.size() >= 2)
                sets.emplace_back(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(
                                                                         std::min(members.size(), opts.max_group)));
            for (std::size_t i = 0; i < members.size() && members.size() > 2; ++i)
                for (std::size_t j = i + 1; j < members.size(); ++j) sets.push_back({members[i], members[j]});
            if (opts.merge_convs)
                for (const auto& set : sets) {
                    std::int64_t sh = 0, sw = 0;
                    for (auto o : set) {
                        sh = std::max(sh, g.type_of(g.get_op(o).inputs[1]).dims[2]);
                        sw = std::max(sw, g.type_of(g.get_op(o).inputs[1]).dims[3]);
                    }
                    rule r;
                    r.variables.push_back({"x0", g.type_of(x).dims});
                    side_builder s{r.source};
                    side_builder t{r.target};
                    std::vector<value_ref> kernels;
                    std::vector<std::int64_t> sizes;
                    for (std::size_t i = 0; i < set.size(); ++i) {
                        const auto& w = g.type_of(g.get_op(set[i]).inputs[1]).dims;
                        r.variables.push_back({numbered("w", i), w, true});
                        const auto v = var(static_cast<std::uint16_t>(i + 1));
                        r.source.outputs.push_back(s.add(K::conv2d, attrs, {var(0), v}));
                        kernels.push_back(enlarged(t, v, w, sh, sw));
                        sizes.push_back(w[0]);
                    }
                    const auto cat = t.add(K::concat, attrs_of({{A::axis, std::int64_t{0}}}), kernels);
                    const auto y = t.add(K::conv2d, attrs, {var(0), cat});
                    const auto sp = t.add(K::split, attrs_of({{A::axis, std::int64_t{1}}, {A::sizes, sizes}}), {y},
                                          static_cast<std::uint16_t>(set.size()));
                    std::vector<graph::tensor_id> vars{x};
                    for (auto o : set) vars.push_back(g.get_op(o).inputs[1]);
                    for (std::size_t i = 0; i < set.size(); ++i)
                        r.target.outputs.push_back(side_builder::out(sp, static_cast<std::uint16_t>(i)));
                    out.add(std::move(r), set, std::move(vars));
                }
            // sum of two convs of one input: one conv of the summed (enlarged) kernels, by linearity
            if (opts.sum_convs && ops::activation{attrs.get_int(A::activation)} == ops::activation::none)
                for (std::size_t i = 0; i < members.size(); ++i)
                    for (std::size_t j = 0; j < members.size(); ++j) {
                        if (i == j) continue;
                        const auto& wi = g.type_of(g.get_op(members[i]).inputs[1]).dims;
                        const auto& wj = g.type_of(g.get_op(members[j]).inputs[1]).dims;
                        if (wi[0] != wj[0] || wi[2] < wj[2] || wi[3] < wj[3] || (wi[2] == wj[2] && wi[3] == wj[3]))
                            continue;
                        if (!enlargeable(g, g.get_op(members[j]), wi[2], wi[3])) continue;
                        // the two convs must be the inputs of one ewadd
                        const auto& ui = g.get_tensor(g.get_op(members[i]).outputs[0]).uses;
                        const auto& uj = g.get_tensor(g.get_op(members[j]).outputs[0]).uses;
                        std::optional<graph::op_id> sum_op;
                        for (const auto& a : ui)
                            for (const auto& b : uj)
                                if (a.op == b.op && g.get_op(a.op).kind == K::ewadd) sum_op = a.op;
                        if (!sum_op) continue;
                        rule r;
                        r.variables = {{"x0", g.type_of(x).dims}, {"w0", wi, true}, {"w1", wj, true}};
                        side_builder s{r.source};
                        r.source.outputs = {s.add(
                            K::ewadd, {},
                            {s.add(K::conv2d, attrs, {var(0), var(1)}), s.add(K::conv2d, attrs, {var(0), var(2)})})};
                        side_builder t{r.target};
                        const auto sum = t.add(K::ewadd, {}, {var(1), enlarged(t, var(2), wj, wi[2], wi[3])});
                        r.target.outputs = {t.add(K::conv2d, attrs, {var(0), sum})};
                        // source ops in rule order: the two convs, then the ewadd
                        out.add(std::move(r), {members[i], members[j], *sum_op},
                                {x, g.get_op(members[i]).inputs[1], g.get_op(members[j]).inputs[1]});
                    }
        }
    }
}

inline void matmul_merge_rules(const graph::computation_graph& g, const builtin_options& opts, rule_set& out) {
    using K = ops::op_kind;
    // matmuls by (input, activation) whose weight is a matrix
    const auto preprocessing = weight_only(g);  // merging ops on weights only gains nothing
    std::map<std::pair<graph::tensor_id, std::int64_t>, std::vector<graph::op_id>> by_input;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto& m = g.get_op(o);
        if (m.kind != K::matmul || g.type_of(m.inputs[1]).dims.rank() != 2 || preprocessing[o]) continue;
        by_input[{m.inputs[0], activation_of(m)}].push_back(o);
    }
    for (const auto& [key, mms] : by_input) {
        if (mms.size() < 2) continue;
        std::vector<std::vector<graph::op_id>> sets;
        sets.emplace_back(mms.begin(), mms.begin() + static_cast<std::ptrdiff_t>(std::min(mms.size(), opts.max_group)));
        for (std::size_t i = 0; i < mms.size() && mms.size() > 2; ++i)
            for (std::size_t j = i + 1; j < mms.size(); ++j) sets.push_back({mms[i], mms[j]});
        const auto& xd = g.type_of(key.first).dims;
        const auto& attrs = g.get_op(mms[0]).attrs;
        for (const auto& set : sets) {
            std::vector<ops::shape> ws;
            std::vector<graph::tensor_id> vars{key.first};
            for (auto o : set) {
                ws.push_back(g.type_of(g.get_op(o).inputs[1]).dims);
                vars.push_back(g.get_op(o).inputs[1]);
            }
            out.add(matmul_merge_rule(xd, ws, attrs), set, std::move(vars));
        }
    }
}

/// matmul(x_i, w) for several inputs x_i [m_i, k] of one weight matrix w =>
/// split{axis=0}(matmul(concat{axis=0}(x_0..x_n-1), w))#i: the products of one weight batched into
/// one GEMM that reads w once (an RNN's input projections over its time steps, as cuDNN's RNNs
/// compute them). Only for inputs of rank 2, so that the row split is a view.
inline void shared_weight_rules(const graph::computation_graph& g, const builtin_options& opts, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    const auto preprocessing = weight_only(g);
    std::map<std::pair<graph::tensor_id, std::int64_t>, std::vector<graph::op_id>> by_weight;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto& m = g.get_op(o);
        if (m.kind != K::matmul || preprocessing[o] || g.type_of(m.inputs[0]).dims.rank() != 2 ||
            g.type_of(m.inputs[1]).dims.rank() != 2 || !preprocessing[g.producer(m.inputs[1])])
            continue;
        by_weight[{m.inputs[1], activation_of(m)}].push_back(o);
    }
    for (const auto& [key, mms] : by_weight) {
        if (mms.size() < 2) continue;
        std::vector<std::vector<graph::op_id>> sets;
        sets.emplace_back(mms.begin(), mms.begin() + static_cast<std::ptrdiff_t>(std::min(mms.size(), opts.max_group)));
        for (std::size_t i = 0; i + 1 < mms.size() && mms.size() > 2; ++i) sets.push_back({mms[i], mms[i + 1]});
        const auto& attrs = g.get_op(mms[0]).attrs;
        for (const auto& set : sets) {
            rule r;
            side_builder s{r.source};
            side_builder t{r.target};
            std::vector<value_ref> xs;
            std::vector<std::int64_t> rows;
            std::vector<graph::tensor_id> vars;
            const auto w = var(static_cast<std::uint16_t>(set.size()));
            for (std::size_t i = 0; i < set.size(); ++i) {
                const auto x = g.get_op(set[i]).inputs[0];
                r.variables.push_back({numbered("x", i), g.type_of(x).dims});
                vars.push_back(x);
                xs.push_back(var(static_cast<std::uint16_t>(i)));
                rows.push_back(g.type_of(x).dims[0]);
                r.source.outputs.push_back(s.add(K::matmul, attrs, {xs.back(), w}));
            }
            r.variables.push_back({"w0", g.type_of(key.first).dims, true});
            vars.push_back(key.first);
            const auto y = t.add(K::matmul, attrs, {t.add(K::concat, attrs_of({{A::axis, std::int64_t{0}}}), xs), w});
            const auto sp = t.add(K::split, attrs_of({{A::axis, std::int64_t{0}}, {A::sizes, rows}}), {y},
                                  static_cast<std::uint16_t>(set.size()));
            for (std::size_t i = 0; i < set.size(); ++i)
                r.target.outputs.push_back(side_builder::out(sp, static_cast<std::uint16_t>(i)));
            out.add(std::move(r), set, std::move(vars));
        }
    }
}

/// f(split(a)#i, split(b)#i) for every output i of two equal splits => split(f(a, b))#i: the
/// elementwise ops a merge leaves behind, joined again.
inline void elementwise_merge_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    std::set<std::vector<graph::op_id>> done;
    for (const auto& e : g.ops()) {
        if (e.kind != K::ewadd && e.kind != K::ewmul && e.kind != K::sub) continue;
        const auto& pa = g.get_op(g.producer(e.inputs[0]));
        const auto& pb = g.get_op(g.producer(e.inputs[1]));
        if (pa.kind != K::split || pb.kind != K::split || !(pa.attrs == pb.attrs) || &pa == &pb) continue;
        if (!(g.type_of(pa.inputs[0]) == g.type_of(pb.inputs[0]))) continue;
        const auto ia = g.get_tensor(e.inputs[0]).index;
        if (g.get_tensor(e.inputs[1]).index != ia) continue;
        const auto n = static_cast<std::uint16_t>(pa.outputs.size());
        rule r;
        r.variables = {{"x0", g.type_of(pa.inputs[0]).dims}, {"x1", g.type_of(pb.inputs[0]).dims}};
        side_builder s{r.source};
        const auto sa = s.add(K::split, pa.attrs, {var(0)}, n);
        const auto sb = s.add(K::split, pb.attrs, {var(1)}, n);
        for (std::uint16_t i = 0; i < n; ++i)
            r.source.outputs.push_back(s.add(e.kind, e.attrs, {side_builder::out(sa, i), side_builder::out(sb, i)}));
        side_builder t{r.target};
        const auto joined = t.add(e.kind, e.attrs, {var(0), var(1)});
        const auto sp = t.add(K::split, pa.attrs, {joined}, n);
        for (std::uint16_t i = 0; i < n; ++i) r.target.outputs.push_back(side_builder::out(sp, i));
        // source ops in rule order: the two splits, then the elementwise op of each output pair
        std::vector<graph::op_id> where{g.producer(e.inputs[0]), g.producer(e.inputs[1])};
        for (std::uint16_t i = 0; i < n && where.size() == 2u + i; ++i)
            for (const auto& u : g.get_tensor(pa.outputs[i]).uses) {
                const auto& f = g.get_op(u.op);
                const bool swappable = ops::spec(e.kind).has(ops::commutative);
                if (f.kind == e.kind && f.attrs == e.attrs && f.inputs.size() == 2 &&
                    ((f.inputs[0] == pa.outputs[i] && f.inputs[1] == pb.outputs[i]) ||
                     (swappable && f.inputs[1] == pa.outputs[i] && f.inputs[0] == pb.outputs[i]))) {
                    where.push_back(u.op);
                    break;
                }
            }
        if (where.size() != 2u + n) continue;
        if (!done.insert(where).second) continue;  // found again from another output pair
        out.add(std::move(r), std::move(where), {pa.inputs[0], pb.inputs[0]});
    }
}

/// Elementwise unary ops without attributes: they commute with a split.
inline bool plain_unary(const graph::op& o) {
    return o.inputs.size() == 1 && o.spec().has(ops::elementwise) && o.attrs.empty() && o.outputs.size() == 1;
}

/// f(split(a)#i) for several outputs i of one split => split(f(a))#i: one kernel for several; and
/// f(split(a)#i, w_i) for every output i, each w_i a weight piece of that output's extent along
/// the split axis => split(f(a, concat(w_0..w_n-1)))#i: per-channel biases and scales joined.
inline void split_elementwise_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    const auto pre = weight_only(g);
    for (graph::op_id so = 0; so < g.num_ops(); ++so) {
        const auto& sp = g.get_op(so);
        if (sp.kind != K::split || pre[so]) continue;
        const auto n = static_cast<std::uint16_t>(sp.outputs.size());
        const auto& xd = g.type_of(sp.inputs[0]).dims;
        const auto ax = static_cast<std::int64_t>(xd.axis(sp.attrs.get_int(A::axis)));
        const auto& sizes = sp.attrs.get_ints(A::sizes);
        // unary: per kind, the first use of that kind on each output
        std::map<ops::op_kind, std::vector<std::pair<std::uint16_t, graph::op_id>>> unary;
        for (std::uint16_t i = 0; i < n; ++i) {
            std::set<ops::op_kind> kinds;
            for (const auto& u : g.get_tensor(sp.outputs[i]).uses) {
                const auto& f = g.get_op(u.op);
                if (plain_unary(f) && kinds.insert(f.kind).second) unary[f.kind].push_back({i, u.op});
            }
        }
        for (const auto& [kind, uses] : unary) {
            if (uses.size() < 2) continue;
            rule r;
            r.variables = {{"x0", xd}};
            side_builder s{r.source};
            const auto a = s.add(K::split, sp.attrs, {var(0)}, n);
            std::vector<graph::op_id> where{so};
            for (const auto& [i, o] : uses) {
                r.source.outputs.push_back(s.add(kind, g.get_op(o).attrs, {side_builder::out(a, i)}));
                where.push_back(o);
            }
            side_builder t{r.target};
            const auto f = t.add(kind, {}, {var(0)});
            const auto b = t.add(K::split, sp.attrs, {f}, n);
            for (const auto& [i, o] : uses) r.target.outputs.push_back(side_builder::out(b, i));
            out.add(std::move(r), std::move(where), {sp.inputs[0]});
        }
        // binary with a weight piece per output
        for (auto kind : {K::ewadd, K::ewmul, K::sub}) {
            std::vector<graph::op_id> where{so};
            std::vector<graph::tensor_id> vars{sp.inputs[0]};
            for (std::uint16_t i = 0; i < n && where.size() == 1u + i; ++i)
                for (const auto& u : g.get_tensor(sp.outputs[i]).uses) {
                    const auto& f = g.get_op(u.op);
                    if (f.kind != kind || (u.slot != 0 && !f.spec().has(ops::commutative))) continue;
                    const auto w = f.inputs[1 - u.slot];
                    const auto& wd = g.type_of(w).dims;
                    const auto lead = static_cast<std::int64_t>(xd.rank()) - static_cast<std::int64_t>(wd.rank());
                    if (!pre[g.producer(w)] || lead < 0 || ax - lead < 0 ||
                        wd[static_cast<std::size_t>(ax - lead)] != sizes[i])
                        continue;
                    if (i > 0) {  // the pieces agree on every other axis
                        const auto& w0 = g.type_of(vars[1]).dims;
                        bool same = w0.rank() == wd.rank();
                        for (std::size_t d = 0; same && d < wd.rank(); ++d)
                            same = static_cast<std::int64_t>(d) == ax - lead || w0[d] == wd[d];
                        if (!same) continue;
                    }
                    where.push_back(u.op);
                    vars.push_back(w);
                    break;
                }
            if (where.size() != 1u + n) continue;
            const auto& wd = g.type_of(vars[1]).dims;
            const auto wax = ax - (static_cast<std::int64_t>(xd.rank()) - static_cast<std::int64_t>(wd.rank()));
            rule r;
            r.variables = {{"x0", xd}};
            for (std::uint16_t i = 0; i < n; ++i)
                r.variables.push_back({numbered("w", i), g.type_of(vars[1u + i]).dims, true});
            side_builder s{r.source};
            const auto a = s.add(K::split, sp.attrs, {var(0)}, n);
            std::vector<value_ref> ws;
            for (std::uint16_t i = 0; i < n; ++i) {
                ws.push_back(var(static_cast<std::uint16_t>(i + 1)));
                r.source.outputs.push_back(s.add(kind, {}, {side_builder::out(a, i), ws.back()}));
            }
            side_builder t{r.target};
            const auto cat = t.add(K::concat, attrs_of({{A::axis, wax}}), ws);
            const auto f = t.add(kind, {}, {var(0), cat});
            const auto b = t.add(K::split, sp.attrs, {f}, n);
            for (std::uint16_t i = 0; i < n; ++i) r.target.outputs.push_back(side_builder::out(b, i));
            out.add(std::move(r), std::move(where), std::move(vars));
        }
    }
}

/// The ops that show tensor `t` to be >= 0 by construction, inputs first: an op with relu fused or a
/// relu (a leaf: its inputs are the rule's variables), or a concat of such tensors, or a piece of a
/// split of one (a merged conv's; the axioms relu-concat and relu-split take the relu out of them,
/// so the prover sees relu(...)). Empty when `t` is not shown so within `limit` ops.
inline std::vector<graph::op_id> nonnegative_witness(const graph::computation_graph& g, graph::tensor_id t,
                                                     std::size_t limit = 16) {
    using K = ops::op_kind;
    std::vector<graph::op_id> ops;
    bool ok = true;
    auto visit = [&](auto& self, graph::tensor_id v) -> void {
        const graph::op_id o = g.producer(v);
        if (!ok || std::find(ops.begin(), ops.end(), o) != ops.end()) return;
        const auto& op = g.get_op(o);
        const bool leaf = op.outputs.size() == 1 &&
                          (op.kind == K::relu || activation_of(op) == static_cast<std::int64_t>(ops::activation::relu));
        const bool through = op.kind == K::concat || op.kind == K::split;
        if (!leaf && !through) {
            ok = false;
            return;
        }
        if (!leaf)
            for (graph::tensor_id in : op.inputs) self(self, in);
        ops.push_back(o);
        ok = ok && ops.size() <= limit;
    };
    visit(visit, t);
    // a leaf's input made inside the witness would be a variable bound to a value the rule replaces
    for (graph::op_id o : ops) {
        const auto& op = g.get_op(o);
        if (op.kind == K::concat || op.kind == K::split) continue;
        for (graph::tensor_id in : op.inputs) ok = ok && std::find(ops.begin(), ops.end(), g.producer(in)) == ops.end();
    }
    if (!ok) ops.clear();
    return ops;
}

/// Whether `c` is a 1x1 conv of stride 1 and one group on an input of shape `x`: it mixes channels
/// pixel by pixel, so it commutes with averaging each channel.
inline bool pointwise_conv(const graph::computation_graph& g, const graph::op& c, const ops::shape& x) {
    const auto& w = g.type_of(c.inputs[1]).dims;
    return c.kind == ops::op_kind::conv2d && w.rank() == 4 && w[2] == 1 && w[3] == 1 && w[1] == x[1] &&
           c.attrs.get_ints(ops::attr_id::stride) == std::vector<std::int64_t>{1, 1};
}

/// conv2d{act}(avgpool2d{relu}(T), w) => avgpool2d{act}(conv2d(T, w)) where T >= 0 by construction
/// (nonnegative_witness): the pool's relu changes nothing on such an input, so the pool and the 1x1
/// conv commute as below. T's ops are in the rule (the prover needs them to see T >= 0); T, and any
/// of them read outside the rule, are outputs too, so that the rewrite keeps one copy of each.
/// Tensat's Inception-v3 fuses a relu into the pools of its A and C blocks, whose inputs are concats
/// of relu'd convs.
inline void nonnegative_pool_conv_commute(const graph::computation_graph& g, graph::op_id co, rule_set& out) {
    using K = ops::op_kind;
    const auto& conv = g.get_op(co);
    const auto po = g.producer(conv.inputs[0]);
    const auto& pool = g.get_op(po);
    if (pool.kind != K::avgpool2d || activation_of(pool) != static_cast<std::int64_t>(ops::activation::relu) ||
        !pointwise_conv(g, conv, g.type_of(pool.inputs[0]).dims))
        return;
    const auto witness = nonnegative_witness(g, pool.inputs[0]);
    if (witness.empty()) return;
    rule r;
    variable_binder variable{g, r, "x"};
    // the value of graph tensor `v`, made by witness op number k on a side whose ops are `made`
    auto value_of = [&](const std::vector<value_ref>& made, std::size_t k, graph::tensor_id v) {
        const auto& outs = g.get_op(witness[k]).outputs;
        return side_builder::out(made[k],
                                 static_cast<std::uint16_t>(std::find(outs.begin(), outs.end(), v) - outs.begin()));
    };
    // the witness's ops on one side, in witness order (T is the last one's output)
    auto rebuild = [&](side_builder& b) {
        std::vector<value_ref> made;
        for (graph::op_id o : witness) {
            const auto& op = g.get_op(o);
            const bool leaf = op.kind != K::concat && op.kind != K::split;
            std::vector<value_ref> in;
            for (std::size_t i = 0; i < op.inputs.size(); ++i) {
                const auto p = std::find(witness.begin(), witness.end(), g.producer(op.inputs[i]));
                if (!leaf && p != witness.end())
                    in.push_back(value_of(made, static_cast<std::size_t>(p - witness.begin()), op.inputs[i]));
                else
                    in.push_back(variable(op.inputs[i], i == 1 && (op.kind == K::conv2d || op.kind == K::conv2d_bias)));
            }
            made.push_back(b.add(op.kind, op.attrs, std::move(in), static_cast<std::uint16_t>(op.outputs.size())));
        }
        return made;
    };
    // witness values read outside the rule are outputs too, replaced by their rebuilt copies, not
    // kept beside them (a leaf conv that another branch also reads, the other pieces of a split)
    std::vector<std::pair<std::size_t, graph::tensor_id>> shared;
    for (std::size_t k = 0; k + 1 < witness.size(); ++k)
        for (graph::tensor_id v : g.get_op(witness[k]).outputs) {
            bool outside = std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
            for (graph::op_id u : g.successors(witness[k]))
                outside = outside || (u != po && std::find(witness.begin(), witness.end(), u) == witness.end() &&
                                      std::find(g.get_op(u).inputs.begin(), g.get_op(u).inputs.end(), v) !=
                                          g.get_op(u).inputs.end());
            if (outside) shared.emplace_back(k, v);
        }
    side_builder s{r.source};
    const auto src = rebuild(s);
    const auto wv = variable(conv.inputs[1], true);
    r.source.outputs = {s.add(K::conv2d, conv.attrs, {s.add(K::avgpool2d, pool.attrs, {src.back()}), wv}), src.back()};
    side_builder t{r.target};
    const auto tgt = rebuild(t);
    r.target.outputs = {t.add(K::avgpool2d, with_activation(pool.attrs, activation_of(conv)),
                              {t.add(K::conv2d, with_activation(conv.attrs, 0), {tgt.back(), wv})}),
                        tgt.back()};
    for (const auto& [k, v] : shared) {
        r.source.outputs.push_back(value_of(src, k, v));
        r.target.outputs.push_back(value_of(tgt, k, v));
    }
    // a variable computed from a witness op (a merged conv's other piece feeding a later branch)
    // would be a cycle: rule_set::add leaves such an instance out
    std::vector<graph::op_id> ops = witness;
    ops.push_back(po);
    ops.push_back(co);
    out.add(std::move(r), std::move(ops), std::move(variable.tensors));
}

/// conv2d{act}(avgpool2d(x), w) <=> avgpool2d{act}(conv2d(x, w)) for a 1x1 w, stride 1, groups 1:
/// mixing channels pixel by pixel commutes with averaging each channel (a window's divisor depends
/// on its place only), and the activation goes with the outer op. The pool then averages the
/// conv's channels instead of the input's, fewer where the conv narrows (Inception's pool branches:
/// 768 channels pooled before, 192 after); the other way the conv runs on the pooled image, fewer
/// pixels where the pool strides (DenseNet's transitions). Both directions are instantiated where
/// they match; the search keeps the cheaper. A pool with an activation of its own stays, unless it is
/// a relu on an input >= 0 by construction (nonnegative_pool_conv_commute).
inline void pool_conv_commute_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto& outer = g.get_op(o);
        if (outer.kind != K::conv2d && outer.kind != K::avgpool2d) continue;
        const auto io = g.producer(outer.inputs[0]);
        const auto& inner = g.get_op(io);
        if (inner.kind == outer.kind || (inner.kind != K::conv2d && inner.kind != K::avgpool2d)) continue;
        if (activation_of(inner) != 0) {
            if (outer.kind == K::conv2d) nonnegative_pool_conv_commute(g, o, out);
            continue;
        }
        const bool conv_outer = outer.kind == K::conv2d;
        const auto& conv = conv_outer ? outer : inner;
        const auto& pool = conv_outer ? inner : outer;
        const auto& x = g.type_of(inner.inputs[0]).dims;
        if (!pointwise_conv(g, conv, x)) continue;
        rule r;
        r.variables = {{"x0", x}, {"w0", g.type_of(conv.inputs[1]).dims, true}};
        const auto act = activation_of(outer);
        side_builder s{r.source};
        side_builder t{r.target};
        if (conv_outer) {
            r.source.outputs = {s.add(K::conv2d, conv.attrs, {s.add(K::avgpool2d, pool.attrs, {var(0)}), var(1)})};
            r.target.outputs = {t.add(K::avgpool2d, with_activation(pool.attrs, act),
                                      {t.add(K::conv2d, with_activation(conv.attrs, 0), {var(0), var(1)})})};
        } else {
            r.source.outputs = {s.add(K::avgpool2d, pool.attrs, {s.add(K::conv2d, conv.attrs, {var(0), var(1)})})};
            r.target.outputs = {t.add(K::conv2d, with_activation(conv.attrs, act),
                                      {t.add(K::avgpool2d, with_activation(pool.attrs, 0), {var(0)}), var(1)})};
        }
        out.add(std::move(r), {io, o}, {inner.inputs[0], conv.inputs[1]});
    }
}

/// pool{kernel 1x1, stride 1}(x) => x for average and max pooling without an activation: a
/// window of one cell copies its input (TASO's Inception-v3 file ends in such a "global" pool).
inline void identity_pool_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    for (graph::op_id o = 0; o < g.num_ops(); ++o) {
        const auto& p = g.get_op(o);
        if ((p.kind != K::avgpool2d && p.kind != K::maxpool2d) || activation_of(p) != 0 ||
            p.attrs.get_ints(A::kernel) != std::vector<std::int64_t>{1, 1} ||
            p.attrs.get_ints(A::stride) != std::vector<std::int64_t>{1, 1})
            continue;
        rule r;
        r.variables = {{"x0", g.type_of(p.inputs[0]).dims}};
        side_builder s{r.source};
        r.source.outputs = {s.add(p.kind, p.attrs, {var(0)})};
        r.target.outputs = {var(0)};
        out.add(std::move(r), {o}, {p.inputs[0]});
    }
}

/// concat(split(a)#0, ..., split(a)#n-1) along the split's axis => a: what a merge leaves behind
/// when the pieces were concatenated again (SqueezeNet's fire modules, Inception's blocks).
inline void concat_of_split_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    for (graph::op_id co = 0; co < g.num_ops(); ++co) {
        const auto& c = g.get_op(co);
        if (c.kind != K::concat || c.inputs.empty()) continue;
        const auto so = g.producer(c.inputs[0]);
        const auto& sp = g.get_op(so);
        if (sp.kind != K::split || sp.outputs.size() != c.inputs.size()) continue;
        const auto& xd = g.type_of(sp.inputs[0]).dims;
        if (xd.axis(sp.attrs.get_int(A::axis)) != g.type_of(c.outputs[0]).dims.axis(c.attrs.get_int(A::axis))) continue;
        bool in_order = true;
        for (std::size_t i = 0; i < c.inputs.size(); ++i) in_order = in_order && c.inputs[i] == sp.outputs[i];
        if (!in_order) continue;
        const auto n = static_cast<std::uint16_t>(sp.outputs.size());
        rule r;
        r.variables = {{"x0", xd}};
        side_builder s{r.source};
        const auto a = s.add(K::split, sp.attrs, {var(0)}, n);
        std::vector<value_ref> pieces;
        for (std::uint16_t i = 0; i < n; ++i) pieces.push_back(side_builder::out(a, i));
        r.source.outputs = {s.add(K::concat, c.attrs, pieces)};
        r.target.outputs = {var(0)};
        out.add(std::move(r), {so, co}, {sp.inputs[0]});
    }
}

/// concat{a}(..., concat{a}(y_1, ..., y_k), ...) => concat{a}(..., y_1, ..., y_k, ...), through every
/// level of nesting on the same axis: one kernel and one copy of each piece instead of a copy per
/// level. A graph whose concatenation is binary (Tensat's Inception-v3, whose blocks join their four
/// branches as concat(concat(a, b), concat(c, d)); egg's terms have a fixed arity) pays a launch and
/// a copy of the block's output for each inner node. An inner concat that has other consumers stays
/// for them; the search's cost decides whether the flat one pays.
inline void flatten_concat_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    constexpr std::size_t max_pieces = 64;  // a rule's size bound (DenseNet's chains of concats stay in it)
    auto axis_of = [&](const graph::op& c) { return g.type_of(c.outputs[0]).dims.axis(c.attrs.get_int(A::axis)); };
    auto nested = [&](graph::tensor_id t, std::size_t axis) {
        const auto& p = g.get_op(g.producer(t));
        return p.kind == K::concat && !p.inputs.empty() && axis_of(p) == axis;
    };
    for (graph::op_id co = 0; co < g.num_ops(); ++co) {
        const auto& c = g.get_op(co);
        if (c.kind != K::concat || c.inputs.empty()) continue;
        const std::size_t axis = axis_of(c);
        if (std::none_of(c.inputs.begin(), c.inputs.end(), [&](graph::tensor_id t) { return nested(t, axis); }))
            continue;
        rule r;
        side_builder s{r.source};
        std::vector<graph::op_id> ops;
        variable_binder variable{g, r, "x"};
        std::vector<value_ref> pieces;  // the flat concat's inputs, in order
        bool twice = false;             // an inner concat read twice: one source op per graph op, so no rule
        // the source side of concat `o`, inner concats first (a match lists ops as the side does)
        auto build = [&](auto& self, graph::op_id o) -> value_ref {
            const auto& op = g.get_op(o);
            std::vector<value_ref> in;
            for (graph::tensor_id t : op.inputs) {
                if (nested(t, axis) && pieces.size() < max_pieces) {
                    twice = twice || std::find(ops.begin(), ops.end(), g.producer(t)) != ops.end();
                    in.push_back(self(self, g.producer(t)));
                    continue;
                }
                in.push_back(variable(t));
                pieces.push_back(in.back());
            }
            ops.push_back(o);
            return s.add(K::concat, op.attrs, std::move(in));
        };
        r.source.outputs = {build(build, co)};
        if (twice) continue;
        side_builder t{r.target};
        r.target.outputs = {t.add(K::concat, c.attrs, pieces)};
        out.add(std::move(r), std::move(ops), std::move(variable.tensors));
    }
}

/// Whether `o` is a product sum_of_products_rules() can join with others of its kind: a conv2d of
/// one group or a matmul of a weight matrix, without a fused activation (the sum comes after it).
inline bool summable_product(const graph::computation_graph& g, const graph::op& o) {
    using K = ops::op_kind;
    if ((o.kind != K::conv2d && o.kind != K::matmul) || activation_of(o) != 0) return false;
    const auto& x = g.type_of(o.inputs[0]).dims;
    const auto& w = g.type_of(o.inputs[1]).dims;
    if (o.kind == K::conv2d) return w.rank() == 4 && x.rank() == 4 && x[1] == w[1];
    return o.kind == K::matmul && w.rank() == 2 && x.rank() >= 2;
}

/// Whether products `a` and `b` sum as one product of their concatenated inputs: the same kind and
/// attributes, kernels of one size, inputs alike but in the axis that is summed over (a conv's
/// input channels, a matmul's last axis).
inline bool joinable_products(const graph::computation_graph& g, const graph::op& a, const graph::op& b) {
    if (a.kind != b.kind || !(a.attrs == b.attrs)) return false;
    const auto& xa = g.type_of(a.inputs[0]).dims;
    const auto& xb = g.type_of(b.inputs[0]).dims;
    const auto& wa = g.type_of(a.inputs[1]).dims;
    const auto& wb = g.type_of(b.inputs[1]).dims;
    if (xa.rank() != xb.rank() || g.type_of(a.outputs[0]).dims != g.type_of(b.outputs[0]).dims) return false;
    const std::size_t summed = a.kind == ops::op_kind::conv2d ? 1 : xa.rank() - 1;
    for (std::size_t i = 0; i < xa.rank(); ++i)
        if (i != summed && xa[i] != xb[i]) return false;
    if (a.kind == ops::op_kind::conv2d) return wa[0] == wb[0] && wa[2] == wb[2] && wa[3] == wb[3];
    return wa[1] == wb[1];
}

/// p(x_1, w_1) + ... + p(x_n, w_n) + r_1 + ... => p(concat(x_1..x_n), concat(w_1..w_n)) + r_1 + ...
/// over a whole tree of ewadds, p a conv2d (inputs and kernels joined on their input channels) or a
/// matmul (inputs on their last axis, weights on their rows): a sum of products is one product over
/// the concatenated summation axis. WaveNet's skip connections sum one 1x1 conv per layer, an
/// LSTM's gates x W + h U; the generated rule joins two products per rewrite, so that a chain of n
/// needs n - 1 rewrites in a row, which equality saturation's few rounds and node bound never reach
/// (docs/substitution.md). One instance per tree of at most max_terms terms, rooted at an ewadd whose
/// value no larger tree sums; a longer sum is cut into such trees, each inner one an addend of the
/// one above, so that one round joins all of them and the next joins their products. An inner ewadd
/// read elsewhere, a graph output or of another shape ends the tree there (its value is an addend
/// r_i). The products joined are the largest set of joinable ones (at least two); the others stay
/// addends as they are.
inline void sum_of_products_rules(const graph::computation_graph& g, rule_set& out) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    // terms of one instance: the axioms prove a sum of up to 7 products (subst::proof_limits' node
    // bound); a longer sum is joined over several rewrites, each joining the last one's product
    constexpr std::size_t max_terms = 6;
    const auto preprocessing = weight_only(g);
    std::vector<bool> is_output(g.num_tensors(), false);
    for (auto t : g.outputs()) is_output[t] = true;
    // an ewadd of two values of its own shape (no broadcast): a node of a tree
    auto plain_add = [&](const graph::op& o) {
        return o.kind == K::ewadd && g.type_of(o.inputs[0]).dims == g.type_of(o.outputs[0]).dims &&
               g.type_of(o.inputs[1]).dims == g.type_of(o.outputs[0]).dims;
    };
    // an ewadd's value that the tree of its only reader sums
    auto inner = [&](graph::tensor_id t) {
        const auto& p = g.get_op(g.producer(t));
        const auto& uses = g.get_tensor(t).uses;
        return plain_add(p) && !preprocessing[g.producer(t)] && !is_output[t] && uses.size() == 1 &&
               plain_add(g.get_op(uses[0].op)) && g.type_of(t).dims == g.type_of(g.get_op(uses[0].op).outputs[0]).dims;
    };
    // the roots: every ewadd no larger tree sums, and each inner one a bounded tree above it left out
    std::vector<graph::op_id> roots;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (plain_add(g.get_op(o)) && !preprocessing[o] && !inner(g.get_op(o).outputs[0])) roots.push_back(o);
    for (std::size_t next_root = 0; next_root < roots.size(); ++next_root) {
        const auto root = roots[next_root];
        // the tree's terms, left to right: its inner ewadds' values expanded while within the bound
        std::vector<graph::op_id> adds;  // the tree's ewadds, inner ones first
        std::vector<graph::tensor_id> terms;
        std::size_t expanded = 0;  // the tree has expanded + 2 terms
        auto collect = [&](auto& self, graph::op_id o) -> void {
            for (graph::tensor_id t : g.get_op(o).inputs) {
                if (!inner(t)) {
                    terms.push_back(t);
                } else if (expanded + 2 < max_terms) {
                    ++expanded;
                    self(self, g.producer(t));
                } else {
                    terms.push_back(t);
                    roots.push_back(g.producer(t));  // the rest of a long sum: a tree of its own
                }
            }
            adds.push_back(o);
        };
        collect(collect, root);
        // the largest set of joinable products among the terms (each term once: x + x is no sum of two)
        std::vector<std::size_t> best;
        for (std::size_t i = 0; i < terms.size(); ++i) {
            const auto& p = g.get_op(g.producer(terms[i]));
            if (!summable_product(g, p) || preprocessing[g.producer(terms[i])]) continue;
            std::vector<std::size_t> set;
            for (std::size_t j = i; j < terms.size(); ++j) {
                const auto& q = g.get_op(g.producer(terms[j]));
                if (summable_product(g, q) && !preprocessing[g.producer(terms[j])] && joinable_products(g, p, q) &&
                    std::count(terms.begin(), terms.end(), terms[j]) == 1)
                    set.push_back(j);
            }
            if (set.size() > best.size()) best = std::move(set);
        }
        if (best.size() < 2) continue;
        // source: the tree as the graph has it, the joined products as ops, every other term a variable
        rule r;
        variable_binder variable{g, r, "v"};
        side_builder s{r.source};
        std::vector<graph::op_id> ops;
        std::vector<value_ref> term_value(terms.size());
        std::vector<std::pair<value_ref, value_ref>> factors(terms.size());  // of the joined products
        const bool conv = g.get_op(g.producer(terms[best[0]])).kind == K::conv2d;
        for (auto i : best) {
            const auto po = g.producer(terms[i]);
            const auto& p = g.get_op(po);
            factors[i] = {variable(p.inputs[0]), variable(p.inputs[1], conv)};
            term_value[i] = s.add(p.kind, p.attrs, {factors[i].first, factors[i].second});
            ops.push_back(po);
        }
        for (std::size_t i = 0; i < terms.size(); ++i)
            if (std::find(best.begin(), best.end(), i) == best.end()) term_value[i] = variable(terms[i]);
        std::size_t next = 0;  // the next term, in collect()'s order
        auto build = [&](auto& self, graph::op_id o) -> value_ref {
            std::vector<value_ref> in;
            for (graph::tensor_id t : g.get_op(o).inputs) {
                const bool in_tree = std::find(adds.begin(), adds.end(), g.producer(t)) != adds.end();
                in.push_back(in_tree ? self(self, g.producer(t)) : term_value[next++]);
            }
            ops.push_back(o);
            return s.add(K::ewadd, g.get_op(o).attrs, std::move(in));
        };
        r.source.outputs = {build(build, root)};
        // target: the joined product, then the other terms in order
        side_builder t{r.target};
        std::vector<value_ref> xs, ws;
        for (auto i : best) {
            xs.push_back(factors[i].first);
            ws.push_back(factors[i].second);
        }
        const auto& first = g.get_op(g.producer(terms[best[0]]));
        const std::int64_t x_axis = conv ? 1 : static_cast<std::int64_t>(g.type_of(first.inputs[0]).dims.rank()) - 1;
        const std::int64_t w_axis = conv ? 1 : 0;
        auto sum = t.add(
            first.kind, first.attrs,
            {t.add(K::concat, attrs_of({{A::axis, x_axis}}), xs), t.add(K::concat, attrs_of({{A::axis, w_axis}}), ws)});
        for (std::size_t i = 0; i < terms.size(); ++i)
            if (std::find(best.begin(), best.end(), i) == best.end()) sum = t.add(K::ewadd, {}, {sum, term_value[i]});
        r.target.outputs = {sum};
        out.add(std::move(r), std::move(ops), std::move(variable.tensors));
    }
}

}  // namespace detail

inline namespace rewriting {

inline rule matmul_merge_rule(const ops::shape& x, std::span<const ops::shape> weights,
                              const ops::attribute_map& attrs) {
    using K = ops::op_kind;
    using A = ops::attr_id;
    using detail::side_builder;
    rule r;
    r.variables.push_back({"x0", x});
    side_builder s{r.source};
    side_builder t{r.target};
    std::vector<value_ref> ws;
    std::vector<std::int64_t> sizes;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        r.variables.push_back({detail::numbered("w", i), weights[i], true});
        const auto v = detail::var(static_cast<std::uint16_t>(i + 1));
        r.source.outputs.push_back(s.add(K::matmul, attrs, {detail::var(0), v}));
        ws.push_back(v);
        sizes.push_back(weights[i][1]);
    }
    const auto cat = t.add(K::concat, detail::attrs_of({{A::axis, std::int64_t{1}}}), ws);
    const auto y = t.add(K::matmul, attrs, {detail::var(0), cat});
    const auto sp =
        t.add(K::split, detail::attrs_of({{A::axis, static_cast<std::int64_t>(x.rank()) - 1}, {A::sizes, sizes}}), {y},
              static_cast<std::uint16_t>(weights.size()));
    for (std::size_t i = 0; i < weights.size(); ++i)
        r.target.outputs.push_back(side_builder::out(sp, static_cast<std::uint16_t>(i)));
    return r;
}

inline std::vector<builtin_rewrite> builtin_rules(const graph::computation_graph& g, const builtin_options& opts) {
    detail::rule_set out{g};
    if (opts.activation_fusion) {
        detail::activation_rules(g, out);
        detail::activation_concat_rules(g, out);
    }
    if (opts.batchnorm_fold) detail::batchnorm_rules(g, out);
    if (opts.addend_fusion) detail::addend_rules(g, out);
    if (opts.merge_convs || opts.sum_convs) detail::conv_merge_rules(g, opts, out);
    if (opts.merge_matmuls) detail::matmul_merge_rules(g, opts, out);
    if (opts.batch_matmuls) detail::shared_weight_rules(g, opts, out);
    if (opts.merge_elementwise) detail::elementwise_merge_rules(g, out);
    if (opts.split_elementwise) detail::split_elementwise_rules(g, out);
    if (opts.concat_of_split) detail::concat_of_split_rules(g, out);
    if (opts.flatten_concats) detail::flatten_concat_rules(g, out);
    if (opts.sum_of_products) detail::sum_of_products_rules(g, out);
    if (opts.pool_conv_commute) detail::pool_conv_commute_rules(g, out);
    if (opts.identity_pool) detail::identity_pool_rules(g, out);
    return std::move(out.rules);
}

}  // namespace rewriting
}  // namespace goopt::subst
