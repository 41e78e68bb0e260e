#pragma once
// goopt: optional-edge (needs Debian's libonnx-dev and libprotobuf-dev: CMake target goopt::onnx)
/// @file
/// @brief ONNX import: a model file (opset 11-17, the operators of vision and transformer models)
/// becomes a shape-inferred graph::computation_graph. Shape-only subgraphs (Shape -> Gather ->
/// Concat -> Reshape, Constant, ConstantOfShape, ...) are folded at import time, because the graph
/// IR has static shapes; every remaining ONNX node maps onto existing op kinds exactly
/// (Gemm -> transpose + matmul + smul + ewadd, Unsqueeze -> reshape, explicit pads -> pad + VALID).
///
/// Initializers become `weight` ops. Data stored outside the .onnx file (external data) is never
/// read: such an initializer (e.g. of a model with its weights stripped) still gives a weight of
/// the right shape, just without values. Graph inputs that are not initializers become `input` ops.
/// Constants that a computed op consumes (a Pow exponent, a Gemm alpha) are `weight` ops with values
/// too, since no op kind holds a constant with arbitrary values.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/ops/op_table.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace goopt::io {

/// Knobs of the importer.
struct onnx_options {
    /// Shapes of graph inputs, by name: required for inputs with symbolic or unknown dimensions
    /// (a dynamic batch axis), optional otherwise (then they must agree with the file).
    std::map<std::string, std::vector<std::int64_t>, std::less<>> input_shapes = {};
    /// Values of symbolic dimensions, by their name in the file ("batch", "sequence"): every graph
    /// input dimension with that name takes the value. A name no graph input uses is an error (a typo
    /// would otherwise go unnoticed).
    std::map<std::string, std::int64_t, std::less<>> dim_values = {};
    /// Name the two knobs above in errors as the `goopt` program's flags (`--dim NAME=VALUE`,
    /// `--input-shape INPUT=d0,d1,...`) instead of as these members.
    bool command_line_hints = false;
};

/// A constant's type and values in row-major order (integers and booleans held exactly as doubles
/// up to 2^53, which is all that weights and indices of real models need).
struct onnx_tensor {
    ops::tensor_type type;
    std::vector<double> values;
};

/// What the importer returns: the graph and what it knows besides.
struct onnx_model {
    graph::computation_graph graph;
    /// Values of the `weight` ops whose data the file holds, by op name. Weights whose data is
    /// external (stripped) are absent.
    std::map<std::string, onnx_tensor, std::less<>> weight_values;
    std::int64_t opset = 0;  ///< version of the default ("ai.onnx") operator set
    std::string producer;    ///< producer_name and producer_version of the file
    /// ONNX nodes by op type, as in the file (folded ones included).
    std::map<std::string, std::size_t, std::less<>> onnx_nodes;
    std::size_t folded_nodes = 0;  ///< nodes evaluated at import time (shape-only subgraphs)
};

/// @brief Reads and imports an ONNX model file.
/// @throws goopt::error naming the file, and the node where it applies, when the file is not an
///         ONNX model, refers to a tensor that no input, initializer or earlier node gives, uses an
///         operator (or operator form) goopt cannot import — then the message lists every
///         unsupported op type in the file — or when shape inference fails.
inline onnx_model import_onnx(const std::filesystem::path& file, const onnx_options& options = {});

/// @brief Imports a serialized ModelProto held in memory; `source_name` names it in errors.
inline onnx_model import_onnx_bytes(std::string_view bytes, std::string_view source_name,
                                    const onnx_options& options = {});

/// ONNX op types (default domain) the importer handles, sorted.
inline std::vector<std::string_view> onnx_supported_ops();

/// @brief The values of the model's weights as interpreter feeds (graph inputs still to be added).
template <std::floating_point T> interp::feed_map<T> weight_feeds(const onnx_model& model);

// ---- implementation ----

namespace detail {

/// A value known at import time, with integers held exactly.
struct onnx_const {
    ops::dtype type = ops::dtype::f32;
    ops::shape dims;
    std::vector<double> f;        ///< floating types
    std::vector<std::int64_t> i;  ///< integer and boolean types

    bool integral() const noexcept { return !ops::is_floating(type); }
    std::size_t size() const noexcept { return integral() ? i.size() : f.size(); }
    /// Value k; a file can give fewer values than an operator needs, so the index is checked.
    double at(std::size_t k) const {
        in_range(k);
        return integral() ? static_cast<double>(i[k]) : f[k];
    }
    void in_range(std::size_t k) const {
        if (k >= size()) throw error("a constant of shape " + dims.to_string() + " has no value " + std::to_string(k));
    }
    /// v truncated to an int64 (shapes and indices held in a floating constant, folded results):
    /// NaN, infinities and values beyond int64 are bad input, not undefined behaviour.
    static std::int64_t to_int(double v) {
        constexpr double two63 = 9223372036854775808.0;  // 2^63, exact as a double
        if (!(v >= -two63 && v < two63))
            throw error("the value " + std::to_string(v) + " is not in the range of a 64-bit integer");
        return static_cast<std::int64_t>(v);
    }
    std::int64_t int_at(std::size_t k) const {
        in_range(k);
        if (integral()) return i[k];
        return to_int(f[k]);
    }
    std::vector<std::int64_t> ints() const {
        if (integral()) return i;
        std::vector<std::int64_t> r;
        for (double v : f) r.push_back(to_int(v));
        return r;
    }
    /// Largest constant the importer reads from a file (an initializer or a Constant node): 2^26
    /// elements, more than GPT-2's token embedding (38.6 M).
    static constexpr std::int64_t max_elements = std::int64_t{1} << 26;
    /// Elements that folding may compute for one model beyond 4 per element of the file's own
    /// constants: 2^22, a 2048 x 2048 attention mask. Folding is for shape subgraphs, masks and
    /// weight arithmetic; a file that would fold a few bytes into hundreds of MB is refused.
    static constexpr std::int64_t max_folded_elements = std::int64_t{1} << 22;
    static constexpr std::int64_t fold_budget_per_file_element = 4;

    /// A zero constant; `fold_budget`, for a result that folding computes, is what it may still compute.
    static onnx_const make(ops::dtype t, ops::shape s, std::int64_t fold_budget = max_elements) {
        onnx_const c;
        c.type = t;
        c.dims = s;
        if (s.num_elements() > max_elements)
            throw error("a constant of shape " + s.to_string() + " is too large to hold at import time (limit " +
                        std::to_string(max_elements) + " elements)");
        if (s.num_elements() > fold_budget)
            throw error("a constant of shape " + s.to_string() +
                        " is more than folding may still compute at import time (" + std::to_string(fold_budget) +
                        " elements left of " + std::to_string(max_folded_elements) + " plus " +
                        std::to_string(fold_budget_per_file_element) + " per element of the file's own constants)");
        const auto n = static_cast<std::size_t>(s.num_elements());
        if (c.integral()) c.i.assign(n, 0);
        else c.f.assign(n, 0.0);
        return c;
    }
    void set(std::size_t k, double v) {
        if (type == ops::dtype::boolean) i[k] = v != 0.0;
        else if (integral()) i[k] = to_int(v);
        else f[k] = v;
    }
    void set_int(std::size_t k, std::int64_t v) {
        if (integral()) i[k] = v;
        else f[k] = static_cast<double>(v);
    }
};

/// What an ONNX tensor name stands for while importing.
struct onnx_entry {
    ops::tensor_type type;
    std::optional<graph::tensor_id> tensor;   ///< the graph tensor, once there is one
    std::shared_ptr<const onnx_const> value;  ///< its value, when known at import time
    bool is_weight = false;                   ///< an initializer (with or without data)
};

inline constexpr std::string_view onnx_ops[] = {"Add",
                                                "AveragePool",
                                                "BatchNormalization",
                                                "Cast",
                                                "Clip",
                                                "Concat",
                                                "Constant",
                                                "ConstantOfShape",
                                                "Conv",
                                                "Div",
                                                "Dropout",
                                                "Equal",
                                                "Erf",
                                                "Expand",
                                                "Flatten",
                                                "Gather",
                                                "Gemm",
                                                "GlobalAveragePool",
                                                "GlobalMaxPool",
                                                "Greater",
                                                "Identity",
                                                "LayerNormalization",
                                                "Less",
                                                "MatMul",
                                                "MaxPool",
                                                "Mul",
                                                "Neg",
                                                "Pad",
                                                "Pow",
                                                "Range",
                                                "ReduceMax",
                                                "ReduceMean",
                                                "ReduceSum",
                                                "Relu",
                                                "Reshape",
                                                "Shape",
                                                "Sigmoid",
                                                "Slice",
                                                "Softmax",
                                                "Split",
                                                "Sqrt",
                                                "Squeeze",
                                                "Sub",
                                                "Tanh",
                                                "Transpose",
                                                "Unsqueeze",
                                                "Where"};

inline std::optional<ops::dtype> onnx_dtype(int t) {
    switch (t) {
        case onnx::TensorProto_DataType_FLOAT:
            return ops::dtype::f32;
        case onnx::TensorProto_DataType_DOUBLE:
            return ops::dtype::f64;
        case onnx::TensorProto_DataType_FLOAT16:
            return ops::dtype::f16;
        case onnx::TensorProto_DataType_BFLOAT16:
            return ops::dtype::bf16;
        case onnx::TensorProto_DataType_INT64:
            return ops::dtype::i64;
        case onnx::TensorProto_DataType_INT32:
            return ops::dtype::i32;
        case onnx::TensorProto_DataType_INT8:
            return ops::dtype::i8;
        case onnx::TensorProto_DataType_UINT8:
            return ops::dtype::u8;
        case onnx::TensorProto_DataType_BOOL:
            return ops::dtype::boolean;
        default:
            return std::nullopt;
    }
}

inline std::string ints_string(const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t k = 0; k < v.size(); ++k) {
        if (k) s += ',';
        s += std::to_string(v[k]);
    }
    return s + "]";
}

/// Row-major offsets into `in` for every element of `out`, numpy broadcasting `in` to `out`.
inline std::vector<std::size_t> onnx_broadcast_offsets(const ops::shape& out, const ops::shape& in) {
    const std::size_t r = out.rank();
    std::vector<std::size_t> stride(r, 0);
    std::size_t s = 1;
    for (std::size_t k = in.rank(); k-- > 0;) {
        const std::size_t o = k + r - in.rank();
        stride[o] = in[k] == 1 ? 0 : s;
        s *= static_cast<std::size_t>(in[k]);
    }
    const auto n = static_cast<std::size_t>(out.num_elements());
    std::vector<std::size_t> offs(n);
    std::vector<std::int64_t> idx(r, 0);
    for (std::size_t e = 0; e < n; ++e) {
        std::size_t off = 0;
        for (std::size_t k = 0; k < r; ++k) off += static_cast<std::size_t>(idx[k]) * stride[k];
        offs[e] = off;
        for (std::size_t k = r; k-- > 0;) {
            if (++idx[k] < out[k]) break;
            idx[k] = 0;
        }
    }
    return offs;
}

class onnx_importer {
public:
    onnx_importer(const onnx::ModelProto& m, std::string source, const onnx_options& opt)
        : model_(m), source_(std::move(source)), opt_(opt) {}

    onnx_model run();

private:
    using ints = std::vector<std::int64_t>;
    using node_t = onnx::NodeProto;

    [[noreturn]] void fail(const std::string& what) const { throw error(source_ + ": " + what); }
    [[noreturn]] void fail(const node_t& n, const std::string& what) const {
        fail("node " + describe(n) + ": " + what);
    }
    static std::string node_name(const node_t& n) {
        return !n.name().empty() ? n.name() : n.output_size() > 0 ? n.output(0) : n.op_type();
    }
    static std::string describe(const node_t& n) { return "'" + node_name(n) + "' (" + n.op_type() + ")"; }

    // ---- attributes
    const onnx::AttributeProto* attr(const node_t& n, std::string_view name) const {
        for (const auto& a : n.attribute())
            if (a.name() == name) return &a;
        return nullptr;
    }
    std::int64_t attr_int(const node_t& n, std::string_view name, std::int64_t def) const {
        const auto* a = attr(n, name);
        return a ? a->i() : def;
    }
    double attr_float(const node_t& n, std::string_view name, double def) const {
        const auto* a = attr(n, name);
        return a ? a->f() : def;
    }
    std::string attr_string(const node_t& n, std::string_view name, std::string def) const {
        const auto* a = attr(n, name);
        return a ? a->s() : def;
    }
    std::optional<ints> attr_ints(const node_t& n, std::string_view name) const {
        const auto* a = attr(n, name);
        if (!a) return std::nullopt;
        return ints(a->ints().begin(), a->ints().end());
    }

    // ---- tensors
    onnx_const decode(const onnx::TensorProto& t, const std::string& where) const;
    ops::tensor_type value_type(const onnx::ValueInfoProto& v) const;
    void check_dim_values(const onnx::GraphProto& gp) const;
    bool has_input(const node_t& n, int k) const { return n.input_size() > k && !n.input(k).empty(); }
    onnx_entry& entry(const node_t& n, int k) {
        if (k >= n.input_size())
            fail(n, "has " + std::to_string(n.input_size()) + " inputs, expected at least " + std::to_string(k + 1));
        const std::string& name = n.input(k);
        if (name.empty()) fail(n, "input " + std::to_string(k) + " is required but left empty");
        auto it = env_.find(name);
        if (it == env_.end())
            fail(n, "input " + std::to_string(k) + " '" + name +
                        "' is not a graph input, an initializer or an output of an earlier node");
        return it->second;
    }
    const ops::tensor_type& type_in(const node_t& n, int k) { return entry(n, k).type; }
    const ops::shape& dims_in(const node_t& n, int k) { return entry(n, k).type.dims; }
    const onnx_const& const_in(const node_t& n, int k, std::string_view what) {
        const onnx_entry& e = entry(n, k);
        if (!e.value)
            fail(n, "input " + std::to_string(k) + " ('" + std::string(what) + "', tensor '" + n.input(k) +
                        "') must be a constant known at import time");
        return *e.value;
    }
    /// Reshape's shape input with each 0 replaced by the input's dimension there (ONNX's default;
    /// allowzero, which makes an empty tensor, is refused).
    ints reshape_target(const node_t& n, const ops::shape& x) {
        auto target = const_in(n, 1, "shape").ints();
        for (std::size_t k = 0; k < target.size(); ++k)
            if (target[k] == 0) {
                if (attr_int(n, "allowzero", 0) != 0) fail(n, "allowzero with a 0 in the shape (an empty tensor)");
                if (k >= x.rank()) fail(n, "shape " + ints_string(target) + " copies a dimension the input lacks");
                target[k] = x[k];
            }
        return target;
    }
    /// A scalar operand (Clip's min, Range's start, Pad's constant_value): one value, of any rank.
    double scalar_in(const node_t& n, int k, std::string_view what) {
        const onnx_const& c = const_in(n, k, what);
        if (c.size() != 1)
            fail(n, "input " + std::to_string(k) + " ('" + std::string(what) + "', tensor '" + n.input(k) +
                        "') must hold one value, it holds " + std::to_string(c.size()));
        return c.at(0);
    }
    std::string unique(std::string base) {
        if (base.empty()) base = "op";
        std::string name = base;
        for (int k = 1; !used_names_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
        return name;
    }
    graph::tensor_id weight_of(const std::string& onnx_name, const onnx_entry& e, const ops::shape& dims);
    graph::tensor_id tensor_in(const node_t& n, int k);
    graph::tensor_id tensor_as(const node_t& n, int k, const ops::shape& dims);
    graph::tensor_id constant(const std::string& name, const onnx_const& c);
    graph::tensor_id scalar(const std::string& name, double v, ops::dtype t);
    graph::tensor_id add1(ops::op_kind k, std::initializer_list<graph::tensor_id> in, ops::attribute_map a,
                          const std::string& name) {
        return g_.add1(k, in, std::move(a), unique(name));
    }
    graph::tensor_id reshape(graph::tensor_id t, const ops::shape& dims, const std::string& name) {
        if (g_.type_of(t).dims == dims) return t;
        return add1(ops::op_kind::reshape, {t}, {{ops::attr_id::shape, ints(dims.begin(), dims.end())}}, name);
    }
    const std::string& output(const node_t& n, int k) const {
        if (k >= n.output_size() || n.output(k).empty())
            fail(n, "has no output " + std::to_string(k) + " (" + std::to_string(n.output_size()) + " outputs)");
        return n.output(k);
    }
    void bind(const node_t& n, int k, graph::tensor_id t) {
        onnx_entry e;
        e.type = g_.type_of(t);
        e.tensor = t;
        env_[output(n, k)] = std::move(e);
    }
    void bind_const(const node_t& n, int k, onnx_const c) {
        onnx_entry e;
        e.type = ops::tensor_type{c.dims, c.type};
        e.value = std::make_shared<const onnx_const>(std::move(c));
        env_[output(n, k)] = std::move(e);
    }
    void alias(const node_t& n, int out, int in) {
        const onnx_entry e = entry(n, in);
        env_[output(n, out)] = e;
    }

    // ---- import steps
    void check_supported(const onnx::GraphProto& gp);
    bool try_fold(const node_t& n);
    std::optional<onnx_const> fold(const node_t& n);
    void convert(const node_t& n);
    void window_op(const node_t& n, bool conv, bool max_pool);
    ints axes_of(const node_t& n, int input, std::string_view name, std::size_t rank, bool required);

    const onnx::ModelProto& model_;
    std::string source_;
    const onnx_options& opt_;
    graph::computation_graph g_;
    onnx_model result_;
    std::int64_t opset_ = 0;
    std::unordered_map<std::string, onnx_entry> env_;
    std::unordered_set<std::string> used_names_;
    /// Elements folding may still compute: max_folded_elements plus 4 per element of data the file
    /// holds, so that import time stays proportional to the file's size. Charged after each fold
    /// (try_fold) and the limit of every result that can outgrow its inputs (before it is computed).
    std::int64_t fold_budget_ = onnx_const::max_folded_elements;
    std::map<std::string, graph::tensor_id> reshaped_weights_;
};

inline onnx_const onnx_importer::decode(const onnx::TensorProto& t, const std::string& where) const {
    const auto type = onnx_dtype(t.data_type());
    if (!type) fail(where + ": element type " + std::to_string(t.data_type()) + " is not supported");
    ops::shape dims;
    if (static_cast<std::size_t>(t.dims_size()) > ops::max_rank)
        fail(where + ": rank " + std::to_string(t.dims_size()) + " exceeds " + std::to_string(ops::max_rank));
    for (auto d : t.dims()) {
        if (d < 0) fail(where + ": negative dimension " + std::to_string(d));
        dims.push_back(d);
    }
    const auto n = static_cast<std::size_t>(dims.num_elements());
    const std::size_t stored = t.has_raw_data()           ? t.raw_data().size() / ops::size_of(*type)
                               : *type == ops::dtype::f32 ? static_cast<std::size_t>(t.float_data_size())
                               : *type == ops::dtype::f64 ? static_cast<std::size_t>(t.double_data_size())
                               : *type == ops::dtype::i64 ? static_cast<std::size_t>(t.int64_data_size())
                                                          : static_cast<std::size_t>(t.int32_data_size());
    if (stored != n)
        fail(where + ": holds " + std::to_string(stored) + " values, expected " + std::to_string(n) + " for shape " +
             dims.to_string());
    onnx_const c = onnx_const::make(*type, dims);
    auto count_is = [&](std::size_t got) {
        if (got != n)
            fail(where + ": holds " + std::to_string(got) + " values, expected " + std::to_string(n) + " for shape " +
                 dims.to_string());
    };
    if (t.has_raw_data()) {
        const std::string& raw = t.raw_data();
        const std::size_t es = ops::size_of(*type);
        count_is(raw.size() / es);
        if (raw.size() % es != 0) fail(where + ": raw data size is not a multiple of the element size");
        for (std::size_t k = 0; k < n; ++k) {
            const char* p = raw.data() + k * es;
            switch (*type) {
                case ops::dtype::f32: {
                    float v;
                    std::memcpy(&v, p, 4);
                    c.f[k] = v;
                    break;
                }
                case ops::dtype::f64: {
                    double v;
                    std::memcpy(&v, p, 8);
                    c.f[k] = v;
                    break;
                }
                case ops::dtype::i64: {
                    std::int64_t v;
                    std::memcpy(&v, p, 8);
                    c.i[k] = v;
                    break;
                }
                case ops::dtype::i32: {
                    std::int32_t v;
                    std::memcpy(&v, p, 4);
                    c.i[k] = v;
                    break;
                }
                case ops::dtype::i8:
                    c.i[k] = static_cast<std::int8_t>(*p);
                    break;
                case ops::dtype::u8:
                case ops::dtype::boolean:
                    c.i[k] = static_cast<std::uint8_t>(*p);
                    break;
                default:
                    fail(where + ": raw " + std::string(ops::name(*type)) + " data is not supported");
            }
        }
        return c;
    }
    switch (*type) {
        case ops::dtype::f32:
            count_is(static_cast<std::size_t>(t.float_data_size()));
            for (std::size_t k = 0; k < n; ++k) c.f[k] = t.float_data(static_cast<int>(k));
            break;
        case ops::dtype::f64:
            count_is(static_cast<std::size_t>(t.double_data_size()));
            for (std::size_t k = 0; k < n; ++k) c.f[k] = t.double_data(static_cast<int>(k));
            break;
        case ops::dtype::i64:
            count_is(static_cast<std::size_t>(t.int64_data_size()));
            for (std::size_t k = 0; k < n; ++k) c.i[k] = t.int64_data(static_cast<int>(k));
            break;
        case ops::dtype::i32:
        case ops::dtype::i8:
        case ops::dtype::u8:
        case ops::dtype::boolean:
            count_is(static_cast<std::size_t>(t.int32_data_size()));
            for (std::size_t k = 0; k < n; ++k) c.i[k] = t.int32_data(static_cast<int>(k));
            break;
        default:
            fail(where + ": " + std::string(ops::name(*type)) + " data is only supported as raw data");
    }
    return c;
}

inline ops::tensor_type onnx_importer::value_type(const onnx::ValueInfoProto& v) const {
    const std::string where = "graph input '" + v.name() + "'";
    if (!v.type().has_tensor_type()) fail(where + " is not a tensor");
    const auto& tt = v.type().tensor_type();
    const auto type = onnx_dtype(tt.elem_type());
    if (!type) fail(where + ": element type " + std::to_string(tt.elem_type()) + " is not supported");
    ops::tensor_type r{{}, *type};
    const auto given = opt_.input_shapes.find(v.name());
    if (given != opt_.input_shapes.end()) {
        if (given->second.size() > ops::max_rank) fail(where + ": given shape has too high a rank");
        for (auto d : given->second) {
            if (d < 1) fail(where + ": given shape " + ints_string(given->second) + " has a dimension < 1");
            r.dims.push_back(d);
        }
        if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(r.dims.rank()))
            fail(where + ": given shape " + ints_string(given->second) + " has rank " + std::to_string(r.dims.rank()) +
                 ", the file says " + std::to_string(tt.shape().dim_size()));
        return r;
    }
    const std::string give_shape = opt_.command_line_hints
                                       ? "give its shape with --input-shape " + v.name() + "=d0,d1,..."
                                       : "give its shape in onnx_options::input_shapes[\"" + v.name() + "\"]";
    if (!tt.has_shape()) fail(where + " has no shape; " + give_shape);
    if (static_cast<std::size_t>(tt.shape().dim_size()) > ops::max_rank)
        fail(where + ": rank " + std::to_string(tt.shape().dim_size()) + " exceeds " + std::to_string(ops::max_rank));
    for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_param() && !d.dim_param().empty()) {
            const auto bound = opt_.dim_values.find(d.dim_param());
            if (bound != opt_.dim_values.end()) {
                if (bound->second < 1)
                    fail(where + ": symbolic dimension '" + d.dim_param() + "' bound to " +
                         std::to_string(bound->second) + ", expected at least 1");
                r.dims.push_back(bound->second);
                continue;
            }
            fail(where + " has a symbolic dimension '" + d.dim_param() + "' (axis " + std::to_string(r.dims.rank()) +
                 "); bind it with " +
                 (opt_.command_line_hints ? "--dim " + d.dim_param() + "=VALUE"
                                          : "onnx_options::dim_values[\"" + d.dim_param() + "\"]") +
                 ", or " + give_shape);
        }
        if (!d.has_dim_value())
            fail(where + " has an unknown dimension (axis " + std::to_string(r.dims.rank()) + "); " + give_shape);
        if (d.dim_value() < 1)
            fail(where + " has dimension " + std::to_string(d.dim_value()) + " at axis " +
                 std::to_string(r.dims.rank()) + ", expected at least 1");
        r.dims.push_back(d.dim_value());
    }
    return r;
}

inline void onnx_importer::check_dim_values(const onnx::GraphProto& gp) const {
    if (opt_.dim_values.empty()) return;
    std::set<std::string, std::less<>> used;
    for (const auto& v : gp.input())
        if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
            for (const auto& d : v.type().tensor_type().shape().dim())
                if (d.has_dim_param() && !d.dim_param().empty()) used.insert(d.dim_param());
    for (const auto& [name, value] : opt_.dim_values) {
        if (used.count(name)) continue;
        std::string known;
        for (const auto& u : used) known += (known.empty() ? "" : ", ") + u;
        fail(std::string(opt_.command_line_hints ? "--dim " : "onnx_options::dim_values: ") + "'" + name +
             "' is not a symbolic dimension of any graph input (" +
             (known.empty() ? std::string("the inputs have none") : "they have: " + known) + ")");
    }
}

inline graph::tensor_id onnx_importer::weight_of(const std::string& onnx_name, const onnx_entry& e,
                                                 const ops::shape& dims) {
    for (auto d : dims)
        if (d < 1) fail("constant '" + onnx_name + "' of shape " + dims.to_string() + " is empty");
    const std::string name = unique(onnx_name);
    const graph::tensor_id t = g_.weight(name, dims, e.type.type);
    if (e.value) {
        onnx_tensor v{{dims, e.type.type}, {}};
        v.values.reserve(e.value->size());
        for (std::size_t k = 0; k < e.value->size(); ++k) v.values.push_back(e.value->at(k));
        result_.weight_values.emplace(name, std::move(v));
    }
    return t;
}

/// The graph tensor of input k; a constant or an initializer becomes a weight op at its first use.
inline graph::tensor_id onnx_importer::tensor_in(const node_t& n, int k) {
    onnx_entry& e = entry(n, k);
    if (!e.tensor) e.tensor = weight_of(n.input(k), e, e.type.dims);
    return *e.tensor;
}

/// Input k with its elements viewed in the shape `dims`: a constant is stored in that shape (a
/// conv bias [C] as [C,1,1]), a computed tensor goes through a reshape op.
inline graph::tensor_id onnx_importer::tensor_as(const node_t& n, int k, const ops::shape& dims) {
    onnx_entry& e = entry(n, k);
    if (e.type.dims == dims) return tensor_in(n, k);
    if (e.type.dims.num_elements() != dims.num_elements())
        fail(n, "input '" + n.input(k) + "' has shape " + e.type.dims.to_string() + ", expected " +
                    std::to_string(dims.num_elements()) + " elements");
    if (!e.tensor) {
        const std::string key = n.input(k) + "@" + dims.to_string();
        auto it = reshaped_weights_.find(key);
        if (it == reshaped_weights_.end()) it = reshaped_weights_.emplace(key, weight_of(n.input(k), e, dims)).first;
        return it->second;
    }
    return reshape(*e.tensor, dims, node_name(n) + "/reshape");
}

inline graph::tensor_id onnx_importer::constant(const std::string& name, const onnx_const& c) {
    onnx_entry e;
    e.type = {c.dims, c.type};
    e.value = std::make_shared<const onnx_const>(c);
    return weight_of(name, e, c.dims);
}

inline graph::tensor_id onnx_importer::scalar(const std::string& name, double v, ops::dtype t) {
    onnx_const c = onnx_const::make(t, ops::shape{});
    c.set(0, v);
    return constant(name, c);
}

inline void onnx_importer::check_supported(const onnx::GraphProto& gp) {
    std::set<std::string> unsupported;
    const node_t* first = nullptr;
    for (const auto& n : gp.node()) {
        const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
        const bool known =
            default_domain && std::find(std::begin(onnx_ops), std::end(onnx_ops), n.op_type()) != std::end(onnx_ops);
        if (known) continue;
        unsupported.insert(default_domain ? n.op_type() : n.domain() + "." + n.op_type());
        if (!first) first = &n;
    }
    if (!first) return;
    std::string list;
    for (const auto& s : unsupported) {
        if (!list.empty()) list += ", ";
        list += s;
    }
    fail(*first, "operator '" + first->op_type() + "' cannot be imported; unsupported operators in this file: " + list);
}

inline onnx_model onnx_importer::run() {
    if (!model_.has_graph()) fail("the model has no graph");
    const onnx::GraphProto& gp = model_.graph();
    for (const auto& o : model_.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    if (opset_ == 0) fail("the model imports no default-domain operator set");
    if (opset_ < 7 || opset_ > 18)
        fail("operator set version " + std::to_string(opset_) + " is not supported, expected 7-18 (tested: 11-17)");
    result_.opset = opset_;
    result_.producer =
        model_.producer_name() + (model_.producer_version().empty() ? "" : " " + model_.producer_version());
    for (const auto& n : gp.node()) ++result_.onnx_nodes[n.op_type()];
    check_supported(gp);
    g_.set_name(gp.name());
    g_.reserve(static_cast<std::size_t>(gp.node_size()) * 2, static_cast<std::size_t>(gp.node_size()) * 2);

    for (const auto& t : gp.initializer()) {
        onnx_entry e;
        e.is_weight = true;
        const std::string where = "initializer '" + t.name() + "'";
        if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
            const auto type = onnx_dtype(t.data_type());
            if (!type) fail(where + ": element type " + std::to_string(t.data_type()) + " is not supported");
            e.type.type = *type;
            for (auto d : t.dims()) {
                if (d < 1 || e.type.dims.rank() == ops::max_rank) fail(where + ": bad shape");
                e.type.dims.push_back(d);
            }
        } else {
            auto c = decode(t, where);
            fold_budget_ += onnx_const::fold_budget_per_file_element * static_cast<std::int64_t>(c.size());
            e.type = {c.dims, c.type};
            e.value = std::make_shared<const onnx_const>(std::move(c));
        }
        env_[t.name()] = std::move(e);
    }
    check_dim_values(gp);
    for (const auto& v : gp.input()) {
        if (env_.count(v.name())) continue;  // an initializer listed as an input (IR version < 4)
        const ops::tensor_type type = value_type(v);
        onnx_entry e;
        e.type = type;
        e.tensor = g_.input(unique(v.name()), type.dims, type.type);
        env_[v.name()] = std::move(e);
    }
    for (const auto& n : gp.node()) {
        for (int k = 0; k < n.input_size(); ++k)
            if (!n.input(k).empty()) (void)entry(n, k);  // dangling inputs are errors
        if (n.output_size() == 0) fail(n, "has no outputs; every supported operator has at least one");
        try {
            if (!try_fold(n)) convert(n);
        } catch (const error& e) {
            const std::string what = e.what();
            if (what.rfind(source_, 0) == 0) throw;
            fail(n, what);
        }
    }
    for (const auto& o : gp.output()) {
        auto it = env_.find(o.name());
        if (it == env_.end()) fail("graph output '" + o.name() + "' is produced by no node");
        if (!it->second.tensor) it->second.tensor = weight_of(o.name(), it->second, it->second.type.dims);
        g_.mark_output(*it->second.tensor);
    }
    result_.graph = std::move(g_);
    return std::move(result_);
}

// ---- folding of nodes whose inputs are all known

inline bool onnx_importer::try_fold(const node_t& n) {
    const std::string& op = n.op_type();
    const bool shape_only = op == "Shape" || op == "Constant";
    if (!shape_only) {
        for (int k = 0; k < n.input_size(); ++k)
            if (!n.input(k).empty() && !entry(n, k).value) return false;
        if (n.input_size() == 0 && op != "ConstantOfShape") return false;
    }
    auto c = fold(n);
    if (!c) return false;
    const auto elements = static_cast<std::int64_t>(c->size());
    if (op == "Constant") {
        fold_budget_ += onnx_const::fold_budget_per_file_element * elements;  // data the file holds
    } else if ((fold_budget_ -= elements) < 0) {
        fail(n, "folding constants at import time computes more than " +
                    std::to_string(onnx_const::max_folded_elements) + " elements plus " +
                    std::to_string(onnx_const::fold_budget_per_file_element) +
                    " per element of the file's own constants");
    }
    bind_const(n, 0, std::move(*c));
    ++result_.folded_nodes;
    return true;
}

inline std::optional<onnx_const> onnx_importer::fold(const node_t& n) {
    const std::string& op = n.op_type();
    if (op == "Constant") {
        if (const auto* a = attr(n, "value")) return decode(a->t(), "node " + describe(n));
        onnx_const c;
        if (const auto* a = attr(n, "value_float")) {
            c = onnx_const::make(ops::dtype::f32, {});
            c.f[0] = a->f();
        } else if (const auto* a = attr(n, "value_int")) {
            c = onnx_const::make(ops::dtype::i64, {});
            c.i[0] = a->i();
        } else if (const auto* a = attr(n, "value_ints")) {
            c = onnx_const::make(ops::dtype::i64, {a->ints_size()});
            for (int k = 0; k < a->ints_size(); ++k) c.i[static_cast<std::size_t>(k)] = a->ints(k);
        } else if (const auto* a = attr(n, "value_floats")) {
            c = onnx_const::make(ops::dtype::f32, {a->floats_size()});
            for (int k = 0; k < a->floats_size(); ++k) c.f[static_cast<std::size_t>(k)] = a->floats(k);
        } else {
            fail(n, "has no value attribute it can import (value, value_float(s), value_int(s))");
        }
        return c;
    }
    if (op == "Shape") {
        const ops::shape& s = dims_in(n, 0);
        const auto r = static_cast<std::int64_t>(s.rank());
        auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + r : v, 0, r); };
        const std::int64_t b = clamp(attr_int(n, "start", 0)), e = clamp(attr_int(n, "end", r));
        onnx_const c = onnx_const::make(ops::dtype::i64, {std::max<std::int64_t>(e - b, 0)});
        for (std::int64_t k = b; k < e; ++k) c.i[static_cast<std::size_t>(k - b)] = s[static_cast<std::size_t>(k)];
        return c;
    }
    if (op == "ConstantOfShape") {
        ops::shape s;
        for (auto d : const_in(n, 0, "shape").ints()) s.push_back(d);
        onnx_const fill = onnx_const::make(ops::dtype::f32, {1});
        if (const auto* a = attr(n, "value")) fill = decode(a->t(), "node " + describe(n));
        if (fill.size() != 1)
            fail(n, "the value attribute holds " + std::to_string(fill.size()) + " values, expected 1");
        onnx_const c = onnx_const::make(fill.type, s, fold_budget_);
        for (std::size_t k = 0; k < c.size(); ++k) c.set(k, fill.at(0));
        return c;
    }
    if (op == "Identity" || op == "Dropout") return *entry(n, 0).value;
    if (op == "Cast") {
        const auto to = onnx_dtype(static_cast<int>(attr_int(n, "to", 0)));
        if (!to) return std::nullopt;
        const onnx_const& x = *entry(n, 0).value;
        onnx_const c = onnx_const::make(*to, x.dims);
        for (std::size_t k = 0; k < x.size(); ++k) {
            if (x.integral()) c.set_int(k, x.i[k]);
            else c.set(k, ops::is_floating(*to) ? x.f[k] : std::trunc(x.f[k]));
        }
        return c;
    }
    if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Flatten") {
        // the same elements in a new shape: compute the shape as the graph op would
        onnx_const c = *entry(n, 0).value;
        ops::shape s;
        if (op == "Reshape") {
            const auto target = reshape_target(n, c.dims);
            const auto out = ops::shape_rules::reshape(std::array{ops::tensor_type{c.dims, c.type}},
                                                       {{ops::attr_id::shape, target}});
            s = out[0].dims;
        } else if (op == "Flatten") {
            const auto ax = attr_int(n, "axis", 1);
            const auto r = static_cast<std::int64_t>(c.dims.rank());
            if (ax < -r || ax > r)
                fail(n, "axis " + std::to_string(ax) + " is outside [" + std::to_string(-r) + ", " + std::to_string(r) +
                            "]");
            std::int64_t a = 1, b = 1;
            for (std::int64_t k = 0; k < r; ++k)
                (k < (ax < 0 ? ax + r : ax) ? a : b) *= c.dims[static_cast<std::size_t>(k)];
            s = {a, b};
        } else {
            const bool unsq = op == "Unsqueeze";
            const std::size_t out_rank = c.dims.rank();
            auto axes = axes_of(n, 1, "axes", unsq ? 0 : out_rank, unsq);
            if (unsq) {
                const std::size_t r = out_rank + axes.size();
                std::vector<bool> mark(r, false);
                for (auto a : axes) mark[ops::shape(std::vector<std::int64_t>(r, 1)).axis(a)] = true;
                std::size_t k = 0;
                for (std::size_t d = 0; d < r; ++d) s.push_back(mark[d] ? 1 : c.dims[k++]);
            } else {
                std::vector<bool> drop(out_rank, false);
                if (axes.empty())
                    for (std::size_t d = 0; d < out_rank; ++d) drop[d] = c.dims[d] == 1;
                for (auto a : axes) {
                    const auto d = c.dims.axis(a);
                    if (c.dims[d] != 1)
                        fail(n, "axis " + std::to_string(a) + " of " + c.dims.to_string() + " is not 1");
                    drop[d] = true;
                }
                for (std::size_t d = 0; d < out_rank; ++d)
                    if (!drop[d]) s.push_back(c.dims[d]);
            }
        }
        c.dims = s;
        return c;
    }
    if (op == "Gather") {
        const onnx_const& x = *entry(n, 0).value;
        const onnx_const& idx = *entry(n, 1).value;
        const std::size_t ax = x.dims.axis(attr_int(n, "axis", 0));
        ops::shape s;
        std::size_t outer = 1, inner = 1;
        for (std::size_t k = 0; k < ax; ++k) s.push_back(x.dims[k]), outer *= static_cast<std::size_t>(x.dims[k]);
        for (auto d : idx.dims) s.push_back(d);
        for (std::size_t k = ax + 1; k < x.dims.rank(); ++k)
            s.push_back(x.dims[k]), inner *= static_cast<std::size_t>(x.dims[k]);
        onnx_const c = onnx_const::make(x.type, s, fold_budget_);
        const std::int64_t ext = x.dims[ax];
        std::size_t out = 0;
        for (std::size_t p = 0; p < outer; ++p)
            for (std::size_t j = 0; j < idx.size(); ++j) {
                std::int64_t v = idx.int_at(j);
                if (v < -ext || v >= ext)
                    fail(n, "index " + std::to_string(v) + " is outside [" + std::to_string(-ext) + ", " +
                                std::to_string(ext) + ")");
                if (v < 0) v += ext;
                for (std::size_t q = 0; q < inner; ++q, ++out) {
                    const std::size_t src =
                        (p * static_cast<std::size_t>(ext) + static_cast<std::size_t>(v)) * inner + q;
                    if (c.integral()) c.i[out] = x.i[src];
                    else c.f[out] = x.f[src];
                }
            }
        return c;
    }
    if (op == "Concat") {
        const onnx_const& first = *entry(n, 0).value;
        std::vector<ops::tensor_type> types;
        for (int k = 0; k < n.input_size(); ++k) types.push_back({dims_in(n, k), type_in(n, k).type});
        const auto out = ops::shape_rules::concat(types, {{ops::attr_id::axis, attr_int(n, "axis", 0)}});
        onnx_const c = onnx_const::make(first.type, out[0].dims);
        const std::size_t ax = out[0].dims.axis(attr_int(n, "axis", 0));
        std::size_t outer = 1;
        for (std::size_t k = 0; k < ax; ++k) outer *= static_cast<std::size_t>(out[0].dims[k]);
        std::size_t pos = 0;
        for (std::size_t p = 0; p < outer; ++p)
            for (int k = 0; k < n.input_size(); ++k) {
                const onnx_const& x = *entry(n, k).value;
                const std::size_t chunk = x.size() / std::max<std::size_t>(outer, 1);
                for (std::size_t q = 0; q < chunk; ++q) c.set(pos++, x.at(p * chunk + q));
            }
        return c;
    }
    if (op == "Slice" && has_input(n, 1)) {
        const onnx_const& x = *entry(n, 0).value;
        if (x.dims.rank() != 1) return std::nullopt;
        const auto starts = const_in(n, 1, "starts").ints(), ends = const_in(n, 2, "ends").ints();
        const auto steps = has_input(n, 4) ? const_in(n, 4, "steps").ints() : std::vector<std::int64_t>{1};
        if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 || steps[0] != 1) return std::nullopt;
        const std::int64_t d = x.dims[0];
        auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + d : v, 0, d); };
        const std::int64_t b = clamp(starts[0]), e = clamp(ends[0]);
        onnx_const c = onnx_const::make(x.type, {std::max<std::int64_t>(e - b, 0)});
        for (std::int64_t k = b; k < e; ++k) c.set(static_cast<std::size_t>(k - b), x.at(static_cast<std::size_t>(k)));
        return c;
    }
    if (op == "Range") {
        const double start = scalar_in(n, 0, "start"), limit = scalar_in(n, 1, "limit"),
                     delta = scalar_in(n, 2, "delta");
        if (delta == 0) fail(n, "delta is 0");
        const double count = std::max(std::ceil((limit - start) / delta), 0.0);
        if (count > static_cast<double>(fold_budget_))
            fail(n, "the range has " + std::to_string(count) + " elements, more than folding may still compute (" +
                        std::to_string(fold_budget_) + ")");
        onnx_const c = onnx_const::make(entry(n, 0).value->type, {static_cast<std::int64_t>(count)});
        for (std::size_t k = 0; k < c.size(); ++k) c.set(k, start + static_cast<double>(k) * delta);
        return c;
    }
    static const std::set<std::string, std::less<>> elementwise{"Add",  "Sub",   "Mul",    "Div",  "Equal", "Greater",
                                                                "Less", "Where", "Expand", "Sqrt", "Neg",   "Pow"};
    if (!elementwise.count(op)) return std::nullopt;
    // elementwise on broadcast operands; Expand broadcasts its input to a shape
    const int arity = op == "Where" ? 3 : op == "Sqrt" || op == "Neg" ? 1 : 2;
    std::vector<const onnx_const*> in;
    for (int k = 0; k < arity; ++k) in.push_back(entry(n, k).value.get());
    ops::shape out = in[0]->dims;
    if (op == "Expand") {
        ops::shape target;
        for (auto d : in[1]->ints()) target.push_back(d);
        out = ops::shape_rules::broadcast(out, target);
        in.pop_back();
    } else {
        for (std::size_t k = 1; k < in.size(); ++k) out = ops::shape_rules::broadcast(out, in[k]->dims);
    }
    const bool compare = op == "Equal" || op == "Greater" || op == "Less";
    const ops::dtype type = compare ? ops::dtype::boolean : op == "Where" ? in[1]->type : in[0]->type;
    onnx_const c = onnx_const::make(type, out, fold_budget_);
    std::vector<std::vector<std::size_t>> offs;
    for (const auto* x : in) offs.push_back(onnx_broadcast_offsets(out, x->dims));
    const bool int_math = !compare && c.integral();
    for (std::size_t e = 0; e < c.size(); ++e) {
        auto v = [&](std::size_t k) { return in[k]->at(offs[k][e]); };
        auto iv = [&](std::size_t k) { return in[k]->int_at(offs[k][e]); };
        if (op == "Expand") {
            c.set(e, v(0));
            if (c.integral()) c.i[e] = iv(0);
        } else if (op == "Sqrt") c.set(e, std::sqrt(v(0)));
        else if (op == "Neg") {
            if (int_math && iv(0) == std::numeric_limits<std::int64_t>::min())
                fail(n, "integer negation overflows 64 bits");
            if (int_math) c.i[e] = -iv(0);
            else c.set(e, -v(0));
        } else if (op == "Equal") c.set(e, v(0) == v(1));
        else if (op == "Greater") c.set(e, v(0) > v(1));
        else if (op == "Less") c.set(e, v(0) < v(1));
        else if (op == "Where") {
            if (c.integral()) c.i[e] = iv(0) ? iv(1) : iv(2);
            else c.set(e, iv(0) ? v(1) : v(2));
        } else if (int_math) {
            const std::int64_t a = iv(0), b = iv(1);
            if (op == "Div" && b == 0) fail(n, "integer division by zero");
            std::int64_t r = 0;
            const bool overflow =
                op == "Add"   ? __builtin_add_overflow(a, b, &r)
                : op == "Sub" ? __builtin_sub_overflow(a, b, &r)
                : op == "Mul" ? __builtin_mul_overflow(a, b, &r)
                : op == "Div"
                    ? (a == std::numeric_limits<std::int64_t>::min() && b == -1) || ((r = a / b), false)
                    : ((r = onnx_const::to_int(std::pow(static_cast<double>(a), static_cast<double>(b)))), false);
            if (overflow) fail(n, "integer " + op + " overflows 64 bits");
            c.i[e] = r;
        } else {
            const double a = v(0), b = v(1);
            c.set(e, op == "Add"   ? a + b
                     : op == "Sub" ? a - b
                     : op == "Mul" ? a * b
                     : op == "Div" ? a / b
                                   : std::pow(a, b));
        }
    }
    return c;
}

/// Axes of Unsqueeze / Squeeze / Reduce*: an attribute before the opset that made them an input.
inline std::vector<std::int64_t> onnx_importer::axes_of(const node_t& n, int input, std::string_view name, std::size_t,
                                                        bool required) {
    if (auto a = attr_ints(n, name)) return *a;
    if (has_input(n, input)) return const_in(n, input, name).ints();
    if (required) fail(n, "has no '" + std::string(name) + "' (attribute or input)");
    return {};
}

// ---- conversion of the remaining nodes into graph ops

/// Conv, MaxPool, AveragePool: ONNX's explicit pads become TensorFlow-style SAME or VALID when they
/// coincide with it, and an explicit pad op followed by a VALID window otherwise.
inline void onnx_importer::window_op(const node_t& n, bool conv, bool max_pool) {
    using ops::attr_id;
    const std::string name = node_name(n);
    const ops::shape& x = dims_in(n, 0);
    if (x.rank() != 4) fail(n, "input has shape " + x.to_string() + ", only 2-D windows (NCHW) are supported");
    ints kernel;
    if (conv) {
        const ops::shape& w = dims_in(n, 1);
        if (w.rank() != 4) fail(n, "weight has shape " + w.to_string() + ", expected [O, C/group, kh, kw]");
        kernel = {w[2], w[3]};
        const auto group = attr_int(n, "group", 1);
        std::int64_t channels = 0;
        if (group < 1 || __builtin_mul_overflow(w[1], group, &channels) || channels != x[1])
            fail(n, "group " + std::to_string(group) + " does not match input channels " + std::to_string(x[1]) +
                        " and weight " + w.to_string());
    } else {
        kernel = attr_ints(n, "kernel_shape").value_or(ints{});
    }
    if (kernel.size() != 2) fail(n, "kernel_shape " + ints_string(kernel) + ", expected 2 values (2-D window)");
    const ints stride = attr_ints(n, "strides").value_or(ints{1, 1});
    const ints dil = attr_ints(n, "dilations").value_or(ints{1, 1});
    ints pads = attr_ints(n, "pads").value_or(ints{0, 0, 0, 0});
    if (stride.size() != 2 || dil.size() != 2 || pads.size() != 4)
        fail(n, "strides / dilations / pads have the wrong length for a 2-D window");
    constexpr std::int64_t big = std::int64_t{1} << 30;
    for (const ints* v : std::array<const ints*, 4>{&kernel, &stride, &dil, &pads})
        for (auto d : *v)
            if (d < 0 || d > big) fail(n, "kernel, strides, dilations or pads " + ints_string(*v) + " out of range");
    if (!conv && (dil[0] != 1 || dil[1] != 1)) fail(n, "dilated pooling is not supported");
    const bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    const bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
    const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
    ints out(2), kernel_eff(2);
    bool all_same = true, all_valid = true;
    for (std::size_t a = 0; a < 2; ++a) {
        const std::int64_t in = x[2 + a], k = (kernel[a] - 1) * dil[a] + 1, s = stride[a];
        if (k < 1 || s < 1) fail(n, "kernel, stride and dilation must be >= 1");
        kernel_eff[a] = k;
        const std::int64_t same_out = (in + s - 1) / s;
        const std::int64_t total = std::max<std::int64_t>((same_out - 1) * s + k - in, 0);
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            pads[a] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads[a + 2] = total - pads[a];
        } else if (auto_pad == "VALID") {
            pads[a] = pads[a + 2] = 0;
        } else if (auto_pad != "NOTSET") {
            fail(n, "auto_pad '" + auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
        }
        const std::int64_t span = in + pads[a] + pads[a + 2] - k;
        if (span < 0) fail(n, "the window does not fit the padded input along axis " + std::to_string(2 + a));
        std::int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        if (ceil_mode && (o - 1) * s >= in + pads[a]) --o;  // the last window starts inside the input
        out[a] = o;
        all_same = all_same && o == same_out && pads[a] == total / 2 && pads[a + 2] == total - total / 2;
        all_valid = all_valid && pads[a] == 0 && pads[a + 2] == 0 && o == (in - k) / s + 1;
    }
    // an average that counts padded cells cannot use SAME, whose average leaves them out
    if (!conv && !max_pool && include_pad && !all_valid) all_same = false;
    graph::tensor_id in = tensor_in(n, 0);
    ops::padding_mode mode = all_valid ? ops::padding_mode::valid : ops::padding_mode::same;
    if (!all_valid && !all_same) {
        ints p(8, 0);
        for (std::size_t a = 0; a < 2; ++a) {
            const std::int64_t end = (out[a] - 1) * stride[a] + kernel_eff[a] - x[2 + a] - pads[a];
            if (end < 0) fail(n, "pads leave input cells unused at the end; not supported");
            if (!conv && !max_pool && end > pads[a + 2])
                fail(n, "an average window beyond the padded input (ceil_mode) is not supported");
            if (!conv && !max_pool && !include_pad)
                fail(n, "explicit pads with count_include_pad = 0 are not supported unless they equal SAME padding");
            p[2 + a] = pads[a];
            p[6 + a] = end;
        }
        const double fill = max_pool ? static_cast<double>(std::numeric_limits<float>::lowest()) : 0.0;
        in = add1(ops::op_kind::pad, {in}, {{attr_id::pads, p}, {attr_id::value, fill}}, name + "/pad");
        mode = ops::padding_mode::valid;
    }
    const auto padding = static_cast<std::int64_t>(mode);
    graph::tensor_id y;
    if (conv) {
        const graph::tensor_id w = tensor_in(n, 1);
        y = add1(ops::op_kind::conv2d, {in, w},
                 {{attr_id::stride, stride}, {attr_id::padding, padding}, {attr_id::dilation, dil}}, name);
        if (has_input(n, 2)) {
            const graph::tensor_id b = tensor_as(n, 2, ops::shape{g_.type_of(y).dims[1], 1, 1});
            y = add1(ops::op_kind::ewadd, {y, b}, {}, name + "/bias");
        }
    } else {
        y = add1(max_pool ? ops::op_kind::maxpool2d : ops::op_kind::avgpool2d, {in},
                 {{attr_id::kernel, kernel}, {attr_id::stride, stride}, {attr_id::padding, padding}}, name);
    }
    const ops::shape& yd = g_.type_of(y).dims;
    if (yd[2] != out[0] || yd[3] != out[1])
        fail(n, "internal: window output " + yd.to_string() + " differs from ONNX's " + ints_string(out));
    bind(n, 0, y);
}

inline void onnx_importer::convert(const node_t& n) {
    using ops::attr_id;
    using ops::op_kind;
    const std::string& op = n.op_type();
    const std::string name = node_name(n);
    auto unary = [&](op_kind k) { bind(n, 0, add1(k, {tensor_in(n, 0)}, {}, name)); };
    auto binary = [&](op_kind k) { bind(n, 0, add1(k, {tensor_in(n, 0), tensor_in(n, 1)}, {}, name)); };

    if (op == "Conv") return window_op(n, true, false);
    if (op == "MaxPool") {
        if (n.output_size() > 1 && !n.output(1).empty()) fail(n, "the Indices output is not supported");
        return window_op(n, false, true);
    }
    if (op == "AveragePool") return window_op(n, false, false);
    if (op == "Relu") return unary(op_kind::relu);
    if (op == "Sigmoid") return unary(op_kind::sigmoid);
    if (op == "Tanh") return unary(op_kind::tanh);
    if (op == "Sqrt") return unary(op_kind::sqrt);
    if (op == "Erf") return unary(op_kind::erf);
    if (op == "GlobalAveragePool") return unary(op_kind::global_avgpool);
    if (op == "Add") return binary(op_kind::ewadd);
    if (op == "Sub") return binary(op_kind::sub);
    if (op == "Mul") return binary(op_kind::ewmul);
    if (op == "Div") return binary(op_kind::div);
    if (op == "Pow") return binary(op_kind::pow);
    if (op == "Identity") return alias(n, 0, 0);
    if (op == "Dropout") {
        if (has_input(n, 2) && entry(n, 2).value && entry(n, 2).value->int_at(0) != 0)
            fail(n, "training_mode = true is not supported (inference graphs only)");
        if (n.output_size() > 1 && !n.output(1).empty()) fail(n, "the mask output is not supported");
        return alias(n, 0, 0);
    }
    if (op == "Neg") {
        const auto t = type_in(n, 0).type;
        return bind(n, 0, add1(op_kind::ewmul, {tensor_in(n, 0), scalar(name + "/minus_one", -1.0, t)}, {}, name));
    }
    if (op == "Cast") {
        const auto to = onnx_dtype(static_cast<int>(attr_int(n, "to", 0)));
        if (to && *to == type_in(n, 0).type) return alias(n, 0, 0);
        fail(n, "a cast between element types of a computed tensor is not supported");
    }
    if (op == "GlobalMaxPool") {
        const auto r = static_cast<std::int64_t>(dims_in(n, 0).rank());
        ints axes;
        for (std::int64_t a = 2; a < r; ++a) axes.push_back(a);
        return bind(
            n, 0, add1(op_kind::reduce_max, {tensor_in(n, 0)}, {{attr_id::axes, axes}, {attr_id::keepdims, 1}}, name));
    }
    if (op == "Clip") {
        const double lo_default = std::numeric_limits<float>::lowest(), hi_default = std::numeric_limits<float>::max();
        double lo = attr_float(n, "min", lo_default), hi = attr_float(n, "max", hi_default);
        if (has_input(n, 1)) lo = scalar_in(n, 1, "min");
        if (has_input(n, 2)) hi = scalar_in(n, 2, "max");
        return bind(n, 0, add1(op_kind::clip, {tensor_in(n, 0)}, {{attr_id::min, lo}, {attr_id::max, hi}}, name));
    }
    if (op == "BatchNormalization") {
        if (attr_int(n, "training_mode", 0) != 0) fail(n, "training_mode = 1 is not supported (inference graphs only)");
        if (n.output_size() > 1) fail(n, "running mean / variance outputs (training) are not supported");
        return bind(n, 0,
                    add1(op_kind::batchnorm,
                         {tensor_in(n, 0), tensor_in(n, 1), tensor_in(n, 2), tensor_in(n, 3), tensor_in(n, 4)},
                         {{attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}}, name));
    }
    if (op == "LayerNormalization") {
        if (n.output_size() > 1) fail(n, "mean / inverse std outputs are not supported");
        const ops::shape& x = dims_in(n, 0);
        const std::size_t ax = x.axis(attr_int(n, "axis", -1));
        const ops::shape norm{std::span<const std::int64_t>(x.begin() + ax, x.rank() - ax)};
        const graph::tensor_id gamma = tensor_as(n, 1, norm);
        graph::tensor_id beta;
        if (has_input(n, 2)) {
            beta = tensor_as(n, 2, norm);
        } else {
            onnx_const zero = onnx_const::make(type_in(n, 0).type, norm);
            beta = constant(name + "/zero_bias", zero);
        }
        return bind(
            n, 0,
            add1(op_kind::layernorm, {tensor_in(n, 0), gamma, beta},
                 {{attr_id::axis, static_cast<std::int64_t>(ax)}, {attr_id::epsilon, attr_float(n, "epsilon", 1e-5)}},
                 name));
    }
    if (op == "MatMul") {
        const ops::shape a = dims_in(n, 0), b = dims_in(n, 1);
        if (a.rank() == 0 || b.rank() == 0) fail(n, "MatMul of a scalar");
        graph::tensor_id x = tensor_in(n, 0), y = tensor_in(n, 1);
        // 1-D operands as ONNX (numpy) defines them: [K] is [1,K] on the left, [K,1] on the right
        if (a.rank() == 1) x = reshape(x, {1, a[0]}, name + "/row");
        if (b.rank() == 1) y = reshape(y, {b[0], 1}, name + "/column");
        graph::tensor_id r = add1(op_kind::matmul, {x, y}, {}, name);
        if (a.rank() == 1 || b.rank() == 1) {
            ops::shape s = g_.type_of(r).dims, t;
            for (std::size_t k = 0; k < s.rank(); ++k) {
                const bool drop = (a.rank() == 1 && k == s.rank() - 2) || (b.rank() == 1 && k == s.rank() - 1);
                if (!drop) t.push_back(s[k]);
            }
            r = reshape(r, t, name + "/squeeze");
        }
        return bind(n, 0, r);
    }
    if (op == "Gemm") {
        graph::tensor_id a = tensor_in(n, 0), b = tensor_in(n, 1);
        if (attr_int(n, "transA", 0))
            a = add1(op_kind::transpose, {a}, {{attr_id::perm, ints{1, 0}}}, name + "/transpose_a");
        if (attr_int(n, "transB", 0))
            b = add1(op_kind::transpose, {b}, {{attr_id::perm, ints{1, 0}}}, name + "/transpose_b");
        graph::tensor_id y = add1(op_kind::matmul, {a, b}, {}, name);
        const auto t = g_.type_of(y).type;
        const double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
        if (alpha != 1.0) y = add1(op_kind::smul, {y, scalar(name + "/alpha", alpha, t)}, {}, name + "/scale");
        if (has_input(n, 2) && beta != 0.0) {
            graph::tensor_id c = tensor_in(n, 2);
            if (beta != 1.0) c = add1(op_kind::smul, {c, scalar(name + "/beta", beta, t)}, {}, name + "/scale_c");
            y = add1(op_kind::ewadd, {y, c}, {}, name + "/bias");
        }
        return bind(n, 0, y);
    }
    if (op == "Flatten") {
        const auto r = static_cast<std::int64_t>(dims_in(n, 0).rank());
        std::int64_t ax = attr_int(n, "axis", 1);
        if (ax < 0) ax += r;
        return bind(n, 0, add1(op_kind::flatten, {tensor_in(n, 0)}, {{attr_id::axis, ax}}, name));
    }
    if (op == "Reshape") {
        const auto target = reshape_target(n, dims_in(n, 0));
        return bind(n, 0, add1(op_kind::reshape, {tensor_in(n, 0)}, {{attr_id::shape, target}}, name));
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
        const ops::shape& x = dims_in(n, 0);
        const bool unsq = op == "Unsqueeze";
        const auto axes = axes_of(n, 1, "axes", x.rank(), unsq);
        ops::shape s;
        if (unsq) {
            const std::size_t r = x.rank() + axes.size();
            ops::shape probe;
            for (std::size_t d = 0; d < r; ++d) probe.push_back(1);
            std::vector<bool> mark(r, false);
            for (auto a : axes) mark[probe.axis(a)] = true;
            std::size_t k = 0;
            for (std::size_t d = 0; d < r; ++d) s.push_back(mark[d] ? 1 : x[k++]);
        } else {
            std::vector<bool> drop(x.rank(), axes.empty());
            for (auto a : axes) {
                const auto d = x.axis(a);
                if (x[d] != 1) fail(n, "axis " + std::to_string(a) + " of " + x.to_string() + " is not 1");
                drop[d] = true;
            }
            for (std::size_t d = 0; d < x.rank(); ++d)
                if (!drop[d] || x[d] != 1) s.push_back(x[d]);
        }
        return bind(n, 0,
                    add1(op_kind::reshape, {tensor_in(n, 0)}, {{attr_id::shape, ints(s.begin(), s.end())}}, name));
    }
    if (op == "Transpose") {
        const ints perm = attr_ints(n, "perm").value_or(ints{});
        return bind(n, 0, add1(op_kind::transpose, {tensor_in(n, 0)}, {{attr_id::perm, perm}}, name));
    }
    if (op == "Softmax") {
        const ops::shape& x = dims_in(n, 0);
        const std::size_t ax = x.axis(attr_int(n, "axis", opset_ >= 13 ? -1 : 1));
        if (opset_ >= 13 || ax + 1 == x.rank())
            return bind(
                n, 0,
                add1(op_kind::softmax, {tensor_in(n, 0)}, {{attr_id::axis, static_cast<std::int64_t>(ax)}}, name));
        // before opset 13 Softmax flattens to 2-D at axis and normalizes the whole trailing block
        const graph::tensor_id f = add1(op_kind::flatten, {tensor_in(n, 0)},
                                        {{attr_id::axis, static_cast<std::int64_t>(ax)}}, name + "/flatten");
        const graph::tensor_id s = add1(op_kind::softmax, {f}, {{attr_id::axis, std::int64_t{1}}}, name);
        return bind(n, 0, reshape(s, x, name + "/unflatten"));
    }
    if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax") {
        const ops::shape& x = dims_in(n, 0);
        const auto axes = axes_of(n, 1, "axes", x.rank(), false);
        const auto keep = attr_int(n, "keepdims", 1);
        if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0) != 0) return alias(n, 0, 0);
        const op_kind k = op == "ReduceMean"  ? op_kind::reduce_mean
                          : op == "ReduceSum" ? op_kind::reduce_sum
                                              : op_kind::reduce_max;
        return bind(n, 0, add1(k, {tensor_in(n, 0)}, {{attr_id::axes, axes}, {attr_id::keepdims, keep}}, name));
    }
    if (op == "Concat") {
        std::vector<graph::tensor_id> in;
        for (int k = 0; k < n.input_size(); ++k) in.push_back(tensor_in(n, k));
        const auto out = g_.add(op_kind::concat, in, {{attr_id::axis, attr_int(n, "axis", 0)}}, unique(name));
        return bind(n, 0, out[0]);
    }
    if (op == "Split") {
        const ops::shape& x = dims_in(n, 0);
        const std::int64_t ax = attr_int(n, "axis", 0);
        const std::size_t a = x.axis(ax);
        ints sizes;
        if (auto s = attr_ints(n, "split")) sizes = *s;
        else if (has_input(n, 1)) sizes = const_in(n, 1, "split").ints();
        else {
            const auto parts = static_cast<std::int64_t>(n.output_size());
            if (x[a] % parts != 0)
                fail(n, "axis extent " + std::to_string(x[a]) + " does not split into " + std::to_string(parts) +
                            " equal parts");
            sizes.assign(static_cast<std::size_t>(parts), x[a] / parts);
        }
        if (sizes.size() != static_cast<std::size_t>(n.output_size()))
            fail(n,
                 "split sizes " + ints_string(sizes) + " do not match " + std::to_string(n.output_size()) + " outputs");
        const auto out = g_.add(op_kind::split, {tensor_in(n, 0)},
                                {{attr_id::axis, static_cast<std::int64_t>(a)}, {attr_id::sizes, sizes}}, unique(name));
        for (int k = 0; k < n.output_size(); ++k) bind(n, k, out[static_cast<std::size_t>(k)]);
        return;
    }
    if (op == "Slice") {
        const ops::shape& x = dims_in(n, 0);
        ints starts, ends, axes, steps;
        if (has_input(n, 1)) {
            starts = const_in(n, 1, "starts").ints();
            ends = const_in(n, 2, "ends").ints();
            if (has_input(n, 3)) axes = const_in(n, 3, "axes").ints();
            if (has_input(n, 4)) steps = const_in(n, 4, "steps").ints();
        } else {
            starts = attr_ints(n, "starts").value_or(ints{});
            ends = attr_ints(n, "ends").value_or(ints{});
            axes = attr_ints(n, "axes").value_or(ints{});
        }
        if (axes.empty())
            for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
        if (starts.size() != ends.size() || axes.size() != starts.size() ||
            (!steps.empty() && steps.size() != starts.size()))
            fail(n, "starts, ends, axes and steps differ in length");
        ints begin(x.rank(), 0), end(x.begin(), x.end());
        for (std::size_t k = 0; k < axes.size(); ++k) {
            if (!steps.empty() && steps[k] != 1) fail(n, "steps other than 1 are not supported");
            const std::size_t a = x.axis(axes[k]);
            const std::int64_t d = x[a];
            auto clamp = [&](std::int64_t v) {
                return std::clamp<std::int64_t>(v < 0 ? std::max(v, -d) + d : v, 0, d);
            };
            begin[a] = clamp(starts[k]);
            end[a] = clamp(ends[k]);
        }
        return bind(n, 0,
                    add1(op_kind::slice, {tensor_in(n, 0)}, {{attr_id::begin, begin}, {attr_id::end, end}}, name));
    }
    if (op == "Pad") {
        const ops::shape& x = dims_in(n, 0);
        if (attr_string(n, "mode", "constant") != "constant") fail(n, "only mode 'constant' is supported");
        ints pads = has_input(n, 1) ? const_in(n, 1, "pads").ints() : attr_ints(n, "pads").value_or(ints{});
        double value = attr_float(n, "value", 0.0);
        if (has_input(n, 2)) value = scalar_in(n, 2, "constant_value");
        if (has_input(n, 3)) {
            const auto axes = const_in(n, 3, "axes").ints();
            ints full(2 * x.rank(), 0);
            for (std::size_t k = 0; k < axes.size(); ++k) {
                const std::size_t a = x.axis(axes[k]);
                full[a] = pads.at(k);
                full[a + x.rank()] = pads.at(k + axes.size());
            }
            pads = full;
        }
        for (auto p : pads)
            if (p < 0) fail(n, "negative pads (cropping) are not supported");
        return bind(n, 0,
                    add1(op_kind::pad, {tensor_in(n, 0)}, {{attr_id::pads, pads}, {attr_id::value, value}}, name));
    }
    if (op == "Gather") {
        return bind(
            n, 0,
            add1(op_kind::gather, {tensor_in(n, 0), tensor_in(n, 1)}, {{attr_id::axis, attr_int(n, "axis", 0)}}, name));
    }
    if (op == "Expand") {
        ops::shape target;
        for (auto d : const_in(n, 1, "shape").ints()) target.push_back(d);
        const ops::shape out = ops::shape_rules::broadcast(dims_in(n, 0), target);
        if (out == dims_in(n, 0)) return alias(n, 0, 0);
        // broadcasting against ones of the result's shape is exactly Expand
        const graph::tensor_id ones = add1(op_kind::const_one, {},
                                           {{attr_id::shape, ints(out.begin(), out.end())},
                                            {attr_id::dtype, static_cast<std::int64_t>(type_in(n, 0).type)}},
                                           name + "/ones");
        return bind(n, 0, add1(op_kind::ewmul, {tensor_in(n, 0), ones}, {}, name));
    }
    if (op == "Where") {
        const onnx_entry& c = entry(n, 0);
        if (c.value) {
            bool all = true, none = true;
            for (std::size_t k = 0; k < c.value->size(); ++k) (c.value->at(k) != 0 ? none : all) = false;
            const ops::shape out =
                ops::shape_rules::broadcast(ops::shape_rules::broadcast(c.type.dims, dims_in(n, 1)), dims_in(n, 2));
            const int pick = all ? 1 : none ? 2 : 0;
            if (pick != 0 && dims_in(n, pick) == out) return alias(n, 0, pick);
        }
        fail(n, "Where on a computed or mixed condition is not supported (goopt has no select op)");
    }
    // Shape, Equal, Greater, Less, Range, ConstantOfShape: shape computations only
    fail(n, "is supported only on constants known at import time (shape computations)");
}

inline std::string read_bytes(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw error(file.string() + ": cannot open the file for reading");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace detail

inline onnx_model import_onnx_bytes(std::string_view bytes, std::string_view source_name, const onnx_options& options) {
    onnx::ModelProto m;
    if (bytes.empty() || bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
        !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        throw error(std::string(source_name) +
                    ": not an ONNX model (the protobuf does not parse: truncated or another format)");
    if (!m.has_graph() || m.graph().node_size() == 0)
        throw error(std::string(source_name) + ": not an ONNX model (no graph with nodes)");
    try {
        return detail::onnx_importer(m, std::string(source_name), options).run();
    } catch (const error& e) {
        const std::string what = e.what();
        if (what.rfind(std::string(source_name) + ":", 0) == 0) throw;
        throw error(std::string(source_name) + ": " + what);
    }
}

inline onnx_model import_onnx(const std::filesystem::path& file, const onnx_options& options) {
    return import_onnx_bytes(detail::read_bytes(file), file.string(), options);
}

inline std::vector<std::string_view> onnx_supported_ops() {
    return {std::begin(detail::onnx_ops), std::end(detail::onnx_ops)};
}

template <std::floating_point T> interp::feed_map<T> weight_feeds(const onnx_model& model) {
    interp::feed_map<T> feeds;
    for (const auto& [name, t] : model.weight_values) {
        interp::value<T> v = interp::detail::filled(t.type.dims, T(0));
        std::copy(t.values.begin(), t.values.end(), v.data());
        feeds.emplace(name, std::move(v));
    }
    return feeds;
}

}  // namespace goopt::io
