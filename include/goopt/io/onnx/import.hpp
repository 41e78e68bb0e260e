#pragma once
// goopt: optional-edge (needs Debian's libonnx-dev and libprotobuf-dev: CMake target goopt::onnx)
/// @file
/// @brief The import itself: initializers and graph inputs first, then every node in file order
/// through its row of the op table (folded when its inputs are known, converted otherwise), then
/// the graph outputs.

#include <goopt/graph/validate.hpp>
#include <goopt/io/onnx/external_data.hpp>
#include <goopt/io/onnx/handlers.hpp>
#include <goopt/io/onnx/importer.hpp>
#include <goopt/io/onnx/model.hpp>
#include <goopt/io/onnx/opaque.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace goopt::io {

namespace detail {

inline const onnx_handler* onnx_importer::handler_of(const node_t& n) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    return default_domain ? find_handler(n.op_type()) : nullptr;
}

inline void onnx_importer::check_supported(const onnx::GraphProto& gp) {
    if (opt_.keep_unknown_ops) return;  // kept as opaque ops
    std::set<std::string> unsupported;
    const node_t* first = nullptr;
    for (const auto& n : gp.node()) {
        if (handler_of(n)) continue;
        const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
        unsupported.insert(default_domain ? n.op_type() : concat(n.domain(), ".", n.op_type()));
        if (!first) first = &n;
    }
    if (!first) return;
    std::string list;
    for (const auto& s : unsupported) list += concat(list.empty() ? "" : ", ", s);
    fail(*first,
         concat("operator '", first->op_type(), "' cannot be imported; unsupported operators in this file: ", list),
         concat("one of the ", onnx_handlers.size(), " supported operators (onnx_supported_ops())"));
}

/// Folds the node if its row can and every input is known (or the row needs none); false: convert.
inline bool onnx_importer::try_fold(const node_t& n, const onnx_handler& h) {
    if (!h.fold) return false;
    if (!h.folds_without_values) {
        if (n.input_size() == 0) return false;
        for (int k = 0; k < n.input_size(); ++k)
            if (!n.input(k).empty() && !entry(n, k).value) return false;
    }
    auto c = (this->*h.fold)(n, h);
    if (!c) return false;
    const auto elements = static_cast<std::int64_t>(c->size());
    if (h.file_data) {
        fold_budget_ += onnx_const::fold_budget_per_file_element * elements;
    } else if ((fold_budget_ -= elements) < 0) {
        fail(n,
             concat("folding constants at import time computes more than ", onnx_const::max_folded_elements,
                    " elements plus ", onnx_const::fold_budget_per_file_element,
                    " per element of the file's own constants"),
             "a model whose constant subgraphs are smaller");
    }
    bool parameter = false;  // folded from a parameter (a transposed weight): a parameter too
    for (int k = 0; k < n.input_size(); ++k) parameter = parameter || parameter_in(n, k);
    bind_const(n, 0, std::move(*c), parameter);
    ++result_.folded_nodes;
    return true;
}

/// One node through its row, or as an opaque op; errors of the shared steps (shape rules,
/// constants) get the node.
inline void onnx_importer::import_node(const node_t& n) {
    for (int k = 0; k < n.input_size(); ++k)
        if (!n.input(k).empty()) (void)entry(n, k);  // dangling inputs are errors
    if (n.output_size() == 0) fail(n, "has no outputs", "at least one output (every supported operator has one)");
    try {
        if (!convert_known(n, handler_of(n))) convert_opaque(n);
    } catch (const error& e) {
        const std::string_view what = e.what();
        if (what.rfind(concat(source_, ": "), 0) == 0) throw;
        // "onnx: <what>" of the shared steps becomes "<file>: node '<name>' (<op>): <what>"
        constexpr std::string_view own = "onnx: ";
        fail(n, concat(what.rfind(own, 0) == 0 ? what.substr(own.size()) : what, rebinding_hint(n)));
    }
}

/// Folds or converts n through its row; false for an operator without one (check_supported
/// refused those unless opaque ops are kept). A form the converter has no kind for (no_kind_for) is
/// kept opaque where opaque ops are kept, and fails here otherwise, or where it cannot be kept
/// opaque either (its output's type is unknown), naming both reasons.
inline bool onnx_importer::convert_known(const node_t& n, const onnx_handler* h) {
    if (!h) return false;
    try {
        if (try_fold(n, *h)) return true;
        // an operator goopt evaluates on constants only (a comparison, Equal, Range): on a computed
        // tensor it is one goopt has no kind for
        if (!h->convert)
            no_kind("a computed input", "inputs known at import time (the operator is supported on constants only)");
        const std::size_t first = g_.ops().size();
        (this->*h->convert)(n, *h);
        // an attribute no model means (a negative or NaN epsilon, a NaN clip bound) is refused at
        // the node, as the graph's validation would refuse the op
        for (std::size_t v = first; v < g_.ops().size(); ++v)
            for (const auto& [id, value] : g_.ops()[v].attrs)
                if (const double* r = std::get_if<double>(&value))
                    if (auto p = graph::real_attribute_problem(id, *r); !p.empty()) fail(n, p);
    } catch (const no_kind_for& k) {
        if (!opt_.keep_unknown_ops) fail(n, k.what, k.expected);
        try {
            convert_opaque(n, k.what);
        } catch (const error& e) {
            std::string_view why = e.what();
            if (const std::string own = concat(source_, ": ", where(n)); why.rfind(own, 0) == 0)
                why.remove_prefix(own.size());
            fail(n, concat(k.what, " (and as an opaque op: ", why, ")"), k.expected);
        }
    }
    return true;
}

/// Graph inputs that are parameters (onnx_options::param_inputs or every input but
/// onnx_options::data_inputs); every name given must be a graph input or an initializer.
inline std::set<std::string, std::less<>> onnx_importer::check_parameter_inputs(const onnx::GraphProto& gp) const {
    if (!opt_.param_inputs.empty() && !opt_.data_inputs.empty())
        fail(concat(opt_.command_line_hints ? "--param-inputs and --data-inputs"
                                            : "onnx_options::param_inputs and ::data_inputs",
                    " are both given"),
             "one of them (the parameters, or the data inputs when every other input is a parameter)");
    std::set<std::string, std::less<>> inputs, initializers, params;
    for (const auto& t : gp.initializer()) initializers.insert(t.name());
    for (const auto& v : gp.input())
        if (!initializers.count(v.name())) inputs.insert(v.name());
    const auto& named = opt_.param_inputs.empty() ? opt_.data_inputs : opt_.param_inputs;
    for (const auto& name : named) {
        if (inputs.count(name) || initializers.count(name)) continue;
        std::string known;
        for (const auto& i : inputs) known += concat(known.empty() ? "" : ", ", i);
        fail(concat(parameter_list_name(), ": '", name, "' is not a graph input or an initializer (the graph inputs: ",
                    known.empty() ? std::string("none") : known, ")"));
    }
    if (!opt_.param_inputs.empty())
        for (const auto& i : inputs)
            if (opt_.param_inputs.count(i)) params.insert(i);
    if (!opt_.data_inputs.empty())
        for (const auto& i : inputs)
            if (!opt_.data_inputs.count(i)) params.insert(i);
    return params;
}

/// An initializer (of the graph, or of an If's branch) as a known value, or as a weight whose values
/// live in a side file.
inline void onnx_importer::read_initializer(const onnx::TensorProto& t) {
    onnx_entry e;
    e.is_weight = true;
    const std::string place = concat("initializer '", t.name(), "'");
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
        const auto type = onnx_dtype(t.data_type());
        if (!type) fail(concat(place, ": element type ", t.data_type()), "a float, integer or bool type");
        e.type.type = *type;
        for (auto d : t.dims()) {
            if (d < 1 || e.type.dims.rank() == ops::max_rank)
                fail(concat(place, ": bad shape"), concat("at most ", ops::max_rank, " dimensions >= 1"));
            e.type.dims.push_back(d);
        }
    } else {
        auto c = decode(t, place);
        fold_budget_ += onnx_const::fold_budget_per_file_element * static_cast<std::int64_t>(c.size());
        e.type = {c.dims, c.type};
        e.value = std::make_shared<const onnx_const>(std::move(c));
    }
    // the rule, or the caller's word for it (onnx_options::param_inputs)
    e.parameter =
        is_parameter_seed(e.type, true) || (opt_.param_inputs.count(t.name()) != 0 && ops::is_floating(e.type.type));
    env_[t.name()] = std::move(e);
}

/// If whose condition is known at import time (a shape check an exporter wrote, a flag): the branch
/// it takes is imported in its place, and its outputs become the If's. A condition computed from
/// the data is control flow, which goopt's static graphs do not hold: refused, naming it. ONNX
/// forbids a branch to reuse a name of the scope around it, so the branch's names go into the
/// same table.
inline void onnx_importer::convert_if(const node_t& n, const onnx_handler&) {
    const onnx_entry& condition = entry(n, 0);
    if (!condition.value)
        fail(n, "a condition computed from the data (control flow)",
             "a condition known at import time (from shapes or constants)");
    if (condition.value->size() != 1) fail(n, concat("a condition of ", condition.value->size(), " values"), "one");
    const char* taken = condition.value->at(0) != 0 ? "then_branch" : "else_branch";
    const auto* a = attr(n, taken);
    if (!a || !a->has_g())
        fail(n, concat("has no graph attribute '", taken, "'"), "then_branch and else_branch graphs");
    const onnx::GraphProto& branch = a->g();
    if (branch.output_size() != n.output_size())
        fail(n, concat(taken, " has ", branch.output_size(), " outputs for the If's ", n.output_size()),
             "one branch output per output of the If");
    constexpr int deepest = 32;
    if (if_depth_ == deepest) fail(n, concat("Ifs nested more than ", deepest, " deep"), concat("at most ", deepest));
    check_supported(branch);
    for (const auto& t : branch.initializer()) {
        if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
            fail(n, concat(taken, "'s initializer '", t.name(), "' is in a side file"), "a branch's own data inline");
        read_initializer(t);
    }
    ++if_depth_;
    for (const auto& node : branch.node()) import_node(node);
    --if_depth_;
    for (int k = 0; k < n.output_size(); ++k) {
        if (n.output(k).empty()) continue;
        const auto it = env_.find(branch.output(k).name());
        if (it == env_.end())
            fail(n, concat(taken, "'s output '", branch.output(k).name(), "' is produced by nothing"),
                 "a branch output some node of the branch or the scope around it produces");
        const onnx_entry e = it->second;
        env_[n.output(k)] = e;
    }
}

/// A note for a Reshape that failed where a given input shape or dimension binding changed a
/// dimension: the file's constant target shape was made for the file's own input shapes.
inline std::string onnx_importer::rebinding_hint(const node_t& n) const {
    if (n.op_type() != "Reshape" || rebound_.empty()) return {};
    return concat("; its target shape is a constant of the file, made for the file's own input shapes, and ", rebound_,
                  ": the export baked that dimension in (re-export the model with a dynamic axis, or import it at "
                  "the file's shape)");
}

inline onnx_model onnx_importer::run() {
    if (!model_.has_graph()) fail("the model has no graph", "a ModelProto with a graph");
    const onnx::GraphProto& gp = model_.graph();
    for (const auto& o : model_.opset_import()) {
        if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
        else result_.opset_imports[o.domain()] = o.version();
    }
    if (opset_ == 0) fail("the model imports no default-domain operator set", "an ai.onnx opset import");
    if (opset_ < 7 || opset_ > 22)
        fail(concat("operator set version ", opset_, " is not supported"), "7-22 (tested: 11-22)");
    result_.opset = opset_;
    result_.producer =
        model_.producer_name() + (model_.producer_version().empty() ? "" : " " + model_.producer_version());
    for (const auto& n : gp.node()) ++result_.onnx_nodes[n.op_type()];
    check_supported(gp);
    g_.set_name(gp.name());
    g_.reserve(static_cast<std::size_t>(gp.node_size()) * 2, static_cast<std::size_t>(gp.node_size()) * 2);

    const std::set<std::string, std::less<>> parameter_inputs = check_parameter_inputs(gp);
    for (const auto& t : gp.initializer()) read_initializer(t);
    check_dim_values(gp);
    check_input_shapes(gp);
    for (const auto& v : gp.input()) {
        if (env_.count(v.name())) continue;  // an initializer listed as an input (IR version < 4)
        const ops::tensor_type type = value_type(v);
        onnx_entry e;
        e.type = type;
        e.parameter = parameter_inputs.count(v.name()) != 0;
        if (e.parameter && !ops::is_floating(type.type))
            fail(concat("graph input '", v.name(), "' is ", ops::name(type.type), " and named a parameter by ",
                        opt_.param_inputs.empty() ? "leaving it out of " : "", parameter_list_name()),
                 "a floating-point tensor (indices and masks are data inputs)");
        const std::string op_name = unique(v.name());
        e.tensor = e.parameter ? g_.weight(op_name, type.dims, type.type) : g_.input(op_name, type.dims, type.type);
        if (!e.parameter && v.type().tensor_type().has_shape()) {  // its symbolic axes, for an export
            std::vector<std::string> names;
            bool any = false;
            for (const auto& d : v.type().tensor_type().shape().dim()) {
                names.push_back(d.has_dim_param() ? d.dim_param() : std::string());
                any = any || !names.back().empty();
            }
            if (any && names.size() == type.dims.rank()) result_.input_dim_params.emplace(op_name, std::move(names));
        }
        env_[v.name()] = std::move(e);
    }
    for (const auto& n : gp.node()) import_node(n);
    for (const auto& o : gp.output()) {
        auto it = env_.find(o.name());
        if (it == env_.end())
            fail(concat("graph output '", o.name(), "' is produced by no node"), "an output some node produces");
        if (!it->second.tensor) it->second.tensor = weight_of(o.name(), it->second, it->second.type.dims);
        g_.mark_output(*it->second.tensor);
        result_.output_names.push_back(o.name());
    }
    if (!kept_opaque_.empty()) {
        std::size_t nodes = 0;
        std::string kinds;
        for (const auto& [type, count] : kept_opaque_) {
            nodes += count;
            kinds += concat(kinds.empty() ? "" : ", ", type, count > 1 ? concat(" (", count, ")") : std::string());
        }
        result_.warnings.push_back(
            concat(nodes, " node", nodes > 1 ? "s" : "",
                   " of operators goopt has no kind for kept as opaque ops (no rule "
                   "rewrites them, the interpreter cannot run them, an ONNX export writes them unchanged): ",
                   kinds));
    }
    result_.graph = std::move(g_);
    return std::move(result_);
}

inline std::string read_bytes(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw error(file.string(), "cannot open the file for reading");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace detail

namespace detail {

inline onnx::ModelProto parse_model(std::string_view bytes, std::string_view source_name) {
    onnx::ModelProto m;
    if (bytes.empty() || bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
        !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        throw error(source_name, "not an ONNX model (the protobuf does not parse: truncated or another format)",
                    "a serialized ONNX ModelProto");
    if (!m.has_graph() || m.graph().node_size() == 0)
        throw error(source_name, "not an ONNX model (no graph with nodes)", "a ModelProto with a graph of nodes");
    return m;
}

/// Reads every initializer's external data from the model file's directory (external_data.hpp).
inline void load_external_data(onnx::ModelProto& m, const std::filesystem::path& dir, std::string_view source_name) {
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
        if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
        const std::string place = concat(source_name, ": initializer '", t.name(), "'");
        const auto type = onnx_dtype(t.data_type());
        if (!type) throw error(place, concat("element type ", t.data_type()), "a float, integer or bool type");
        std::uint64_t elements = 1;
        for (const auto d : t.dims()) {
            if (d < 0 ||
                (d > 0 && elements > std::numeric_limits<std::uint64_t>::max() / 16 / static_cast<std::uint64_t>(d)))
                throw error(place, concat("dimension ", d), "dimensions >= 0 of a tensor that fits in memory");
            elements *= static_cast<std::uint64_t>(d);
        }
        read_external_data(t, dir, elements * ops::size_of(*type), place);
    }
}

inline onnx_model import_model(const onnx::ModelProto& m, std::string_view source_name, const onnx_options& options) {
    try {
        return detail::onnx_importer(m, std::string(source_name), options).run();
    } catch (const error& e) {
        const std::string_view what = e.what();
        if (what.rfind(concat(source_name, ":"), 0) == 0) throw;
        constexpr std::string_view own = "onnx: ";
        throw error(source_name, what.rfind(own, 0) == 0 ? what.substr(own.size()) : what);
    }
}

}  // namespace detail

inline onnx_model import_onnx_bytes(std::string_view bytes, std::string_view source_name, const onnx_options& options) {
    return detail::import_model(detail::parse_model(bytes, source_name), source_name, options);
}

inline onnx_model import_onnx(const std::filesystem::path& file, const onnx_options& options) {
    onnx::ModelProto m = detail::parse_model(detail::read_bytes(file), file.string());
    const auto dir = file.parent_path();
    detail::load_external_data(m, dir.empty() ? std::filesystem::path(".") : dir, file.string());
    return detail::import_model(m, file.string(), options);
}

inline std::vector<std::string_view> onnx_supported_ops() {
    std::vector<std::string_view> ops;
    for (const auto& h : detail::onnx_handlers) ops.push_back(h.op);
    return ops;
}

}  // namespace goopt::io
