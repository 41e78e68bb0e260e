#pragma once
// goopt: optional-edge (part of the ONNX exporter, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief What the ONNX exporter takes (onnx_export_options) and reports (onnx_export_report), its
/// state, and the steps every op's lowering (lowering.hpp) shares: naming tensors, adding nodes and
/// initializers, and encoding values in ONNX's element types.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/io/onnx/model.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/version.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace goopt::io {

/// Operator set versions the exporter writes: from 13 (Split's sizes and ReduceSum's axes are
/// inputs; LayerNormalization is an operator from 17, below it is written as its arithmetic) to 22,
/// so that a file of any operator set the importer reads from 13 on is written at its own, and the
/// nodes kept opaque keep the meaning they had there (a Resize with axes, a Pad with mode wrap).
inline constexpr std::int64_t onnx_export_min_opset = 13;
inline constexpr std::int64_t onnx_export_max_opset = 22;

/// Knobs of the exporter.
struct onnx_export_options {
    /// The import the graph came from, as it is or rewritten (rewrites keep the names of graph inputs
    /// and weights): its weights' values become initializers, its operator set is kept where it is
    /// 13-22, and the graph outputs get its output names again. Null: a graph with no file behind it
    /// (a zoo model, a JSON graph), whose weights are then written as graph inputs.
    const onnx_model* source = nullptr;
    /// Operator set to write, 13-22; 0: the source's where it is in that range, else 13.
    std::int64_t opset = 0;
    /// Names of the graph outputs, one per output in order, over the source's: for a graph with no
    /// source that a search rewrote, the names its outputs had before (onnx_output_names() of the
    /// original), since a rewrite renames the op that computes an output. Empty: the source's names,
    /// else each output's producer op's name.
    std::vector<std::string> output_names = {};
    /// write_onnx only: initializers of at least this many bytes go to a side file beside the
    /// model, named as the model file plus ".data" (ONNX external data). 0: only where the model
    /// would pass protobuf's 2 GiB limit, and then every initializer of 1 KiB or more.
    std::size_t external_data_min_bytes = 0;
    /// write_onnx only: a model whose protobuf would have more bytes than this is written with its
    /// initializers of 1 KiB or more in external data, automatically. The default is protobuf's
    /// limit (2 GiB - 1 byte), which ONNX files cannot pass otherwise; a smaller value moves the
    /// switch earlier (a runtime that maps external data, a test).
    std::size_t external_data_above_bytes = static_cast<std::size_t>(std::numeric_limits<int>::max());
    /// Name the axes of graph inputs and outputs with the source's symbolic dimensions (its
    /// onnx_model::input_dim_params) where the model written stays correct at other values of them
    /// (checked: the model is imported again at two other values). A dimension the graph bakes in
    /// (a Reshape folding it into another axis, a batch-sized initial state) is written as its value,
    /// with a warning naming it and the node. False: every axis is written as its value.
    bool symbolic_dims = true;
};

/// What an export wrote. The library prints nothing: the warnings are for the caller to show.
struct onnx_export_report {
    std::int64_t opset = 0;
    std::size_t nodes = 0;
    std::size_t initializers = 0;   ///< weights with values and constants
    std::size_t weight_inputs = 0;  ///< weights without values, written as graph inputs
    /// The source's LSTM/GRU nodes written back as they were (no rewrite touched the ops they
    /// became), and those the graph computes otherwise now, written as their unrolled steps.
    std::size_t recurrent_written_back = 0;
    std::size_t recurrent_lowered = 0;
    /// The source's symbolic dimensions written by name (on the graph inputs, and the outputs that
    /// follow them), and those written as their bound values since the graph bakes them in.
    std::vector<std::string> symbolic_dims, fixed_dims;
    std::size_t external_initializers = 0;  ///< initializers written to the side file (write_onnx)
    std::string external_data;              ///< the side file's name, beside the model; empty: none
    /// One line each: an operator set other than the source's, weights written as graph inputs, an
    /// LSTM/GRU written as its steps (and why: its fused kernel is lost).
    std::vector<std::string> warnings;
};

/// The name an export gives graph output `t` of a graph with no source file: its producer op's name,
/// `op:k` for output k of a multi-output op.
inline std::string onnx_output_name(const graph::computation_graph& g, graph::tensor_id t) {
    const graph::tensor& x = g.get_tensor(t);
    const graph::op& p = g.get_op(x.producer);
    return p.outputs.size() == 1 ? p.name : concat(p.name, ":", x.index);
}

/// onnx_output_name() of each graph output, in order: the onnx_export_options::output_names that
/// keep a graph's output names through a search that rewrites the ops computing them.
inline std::vector<std::string> onnx_output_names(const graph::computation_graph& g) {
    std::vector<std::string> names;
    for (const auto t : g.outputs()) names.push_back(onnx_output_name(g, t));
    return names;
}

}  // namespace goopt::io

namespace goopt::io::detail {

/// ONNX's TensorProto data type of a goopt element type.
constexpr int onnx_data_type(ops::dtype t) noexcept {
    switch (t) {
        case ops::dtype::f32:
            return onnx::TensorProto_DataType_FLOAT;
        case ops::dtype::f64:
            return onnx::TensorProto_DataType_DOUBLE;
        case ops::dtype::f16:
            return onnx::TensorProto_DataType_FLOAT16;
        case ops::dtype::bf16:
            return onnx::TensorProto_DataType_BFLOAT16;
        case ops::dtype::i64:
            return onnx::TensorProto_DataType_INT64;
        case ops::dtype::i32:
            return onnx::TensorProto_DataType_INT32;
        case ops::dtype::i8:
            return onnx::TensorProto_DataType_INT8;
        case ops::dtype::u8:
            return onnx::TensorProto_DataType_UINT8;
        case ops::dtype::boolean:
            return onnx::TensorProto_DataType_BOOL;
    }
    return onnx::TensorProto_DataType_UNDEFINED;
}

/// IEEE binary16 bits of v, rounded to nearest even (values from 65520 on become infinity).
inline std::uint16_t half_bits(double v) {
    const std::uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
    const double a = std::fabs(v);
    if (std::isnan(v)) return sign | 0x7e00u;
    if (a >= 65520.0) return sign | 0x7c00u;
    if (a < 0x1p-14) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(a * 0x1p24)));
    int e = 0;
    const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    auto m = static_cast<std::uint32_t>(std::nearbyint((f * 2.0 - 1.0) * 1024.0));
    --e;
    if (m == 1024) m = 0, ++e;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(e + 15) << 10 | m);
}

/// bfloat16 bits of v (the float's upper half, rounded to nearest even).
inline std::uint16_t bfloat16_bits(double v) {
    const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    if (std::isnan(v)) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

struct recurrent_write_back;

/// Exports one graph. Each op kind has one row in `onnx_lowerings` (lowering.hpp) that writes it as
/// standard ONNX nodes; export.hpp runs the export.
class onnx_exporter {
public:
    using ints = std::vector<std::int64_t>;

    onnx_exporter(const graph::computation_graph& g, const onnx_export_options& options);

    onnx::ModelProto run(onnx_export_report& report);

    // ---- for the lowerings
    const graph::computation_graph& graph() const noexcept { return g_; }
    const graph::op& op(graph::op_id o) const { return g_.get_op(o); }
    std::int64_t opset() const noexcept { return opset_; }
    /// Whether sizes are written so that they hold at other values of a symbolic dimension too
    /// (a Reshape target copies the axes it keeps, 0, and infers one, -1): set when the export
    /// names symbolic dimensions.
    bool size_free() const noexcept { return !symbolic_values_.empty(); }
    /// Whether a size is the bound value of a symbolic dimension the export names.
    bool is_symbolic_value(std::int64_t size) const { return symbolic_values_.count(size) != 0; }
    /// Whether a size is a multiple of such a value above 1 (a batch folded into another axis).
    bool has_symbolic_factor(std::int64_t size) const {
        for (const auto v : symbolic_values_)
            if (v > 1 && size > v && size % v == 0) return true;
        return false;
    }
    /// The bound values of the symbolic dimensions the export names (none: sizes are written as they are).
    void set_symbolic_values(std::set<std::int64_t> values) { symbolic_values_ = std::move(values); }
    /// ONNX names of op o's input k and output k.
    const std::string& in(graph::op_id o, std::size_t k) const { return name_[g_.get_op(o).inputs.at(k)]; }
    const std::string& out(graph::op_id o, std::size_t k = 0) const { return name_[g_.get_op(o).outputs.at(k)]; }
    const ops::tensor_type& in_type(graph::op_id o, std::size_t k) const {
        return g_.type_of(g_.get_op(o).inputs.at(k));
    }
    const ops::tensor_type& out_type(graph::op_id o, std::size_t k = 0) const {
        return g_.type_of(g_.get_op(o).outputs.at(k));
    }
    /// A new tensor name that only op o's nodes use: "<op name>/<what>".
    std::string temp(graph::op_id o, std::string_view what) { return fresh(concat(op(o).name, "/", what), names_); }
    /// Adds the node that is op o (named as the op), and a node that helps write it ("<op name>/<type>").
    onnx::NodeProto& main(graph::op_id o, std::string_view type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
        return add_node(op(o).name, type, inputs, outputs);
    }
    onnx::NodeProto& node(graph::op_id o, std::string_view type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
        return add_node(concat(op(o).name, "/", type), type, inputs, outputs);
    }
    /// An int64 vector initializer for op o (Reshape's shape, Split's sizes, Pad's pads, ...).
    std::string ints_constant(graph::op_id o, std::string_view what, const ints& values);
    /// A scalar initializer of type t, one per value and type.
    std::string scalar(double value, ops::dtype t);
    /// An initializer with these values in row-major order.
    void initializer(const std::string& name, const ops::tensor_type& t, std::span<const double> values,
                     std::string_view where);
    /// A graph input of this name and type.
    void graph_input(const std::string& name, const ops::tensor_type& t);
    /// The source's value of weight op o, checked against its type; null when the source has none.
    const onnx_tensor* weight_value(graph::op_id o) const;
    /// Counts a weight written as a graph input (the report warns about them).
    void weight_as_input(graph::op_id o) { weight_inputs_.push_back(op(o).name); }
    /// The source's node that opaque op o stands for; refuses when there is none. Its domain's
    /// operator set is imported by the model written.
    onnx::NodeProto opaque_node(graph::op_id o);
    /// Writes a source's LSTM/GRU node back in place of the ops it became (recurrent_write_back.hpp).
    void write_back(const recurrent_write_back& w);
    /// `onnx export: op '<name>' (<kind>): <what>: expected <expected>`.
    [[noreturn]] void refuse(graph::op_id o, std::string_view what, std::string_view expected) const {
        throw error("onnx export", concat("op ", g_.describe(o), ": ", what), expected);
    }

private:
    static std::string fresh(std::string base, std::unordered_set<std::string>& used) {
        if (base.empty()) base = "t";
        std::string name = base;
        for (int k = 1; !used.insert(name).second; ++k) name = concat(base, "_", k);
        return name;
    }
    onnx::NodeProto& add_node(const std::string& name, std::string_view type, const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs);
    static void set_type(onnx::ValueInfoProto& v, const std::string& name, const ops::tensor_type& t);
    /// Names every tensor: sources keep their op names, graph outputs the source file's output names
    /// (else their producer's), the rest their op's name.
    void name_tensors(const std::vector<std::size_t>& order);
    std::int64_t choose_opset(std::vector<std::string>& warnings) const;

    const graph::computation_graph& g_;
    const onnx_export_options& options_;
    std::int64_t opset_ = onnx_export_min_opset;
    std::set<std::int64_t> symbolic_values_;
    onnx::GraphProto* gp_ = nullptr;
    std::vector<std::string> name_;                  // per graph tensor
    std::vector<std::string> output_name_;           // per graph output
    std::vector<bool> output_identity_;              // per graph output: written through an Identity node
    std::unordered_set<std::string> names_, nodes_;  // tensor names and node names taken
    std::map<std::pair<double, ops::dtype>, std::string> scalars_;
    std::vector<std::string> weight_inputs_;
    std::size_t initializers_ = 0;
    std::size_t written_back_ = 0;
    std::map<std::string, std::int64_t> domains_;  // other domains than ai.onnx that opaque nodes use
};

// ---- implementation ----

inline onnx_exporter::onnx_exporter(const graph::computation_graph& g, const onnx_export_options& options)
    : g_(g), options_(options), name_(g.num_tensors()) {}

inline onnx::NodeProto& onnx_exporter::add_node(const std::string& name, std::string_view type,
                                                const std::vector<std::string>& inputs,
                                                const std::vector<std::string>& outputs) {
    onnx::NodeProto& n = *gp_->add_node();
    n.set_op_type(std::string(type));
    n.set_name(fresh(name, nodes_));
    for (const auto& i : inputs) n.add_input(i);
    for (const auto& x : outputs) n.add_output(x);
    return n;
}

inline std::string onnx_exporter::ints_constant(graph::op_id o, std::string_view what, const ints& values) {
    const std::string name = temp(o, what);
    std::vector<double> v(values.begin(), values.end());
    initializer(name, {ops::shape{static_cast<std::int64_t>(values.size())}, ops::dtype::i64}, v, name);
    return name;
}

inline std::string onnx_exporter::scalar(double value, ops::dtype t) {
    auto it = scalars_.find({value, t});
    if (it != scalars_.end()) return it->second;
    const std::string name = fresh(concat("const_", ops::name(t), "_", value), names_);
    const double v[1] = {value};
    initializer(name, {ops::shape{}, t}, v, name);
    return scalars_.emplace(std::pair{value, t}, name).first->second;
}

inline void onnx_exporter::initializer(const std::string& name, const ops::tensor_type& t,
                                       std::span<const double> values, std::string_view where) {
    GOOPT_ASSERT(static_cast<std::int64_t>(values.size()) == t.num_elements());
    onnx::TensorProto& p = *gp_->add_initializer();
    p.set_name(name);
    p.set_data_type(onnx_data_type(t.type));
    for (auto d : t.dims) p.add_dims(d);
    std::string raw;
    raw.reserve(values.size() * ops::size_of(t.type));
    auto put = [&raw](std::uint64_t bits, std::size_t bytes) {  // little-endian, as ONNX's raw_data is
        for (std::size_t b = 0; b < bytes; ++b) raw.push_back(static_cast<char>((bits >> (8 * b)) & 0xffu));
    };
    for (std::size_t k = 0; k < values.size(); ++k) {
        const double v = values[k];
        if (ops::is_integral(t.type) || t.type == ops::dtype::boolean) {
            const double lo = t.type == ops::dtype::i64   ? -0x1p63
                              : t.type == ops::dtype::i32 ? -0x1p31
                              : t.type == ops::dtype::i8  ? -128.0
                                                          : 0.0;
            const double hi = t.type == ops::dtype::i64   ? 0x1p63
                              : t.type == ops::dtype::i32 ? 0x1p31
                              : t.type == ops::dtype::i8  ? 128.0
                              : t.type == ops::dtype::u8  ? 256.0
                                                          : 2.0;
            if (!(v == std::trunc(v) && v >= lo && v < hi))
                throw error("onnx export",
                            concat(where, ": value ", v, " at position ", k, " is not a ", ops::name(t.type)),
                            concat("integers in [", lo, ", ", hi, ")"));
            put(static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), ops::size_of(t.type));
            continue;
        }
        switch (t.type) {
            case ops::dtype::f32:
                put(std::bit_cast<std::uint32_t>(static_cast<float>(v)), 4);
                break;
            case ops::dtype::f64:
                put(std::bit_cast<std::uint64_t>(v), 8);
                break;
            case ops::dtype::f16:
                put(half_bits(v), 2);
                break;
            case ops::dtype::bf16:
                put(bfloat16_bits(v), 2);
                break;
            default:
                GOOPT_ASSERT(false && "integral types handled above");
        }
    }
    p.set_raw_data(std::move(raw));
    ++initializers_;
}

inline void onnx_exporter::set_type(onnx::ValueInfoProto& v, const std::string& name, const ops::tensor_type& t) {
    v.set_name(name);
    auto& tt = *v.mutable_type()->mutable_tensor_type();
    tt.set_elem_type(onnx_data_type(t.type));
    auto& s = *tt.mutable_shape();
    for (auto d : t.dims) s.add_dim()->set_dim_value(d);
}

inline void onnx_exporter::graph_input(const std::string& name, const ops::tensor_type& t) {
    set_type(*gp_->add_input(), name, t);
}

inline const onnx_tensor* onnx_exporter::weight_value(graph::op_id o) const {
    if (!options_.source) return nullptr;
    const auto& values = options_.source->weight_values;
    const auto it = values.find(op(o).name);
    if (it == values.end()) return nullptr;
    const ops::tensor_type& t = out_type(o);
    if (it->second.type != t || static_cast<std::int64_t>(it->second.values.size()) != t.num_elements())
        throw error("onnx export",
                    concat("weight '", op(o).name, "': the source's value is ", to_string(it->second.type), " (",
                           it->second.values.size(), " values)"),
                    concat(to_string(t), " as in the graph (is the source the file this graph came from?)"));
    return &it->second;
}

inline onnx::NodeProto onnx_exporter::opaque_node(graph::op_id o) {
    const std::int64_t index = op(o).attrs.get_int(ops::attr_id::node);
    if (!options_.source || index < 0 || static_cast<std::size_t>(index) >= options_.source->opaque_nodes.size())
        refuse(o,
               concat("an opaque op stands for node ", index, " of the ONNX file it was imported from, which ",
                      options_.source ? "has no such node" : "is not given (onnx_export_options::source)"),
               "the import the graph came from as the source (an opaque op's ONNX node is kept there)");
    onnx::NodeProto n;
    if (!n.ParseFromString(options_.source->opaque_nodes[static_cast<std::size_t>(index)]))
        refuse(o, "the source's node does not parse", "a serialized NodeProto (io::onnx_model::opaque_nodes)");
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (!default_domain) {
        const auto it = options_.source->opset_imports.find(n.domain());
        if (it == options_.source->opset_imports.end())
            refuse(o, concat("the source imports no operator set of domain '", n.domain(), "'"),
                   "the domain's version in io::onnx_model::opset_imports");
        domains_[n.domain()] = it->second;
    }
    return n;
}

inline void onnx_exporter::name_tensors(const std::vector<std::size_t>& order) {
    // graph inputs and initializers are what a runtime's user sees by name: they go first
    for (const auto v : order) {
        const graph::op& o = g_.get_op(static_cast<graph::op_id>(v));
        if (o.spec().has(ops::source)) name_[o.outputs[0]] = fresh(o.name, names_);
    }
    const auto& outs = g_.outputs();
    const onnx_model* src = options_.source;
    if (!options_.output_names.empty() && options_.output_names.size() != outs.size())
        throw error("onnx export",
                    concat("onnx_export_options::output_names has ", options_.output_names.size(),
                           " names for a graph of ", outs.size(), " outputs"),
                    "one name per graph output");
    const std::vector<std::string>* given = !options_.output_names.empty()                   ? &options_.output_names
                                            : src && src->output_names.size() == outs.size() ? &src->output_names
                                                                                             : nullptr;
    output_name_.assign(outs.size(), {});
    output_identity_.assign(outs.size(), false);
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const graph::tensor& t = g_.get_tensor(outs[i]);
        const graph::op& p = g_.get_op(t.producer);
        const std::string wanted = given ? (*given)[i] : onnx_output_name(g_, outs[i]);
        // a graph input or initializer that is an output under its own name is listed as it is (the
        // source file's outputs keep their names); another source, or a tensor already named as an
        // earlier output under another name, is given again through an Identity
        bool repeated = false;  // a tensor the given names list twice under one name is listed twice again
        for (std::size_t j = 0; given && j < i && !repeated; ++j)
            repeated = outs[j] == outs[i] && output_name_[j] == wanted;
        if (repeated) {
            output_name_[i] = wanted;
        } else if (p.spec().has(ops::source) && name_[outs[i]] == wanted &&
                   std::find(output_name_.begin(), output_name_.begin() + static_cast<std::ptrdiff_t>(i), wanted) ==
                       output_name_.begin() + static_cast<std::ptrdiff_t>(i)) {
            output_name_[i] = wanted;
        } else if (name_[outs[i]].empty() && !p.spec().has(ops::source) && !names_.count(wanted)) {
            name_[outs[i]] = fresh(wanted, names_);
            output_name_[i] = name_[outs[i]];
        } else {
            output_name_[i] = fresh(wanted, names_);
            output_identity_[i] = true;
        }
    }
    for (const auto v : order) {
        const graph::op& o = g_.get_op(static_cast<graph::op_id>(v));
        for (std::size_t k = 0; k < o.outputs.size(); ++k)
            if (name_[o.outputs[k]].empty())
                name_[o.outputs[k]] = fresh(o.outputs.size() == 1 ? o.name : concat(o.name, ":", k), names_);
    }
}

inline std::int64_t onnx_exporter::choose_opset(std::vector<std::string>& warnings) const {
    if (options_.opset != 0) {
        if (options_.opset < onnx_export_min_opset || options_.opset > onnx_export_max_opset)
            throw error("onnx export", concat("operator set ", options_.opset, " asked for"),
                        concat(onnx_export_min_opset, "-", onnx_export_max_opset));
        return options_.opset;
    }
    const std::int64_t s = options_.source ? options_.source->opset : 0;
    if (s >= onnx_export_min_opset && s <= onnx_export_max_opset) return s;
    warnings.push_back(s ? concat("the source file's operator set ", s, " is outside ", onnx_export_min_opset, "-",
                                  onnx_export_max_opset, ": writing operator set ", onnx_export_min_opset)
                         : concat("no source file's operator set: writing operator set ", onnx_export_min_opset));
    return onnx_export_min_opset;
}

}  // namespace goopt::io::detail
