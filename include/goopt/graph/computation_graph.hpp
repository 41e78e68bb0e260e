#pragma once
/// @file
/// @brief The computation graph IR: ops that consume and produce tensors.

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace goopt::graph {

using op_id = std::uint32_t;
using tensor_id = std::uint32_t;
inline constexpr op_id no_op = std::numeric_limits<op_id>::max();

/// One consumption of a tensor: input `slot` of op `op`.
struct use {
    op_id op;
    std::uint32_t slot;
    friend constexpr bool operator==(const use&, const use&) = default;
};

/// A tensor: its type, the op that produces it (its `index`-th output) and the ops that consume it.
struct tensor {
    ops::tensor_type type;
    op_id producer = no_op;
    std::uint32_t index = 0;
    boost::container::small_vector<use, 2> uses;
};

/// Output tensor ids of one op, returned by value (most ops have one or two).
using output_ids = boost::container::small_vector<tensor_id, 2>;

/// An op (a node): kind, attributes (every declared attribute present), name, inputs and outputs.
/// `layer` is the layer or block the op belongs to in its model (-1: none); expert placements and
/// visualizations use it. Ops with the same `colocation` group (>= 0) must run on one device: a
/// parameter, the accumulation of its gradient and its update op (-1: unconstrained).
struct op {
    ops::op_kind kind;
    ops::attribute_map attrs;
    std::string name;
    boost::container::small_vector<tensor_id, 3> inputs;
    boost::container::small_vector<tensor_id, 1> outputs;
    std::int32_t layer = -1;
    std::int32_t colocation = -1;

    const ops::op_spec& spec() const noexcept { return ops::spec(kind); }
};

/// A computation graph: ops and tensors with stable, dense ids (ids never change once given), graph
/// inputs and weights as source ops, and a list of graph outputs. Copying is a plain member-wise copy
/// of flat vectors with small inline buffers.
///
/// Ops can only consume tensors that exist when they are added, so a graph built with add() is
/// acyclic; rewire() may break that, and graph::validate() reports it.
class computation_graph {
public:
    computation_graph() = default;
    explicit computation_graph(std::string name) : name_(std::move(name)) {}

    /// @brief Adds an op: checks the arity and attributes against the op table, fills in default
    /// attributes, infers the output types. Throws goopt::error naming the op on any mismatch.
    /// @param name unique name; empty gives `<kind>_<id>`.
    /// @return the ids of the op's outputs.
    output_ids add(ops::op_kind kind, std::span<const tensor_id> inputs, ops::attribute_map attrs = {},
                   std::string name = {});
    output_ids add(ops::op_kind kind, std::initializer_list<tensor_id> inputs, ops::attribute_map attrs = {},
                   std::string name = {}) {
        return add(kind, std::span<const tensor_id>(inputs.begin(), inputs.size()), std::move(attrs), std::move(name));
    }

    /// Adds a single-output op and returns its output.
    tensor_id add1(ops::op_kind kind, std::initializer_list<tensor_id> inputs, ops::attribute_map attrs = {},
                   std::string name = {}) {
        auto out = add(kind, inputs, std::move(attrs), std::move(name));
        if (out.size() != 1)
            throw error(concat("op '", ops_.back().name, "' (", ops::name(kind), ")"),
                        concat("has ", out.size(), " outputs"), "one output (use add() for multi-output ops)");
        return out[0];
    }

    /// A graph input (fed at run time) and a weight (persistent parameter).
    tensor_id input(std::string name, const ops::shape& s, ops::dtype t = ops::dtype::f32) {
        return add1(ops::op_kind::input, {}, source_attrs(s, t), std::move(name));
    }
    tensor_id weight(std::string name, const ops::shape& s, ops::dtype t = ops::dtype::f32) {
        return add1(ops::op_kind::weight, {}, source_attrs(s, t), std::move(name));
    }
    /// A value the model holds that is not trained (an exponent, an epsilon, indices): fed like a
    /// weight, but no parameter (make_training_graph gives it no gradient and no update).
    tensor_id constant(std::string name, const ops::shape& s, ops::dtype t = ops::dtype::f32) {
        return add1(ops::op_kind::constant, {}, source_attrs(s, t), std::move(name));
    }

    /// Marks a tensor as a graph output (its value is what running the graph returns).
    void mark_output(tensor_id t) {
        check_tensor(t, "mark_output");
        outputs_.push_back(t);
    }

    /// Makes input `slot` of op `o` consume tensor `t` instead. Output types are not re-inferred and
    /// the result may be cyclic: rewrites call graph::validate() afterwards.
    void rewire(op_id o, std::uint32_t slot, tensor_id t);

    /// Reserves room for more ops and tensors (importers and model builders know their sizes).
    void reserve(std::size_t num_ops, std::size_t num_tensors) {
        ops_.reserve(num_ops);
        tensors_.reserve(num_tensors);
    }

    /// Sets the layer or block an op belongs to.
    void set_layer(op_id o, std::int32_t layer) { ops_.at(o).layer = layer; }
    /// Puts an op in a colocation group (-1: none).
    void set_colocation(op_id o, std::int32_t group) { ops_.at(o).colocation = group; }

    // ---- queries
    const std::string& name() const noexcept { return name_; }
    void set_name(std::string n) { name_ = std::move(n); }
    std::size_t num_ops() const noexcept { return ops_.size(); }
    std::size_t num_tensors() const noexcept { return tensors_.size(); }
    const op& get_op(op_id o) const { return ops_.at(o); }
    const tensor& get_tensor(tensor_id t) const { return tensors_.at(t); }
    const std::vector<op>& ops() const noexcept { return ops_; }
    const std::vector<tensor>& tensors() const noexcept { return tensors_; }
    const std::vector<tensor_id>& outputs() const noexcept { return outputs_; }
    const ops::tensor_type& type_of(tensor_id t) const { return tensors_.at(t).type; }
    /// The op that produces tensor t.
    op_id producer(tensor_id t) const { return tensors_.at(t).producer; }

    /// Producers of op o's inputs, one per input slot (repeated when an op uses a tensor twice).
    auto predecessors(op_id o) const {
        boost::container::small_vector<op_id, 4> out;
        for (tensor_id t : ops_.at(o).inputs) out.push_back(tensors_[t].producer);
        return out;
    }
    /// Consumers of op o's outputs, one per use (repeated when a consumer uses it twice).
    auto successors(op_id o) const {
        boost::container::small_vector<op_id, 4> out;
        for (tensor_id t : ops_.at(o).outputs)
            for (const use& u : tensors_[t].uses) out.push_back(u.op);
        return out;
    }
    /// Label of an op for structural hashing: kind, attributes and output types, not the name.
    std::uint64_t op_label(op_id o) const;

    /// Op with this name, if any (linear scan: names are for I/O, not for hot paths).
    std::optional<op_id> find(std::string_view name) const {
        for (op_id i = 0; i < ops_.size(); ++i)
            if (ops_[i].name == name) return i;
        return std::nullopt;
    }

    /// Ops of a kind (graph inputs, weights, ...), in id order.
    std::vector<op_id> ops_of_kind(ops::op_kind k) const {
        std::vector<op_id> r;
        for (op_id i = 0; i < ops_.size(); ++i)
            if (ops_[i].kind == k) r.push_back(i);
        return r;
    }

    /// Bytes of persistent tensors (weights).
    std::int64_t parameter_bytes() const {
        std::int64_t b = 0;
        for (const auto& o : ops_)
            if (o.kind == ops::op_kind::weight) b += tensors_[o.outputs[0]].type.bytes();
        return b;
    }

    /// Inputs of op o's kernel as types, in slot order.
    ops::output_types input_types(op_id o) const {
        ops::output_types r;
        for (tensor_id t : ops_.at(o).inputs) r.push_back(tensors_.at(t).type);
        return r;
    }
    /// Output types of op o, in output order.
    ops::output_types output_types(op_id o) const {
        ops::output_types r;
        for (tensor_id t : ops_.at(o).outputs) r.push_back(tensors_.at(t).type);
        return r;
    }

    /// FLOPs and memory traffic of op o (from the op table's formulas).
    double flops(op_id o) const {
        const auto in = input_types(o), out = output_types(o);
        return ops_.at(o).spec().flops(ops::view(in), ops::view(out), ops_[o].attrs);
    }
    double bytes_accessed(op_id o) const {
        const auto in = input_types(o), out = output_types(o);
        return ops_.at(o).spec().bytes(ops::view(in), ops::view(out), ops_[o].attrs);
    }

    /// Human-readable identification of an op for error messages: `'name' (kind)`.
    std::string describe(op_id o) const { return concat("'", ops_.at(o).name, "' (", ops::name(ops_[o].kind), ")"); }

    /// Checks arity and attributes of an op against the op table and fills in defaults; throws
    /// goopt::error whose message starts with `where`. Shared by add() and graph::validate().
    static void normalize_attributes(const ops::op_spec& s, ops::attribute_map& attrs, std::size_t num_inputs,
                                     const std::string& where);

private:
    static ops::attribute_map source_attrs(const ops::shape& s, ops::dtype t) {
        return {{ops::attr_id::shape, std::vector<std::int64_t>(s.begin(), s.end())},
                {ops::attr_id::dtype, static_cast<std::int64_t>(t)}};
    }
    void check_tensor(tensor_id t, const char* where) const {
        if (t >= tensors_.size())
            throw error(where, concat("tensor id ", t, " does not exist"),
                        concat("a tensor id below ", tensors_.size(), " (the graph's tensor count)"));
    }

    std::string name_;
    std::vector<op> ops_;
    std::vector<tensor> tensors_;
    std::vector<tensor_id> outputs_;
};

// ---- implementation ----

inline void computation_graph::normalize_attributes(const ops::op_spec& s, ops::attribute_map& attrs,
                                                    std::size_t num_inputs, const std::string& where) {
    if (num_inputs < s.min_inputs || (s.max_inputs != ops::variadic && num_inputs > s.max_inputs)) {
        const std::string expected = s.min_inputs == s.max_inputs    ? concat(s.min_inputs)
                                     : s.max_inputs == ops::variadic ? concat("at least ", s.min_inputs)
                                                                     : concat(s.min_inputs, " to ", s.max_inputs);
        throw error(where, concat("has ", num_inputs, " inputs"), expected);
    }
    for (const auto& [id, value] : attrs)
        if (!s.takes(id))
            throw error(where, concat("unknown attribute '", ops::name(id), "' for ", s.name),
                        "an attribute the op takes");
    for (const ops::attr_spec& a : s.attrs) {
        if (!attrs.has(a.id)) {
            if (a.required)
                throw error(where, concat("missing required attribute '", ops::name(a.id), "'"),
                            concat("attribute '", ops::name(a.id), "'"));
            switch (a.type) {
                case ops::attr_type::integer:
                    attrs.set(a.id, a.int_default);
                    break;
                case ops::attr_type::real:
                    attrs.set(a.id, a.real_default);
                    break;
                case ops::attr_type::ints:
                    attrs.set(a.id, std::vector<std::int64_t>(a.ints_default.begin(), a.ints_default.end()));
                    break;
            }
            continue;
        }
        const ops::attr_value& v = attrs.get(a.id);
        // an integer given where a real is expected is a harmless spelling (JSON has one number type)
        if (a.type == ops::attr_type::real && ops::type_of(v) == ops::attr_type::integer) {
            attrs.set(a.id, static_cast<double>(std::get<std::int64_t>(v)));
        } else if (ops::type_of(v) != a.type) {
            throw error(where, concat("attribute '", ops::name(a.id), "' is a ", ops::name(ops::type_of(v))),
                        concat("a ", ops::name(a.type)));
        }
    }
}

inline output_ids computation_graph::add(ops::op_kind kind, std::span<const tensor_id> inputs, ops::attribute_map attrs,
                                         std::string name) {
    const ops::op_spec& s = ops::spec(kind);
    const auto id = static_cast<op_id>(ops_.size());
    if (name.empty()) name = concat(s.name, "_", id);
    const std::string where = concat("op '", name, "' (", s.name, ")");
    normalize_attributes(s, attrs, inputs.size(), where);
    ops::output_types in;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] >= tensors_.size())
            throw error(where, concat("input ", i, " refers to tensor ", inputs[i], ", which does not exist"),
                        concat("a tensor id below ", tensors_.size()));
        in.push_back(tensors_[inputs[i]].type);
    }
    ops::output_types out;
    try {
        out = s.infer(ops::view(in), attrs);
        for (const auto& t : out) (void)t.bytes();  // every output's size must be representable
    } catch (const error& e) {
        throw error(concat(where, ": ", e.what()));
    }
    op o{kind, std::move(attrs), std::move(name), {inputs.begin(), inputs.end()}, {}, -1, -1};
    for (std::size_t i = 0; i < inputs.size(); ++i)
        tensors_[inputs[i]].uses.push_back(use{id, static_cast<std::uint32_t>(i)});
    output_ids result;
    for (std::size_t k = 0; k < out.size(); ++k) {
        const auto t = static_cast<tensor_id>(tensors_.size());
        result.push_back(t);
        tensors_.emplace_back();
        tensors_.back().type = out[k];
        tensors_.back().producer = id;
        tensors_.back().index = static_cast<std::uint32_t>(k);
    }
    o.outputs.assign(result.begin(), result.end());
    ops_.push_back(std::move(o));
    return result;
}

inline void computation_graph::rewire(op_id o, std::uint32_t slot, tensor_id t) {
    op& x = ops_.at(o);
    if (slot >= x.inputs.size())
        throw error("graph::rewire", concat("op ", describe(o), " has no input slot ", slot),
                    concat("a slot below ", x.inputs.size()));
    check_tensor(t, "rewire");
    auto& old_uses = tensors_[x.inputs[slot]].uses;
    old_uses.erase(std::remove(old_uses.begin(), old_uses.end(), use{o, slot}), old_uses.end());
    x.inputs[slot] = t;
    tensors_[t].uses.push_back(use{o, slot});
}

inline std::uint64_t computation_graph::op_label(op_id o) const {
    // FNV-1a over a canonical byte image; names are deliberately left out.
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xffu;
            h *= 1099511628211ull;
        }
    };
    const op& x = ops_.at(o);
    mix(static_cast<std::uint64_t>(x.kind));
    for (const auto& [id, v] : x.attrs) {
        mix(static_cast<std::uint64_t>(id));
        if (auto* i = std::get_if<std::int64_t>(&v)) mix(static_cast<std::uint64_t>(*i));
        else if (auto* r = std::get_if<double>(&v)) mix(std::hash<double>{}(*r));
        else
            for (auto e : std::get<std::vector<std::int64_t>>(v)) mix(static_cast<std::uint64_t>(e));
    }
    for (tensor_id t : x.outputs) {
        const auto& ty = tensors_[t].type;
        mix(static_cast<std::uint64_t>(ty.type));
        mix(ty.dims.rank());
        for (auto d : ty.dims) mix(static_cast<std::uint64_t>(d));
    }
    return h;
}

}  // namespace goopt::graph
