#pragma once
/// @file
/// @brief A rule at the shapes of a match. A generated rule is found at the small shapes of its
/// world; a match binds its variables to tensors of other sizes, possibly of another rank (a
/// batched matmul, a bias vector). The rule is carried over (its variables take the matched shapes,
/// axes count from the end, attributes that follow the operands' sizes are solved) and then proven
/// again from the axioms at exactly those shapes: a rewrite is applied only where it is a theorem.
/// TASO (SOSP'19) §4 proves rules at fixed shapes only; this carries the proof to the match.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/generation/prover.hpp>
#include <goopt/subst/rule.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace goopt::subst {
inline namespace rewriting {

/// Where a rule's source sits in a graph: the graph op of every source op (in rule order) and the
/// graph tensor bound to every rule variable.
struct match {
    std::vector<graph::op_id> ops;
    std::vector<graph::tensor_id> variables;
    friend bool operator==(const match&, const match&) = default;
};

/// How an attribute of a rule's op relates to the shapes the rule is applied at.
enum class attr_role : std::uint8_t {
    exact,            ///< equal wherever the rule applies (stride, padding, activation, a pool's window)
    axis,             ///< an axis, counted from the end when the rule's values gain or lose leading axes
    permutation,      ///< transpose's perm: the identity on leading axes that a higher rank adds
    shape_dependent,  ///< follows the operands' sizes: split sizes, constant shapes, enlarge's kernel
};

/// The role of attribute `a` of an op of kind `k`.
constexpr attr_role role_of(ops::op_kind k, ops::attr_id a) noexcept {
    using ops::attr_id;
    using ops::op_kind;
    switch (a) {
        case attr_id::axis:
            return attr_role::axis;
        case attr_id::perm:
            return attr_role::permutation;
        case attr_id::sizes:
            return k == op_kind::split ? attr_role::shape_dependent : attr_role::exact;
        case attr_id::kernel:
            return k == op_kind::enlarge ? attr_role::shape_dependent : attr_role::exact;
        case attr_id::shape:
            return k == op_kind::const_pool || k == op_kind::const_iconv || k == op_kind::const_imm ||
                           k == op_kind::const_one
                       ? attr_role::shape_dependent
                       : attr_role::exact;
        default:
            return attr_role::exact;
    }
}

/// Output types of every op of one side of `r` when its variables have the types `vars`.
/// @throws goopt::error when an op's shape rule rejects its inputs.
inline std::vector<std::vector<ops::tensor_type>> side_types(const rule_graph& side,
                                                             const std::vector<ops::tensor_type>& vars);

/// The types of `r`'s variables at the shapes it was found at.
inline std::vector<ops::tensor_type> recorded_types(const rule& r);

/// @brief Whether attribute maps `rule_attrs` (of a rule op whose first input had rank `rule_rank`)
/// and `graph_attrs` (of a graph op whose first input has rank `graph_rank`) agree as a match needs:
/// exact attributes equal, axes and permutations equal once counted from the end, shape-dependent
/// attributes anything (the proof at the matched shapes decides).
inline bool attributes_match(ops::op_kind k, const ops::attribute_map& rule_attrs, std::size_t rule_rank,
                             const ops::attribute_map& graph_attrs, std::size_t graph_rank);

/// Bounds of solving a rule's shape-dependent attributes at a match.
struct instantiation_limits {
    std::size_t max_candidates = 4096;  ///< attribute settings tried (shape inference only)
    std::size_t max_proofs = 8;         ///< settings that type-check and are handed to the prover
    proof_limits proof{};               ///< bounds of each proof
};

/// @brief `r` at the match `m` in `g`: variables at the matched tensors' shapes, source attributes
/// as in the matched ops, target axes counted from the end and shape-dependent target attributes
/// (e.g. `split{sizes}` after a merge, the shape of `const_imm`) chosen among the sizes the match
/// shows, so that the target's outputs have the matched outputs' types, and proven from the axioms.
/// @return the proven rule, or why the rule does not hold (or was not proven) at this match.
inline std::variant<rule, std::string> instantiate(const graph::computation_graph& g, const rule& r, const match& m,
                                                   const instantiation_limits& limits = {});

// ---- implementation ----

inline std::vector<std::vector<ops::tensor_type>> side_types(const rule_graph& side,
                                                             const std::vector<ops::tensor_type>& vars) {
    std::vector<std::vector<ops::tensor_type>> out;
    out.reserve(side.ops.size());
    std::vector<ops::tensor_type> in;
    for (const auto& o : side.ops) {
        in.clear();
        for (auto v : o.inputs) {
            if (v.is_variable()) {
                if (v.index >= vars.size())
                    throw error("rule side", concat("variable ", v.index, " is out of range"),
                                concat("< ", vars.size()));
                in.push_back(vars[v.index]);
            } else {
                if (v.op >= out.size() || v.index >= out[v.op].size())
                    throw error("rule side", concat("value %", v.op, "#", v.index, " does not exist where it is used"),
                                "an output of an earlier op");
                in.push_back(out[v.op][v.index]);
            }
        }
        const ops::output_types t = ops::spec(o.kind).infer(in, with_defaults(o.kind, o.attrs));
        out.emplace_back(t.begin(), t.end());  // (not the small_vector itself: GCC 12's false -Wstringop-overread)
    }
    return out;
}

inline std::vector<ops::tensor_type> recorded_types(const rule& r) {
    std::vector<ops::tensor_type> t;
    for (const auto& v : r.variables) t.push_back(ops::tensor_type{v.dims});
    return t;
}

}  // namespace rewriting

namespace detail {

/// Axis `a` of a value of rank `from` moved to a value of rank `to` (counted from the end);
/// nullopt when it falls off.
inline std::optional<std::int64_t> lift_axis(std::int64_t a, std::size_t from, std::size_t to) {
    const auto f = static_cast<std::int64_t>(from), t = static_cast<std::int64_t>(to);
    if (a < 0) a += f;
    if (a < 0 || a >= f) return std::nullopt;
    const std::int64_t b = a + (t - f);
    if (b < 0 || b >= t) return std::nullopt;
    return b;
}

/// Permutation `p` of rank `from` (empty: reversal) at rank `to`: leading axes added stay in place.
inline std::optional<std::vector<std::int64_t>> lift_perm(std::vector<std::int64_t> p, std::size_t from,
                                                          std::size_t to) {
    if (p.empty())
        for (std::size_t i = from; i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
    if (p.size() != from || to < from) {
        if (from == to) return p;
        return std::nullopt;  // a permutation does not survive losing axes
    }
    const auto d = static_cast<std::int64_t>(to - from);
    std::vector<std::int64_t> q;
    for (std::int64_t i = 0; i < d; ++i) q.push_back(i);
    for (auto x : p) q.push_back(x + d);
    return q;
}

/// `attrs` (of a rule op whose first input had rank `from`) with its axes and permutation moved to
/// rank `to`; nullopt when they do not exist there.
inline std::optional<ops::attribute_map> lift_attributes(ops::op_kind k, ops::attribute_map attrs, std::size_t from,
                                                         std::size_t to) {
    ops::attribute_map out = attrs;
    for (const auto& [id, v] : attrs) {
        const attr_role role = role_of(k, id);
        if (role == attr_role::axis) {
            const auto* a = std::get_if<std::int64_t>(&v);
            if (!a) return std::nullopt;
            const auto b = lift_axis(*a, from, to);
            if (!b) return std::nullopt;
            out.set(id, *b);
        } else if (role == attr_role::permutation) {
            const auto* p = std::get_if<std::vector<std::int64_t>>(&v);
            if (!p) return std::nullopt;
            auto q = lift_perm(*p, from, to);
            if (!q) return std::nullopt;
            out.set(id, std::move(*q));
        }
    }
    return out;
}

/// The sizes a match shows for each size of the rule's world: pairs (recorded, matched) from the
/// variables' and the source outputs' dimensions (aligned from the end) and from shape-dependent
/// source attributes.
class size_correspondence {
public:
    void add(std::int64_t recorded, std::int64_t matched) {
        for (const auto& [a, b] : pairs_)
            if (a == recorded && b == matched) return;
        pairs_.emplace_back(recorded, matched);
    }
    void add_shapes(const ops::shape& recorded, const ops::shape& matched) {
        const std::size_t n = std::min(recorded.rank(), matched.rank());
        for (std::size_t i = 0; i < n; ++i) add(recorded[recorded.rank() - 1 - i], matched[matched.rank() - 1 - i]);
    }
    /// What a recorded size may stand for at the match (itself when the match shows nothing).
    std::vector<std::int64_t> candidates(std::int64_t recorded) const {
        std::vector<std::int64_t> c;
        for (const auto& [a, b] : pairs_)
            if (a == recorded && std::find(c.begin(), c.end(), b) == c.end()) c.push_back(b);
        if (c.empty()) c.push_back(recorded);
        return c;
    }

private:
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs_;
};

/// Depth-first choice of the target's attributes, op by op, each setting checked by the op's shape
/// rule; `done` gets every complete setting whose outputs have the matched outputs' types.
class target_solver {
public:
    target_solver(const rule& r, const std::vector<std::vector<ops::tensor_type>>& recorded_target,
                  const std::vector<ops::tensor_type>& vars, const std::vector<ops::tensor_type>& outputs,
                  const size_correspondence& sizes, const instantiation_limits& limits)
        : r_(r), recorded_(recorded_target), vars_(vars), outputs_(outputs), sizes_(sizes), limits_(limits) {}

    /// Calls `done(attrs per target op)` for each solution until it returns true; @return whether one did.
    template <class Done> bool run(Done&& done) {
        attrs_.assign(r_.target.ops.size(), {});
        types_.assign(r_.target.ops.size(), {});
        return visit(0, done);
    }
    std::string why_not() const { return why_; }

private:
    std::optional<ops::tensor_type> type_of(value_ref v) const {
        if (v.is_variable()) return v.index < vars_.size() ? std::optional(vars_[v.index]) : std::nullopt;
        if (v.op >= types_.size() || v.index >= types_[v.op].size()) return std::nullopt;
        return types_[v.op][v.index];
    }
    std::size_t recorded_rank(value_ref v) const {  // v exists: type_of(v) found it
        if (v.is_variable()) return r_.variables[v.index].dims.rank();
        return recorded_[v.op][v.index].dims.rank();
    }

    template <class Done> bool visit(std::size_t i, Done& done) {
        if (i == r_.target.ops.size()) {
            for (std::size_t k = 0; k < r_.target.outputs.size(); ++k) {
                const auto t = type_of(r_.target.outputs[k]);
                if (!t || !(*t == outputs_[k])) {
                    if (why_.empty())
                        why_ = "target output " + std::to_string(k) + " does not have the matched output's type";
                    return false;
                }
            }
            return done(attrs_);
        }
        const rule_op& o = r_.target.ops[i];
        std::vector<ops::tensor_type> in;
        for (auto v : o.inputs) {
            const auto t = type_of(v);
            if (!t) {
                why_ = "target op " + std::to_string(i) + " reads a value that does not exist";
                return false;
            }
            in.push_back(*t);
        }
        const std::size_t from = o.inputs.empty() ? 0 : recorded_rank(o.inputs[0]);
        const std::size_t to = in.empty() ? 0 : in[0].dims.rank();
        auto lifted = lift_attributes(o.kind, with_defaults(o.kind, o.attrs), from, to);
        if (!lifted) {
            if (why_.empty())
                why_ = "target op " + std::to_string(i) + " (" + std::string(ops::name(o.kind)) +
                       ") has no axis at rank " + std::to_string(to);
            return false;
        }
        // the shape-dependent integers of this op and what each may become
        struct slot {
            ops::attr_id id;
            std::size_t at;
            std::vector<std::int64_t> values;
        };
        std::vector<slot> slots;
        for (const auto& [id, v] : *lifted)
            if (role_of(o.kind, id) == attr_role::shape_dependent)
                if (const auto* xs = std::get_if<std::vector<std::int64_t>>(&v))
                    for (std::size_t j = 0; j < xs->size(); ++j) slots.push_back({id, j, sizes_.candidates((*xs)[j])});
        std::vector<std::size_t> pick(slots.size(), 0);
        while (true) {
            if (++tried_ > limits_.max_candidates) {
                why_ = "more than " + std::to_string(limits_.max_candidates) + " attribute settings tried";
                return false;
            }
            ops::attribute_map a = *lifted;
            for (std::size_t s = 0; s < slots.size(); ++s) {
                auto xs = a.get_ints(slots[s].id);
                xs[slots[s].at] = slots[s].values[pick[s]];
                a.set(slots[s].id, std::move(xs));
            }
            bool ok = true;
            try {
                const ops::output_types t = ops::spec(o.kind).infer(in, a);
                types_[i].assign(t.begin(), t.end());
            } catch (const error& e) {
                ok = false;
                if (why_.empty()) why_ = std::string("target does not build at the matched shapes: ") + e.what();
            }
            if (ok) {
                attrs_[i] = a;
                if (visit(i + 1, done)) return true;
                if (tried_ > limits_.max_candidates) return false;
            }
            std::size_t s = slots.size();
            while (s > 0 && ++pick[s - 1] == slots[s - 1].values.size()) pick[--s] = 0;
            if (s == 0) return false;
        }
    }

    const rule& r_;
    const std::vector<std::vector<ops::tensor_type>>& recorded_;
    const std::vector<ops::tensor_type>& vars_;
    const std::vector<ops::tensor_type>& outputs_;
    const size_correspondence& sizes_;
    const instantiation_limits& limits_;
    std::vector<ops::attribute_map> attrs_;
    std::vector<std::vector<ops::tensor_type>> types_;
    std::size_t tried_ = 0;
    std::string why_;
};

}  // namespace detail

inline namespace rewriting {

inline bool attributes_match(ops::op_kind k, const ops::attribute_map& rule_attrs, std::size_t rule_rank,
                             const ops::attribute_map& graph_attrs, std::size_t graph_rank) {
    const auto lifted = detail::lift_attributes(k, rule_attrs, rule_rank, graph_rank);
    if (!lifted) return false;
    for (const auto& [id, v] : *lifted) {
        if (role_of(k, id) == attr_role::shape_dependent) {
            if (!graph_attrs.has(id)) return false;
            continue;
        }
        if (role_of(k, id) == attr_role::permutation && graph_attrs.has(id)) {
            const auto g = detail::lift_perm(graph_attrs.get_ints(id), graph_rank, graph_rank);
            if (!g || *g != std::get<std::vector<std::int64_t>>(v)) return false;
            continue;
        }
        if (role_of(k, id) == attr_role::axis && graph_attrs.has(id)) {
            const auto g = detail::lift_axis(graph_attrs.get_int(id), graph_rank, graph_rank);
            if (!g || *g != std::get<std::int64_t>(v)) return false;
            continue;
        }
        if (!graph_attrs.has(id) || !(graph_attrs.get(id) == v)) return false;
    }
    return true;
}

inline std::variant<rule, std::string> instantiate(const graph::computation_graph& g, const rule& r, const match& m,
                                                   const instantiation_limits& limits) {
    if (m.ops.size() != r.source.ops.size() || m.variables.size() != r.variables.size())
        return std::string("the match has ") + std::to_string(m.ops.size()) + " ops and " +
               std::to_string(m.variables.size()) + " variables, expected " + std::to_string(r.source.ops.size()) +
               " and " + std::to_string(r.variables.size());
    for (auto t : m.variables)
        if (t >= g.num_tensors())
            return "the match binds a variable to tensor " + std::to_string(t) + ", which does not exist";
    for (auto o : m.ops)
        if (o >= g.num_ops()) return "the match names op " + std::to_string(o) + ", which does not exist";
    for (auto v : r.source.outputs)
        if (v.is_variable() || v.op >= r.source.ops.size() || v.index >= g.get_op(m.ops[v.op]).outputs.size())
            return std::string("a source output is not an output of a matched op");

    rule at = r;
    std::vector<ops::tensor_type> vars;
    for (std::size_t i = 0; i < r.variables.size(); ++i) {
        vars.push_back(g.type_of(m.variables[i]));
        at.variables[i].dims = vars.back().dims;
    }
    for (std::size_t i = 0; i < r.source.ops.size(); ++i) at.source.ops[i].attrs = g.get_op(m.ops[i]).attrs;
    std::vector<ops::tensor_type> outputs;
    for (auto v : r.source.outputs) outputs.push_back(g.type_of(g.get_op(m.ops[v.op]).outputs[v.index]));

    std::vector<std::vector<ops::tensor_type>> recorded_source, recorded_target;
    try {
        const auto rec = recorded_types(r);
        recorded_source = side_types(r.source, rec);
        recorded_target = side_types(r.target, rec);
    } catch (const error& e) {
        return std::string("the rule does not build at its recorded shapes: ") + e.what();
    }
    detail::size_correspondence sizes;
    for (std::size_t i = 0; i < r.variables.size(); ++i) sizes.add_shapes(r.variables[i].dims, vars[i].dims);
    for (std::size_t i = 0; i < r.source.ops.size(); ++i) {
        const auto& go = g.get_op(m.ops[i]);
        for (std::size_t k = 0; k < go.outputs.size() && k < recorded_source[i].size(); ++k)
            sizes.add_shapes(recorded_source[i][k].dims, g.type_of(go.outputs[k]).dims);
        for (const auto& [id, v] : r.source.ops[i].attrs)
            if (role_of(r.source.ops[i].kind, id) == attr_role::shape_dependent && go.attrs.has(id)) {
                const auto* a = std::get_if<std::vector<std::int64_t>>(&v);
                const auto* b = std::get_if<std::vector<std::int64_t>>(&go.attrs.get(id));
                if (a && b && a->size() == b->size())
                    for (std::size_t j = 0; j < a->size(); ++j) sizes.add((*a)[j], (*b)[j]);
            }
    }

    std::size_t proofs = 0;
    std::string last_reason;
    std::optional<rule> proven;
    detail::target_solver solver(r, recorded_target, vars, outputs, sizes, limits);
    solver.run([&](const std::vector<ops::attribute_map>& attrs) {
        rule q = at;
        for (std::size_t i = 0; i < attrs.size(); ++i) q.target.ops[i].attrs = attrs[i];
        const proof_result p = prove(q, limits.proof);
        if (p.proven) {
            proven = std::move(q);
            return true;
        }
        last_reason = p.reason;
        return ++proofs >= limits.max_proofs;
    });
    if (proven) return std::move(*proven);
    if (proofs > 0) return "not proven from the axioms at the matched shapes (" + last_reason + ")";
    const std::string why = solver.why_not();
    return why.empty() ? std::string("the target has no attribute setting that fits the matched shapes") : why;
}

}  // namespace rewriting
}  // namespace goopt::subst
