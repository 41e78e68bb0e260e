#pragma once
// goopt: optional-edge (needs Debian's libonnx-dev and libprotobuf-dev: CMake target goopt::onnx)
/// @file
/// @brief ONNX export: an inference graph, as imported or as substitution search rewrote it, as an
/// ONNX model (opset 13-22) that onnx.checker accepts and onnxruntime runs. Every op kind of an
/// inference graph is written as standard ONNX operators (lowering.hpp); graph input names are
/// the input ops' names, graph output names the source file's. Weights with values (the import's
/// weight_values) are initializers; ops over weights only, which a rewrite introduced (a folded
/// batchnorm's kernel, the concatenated kernels of merged convolutions), are written as ops over
/// those initializers, which a runtime's constant folding computes once. Weights without values
/// are graph inputs, and the report warns about them.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/onnx/exporter.hpp>
#include <goopt/io/onnx/external_data.hpp>
#include <goopt/io/onnx/lowering.hpp>
#include <goopt/io/onnx/model.hpp>
#include <goopt/io/onnx/recurrent_write_back.hpp>
#include <goopt/io/onnx/symbolic_dims.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace goopt::io {

/// A graph as an ONNX model, and what the export wrote.
struct onnx_export_result {
    onnx::ModelProto model;
    onnx_export_report report;
};

/// @brief The graph as an ONNX ModelProto.
/// @throws goopt::error naming the op and its kind when the graph has an op that has no ONNX form
///         here (a gradient or optimizer update: training graphs), when a source value does not fit
///         its weight, or when the graph has a cycle.
inline onnx_export_result to_onnx(const graph::computation_graph& g, const onnx_export_options& options = {});

/// @brief Writes the graph as an ONNX model file (atomically); the report says what was written.
/// Initializers go to a side file "<file>.data" (ONNX external data, also written atomically, before
/// the model) from onnx_export_options::external_data_min_bytes on, or where the model would pass
/// onnx_export_options::external_data_above_bytes (protobuf's 2 GiB limit by default).
inline onnx_export_report write_onnx(const graph::computation_graph& g, const std::filesystem::path& file,
                                     const onnx_export_options& options = {});

// ---- implementation ----

namespace detail {

inline onnx::ModelProto onnx_exporter::run(onnx_export_report& report) {
    onnx::ModelProto m;
    opset_ = choose_opset(report.warnings);
    // the IR version that came with the operator set
    m.set_ir_version(opset_ >= 21 ? 10 : opset_ >= 19 ? 9 : opset_ >= 15 ? 8 : 7);
    m.set_producer_name("goopt");
    m.set_producer_version(version_string);
    auto& set = *m.add_opset_import();
    set.set_domain("");
    set.set_version(opset_);
    gp_ = m.mutable_graph();
    gp_->set_name(g_.name().empty() ? "goopt" : g_.name());

    const auto order = graph::topological_order(g_);
    name_tensors(order);
    // the source's LSTM/GRU nodes that no rewrite touched are written back instead of their ops
    recurrent_plan recurrent;
    if (options_.source) recurrent = plan_recurrent_write_backs(g_, *options_.source, order, opset_);
    std::vector<bool> written_back(g_.num_ops(), false);
    std::vector<std::vector<std::size_t>> write_back_after(order.size() + 1);
    for (std::size_t k = 0; k < recurrent.nodes.size(); ++k) {
        for (const auto o : recurrent.nodes[k].ops) written_back[o] = true;
        write_back_after[recurrent.nodes[k].after].push_back(k);
    }
    // graph inputs first, in the graph's order, then the weights, then every other op (and the
    // nodes written back, each after the last producer of its inputs)
    auto lower_if = [&](auto keep, bool computing = false) {
        for (const auto k : write_back_after[0])
            if (computing) write_back(recurrent.nodes[k]);
        for (std::size_t place = 1; place <= order.size(); ++place) {
            const auto o = static_cast<graph::op_id>(order[place - 1]);
            if (keep(g_.get_op(o).kind) && !written_back[o])
                onnx_lowerings[static_cast<std::size_t>(g_.get_op(o).kind)].fn(*this, o);
            for (const auto k : write_back_after[place])
                if (computing) write_back(recurrent.nodes[k]);
        }
    };
    lower_if([](ops::op_kind k) { return k == ops::op_kind::input; });
    auto stored = [](ops::op_kind k) { return k == ops::op_kind::weight || k == ops::op_kind::constant; };
    lower_if(stored);
    lower_if([&](ops::op_kind k) { return k != ops::op_kind::input && !stored(k); }, true);
    for (const auto& [domain, version] : domains_) {  // of the opaque nodes written
        auto& d = *m.add_opset_import();
        d.set_domain(domain);
        d.set_version(version);
    }
    const auto& outs = g_.outputs();
    for (std::size_t i = 0; i < outs.size(); ++i) {
        if (output_identity_[i]) {
            add_node(concat(output_name_[i], "/Identity"), "Identity", {name_[outs[i]]}, {output_name_[i]});
        }
        set_type(*gp_->add_output(), output_name_[i], g_.type_of(outs[i]));
    }

    report.opset = opset_;
    report.nodes = static_cast<std::size_t>(gp_->node_size());
    report.initializers = initializers_;
    report.weight_inputs = weight_inputs_.size();
    report.recurrent_written_back = written_back_;
    report.recurrent_lowered = recurrent.lowered.size();
    for (const auto& why : recurrent.lowered)
        report.warnings.push_back(concat(why, ": written as its unrolled steps (a runtime's fused kernel is lost)"));
    if (!weight_inputs_.empty()) {
        std::string some;
        for (std::size_t k = 0; k < weight_inputs_.size() && k < 3; ++k)
            some += concat(k ? ", '" : "'", weight_inputs_[k], "'");
        if (weight_inputs_.size() > 3) some += ", ...";
        const std::size_t weights =
            g_.ops_of_kind(ops::op_kind::weight).size() + g_.ops_of_kind(ops::op_kind::constant).size();
        report.warnings.push_back(
            options_.source
                ? concat(weight_inputs_.size(), " of ", weights,
                         " weights have no values in the source file (external or stripped data: ", some,
                         "): written as graph inputs")
                : concat("the graph has no weight values (it does not come from an ONNX file with data): its ", weights,
                         " weights are written as graph inputs (", some, ")"));
    }
    return m;
}

}  // namespace detail

inline onnx_export_result to_onnx(const graph::computation_graph& g, const onnx_export_options& options) {
    onnx_export_result r;
    std::vector<std::string> warnings;
    detail::symbolic_plan plan;
    if (options.symbolic_dims && options.source) plan = detail::plan_symbolic_dims(g, *options.source, warnings);
    // named dimensions: written size-free and tried at other values; one the graph bakes in is
    // written as its value, and the rest tried again without it
    while (!plan.values.empty()) {
        detail::onnx_exporter e(g, options);
        e.set_symbolic_values(plan.bound_values());
        onnx_export_report report;
        onnx::ModelProto m = e.run(report);
        const auto failed = detail::try_symbolic_dims(m, g, plan);
        if (failed.empty()) {
            detail::name_symbolic_axes(m, plan);
            for (const auto& [name, value] : plan.values) report.symbolic_dims.push_back(name);
            report.fixed_dims = std::move(r.report.fixed_dims);
            report.warnings.insert(report.warnings.begin(), warnings.begin(), warnings.end());
            r.model = std::move(m);
            r.report = std::move(report);
            return r;
        }
        for (const auto& [name, why] : failed) {
            warnings.push_back(concat("symbolic dimension '", name, "' is written as its value ", plan.values.at(name),
                                      ": the graph bakes it in (", why, ")"));
            r.report.fixed_dims.push_back(name);
            plan.drop(name);
        }
    }
    auto fixed = std::move(r.report.fixed_dims);
    r.model = detail::onnx_exporter(g, options).run(r.report);
    r.report.fixed_dims = std::move(fixed);
    r.report.warnings.insert(r.report.warnings.begin(), warnings.begin(), warnings.end());
    return r;
}

inline onnx_export_report write_onnx(const graph::computation_graph& g, const std::filesystem::path& file,
                                     const onnx_export_options& options) {
    auto r = to_onnx(g, options);
    // protobuf refuses messages from 2 GiB on: the initializers then go to a side file (from the
    // size the options give, that limit by default)
    constexpr auto limit = static_cast<std::size_t>(std::numeric_limits<int>::max());
    std::size_t min_bytes = options.external_data_min_bytes;
    if (min_bytes == 0 && r.model.ByteSizeLong() > std::min(options.external_data_above_bytes, limit)) min_bytes = 1024;
    const std::string location = file.filename().string() + ".data";
    std::string data;
    if (min_bytes > 0) data = detail::move_to_external_data(r.model, location, min_bytes);
    const auto size = r.model.ByteSizeLong();
    if (size > limit)
        throw error("onnx export",
                    concat(file.string(), ": the model has ", size, " bytes with its initializers of ", min_bytes,
                           " bytes or more in external data"),
                    "under 2 GiB (protobuf's limit)");
    std::string bytes;
    if (!r.model.SerializeToString(&bytes))
        throw error("onnx export", concat(file.string(), ": protobuf could not serialize the model"));
    if (!data.empty()) {
        for (const auto& t : r.model.graph().initializer())
            r.report.external_initializers += t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
        r.report.external_data = location;
        // the side file first: the model written never refers to data that is not there yet
        atomic_write(file.parent_path() / location, data);
    }
    atomic_write(file, bytes);
    return std::move(r.report);
}

}  // namespace goopt::io
