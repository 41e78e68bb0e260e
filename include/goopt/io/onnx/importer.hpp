#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief The importer's state and the steps every operator handler shares: reading attributes,
/// decoding tensors, looking up a node's inputs, adding graph ops. The handlers themselves are in
/// fold.hpp, convert.hpp, convolution.hpp, recurrent.hpp and resize.hpp; handlers.hpp maps ONNX
/// op types to them and import.hpp runs the import.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/onnx/constant.hpp>
#include <goopt/io/onnx/model.hpp>
#include <goopt/ops/op_table.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace goopt::io::detail {

/// What an ONNX tensor name stands for while importing.
struct onnx_entry {
    ops::tensor_type type;
    std::optional<graph::tensor_id> tensor;   ///< the graph tensor, once there is one
    std::shared_ptr<const onnx_const> value;  ///< its value, when known at import time
    bool is_weight = false;                   ///< an initializer (with or without data)
    /// a trained parameter (a `weight` op), not a constant: onnx_importer::is_parameter_seed says
    /// which of the file's values are; a value folded from a parameter is one too
    bool parameter = false;
};

struct onnx_handler;
struct onnx_elementwise;

/// Imports one ModelProto. Each ONNX op type has one row in `onnx_handlers` (handlers.hpp) naming
/// how to fold it when its inputs are known and how to convert it into graph ops otherwise.
class onnx_importer {
public:
    using ints = std::vector<std::int64_t>;
    using node_t = onnx::NodeProto;

    onnx_importer(const onnx::ModelProto& m, std::string source, const onnx_options& opt)
        : model_(m), source_(std::move(source)), opt_(opt) {}

    onnx_model run();

    // ---- folding (fold.hpp): the node's value from the values of its inputs; nullopt when this
    // form cannot be folded and must become graph ops
    std::optional<onnx_const> fold_constant(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_shape(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_constant_of_shape(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_identity(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_cast(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_cast_like(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_is_inf(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_reshape(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_flatten(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_unsqueeze(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_squeeze(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_gather(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_concat(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_slice(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_range(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_expand(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_elementwise(const node_t& n, const onnx_handler& h);
    std::optional<onnx_const> fold_mod(const node_t& n, const onnx_handler& h);
    std::optional<onnx_const> fold_trilu(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_size(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_reduce(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_cumsum(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_dequantize(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_quantize(const node_t& n, const onnx_handler&);
    std::optional<onnx_const> fold_shrink(const node_t& n, const onnx_handler&);
    std::vector<std::size_t> quantization_index(const node_t& n, const ops::shape& x, const ops::shape& scale);
    void check_zero_point(const node_t& n, const onnx_const& scale, const onnx_const* zero) const;

    // ---- conversion into graph ops (convert.hpp, convolution.hpp, recurrent.hpp, resize.hpp)
    void convert_unary(const node_t& n, const onnx_handler& h);
    void convert_binary(const node_t& n, const onnx_handler& h);
    void convert_identity(const node_t& n, const onnx_handler&);
    void convert_dropout(const node_t& n, const onnx_handler&);
    void convert_neg(const node_t& n, const onnx_handler&);
    void cast_computed(const node_t& n, std::optional<ops::dtype> to);
    void convert_cast(const node_t& n, const onnx_handler&);
    void convert_cast_like(const node_t& n, const onnx_handler&);
    void convert_if(const node_t& n, const onnx_handler&);
    void read_initializer(const onnx::TensorProto& t);
    void convert_global_max_pool(const node_t& n, const onnx_handler&);
    void convert_clip(const node_t& n, const onnx_handler&);
    void convert_batchnorm(const node_t& n, const onnx_handler&);
    void convert_layernorm(const node_t& n, const onnx_handler&);
    void convert_matmul(const node_t& n, const onnx_handler&);
    void convert_gemm(const node_t& n, const onnx_handler&);
    void convert_flatten(const node_t& n, const onnx_handler&);
    void convert_reshape(const node_t& n, const onnx_handler&);
    void convert_unsqueeze(const node_t& n, const onnx_handler&);
    void convert_squeeze(const node_t& n, const onnx_handler&);
    void convert_transpose(const node_t& n, const onnx_handler&);
    void convert_softmax(const node_t& n, const onnx_handler&);
    void convert_selu(const node_t& n, const onnx_handler&);
    void convert_mish(const node_t& n, const onnx_handler&);
    void convert_gelu(const node_t& n, const onnx_handler&);
    void convert_shrink(const node_t& n, const onnx_handler&);
    void convert_celu(const node_t& n, const onnx_handler&);
    void convert_reduce(const node_t& n, const onnx_handler& h);
    void convert_reduce_lowered(const node_t& n, const onnx_handler&);
    void convert_lp(const node_t& n, const onnx_handler&);
    struct shifted_log_sum {
        graph::tensor_id shifted, max, log_sum;  ///< x - max, max, log(sum(exp(x - max)))
    };
    shifted_log_sum log_sum_exp(graph::tensor_id x, const ints& axes, const std::string& name);
    graph::tensor_id lp_norm(graph::tensor_id x, const ints& axes, double p, std::int64_t keepdims,
                             const std::string& name);
    void convert_concat(const node_t& n, const onnx_handler&);
    void convert_split(const node_t& n, const onnx_handler&);
    void convert_slice(const node_t& n, const onnx_handler&);
    void convert_pad(const node_t& n, const onnx_handler&);
    void convert_gather(const node_t& n, const onnx_handler&);
    void convert_expand(const node_t& n, const onnx_handler&);
    void convert_where(const node_t& n, const onnx_handler&);
    void convert_conv(const node_t& n, const onnx_handler&);
    void convert_max_pool(const node_t& n, const onnx_handler&);
    void convert_average_pool(const node_t& n, const onnx_handler&);
    void convert_conv_transpose(const node_t& n, const onnx_handler&);
    void convert_lstm(const node_t& n, const onnx_handler&);
    void convert_gru(const node_t& n, const onnx_handler&);
    void convert_resize(const node_t& n, const onnx_handler&);
    void convert_reciprocal(const node_t& n, const onnx_handler&);
    void convert_prelu(const node_t& n, const onnx_handler&);
    void convert_sum(const node_t& n, const onnx_handler&);
    void convert_chain(const node_t& n, const onnx_handler&);
    std::optional<graph::tensor_id> chain_inputs(const node_t& n, ops::op_kind kind, std::string_view part,
                                                 const std::string& last);
    void convert_instance_norm(const node_t& n, const onnx_handler&);
    void convert_group_norm(const node_t& n, const onnx_handler&);
    void convert_tile(const node_t& n, const onnx_handler&);
    void convert_einsum(const node_t& n, const onnx_handler&);
    /// An operator goopt has no kind for, or a `form` of one it has (no_kind_for's what), as an
    /// `opaque` op (opaque.hpp).
    void convert_opaque(const node_t& n, std::string_view form = {});

private:
    // ---- errors: `<file>: <what>: expected <expected>`, with the node where there is one
    /// A valid form of a supported operator that goopt has no kind for (a cast between element
    /// types, cubic resizing, a GRU with linear_before_reset = 0): import_node keeps such a node
    /// opaque where opaque ops are kept and fails with `what` and `expected` otherwise. A converter
    /// throws it before it adds anything to the graph, so that the opaque op replaces the node whole.
    struct no_kind_for {
        std::string what, expected;
    };
    [[noreturn]] static void no_kind(std::string what, std::string expected) {
        throw no_kind_for{std::move(what), std::move(expected)};
    }
    [[noreturn]] void fail(std::string_view what) const { throw error(source_, what); }
    [[noreturn]] void fail(std::string_view what, std::string_view expected) const {
        throw error(source_, what, expected);
    }
    [[noreturn]] void fail(const node_t& n, std::string_view what) const { fail(concat(where(n), what)); }
    [[noreturn]] void fail(const node_t& n, std::string_view what, std::string_view expected) const {
        fail(concat(where(n), what), expected);
    }
    static std::string node_name(const node_t& n) {
        return !n.name().empty() ? n.name() : n.output_size() > 0 ? n.output(0) : n.op_type();
    }
    static std::string describe(const node_t& n) { return concat("'", node_name(n), "' (", n.op_type(), ")"); }
    static std::string where(const node_t& n) { return concat("node ", describe(n), ": "); }

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
    std::optional<std::vector<std::string>> attr_strings(const node_t& n, std::string_view name) const {
        const auto* a = attr(n, name);
        if (!a) return std::nullopt;
        return std::vector<std::string>(a->strings().begin(), a->strings().end());
    }

    // ---- tensors
    onnx_const decode(const onnx::TensorProto& t, const std::string& place) const;
    ops::tensor_type value_type(const onnx::ValueInfoProto& v);
    void check_given_shape(const onnx::ValueInfoProto& v, const ops::shape& given);
    void note_rebound(const std::string& input, std::size_t axis, std::int64_t value, const std::string& file_value) {
        rebound_ += concat(rebound_.empty() ? "" : ", ", "graph input '", input, "' axis ", axis, " is ", value,
                           " (the file has ", file_value, ")");
    }
    void check_dim_values(const onnx::GraphProto& gp) const;
    void check_input_shapes(const onnx::GraphProto& gp) const;
    std::set<std::string, std::less<>> check_parameter_inputs(const onnx::GraphProto& gp) const;
    std::string rebinding_hint(const node_t& n) const;
    /// The list of parameter inputs given, as the caller named it: `--param-inputs` or `--data-inputs`
    /// (the program's flags), or the onnx_options member.
    std::string_view parameter_list_name() const {
        const bool data = opt_.param_inputs.empty();
        if (opt_.command_line_hints) return data ? "--data-inputs" : "--param-inputs";
        return data ? "onnx_options::data_inputs" : "onnx_options::param_inputs";
    }
    std::vector<ops::tensor_type> opaque_output_types(const node_t& n);
    graph::output_ids add_opaque(const node_t& n, const std::vector<graph::tensor_id>& in,
                                 const std::vector<ops::tensor_type>& types, std::string_view form);
    /// The handler of n's op type; null for an operator goopt has no kind for (another domain's too).
    static const onnx_handler* handler_of(const node_t& n);
    bool has_input(const node_t& n, int k) const { return n.input_size() > k && !n.input(k).empty(); }
    onnx_entry& entry(const node_t& n, int k);
    const ops::tensor_type& type_in(const node_t& n, int k) { return entry(n, k).type; }
    const ops::shape& dims_in(const node_t& n, int k) { return entry(n, k).type.dims; }
    const onnx_const& const_in(const node_t& n, int k, std::string_view what);
    ints reshape_target(const node_t& n, const ops::shape& x);
    double scalar_in(const node_t& n, int k, std::string_view what);
    ints axes_of(const node_t& n, int input, std::string_view name, bool required);
    ops::shape unsqueezed(const node_t& n, const ops::shape& x);
    ops::shape squeezed(const node_t& n, const ops::shape& x);
    std::string unique(std::string base);
    graph::tensor_id weight_of(const std::string& onnx_name, const onnx_entry& e, const ops::shape& dims);
    graph::tensor_id tensor_in(const node_t& n, int k);
    graph::tensor_id tensor_as(const node_t& n, int k, const ops::shape& dims);
    /// A value the importer computed (a reordered LSTM weight, a zero bias, an interpolation matrix)
    /// as a graph source: a parameter where it was made from one, else a constant.
    graph::tensor_id constant(const std::string& name, const onnx_const& c, bool parameter = false);
    /// Whether input k is given and a parameter (see onnx_entry::parameter).
    bool parameter_in(const node_t& n, int k) { return has_input(n, k) && entry(n, k).parameter; }
    static bool is_parameter_seed(const ops::tensor_type& t, bool initializer);
    graph::tensor_id scalar(const std::string& name, double v, ops::dtype t);
    graph::tensor_id add1(ops::op_kind k, std::initializer_list<graph::tensor_id> in, ops::attribute_map a,
                          const std::string& name) {
        return g_.add1(k, in, std::move(a), unique(name));
    }
    graph::tensor_id reshape(graph::tensor_id t, const ops::shape& dims, const std::string& name) {
        if (g_.type_of(t).dims == dims) return t;
        return add1(ops::op_kind::reshape, {t}, {{ops::attr_id::shape, ints(dims.begin(), dims.end())}}, name);
    }
    /// A reshape or transpose (kind k, attributes a) of `t` that a lowering asked for before is that
    /// op's output again: three Einsums reading one input share its reshape, as a search with
    /// hash-consing (equality saturation) would find, so that one without it (greedy, TASO's) sees
    /// one input and can merge the three products.
    graph::tensor_id view(ops::op_kind k, graph::tensor_id t, ops::attribute_map a, const std::string& name) {
        for (const auto& v : views_)
            if (v.kind == k && v.from == t && v.attrs == a) return v.to;
        const graph::tensor_id r = add1(k, {t}, a, name);
        views_.push_back({k, t, std::move(a), r});
        return r;
    }
    void charge_tables(const node_t& n, std::int64_t elements, const std::string& what);
    graph::tensor_id gather_along(graph::tensor_id t, std::size_t axis, const ints& index, const std::string& name);
    graph::tensor_id concat_along(const std::vector<graph::tensor_id>& parts, std::int64_t axis,
                                  const std::string& name);
    const std::string& output(const node_t& n, int k) const {
        if (k >= n.output_size() || n.output(k).empty())
            fail(n, concat("has no output ", k, " (", n.output_size(), " outputs)"));
        return n.output(k);
    }
    bool wants_output(const node_t& n, int k) const { return n.output_size() > k && !n.output(k).empty(); }
    void bind(const node_t& n, int k, graph::tensor_id t) {
        onnx_entry e;
        e.type = g_.type_of(t);
        e.tensor = t;
        env_[output(n, k)] = std::move(e);
    }
    void bind_const(const node_t& n, int k, onnx_const c, bool parameter) {
        onnx_entry e;
        e.parameter = parameter && ops::is_floating(c.type);
        e.type = ops::tensor_type{c.dims, c.type};
        e.value = std::make_shared<const onnx_const>(std::move(c));
        env_[output(n, k)] = std::move(e);
    }
    void alias(const node_t& n, int out, int in) {
        const onnx_entry e = entry(n, in);
        env_[output(n, out)] = e;
    }

    // ---- import steps (import.hpp) and shared lowerings
    void check_supported(const onnx::GraphProto& gp);
    bool try_fold(const node_t& n, const onnx_handler& h);
    void import_node(const node_t& n);
    bool convert_known(const node_t& n, const onnx_handler* h);
    void window_op(const node_t& n, bool conv, bool max_pool);
    void recurrent(const node_t& n, bool lstm);
    void record_recurrent(const node_t& n, std::size_t first_op);

    const onnx::ModelProto& model_;
    std::string source_;
    const onnx_options& opt_;
    graph::computation_graph g_;
    onnx_model result_;
    std::int64_t opset_ = 0;
    std::unordered_map<std::string, onnx_entry> env_;
    int if_depth_ = 0;  ///< Ifs whose branch is being imported (convert_if)
    std::unordered_set<std::string> used_names_;
    /// Elements folding may still compute: max_folded_elements plus 4 per element of data the file
    /// holds, so that import time stays proportional to the file's size. Charged after each fold
    /// (try_fold) and the limit of every result that can outgrow its inputs (before it is computed).
    std::int64_t fold_budget_ = onnx_const::max_folded_elements;
    std::map<std::string, graph::tensor_id> reshaped_weights_;
    struct shared_view {
        ops::op_kind kind;
        graph::tensor_id from;
        ops::attribute_map attrs;
        graph::tensor_id to;
    };
    std::vector<shared_view> views_;  // view()'s ops
    /// The graph input dimensions a binding set to other values than the file's (`graph input 'x'
    /// axis 0 is 8, not 1 as in the file`), for the errors a baked-in shape then causes.
    std::string rebound_;
    std::map<std::string, std::size_t> kept_opaque_;  // op type (and form) -> nodes kept as opaque ops
};

/// Folds a node whose inputs are known at import time; nullopt: this form becomes graph ops.
using onnx_fold = std::optional<onnx_const> (onnx_importer::*)(const onnx::NodeProto&, const onnx_handler&);
/// Adds the graph ops of a node and binds its outputs.
using onnx_convert = void (onnx_importer::*)(const onnx::NodeProto&, const onnx_handler&);

/// One row of the importer's op table (handlers.hpp): what an ONNX op type becomes.
struct onnx_handler {
    std::string_view op;                     ///< ONNX op type, default domain
    onnx_fold fold = nullptr;                ///< when all inputs are known; none: always converted
    onnx_convert convert = nullptr;          ///< otherwise; none: only constants can be imported
    ops::op_kind kind{};                     ///< the op kind of one-to-one conversions (Relu -> relu)
    const onnx_elementwise* math = nullptr;  ///< elementwise folding
    bool folds_without_values = false;       ///< folds from shapes or attributes alone (Shape, Constant)
    bool file_data = false;                  ///< its folded value is data the file holds (Constant)
};

// ---- implementation ----

inline onnx_entry& onnx_importer::entry(const node_t& n, int k) {
    if (k >= n.input_size()) fail(n, concat("has ", n.input_size(), " inputs"), concat("at least ", k + 1));
    const std::string& name = n.input(k);
    if (name.empty()) fail(n, concat("input ", k, " is left empty"), "a tensor (it is required)");
    auto it = env_.find(name);
    if (it == env_.end())
        fail(n, concat("input ", k, " '", name, "' is produced by nothing before it"),
             "a graph input, an initializer or an output of an earlier node");
    return it->second;
}

inline const onnx_const& onnx_importer::const_in(const node_t& n, int k, std::string_view what) {
    const onnx_entry& e = entry(n, k);
    if (!e.value)
        fail(n, concat("input ", k, " ('", what, "', tensor '", n.input(k), "') is computed"),
             "a constant known at import time");
    return *e.value;
}

/// Reshape's shape input with each 0 replaced by the input's dimension there (ONNX's default;
/// allowzero, which makes an empty tensor, is refused).
inline onnx_importer::ints onnx_importer::reshape_target(const node_t& n, const ops::shape& x) {
    auto target = const_in(n, 1, "shape").ints();
    for (std::size_t k = 0; k < target.size(); ++k)
        if (target[k] == 0) {
            if (attr_int(n, "allowzero", 0) != 0)
                fail(n, "allowzero with a 0 in the shape (an empty tensor)", "allowzero = 0");
            if (k >= x.rank())
                fail(n, concat("shape ", ints_string(target), " copies a dimension the input lacks"),
                     concat("0s only within the input's rank ", x.rank()));
            target[k] = x[k];
        }
    return target;
}

/// A scalar operand (Clip's min, Range's start, Pad's constant_value): one value, of any rank.
inline double onnx_importer::scalar_in(const node_t& n, int k, std::string_view what) {
    const onnx_const& c = const_in(n, k, what);
    if (c.size() != 1)
        fail(n, concat("input ", k, " ('", what, "', tensor '", n.input(k), "') holds ", c.size(), " values"),
             "one value");
    return c.at(0);
}

/// Axes of Unsqueeze / Squeeze / Reduce*: an attribute before the opset that made them an input.
inline onnx_importer::ints onnx_importer::axes_of(const node_t& n, int input, std::string_view name, bool required) {
    if (auto a = attr_ints(n, name)) return *a;
    if (has_input(n, input)) return const_in(n, input, name).ints();
    if (required) fail(n, concat("has no '", name, "'"), "an attribute or an input");
    return {};
}

/// Unsqueeze's result shape: x with a 1 inserted at every axis of the output named in `axes`.
inline ops::shape onnx_importer::unsqueezed(const node_t& n, const ops::shape& x) {
    const auto axes = axes_of(n, 1, "axes", true);
    const std::size_t r = x.rank() + axes.size();
    if (r > ops::max_rank) fail(n, concat("the result has rank ", r), concat("at most ", ops::max_rank));
    const ops::shape probe{std::vector<std::int64_t>(r, 1)};
    std::vector<bool> mark(r, false);
    for (auto a : axes) mark[probe.axis(a)] = true;
    ops::shape s;
    std::size_t k = 0;
    for (std::size_t d = 0; d < r; ++d) {
        if (!mark[d] && k == x.rank()) fail(n, concat("axes ", ints_string(axes), " repeat an axis"), "distinct axes");
        s.push_back(mark[d] ? 1 : x[k++]);
    }
    return s;
}

/// Squeeze's result shape: x without the axes named (each of extent 1), or without every 1.
inline ops::shape onnx_importer::squeezed(const node_t& n, const ops::shape& x) {
    const auto axes = axes_of(n, 1, "axes", false);
    std::vector<bool> drop(x.rank(), false);
    if (axes.empty())
        for (std::size_t d = 0; d < x.rank(); ++d) drop[d] = x[d] == 1;
    for (auto a : axes) {
        const auto d = x.axis(a);
        if (x[d] != 1) fail(n, concat("axis ", a, " of ", x.to_string(), " is ", x[d]), "1");
        drop[d] = true;
    }
    ops::shape s;
    for (std::size_t d = 0; d < x.rank(); ++d)
        if (!drop[d]) s.push_back(x[d]);
    return s;
}

inline std::string onnx_importer::unique(std::string base) {
    if (base.empty()) base = "op";
    std::string name = base;
    for (int k = 1; !used_names_.insert(name).second; ++k) name = concat(base, "_", k);
    return name;
}

inline onnx_const onnx_importer::decode(const onnx::TensorProto& t, const std::string& place) const {
    const auto type = onnx_dtype(t.data_type());
    if (!type) fail(concat(place, ": element type ", t.data_type()), "a float, integer or bool type");
    ops::shape dims;
    if (static_cast<std::size_t>(t.dims_size()) > ops::max_rank)
        fail(concat(place, ": rank ", t.dims_size()), concat("at most ", ops::max_rank));
    for (auto d : t.dims()) {
        if (d < 0) fail(concat(place, ": negative dimension ", d), "dimensions >= 0");
        dims.push_back(d);
    }
    const auto n = static_cast<std::size_t>(dims.num_elements());
    auto count_is = [&](std::size_t got) {
        if (got != n) fail(concat(place, ": holds ", got, " values"), concat(n, " for shape ", dims.to_string()));
    };
    const std::size_t es = ops::size_of(*type);
    count_is(t.has_raw_data()           ? t.raw_data().size() / es
             : *type == ops::dtype::f32 ? static_cast<std::size_t>(t.float_data_size())
             : *type == ops::dtype::f64 ? static_cast<std::size_t>(t.double_data_size())
             : *type == ops::dtype::i64 ? static_cast<std::size_t>(t.int64_data_size())
                                        : static_cast<std::size_t>(t.int32_data_size()));
    onnx_const c = onnx_const::make(*type, dims);
    if (t.has_raw_data()) {
        const std::string& raw = t.raw_data();
        if (raw.size() % es != 0)
            fail(concat(place, ": raw data of ", raw.size(), " bytes"), concat("a multiple of the element size ", es));
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
                    fail(concat(place, ": raw ", ops::name(*type), " data"), "f32, f64, i64, i32, i8, u8 or bool");
            }
        }
        return c;
    }
    switch (*type) {
        case ops::dtype::f32:
            for (std::size_t k = 0; k < n; ++k) c.f[k] = t.float_data(static_cast<int>(k));
            break;
        case ops::dtype::f64:
            for (std::size_t k = 0; k < n; ++k) c.f[k] = t.double_data(static_cast<int>(k));
            break;
        case ops::dtype::i64:
            for (std::size_t k = 0; k < n; ++k) c.i[k] = t.int64_data(static_cast<int>(k));
            break;
        case ops::dtype::i32:
        case ops::dtype::i8:
        case ops::dtype::u8:
        case ops::dtype::boolean:
            for (std::size_t k = 0; k < n; ++k) c.i[k] = t.int32_data(static_cast<int>(k));
            break;
        default:
            fail(concat(place, ": ", ops::name(*type), " data in typed fields"), "it as raw data");
    }
    return c;
}

/// A given input shape against the file's: a fixed dimension keeps its value, a symbolic one bound
/// by name (onnx_options::dim_values) takes the bound value.
inline void onnx_importer::check_given_shape(const onnx::ValueInfoProto& v, const ops::shape& given) {
    const auto& dims = v.type().tensor_type().shape().dim();
    const std::string flag = opt_.command_line_hints ? "--input-shape" : "onnx_options::input_shapes";
    for (int a = 0; a < dims.size(); ++a) {
        const auto& d = dims[a];
        const std::int64_t want = given[static_cast<std::size_t>(a)];
        if (d.has_dim_value() && d.dim_value() != want)
            fail(concat("graph input '", v.name(), "': ", flag, " gives dimension ", a, " the value ", want,
                        ", but the file fixes it to ", d.dim_value(),
                        " (a model exported with that dimension fixed may have it baked into its constants too)"),
                 concat(d.dim_value(),
                        " as in the file (only a symbolic or unknown dimension takes another value; "
                        "re-export the model with a dynamic axis)"));
        if (d.has_dim_param() && !d.dim_param().empty()) {
            const auto bound = opt_.dim_values.find(d.dim_param());
            if (bound != opt_.dim_values.end() && bound->second != want)
                fail(concat("graph input '", v.name(), "': ", flag, " gives dimension ", a, " ('", d.dim_param(),
                            "') the value ", want, ", but ",
                            opt_.command_line_hints ? "--dim" : "onnx_options::dim_values", " binds '", d.dim_param(),
                            "' to ", bound->second),
                     "one value for one symbolic dimension");
            note_rebound(v.name(), static_cast<std::size_t>(a), want, concat("'", d.dim_param(), "'"));
        } else if (!d.has_dim_value()) {
            note_rebound(v.name(), static_cast<std::size_t>(a), want, "an unknown extent");
        }
    }
}

inline ops::tensor_type onnx_importer::value_type(const onnx::ValueInfoProto& v) {
    const std::string place = concat("graph input '", v.name(), "'");
    if (!v.type().has_tensor_type()) fail(concat(place, " is not a tensor"), "a tensor");
    const auto& tt = v.type().tensor_type();
    const auto type = onnx_dtype(tt.elem_type());
    if (!type) fail(concat(place, ": element type ", tt.elem_type()), "a float, integer or bool type");
    ops::tensor_type r{{}, *type};
    const auto given = opt_.input_shapes.find(v.name());
    if (given != opt_.input_shapes.end()) {
        if (given->second.size() > ops::max_rank)
            fail(concat(place, ": given shape has rank ", given->second.size()), concat("at most ", ops::max_rank));
        for (auto d : given->second) {
            if (d < 1) fail(concat(place, ": given shape ", ints_string(given->second)), "dimensions >= 1");
            r.dims.push_back(d);
        }
        if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(r.dims.rank()))
            fail(concat(place, ": given shape ", ints_string(given->second), " has rank ", r.dims.rank()),
                 concat("rank ", tt.shape().dim_size(), " as the file says"));
        if (tt.has_shape()) check_given_shape(v, r.dims);
        return r;
    }
    // these say what to do rather than what was expected (`<file>: <what>; <remedy>`), as the goopt
    // program's own flags name the remedy
    const std::string give_shape = opt_.command_line_hints
                                       ? concat("give its shape with --input-shape ", v.name(), "=d0,d1,...")
                                       : concat("give its shape in onnx_options::input_shapes[\"", v.name(), "\"]");
    if (!tt.has_shape()) fail(concat(place, " has no shape; ", give_shape));
    if (static_cast<std::size_t>(tt.shape().dim_size()) > ops::max_rank)
        fail(concat(place, ": rank ", tt.shape().dim_size()), concat("at most ", ops::max_rank));
    for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_param() && !d.dim_param().empty()) {
            const auto bound = opt_.dim_values.find(d.dim_param());
            if (bound != opt_.dim_values.end()) {
                if (bound->second < 1)
                    fail(concat(place, ": symbolic dimension '", d.dim_param(), "' bound to ", bound->second),
                         "at least 1");
                note_rebound(v.name(), r.dims.rank(), bound->second, concat("'", d.dim_param(), "'"));
                r.dims.push_back(bound->second);
                continue;
            }
            fail(concat(place, " has a symbolic dimension '", d.dim_param(), "' (axis ", r.dims.rank(),
                        "); bind it with ",
                        opt_.command_line_hints ? concat("--dim ", d.dim_param(), "=VALUE")
                                                : concat("onnx_options::dim_values[\"", d.dim_param(), "\"]"),
                        ", or ", give_shape));
        }
        if (!d.has_dim_value())
            fail(concat(place, " has an unknown dimension (axis ", r.dims.rank(), "); ", give_shape));
        if (d.dim_value() < 1)
            fail(concat(place, " has dimension ", d.dim_value(), " at axis ", r.dims.rank()), "at least 1");
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
        for (const auto& u : used) known += concat(known.empty() ? "" : ", ", u);
        fail(concat(opt_.command_line_hints ? "--dim " : "onnx_options::dim_values: ", "'", name,
                    "' is not a symbolic dimension of any graph input (",
                    known.empty() ? std::string("the inputs have none") : concat("they have: ", known), ")"));
    }
}

/// Every shape given (onnx_options::input_shapes) names a graph input that is not an initializer:
/// a misspelt name would otherwise leave the file's shape in place without a word.
inline void onnx_importer::check_input_shapes(const onnx::GraphProto& gp) const {
    if (opt_.input_shapes.empty()) return;
    std::set<std::string, std::less<>> initializers, inputs;
    for (const auto& t : gp.initializer()) initializers.insert(t.name());
    for (const auto& v : gp.input())
        if (!initializers.count(v.name())) inputs.insert(v.name());
    for (const auto& [name, shape] : opt_.input_shapes) {
        if (inputs.count(name)) continue;
        std::string known;
        for (const auto& i : inputs) known += concat(known.empty() ? "" : ", ", i);
        fail(concat(opt_.command_line_hints ? "--input-shape " : "onnx_options::input_shapes: ", "'", name, "' ",
                    initializers.count(name) ? "is an initializer, whose shape is its value's" : "is not a graph input",
                    " (the graph inputs: ", known.empty() ? std::string("none") : known, ")"));
    }
}

inline graph::tensor_id onnx_importer::weight_of(const std::string& onnx_name, const onnx_entry& e,
                                                 const ops::shape& dims) {
    for (auto d : dims)
        if (d < 1)
            fail(concat("constant '", onnx_name, "' of shape ", dims.to_string(), " is empty"), "dimensions >= 1");
    const std::string name = unique(onnx_name);
    const graph::tensor_id t = e.parameter ? g_.weight(name, dims, e.type.type) : g_.constant(name, dims, e.type.type);
    if (e.value) {
        onnx_tensor v{{dims, e.type.type}, {}};
        v.values.reserve(e.value->size());
        for (std::size_t k = 0; k < e.value->size(); ++k) v.values.push_back(e.value->at(k));
        result_.weight_values.emplace(name, std::move(v));
    }
    return t;
}

/// The graph tensor of input k; a known value becomes a weight (a parameter) or a constant op at
/// its first use.
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
        fail(n, concat("input '", n.input(k), "' has shape ", e.type.dims.to_string()),
             concat(dims.num_elements(), " elements"));
    if (!e.tensor) {
        const std::string key = concat(n.input(k), "@", dims.to_string());
        auto it = reshaped_weights_.find(key);
        if (it == reshaped_weights_.end()) it = reshaped_weights_.emplace(key, weight_of(n.input(k), e, dims)).first;
        return it->second;
    }
    return reshape(*e.tensor, dims, node_name(n) + "/reshape");
}

/// The rule that says which values of the file are parameters (docs/formats.md, "Parameters and
/// constants"): a floating-point initializer with more than one element. Scalars and one-element
/// tensors (exponents, epsilons, scales), integer and boolean tensors (shapes, indices, masks) and
/// the values of Constant nodes are constants; a value folded at import time is a parameter when
/// one of its inputs is (a transposed or reshaped weight).
inline bool onnx_importer::is_parameter_seed(const ops::tensor_type& t, bool initializer) {
    return initializer && ops::is_floating(t.type) && t.dims.num_elements() > 1;
}

inline graph::tensor_id onnx_importer::constant(const std::string& name, const onnx_const& c, bool parameter) {
    onnx_entry e;
    e.type = {c.dims, c.type};
    e.value = std::make_shared<const onnx_const>(c);
    e.parameter = parameter;
    return weight_of(name, e, c.dims);
}

inline graph::tensor_id onnx_importer::scalar(const std::string& name, double v, ops::dtype t) {
    onnx_const c = onnx_const::make(t, ops::shape{});
    c.set(0, v);
    return constant(name, c);
}

/// Charges `elements` of index or weight tables that a lowering computes (a resize's, a strided
/// slice's, an edge pad's) to the folding budget, as folded constants are; `what` names the step
/// that would pass it.
inline void onnx_importer::charge_tables(const node_t& n, std::int64_t elements, const std::string& what) {
    if ((fold_budget_ -= elements) < 0)
        fail(n, what,
             concat("index and weight tables within the import's budget for computed constants (",
                    onnx_const::max_folded_elements, " elements plus ", onnx_const::fold_budget_per_file_element,
                    " per element of the file's own constants)"));
}

/// t gathered along `axis` at the constant `index` (each in [0, extent)): the lowering of ops that
/// only move cells along an axis (a resize, a strided slice, an edge or reflect pad), whose
/// work and memory are the output's, as a native kernel's. The caller charges the table.
inline graph::tensor_id onnx_importer::gather_along(graph::tensor_id t, std::size_t axis, const ints& index,
                                                    const std::string& name) {
    [[maybe_unused]] const std::int64_t extent = g_.type_of(t).dims[axis];
    GOOPT_ASSERT(!index.empty() && std::ranges::all_of(index, [&](std::int64_t i) { return i >= 0 && i < extent; }));
    onnx_const c = onnx_const::make(ops::dtype::i64, ops::shape{static_cast<std::int64_t>(index.size())});
    c.i = index;
    return add1(ops::op_kind::gather, {t, constant(name + "_index", c)},
                {{ops::attr_id::axis, static_cast<std::int64_t>(axis)}}, name);
}

/// Concat of parts along axis; one part is itself.
inline graph::tensor_id onnx_importer::concat_along(const std::vector<graph::tensor_id>& parts, std::int64_t axis,
                                                    const std::string& name) {
    if (parts.size() == 1) return parts[0];
    return g_.add(ops::op_kind::concat, parts, {{ops::attr_id::axis, axis}}, unique(name))[0];
}

}  // namespace goopt::io::detail
