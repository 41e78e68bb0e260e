#pragma once
/// @file
/// @brief A substitution rule: source and target graphs over shared variables, outputs mapped in
/// order, and its one-line readable form. TASO (SOSP'19) §3.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/world.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace goopt::subst {

/// One op of a rule graph, with its attributes spelled out (a rule does not depend on a world).
struct rule_op {
    ops::op_kind kind{};
    ops::attribute_map attrs;
    std::vector<value_ref> inputs;  ///< variables index rule::variables
    std::uint16_t num_outputs = 1;
};

/// One side of a rule: ops in topological order and its outputs.
struct rule_graph {
    std::vector<rule_op> ops;
    std::vector<value_ref> outputs;
};

/// @brief A rewrite `source => target`, valid in both directions: target.outputs[i] equals
/// source.outputs[i] for every value of the variables (of shapes compatible with the recorded ones).
struct rule {
    std::vector<variable> variables;  ///< the pattern variables, with the shapes it was found at
    rule_graph source;
    rule_graph target;
};

/// @brief `{name=value,...}` of the attributes that differ from their defaults ("" if none).
inline std::string attributes_text(ops::op_kind k, const ops::attribute_map& attrs);

/// @brief Text of a value in the rule grammar (README.md):
/// @code
///   rule  := side " => " side
///   side  := term (", " term)*
///   term  := variable | kind [ "{" attr ("," attr)* "}" ] "(" [ term ("," term)* ] ")" [ "#" output ]
///   attr  := name "=" (integer | "[" integer ("," integer)* "]" | padding | activation)
/// @endcode
/// Attributes at their default values are left out; `#i` names output i of a multi-output op.
inline std::string term(const rule& r, const rule_graph& g, value_ref v);

/// The one-line form `source => target`, e.g.
/// `ewadd(matmul(x0,w0),matmul(x1,w0)) => matmul(ewadd(x0,x1),w0)`.
inline std::string to_string(const rule& r);

/// @brief A rule from two patterns of world `w` whose outputs correspond in order; the rule's
/// variables are the world variables either side reads, in world order. The inputs of commutative
/// ops are put in the order of their terms (the same rule, canonically spelled).
inline rule make_rule(const world& w, const pattern& source, const pattern& target);

/// @brief One side of `r` as a computation graph at the variables' recorded shapes: an `input` op
/// per variable (all of r.variables, so both sides take the same feeds), outputs marked in order.
/// @throws goopt::error when a shape rule rejects an op.
inline graph::computation_graph to_graph(const rule& r, const rule_graph& side);

/// @brief `r` read right to left (target => source); nullopt when that cannot be matched: the target
/// has an output that is a variable (`x0 => matmul(x0,const_imm)` would match every tensor) or reads
/// a variable that the source does not (nothing in the graph binds it).
inline std::optional<rule> reversed(const rule& r);

/// @brief Every rule of `rules` followed by the reverses that can be matched: rules are equalities,
/// and a search needs both directions (the stored one of a merge is often the split direction).
inline std::vector<rule> both_directions(std::span<const rule> rules);

// ---- implementation ----

namespace detail {
inline std::string ints_text(const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(v[i]);  // piecewise: GCC 12 warns (-Wrestrict) on "," + to_string(...)
    }
    s += ']';
    return s;
}
}  // namespace detail

inline std::string attributes_text(ops::op_kind k, const ops::attribute_map& attrs) {
    ops::attribute_map defaults;
    for (const auto& a : ops::spec(k).attrs) {
        if (a.required) continue;
        if (a.type == ops::attr_type::integer) defaults.set(a.id, a.int_default);
        else if (a.type == ops::attr_type::real) defaults.set(a.id, a.real_default);
        else defaults.set(a.id, std::vector<std::int64_t>(a.ints_default.begin(), a.ints_default.end()));
    }
    std::string s;
    for (const auto& [id, v] : attrs) {
        if (defaults.has(id) && defaults.get(id) == v) continue;
        s += s.empty() ? "{" : ",";
        s += std::string(ops::name(id)) + "=";
        if (const auto* i = std::get_if<std::int64_t>(&v)) {
            if (id == ops::attr_id::padding && (*i == 0 || *i == 1)) s += ops::name(static_cast<ops::padding_mode>(*i));
            else if (id == ops::attr_id::activation && *i >= 0 && *i < ops::num_activations)
                s += ops::name(static_cast<ops::activation>(*i));
            else s += std::to_string(*i);
        } else if (const auto* d = std::get_if<double>(&v)) {
            s += std::to_string(*d);
        } else {
            s += detail::ints_text(std::get<std::vector<std::int64_t>>(v));
        }
    }
    return s.empty() ? s : s + "}";
}

inline std::string term(const rule& r, const rule_graph& g, value_ref v) {
    if (v.is_variable()) return r.variables.at(v.index).name;
    const rule_op& o = g.ops.at(v.op);
    std::string s(ops::name(o.kind));
    s += attributes_text(o.kind, o.attrs);
    s += '(';
    for (std::size_t i = 0; i < o.inputs.size(); ++i) {
        if (i) s += ',';
        s += term(r, g, o.inputs[i]);
    }
    s += ')';
    if (o.num_outputs != 1) {
        s += '#';
        s += std::to_string(v.index);
    }
    return s;
}

inline std::string to_string(const rule& r) {
    auto side = [&](const rule_graph& g) {
        std::string s;
        for (std::size_t i = 0; i < g.outputs.size(); ++i) {
            if (i) s += ", ";
            s += term(r, g, g.outputs[i]);
        }
        return s;
    };
    return side(r.source) + " => " + side(r.target);
}

inline rule make_rule(const world& w, const pattern& source, const pattern& target) {
    rule r;
    auto vars = used_variables(source);
    for (auto v : used_variables(target)) vars.push_back(v);
    std::sort(vars.begin(), vars.end());
    vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
    for (auto v : vars) r.variables.push_back(w.variables.at(v));
    auto renumber = [&](value_ref v) {
        if (!v.is_variable()) return v;
        return value_ref{variable_op, static_cast<std::uint16_t>(std::lower_bound(vars.begin(), vars.end(), v.index) -
                                                                 vars.begin())};
    };
    auto convert = [&](const pattern& p) {
        rule_graph g;
        for (const auto& o : p.ops) {
            rule_op q{o.kind, w.attributes(o.kind, o.choice), {}, o.num_outputs};
            for (auto v : o.inputs) q.inputs.push_back(renumber(v));
            g.ops.push_back(std::move(q));
        }
        for (auto v : p.outputs) g.outputs.push_back(renumber(v));
        return g;
    };
    r.source = convert(source);
    r.target = convert(target);
    // commutative inputs in the order of their terms, so that the text of a rule is canonical
    for (rule_graph* g : {&r.source, &r.target})
        for (auto& o : g->ops)
            if (w.one_order_for_commutative)
                if (ops::spec(o.kind).has(ops::commutative) && o.inputs.size() == 2 &&
                    term(r, *g, o.inputs[1]) < term(r, *g, o.inputs[0]))
                    std::swap(o.inputs[0], o.inputs[1]);
    return r;
}

inline graph::computation_graph to_graph(const rule& r, const rule_graph& side) {
    graph::computation_graph g;
    std::vector<graph::tensor_id> var;
    for (const auto& v : r.variables) var.push_back(g.input(v.name, v.dims));
    std::vector<std::vector<graph::tensor_id>> outs;
    std::vector<graph::tensor_id> in;
    auto resolve = [&](value_ref v) -> graph::tensor_id {
        if (v.is_variable()) {
            if (v.index >= var.size())
                throw error("rule side", concat("variable ", v.index, " is out of range"), concat("< ", var.size()));
            return var[v.index];
        }
        if (v.op >= outs.size() || v.index >= outs[v.op].size())
            throw error("rule side", concat("value %", v.op, "#", v.index, " does not exist where it is used"),
                        "an output of an earlier op");
        return outs[v.op][v.index];
    };
    for (const auto& o : side.ops) {
        in.clear();
        for (const auto& v : o.inputs) in.push_back(resolve(v));
        const auto ids = g.add(o.kind, in, o.attrs);
        outs.emplace_back(ids.begin(), ids.end());
    }
    for (const auto& v : side.outputs) g.mark_output(resolve(v));
    return g;
}

inline std::optional<rule> reversed(const rule& r) {
    auto reads = [](const rule_graph& side, std::size_t v) {
        for (const auto& o : side.ops)
            for (auto x : o.inputs)
                if (x.is_variable() && x.index == v) return true;
        for (auto x : side.outputs)
            if (x.is_variable() && x.index == v) return true;
        return false;
    };
    for (auto v : r.target.outputs)
        if (v.is_variable()) return std::nullopt;
    for (std::size_t v = 0; v < r.variables.size(); ++v)
        if (reads(r.source, v) && !reads(r.target, v)) return std::nullopt;
    rule q = r;
    std::swap(q.source, q.target);
    return q;
}

inline std::vector<rule> both_directions(std::span<const rule> rules) {
    std::vector<rule> out(rules.begin(), rules.end());
    for (const auto& r : rules)
        if (auto q = reversed(r)) out.push_back(std::move(*q));
    return out;
}

}  // namespace goopt::subst
