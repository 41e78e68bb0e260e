#pragma once
/// @file
/// @brief The universe a substitution generator enumerates over: input variables of fixed shapes,
/// the operator set, and a small fixed list of attribute values per operator. TASO (SOSP'19) §3.

#include <goopt/error.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace goopt::subst {

/// An input of every enumerated graph: a named tensor of a fixed shape. In a rule it is a pattern
/// variable that matches any tensor of a compatible shape.
struct variable {
    std::string name;
    ops::shape dims;
    bool weight = false;  ///< a kernel: only kernel slots take it (world::kernel_slots)
};

/// An input slot that takes a kernel (conv2d's weight, enlarge's input): it never reads a value
/// computed from data variables, and the other slots of its op never read a value computed from
/// weight variables only. Without this, every 4-D weight would also be tried as an image and every
/// image as a kernel, which multiplies the graphs without adding identities of interest.
struct kernel_slot {
    ops::op_kind kind;
    std::uint16_t slot;
};

/// What the enumeration draws from. The operator set is a list of op kinds; everything else about
/// an operator (arity, shape rule) comes from ops::op_table, so adding an operator to the set needs
/// no change to the generator, only its attribute choices here (none when it has no attributes).
struct world {
    std::vector<variable> variables;
    /// Operator set, in enumeration order.
    std::vector<ops::op_kind> kinds;
    /// Per op kind, the attribute maps tried (every declared attribute filled in); complete_choices()
    /// gives a kind in `kinds` without a list one map: its defaults.
    std::array<std::vector<ops::attribute_map>, ops::num_op_kinds> choices;
    /// Kinds whose inputs must all be variables (TASO: enlarge only on inputs, so that it enlarges a
    /// weight and not a computed value).
    std::vector<ops::op_kind> inputs_only;
    /// Slots that take kernels; ops without one take any value anywhere.
    std::vector<kernel_slot> kernel_slots;
    /// Elementwise binary ops only on equal shapes (no broadcasting), as in TASO's operator set.
    bool same_shape_elementwise = true;
    /// Enumerate one input order of a commutative op (ops::commutative), so that commutativity is
    /// built into the enumeration instead of being rediscovered in every rule; false enumerates both
    /// orders (then the generator finds commutativity rules such as ewadd(x0,x1) => ewadd(x1,x0)).
    bool one_order_for_commutative = true;
    /// Inputs tried for an op whose arity is open (concat): TASO enumerates binary concat.
    std::uint16_t variadic_arity = 2;

    std::size_t num_choices(ops::op_kind k) const noexcept { return choices[static_cast<std::size_t>(k)].size(); }
    /// The attribute map of choice `c` of kind `k` (after complete_choices()).
    const ops::attribute_map& attributes(ops::op_kind k, std::size_t c) const {
        return choices[static_cast<std::size_t>(k)].at(c);
    }
    bool restricted_to_inputs(ops::op_kind k) const noexcept {
        for (auto x : inputs_only)
            if (x == k) return true;
        return false;
    }
};

/// @brief The attribute map `attrs` with every attribute that `k` declares and `attrs` lacks set to
/// its default, as graph::computation_graph::add does, so that shape rules can run on it directly.
/// @throws goopt::error when a required attribute is missing.
inline ops::attribute_map with_defaults(ops::op_kind k, ops::attribute_map attrs) {
    for (const ops::attr_spec& s : ops::spec(k).attrs) {
        if (attrs.has(s.id)) continue;
        if (s.required)
            throw error("subst::world", concat("attribute choice for ", ops::name(k), " lacks required attribute '",
                                               ops::name(s.id), "'"));
        switch (s.type) {
            case ops::attr_type::integer:
                attrs.set(s.id, s.int_default);
                break;
            case ops::attr_type::real:
                attrs.set(s.id, s.real_default);
                break;
            case ops::attr_type::ints:
                attrs.set(s.id, std::vector<std::int64_t>(s.ints_default.begin(), s.ints_default.end()));
                break;
        }
    }
    return attrs;
}

/// @brief Gives every kind of the operator set without attribute choices one choice: its defaults.
inline void complete_choices(world& w) {
    for (auto k : w.kinds) {
        auto& c = w.choices[static_cast<std::size_t>(k)];
        if (c.empty()) c.push_back(with_defaults(k, {}));
    }
}

/// The symbolic dimensions of TASO's world; other values give the same world at other shapes (the
/// float re-check of a rule instantiates it in several).
struct taso_dims {
    std::int64_t n = 4;  ///< matrix side
    std::int64_t c = 3;  ///< image channels
    std::int64_t h = 5;  ///< image height
    std::int64_t w = 6;  ///< image width
};

/// @brief TASO's operator set and inputs at the given dimensions. Attribute choices, the same list
/// in the same order for every `taso_dims` (a rule refers to a choice by its index):
/// conv2d: stride 1 or 2, SAME or VALID, activation none or relu; matmul: activation none or relu;
/// transpose: perm [1,0]; enlarge: kernel 3x3; avgpool2d: 3x3 window, stride 1, SAME;
/// concat: axis 0 or 1; split: axis 0 or 1 into halves of 2n or of 2c, or into n/2 and n - n/2;
/// constants: one shape each.
/// Variables: matrices x0, x1, x2 [n,n]; scalar s0 []; images a0, a1 [1,c,h,w]; kernels w0, w1
/// [c,c,3,3] and w2 [c,c,1,1] (the one enlarge can grow), which feed only kernel slots.
inline world taso_world(const taso_dims& d = {}) {
    using ops::attr_id;
    using ops::op_kind;
    using ints = std::vector<std::int64_t>;
    world w;
    const ops::shape mat{d.n, d.n}, img{1, d.c, d.h, d.w};
    w.variables = {{"x0", mat},
                   {"x1", mat},
                   {"x2", mat},
                   {"s0", ops::shape{}},
                   {"a0", img},
                   {"a1", img},
                   {"w0", {d.c, d.c, 3, 3}, true},
                   {"w1", {d.c, d.c, 3, 3}, true},
                   {"w2", {d.c, d.c, 1, 1}, true}};
    w.kinds = {op_kind::conv2d, op_kind::matmul,     op_kind::ewadd,       op_kind::ewmul,     op_kind::smul,
               op_kind::relu,   op_kind::transpose,  op_kind::enlarge,     op_kind::avgpool2d, op_kind::concat,
               op_kind::split,  op_kind::const_pool, op_kind::const_iconv, op_kind::const_imm, op_kind::const_one};
    auto set = [&](op_kind k, std::vector<ops::attribute_map> maps) {
        for (auto& m : maps) m = with_defaults(k, std::move(m));
        w.choices[static_cast<std::size_t>(k)] = std::move(maps);
    };
    std::vector<ops::attribute_map> conv;
    for (std::int64_t s : {1, 2})
        for (std::int64_t p : {0, 1})
            for (std::int64_t a : {0, 1})
                conv.push_back({{attr_id::stride, ints{s, s}}, {attr_id::padding, p}, {attr_id::activation, a}});
    set(op_kind::conv2d, conv);
    set(op_kind::matmul, {{{attr_id::activation, std::int64_t{0}}}, {{attr_id::activation, std::int64_t{1}}}});
    set(op_kind::transpose, {{{attr_id::perm, ints{1, 0}}}});
    set(op_kind::enlarge, {{{attr_id::kernel, ints{3, 3}}}});
    set(op_kind::avgpool2d,
        {{{attr_id::kernel, ints{3, 3}}, {attr_id::stride, ints{1, 1}}, {attr_id::padding, std::int64_t{0}}}});
    set(op_kind::concat, {{{attr_id::axis, std::int64_t{0}}}, {{attr_id::axis, std::int64_t{1}}}});
    std::vector<ops::attribute_map> split;
    for (std::int64_t ax : {0, 1})
        for (std::int64_t half : {d.n, d.c}) split.push_back({{attr_id::axis, ax}, {attr_id::sizes, ints{half, half}}});
    // and a matrix into two parts, so that concat(split(x0)#0,split(x0)#1) => x0 and the rules that
    // split a variable exist (appended: the earlier choices keep their indices)
    for (std::int64_t ax : {0, 1})
        split.push_back({{attr_id::axis, ax}, {attr_id::sizes, ints{d.n / 2, d.n - d.n / 2}}});
    set(op_kind::split, split);
    set(op_kind::const_pool, {{{attr_id::shape, ints{d.c, 1, 3, 3}}}});
    set(op_kind::const_iconv, {{{attr_id::shape, ints{d.c, d.c, 3, 3}}}});
    set(op_kind::const_imm, {{{attr_id::shape, ints{d.n, d.n}}}});
    set(op_kind::const_one, {{{attr_id::shape, ints{d.n, d.n}}}, {{attr_id::shape, ints{1, d.c, d.h, d.w}}}});
    w.inputs_only = {op_kind::enlarge};
    w.kernel_slots = {{op_kind::conv2d, 1}, {op_kind::enlarge, 0}};
    complete_choices(w);
    return w;
}

}  // namespace goopt::subst
