#pragma once
/// @file
/// @brief One fuzz input for the decisions reader and the simulator behind `goopt simulate`
/// (io::decisions_from_json, then sim::run on a fixed 9-op graph and two V100s): a goopt::error is a
/// clean rejection, by the reader or by the simulator (sim::decision_refused: a device the cluster
/// lacks, illegal fusion groups); an accepted decision must reproduce itself through the writer, and
/// its simulated step must respect what the simulator promises: every op once on its placed device,
/// after its inputs (on its device, or copied there), one kernel at a time per device, a finite step
/// that contains every event.

#include "../trace_check.hpp"
#include "fuzz_input.hpp"

#include <goopt/device/cluster_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/io/decisions_json.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/simulator.hpp>

#include <string>
#include <string_view>

namespace goopt::fuzz {

/// The graph every fuzzed decision is for: a product by a weight, two elementwise branches that
/// meet again, and a second product, so that fusion groups can be legal, illegal or cyclic.
inline const graph::computation_graph& decisions_fuzz_graph() {
    static const graph::computation_graph g = [] {
        using ops::op_kind;
        graph::computation_graph h("decisions_fuzz");
        const auto x = h.input("x", {64, 128});
        const auto w = h.weight("w", {128, 128});
        const auto y = h.add1(op_kind::matmul, {x, w});
        const auto a = h.add1(op_kind::relu, {y});
        const auto b = h.add1(op_kind::sigmoid, {y});
        const auto c = h.add1(op_kind::ewadd, {a, b});
        const auto v = h.weight("v", {128, 128});
        const auto z = h.add1(op_kind::matmul, {c, v});
        h.mark_output(h.add1(op_kind::tanh, {z}));
        return h;
    }();
    return g;
}

/// @return true when the reader and the simulator accepted the input. @throws fuzz::finding for a
/// broken promise; any exception other than goopt::error escapes (a finding too).
inline bool decisions_json_input(std::string_view bytes) {
    const auto& g = decisions_fuzz_graph();
    static const auto cluster = device::parse_cluster("2xV100:nvlink");
    const std::size_t n = g.num_ops();
    io::decisions_document doc;
    sim::simulation_result r;
    try {
        doc = io::decisions_from_json(io::detail::parse_json_text(bytes, "<fuzz>"), n, "<fuzz>");
        sim::simulator s(g, cluster);
        r = sim::run(s, doc.decision, true);
    } catch (const error&) {
        return false;
    }
    const sim::decision& d = doc.decision;
    // the writer's document reads back as the same decision
    std::string text;
    try {
        text = io::decisions_to_json(doc).dump();
    } catch (const nlohmann::json::exception&) {
        return true;  // a method name that is not valid UTF-8 cannot be written back
    }
    try {
        const auto again =
            io::decisions_from_json(io::detail::parse_json_text(text, "<round trip>"), n, "<round trip>");
        const sim::decision& e = again.decision;
        if (e.placement != d.placement || e.priorities != d.priorities || e.fusion != d.fusion ||
            e.transfers != d.transfers || e.dispatch != d.dispatch || again.method != doc.method)
            throw finding("write/read changed the decision: " + excerpt(text));
    } catch (const error& x) {
        throw finding(std::string("the reader rejects what the writer wrote: ") + x.what());
    }
    // the simulated step (the promises tests/sim/'s property test checks too)
    if (const auto problem = test::trace_problem(g, d.placement, d.fusion, cluster.num_devices(), r); !problem.empty())
        throw finding(problem);
    return true;
}

}  // namespace goopt::fuzz
