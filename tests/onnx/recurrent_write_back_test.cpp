// ONNX export of unrolled recurrent layers: an LSTM or GRU that no rewrite touched is written back
// as the file's node (same attributes, weights and names), which computes what the file computed,
// reads back, and passes onnx.checker; a graph in which any op the node became was rewritten, or
// whose other ops read a value inside it, is lowered op by op instead, with a warning.
#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/onnx.hpp>

#include "external_tools.hpp"
#include "values.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace recurrent_write_back_test {

const std::filesystem::path onnx_dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx";

std::string bytes_of(const onnx::ModelProto& m) {
    std::string b;
    REQUIRE(m.SerializeToString(&b));
    return b;
}

/// The model's weights and the stored inputs of tests/data/onnx/<stem>.json as feeds.
interp::feed_map<double> stored_feeds(const io::onnx_model& m, const std::string& stem) {
    auto feeds = io::weight_feeds<double>(m);
    for (auto& [name, v] : onnx_testing::stored_inputs(onnx_dir / (stem + ".json"))) feeds.emplace(name, std::move(v));
    return feeds;
}

using onnx_testing::max_rel_diff;

/// The nodes of the export by op type.
std::map<std::string, std::vector<const onnx::NodeProto*>> nodes_by_type(const onnx::ModelProto& m) {
    std::map<std::string, std::vector<const onnx::NodeProto*>> r;
    for (const auto& n : m.graph().node()) r[n.op_type()].push_back(&n);
    return r;
}

/// The export read back computes what the imported graph computes on the file's stored inputs.
void check_values(const io::onnx_model& m, const graph::computation_graph& g, const onnx::ModelProto& exported,
                  const std::string& stem) {
    const io::onnx_model back = io::import_onnx_bytes(bytes_of(exported), stem + " (exported)");
    graph::validate(back.graph);
    CHECK(back.output_names == m.output_names);
    auto fb = io::weight_feeds<double>(back);
    for (const auto i : back.graph.ops_of_kind(op_kind::input)) {
        const std::string& name = back.graph.get_op(i).name;
        fb.emplace(name, stored_feeds(m, stem).at(name));
    }
    // weights the importer computed in double (an LSTM's two biases summed) are f32 in the file
    CHECK(max_rel_diff(interp::run<double>(g, stored_feeds(m, stem)), interp::run<double>(back.graph, fb)) <= 1e-6);
}

/// g rebuilt op by op as a rewrite builds its result, with op `renamed` under a new name: what any
/// rewrite of that op (an equivalent op the search made) leaves in the graph.
graph::computation_graph with_op_renamed(const graph::computation_graph& g, const std::string& renamed) {
    graph::computation_graph out(g.name());
    std::vector<graph::tensor_id> now(g.num_tensors());
    for (const auto v : graph::topological_order(g)) {
        const graph::op& op = g.get_op(static_cast<graph::op_id>(v));
        std::vector<graph::tensor_id> in;
        for (const auto t : op.inputs) in.push_back(now[t]);
        const auto ids = out.add(op.kind, in, op.attrs, op.name == renamed ? "rewritten_" + op.name : op.name);
        for (std::size_t k = 0; k < ids.size(); ++k) now[op.outputs[k]] = ids[k];
    }
    for (const auto t : g.outputs()) out.mark_output(now[t]);
    return out;
}

/// The name of the first op of `kind` that recorded node `node` became.
std::string region_op(const io::onnx_model& m, std::size_t node, op_kind kind) {
    for (const auto& op : m.recurrent_nodes.at(node).ops)
        if (op.kind == kind) return op.name;
    FAIL("no such op");
    return {};
}

TEST_CASE("an LSTM or GRU no rewrite touched is written back as the file's node, with its attributes and weights") {
    for (const std::string stem : {"lstm_lm", "gru_bidir", "lstm_bidir"}) {
        CAPTURE(stem);
        const io::onnx_model m = io::import_onnx(onnx_dir / (stem + ".onnx"));
        const std::string type = stem.starts_with("gru") ? "GRU" : "LSTM";
        const std::size_t count = m.onnx_nodes.at(type);
        REQUIRE(m.recurrent_nodes.size() == count);
        CHECK(!m.graph.ops_of_kind(type == "GRU" ? op_kind::gru_cell : op_kind::lstm_cell).empty());
        const auto r = io::to_onnx(m.graph, {.source = &m});
        CHECK(r.report.recurrent_written_back == count);
        CHECK(r.report.recurrent_lowered == 0);
        CHECK(r.report.warnings.empty());
        // the file's nodes, by name, with their attributes; none of goopt's unrolled cells' nodes
        onnx::ModelProto file;
        REQUIRE(file.ParseFromString(onnx_testing::slurp(onnx_dir / (stem + ".onnx"))));
        const auto written = nodes_by_type(r.model);
        REQUIRE(written.count(type));
        REQUIRE(written.at(type).size() == count);
        std::size_t k = 0;
        for (const auto& n : file.graph().node()) {
            if (n.op_type() != type) continue;
            const onnx::NodeProto& w = *written.at(type)[k++];
            CHECK(w.name() == n.name());
            CHECK(w.attribute_size() == n.attribute_size());
            for (int a = 0; a < n.attribute_size(); ++a)
                CHECK(w.attribute(a).SerializeAsString() == n.attribute(a).SerializeAsString());
            CHECK(w.input_size() == n.input_size());
            CHECK(w.output_size() <= n.output_size());
        }
        CHECK(!written.count("Sigmoid"));  // the gates are inside the fused op, not written as their arithmetic
        check_values(m, m.graph, r.model, stem);
    }
}

TEST_CASE("onnx.checker (full_check) accepts an export with LSTM and GRU nodes written back") {
    const std::string python = onnx_testing::python_with_onnx();
    if (python.empty()) {
        MESSAGE("skipped: no python3 with the onnx package (Debian: apt-get install python3-onnx)");
        return;
    }
    onnx_testing::scratch_dir dir;
    for (const std::string stem : {"lstm_lm", "gru_bidir", "lstm_bidir"}) {
        CAPTURE(stem);
        const io::onnx_model m = io::import_onnx(onnx_dir / (stem + ".onnx"));
        const auto file = dir.path / (stem + ".onnx");
        const auto report = io::write_onnx(m.graph, file, {.source = &m});
        CHECK(report.recurrent_written_back == m.recurrent_nodes.size());
        CHECK(onnx_testing::onnx_checker(python, file) == "");
    }
}

TEST_CASE("a rewrite of any op an LSTM became makes the export write that LSTM as its steps") {
    const io::onnx_model m = io::import_onnx(onnx_dir / "lstm_lm.onnx");
    REQUIRE(m.recurrent_nodes.size() == 2);
    // a cell of the second layer, the split of its input, the concatenation of its steps' outputs:
    // each rewritten
    for (const op_kind kind : {op_kind::lstm_cell, op_kind::split, op_kind::concat}) {
        CAPTURE(ops::name(kind));
        const std::string touched = region_op(m, 1, kind);
        const auto g = with_op_renamed(m.graph, touched);
        const auto r = io::to_onnx(g, {.source = &m});
        CHECK(r.report.recurrent_written_back == 1);  // the first layer, untouched
        CHECK(r.report.recurrent_lowered == 1);
        REQUIRE(r.report.warnings.size() == 1);
        CHECK(r.report.warnings[0].starts_with("LSTM '/lstm/LSTM_1': op '"));
        CHECK(r.report.warnings[0].ends_with(": written as its unrolled steps (a runtime's fused kernel is lost)"));
        const auto written = nodes_by_type(r.model);
        REQUIRE(written.at("LSTM").size() == 1);
        CHECK(written.at("LSTM")[0]->name() == "/lstm/LSTM");
        check_values(m, g, r.model, "lstm_lm");
    }
    // nothing rewritten: both written back; the same graph rebuilt is still the import's
    CHECK(io::to_onnx(with_op_renamed(m.graph, ""), {.source = &m}).report.recurrent_written_back == 2);
}

TEST_CASE("an op outside an LSTM that reads a value inside it keeps the LSTM unrolled") {
    const io::onnx_model m = io::import_onnx(onnx_dir / "lstm_lm.onnx");
    graph::computation_graph g = m.graph;
    // the first layer's first cell state, a graph output besides the file's
    const std::string cell = region_op(m, 0, op_kind::lstm_cell);
    const auto c = g.get_op(*g.find(cell)).outputs[1];
    g.mark_output(g.add1(op_kind::relu, {c}, {}, "peek"));
    const auto r = io::to_onnx(g, {.source = &m});
    CHECK(r.report.recurrent_written_back == 1);
    REQUIRE(r.report.warnings.size() == 1);
    CHECK(r.report.warnings[0].starts_with(
        concat("LSTM '/lstm/LSTM': op 'peek' (relu) reads a value inside the node (of '", cell, "' (lstm_cell))")));
    // and the export still computes the same, the extra output included
    const io::onnx_model back = io::import_onnx_bytes(bytes_of(r.model), "lstm_lm (peek)");
    auto fb = io::weight_feeds<double>(back);
    fb.emplace("tokens", stored_feeds(m, "lstm_lm").at("tokens"));
    CHECK(max_rel_diff(interp::run<double>(g, stored_feeds(m, "lstm_lm")), interp::run<double>(back.graph, fb)) <=
          1e-6);
}

TEST_CASE("an output of an LSTM that nothing reads any more is left out of the node written back") {
    // a rewrite removes ops that no output needs: here, without the graph output of the final cell
    // states, the ops of both layers' Y_c
    const io::onnx_model m = io::import_onnx(onnx_dir / "lstm_lm.onnx");
    const auto& g0 = m.graph;
    REQUIRE(g0.outputs().size() == 3);
    std::vector<bool> live(g0.num_ops(), false);
    std::vector<graph::op_id> stack{g0.producer(g0.outputs()[0]), g0.producer(g0.outputs()[1])};
    while (!stack.empty()) {
        const auto o = stack.back();
        stack.pop_back();
        if (live[o]) continue;
        live[o] = true;
        for (const auto p : g0.predecessors(o)) stack.push_back(p);
    }
    for (const auto& node : m.recurrent_nodes) CHECK(!live[*g0.find(node.outputs.at(2).op)]);
    graph::computation_graph g(g0.name());
    std::vector<graph::tensor_id> now(g0.num_tensors());
    for (const auto v : graph::topological_order(g0)) {
        const graph::op& op = g0.get_op(static_cast<graph::op_id>(v));
        if (!live[v]) continue;
        std::vector<graph::tensor_id> in;
        for (const auto t : op.inputs) in.push_back(now[t]);
        const auto ids = g.add(op.kind, in, op.attrs, op.name);
        for (std::size_t k = 0; k < ids.size(); ++k) now[op.outputs[k]] = ids[k];
    }
    g.mark_output(now[g0.outputs()[0]]);
    g.mark_output(now[g0.outputs()[1]]);
    const auto r = io::to_onnx(g, {.source = &m});
    CHECK(r.report.recurrent_written_back == 2);
    const auto written = nodes_by_type(r.model);
    for (const auto* n : written.at("LSTM")) CHECK(n->output_size() == 2);  // Y and Y_h
    const io::onnx_model back = io::import_onnx_bytes(bytes_of(r.model), "lstm_lm (no c)");
    auto fb = io::weight_feeds<double>(back);
    fb.emplace("tokens", stored_feeds(m, "lstm_lm").at("tokens"));
    CHECK(max_rel_diff(interp::run<double>(g, stored_feeds(m, "lstm_lm")), interp::run<double>(back.graph, fb)) <=
          1e-6);
}

}  // namespace recurrent_write_back_test
