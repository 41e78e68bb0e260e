// Times models::make_training_graph + graph::validate on large forward graphs: the 8-layer GNMT
// (GO's largest workload, ~80,000 ops as a training graph) and a deep LSTM unrolled from
// elementwise ops built here. Target: transform + validation of GNMT-8 under 2 s.
//
//   training_transform [--repeat N] [--out FILE]
// prints a table and, with --out, writes a JSON list of
//   {"graph", "forward_ops", "training_ops", "transform_seconds", "validate_seconds"}.
#include "benchmark_main.hpp"

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/models/training_graph.hpp>

#if __has_include(<goopt/models/gnmt.hpp>)
#include <goopt/models/gnmt.hpp>
#define GOOPT_BENCH_HAS_GNMT 1
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace goopt;
using ops::attr_id;
using ops::op_kind;

namespace {

/// `layers` stacked LSTM layers unrolled over `steps`, each step from matmul, ewadd, split, sigmoid,
/// tanh and ewmul (about 16 ops per cell), with the weights shared across steps.
graph::computation_graph unrolled_lstm(int layers, int steps, std::int64_t batch, std::int64_t hidden) {
    graph::computation_graph g("unrolled_lstm");
    const std::int64_t H = hidden, B = batch;
    std::vector<graph::tensor_id> x;
    for (int t = 0; t < steps; ++t) x.push_back(g.input("x." + std::to_string(t), {B, H}));
    for (int l = 0; l < layers; ++l) {
        const std::string p = "l" + std::to_string(l);
        const auto w = g.weight(p + ".w", {H, 4 * H}), u = g.weight(p + ".u", {H, 4 * H}),
                   b = g.weight(p + ".b", {4 * H});
        auto h = g.input(p + ".h0", {B, H}), c = g.input(p + ".c0", {B, H});
        for (int t = 0; t < steps; ++t) {
            const std::string q = p + ".t" + std::to_string(t) + ".";
            auto add = [&](op_kind k, std::initializer_list<graph::tensor_id> in, ops::attribute_map a, const char* n) {
                const auto out = g.add(k, in, std::move(a), q + n);
                g.set_layer(g.producer(out[0]), l);
                return out;
            };
            const auto z =
                add(op_kind::ewadd,
                    {add(op_kind::matmul, {x[t], w}, {}, "xw")[0], add(op_kind::matmul, {h, u}, {}, "hu")[0]}, {},
                    "sum")[0];
            const auto zb = add(op_kind::ewadd, {z, b}, {}, "bias")[0];
            const auto gates =
                add(op_kind::split, {zb},
                    {{attr_id::axis, std::int64_t(1)}, {attr_id::sizes, std::vector<std::int64_t>(4, H)}}, "gates");
            const auto i = add(op_kind::sigmoid, {gates[0]}, {}, "i")[0];
            const auto f = add(op_kind::sigmoid, {gates[1]}, {}, "f")[0];
            const auto gg = add(op_kind::tanh, {gates[2]}, {}, "g")[0];
            const auto o = add(op_kind::sigmoid, {gates[3]}, {}, "o")[0];
            c = add(op_kind::ewadd,
                    {add(op_kind::ewmul, {f, c}, {}, "fc")[0], add(op_kind::ewmul, {i, gg}, {}, "ig")[0]}, {}, "c")[0];
            h = add(op_kind::ewmul, {o, add(op_kind::tanh, {c}, {}, "tc")[0]}, {}, "h")[0];
            x[t] = h;
        }
    }
    const auto proj = g.weight("proj", {H, H});
    for (int t = 0; t < steps; ++t)
        g.mark_output(g.add1(op_kind::matmul, {x[t], proj}, {}, "out." + std::to_string(t)));
    return g;
}

struct row {
    std::string graph;
    std::size_t forward_ops = 0, training_ops = 0;
    double transform_seconds = 0, validate_seconds = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Best of `repeat` runs of the transform and of validation.
row measure(const std::string& name, const graph::computation_graph& fwd, int repeat) {
    row r{name, fwd.num_ops(), 0, 1e30, 1e30};
    for (int k = 0; k < repeat; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        const auto train = models::make_training_graph(fwd);
        r.transform_seconds = std::min(r.transform_seconds, seconds_since(t0));
        t0 = std::chrono::steady_clock::now();
        graph::validate(train);
        r.validate_seconds = std::min(r.validate_seconds, seconds_since(t0));
        r.training_ops = train.num_ops();
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("training_transform", [&] {
        int repeat = 3;
        std::string out;
        bench::command_line cli("training_transform",
                                "Times models::make_training_graph and graph::validate on large forward graphs "
                                "(GNMT-8, a deep unrolled LSTM): the best of --repeat runs.");
        cli.add_option("--repeat", repeat, "Runs of each graph")
            ->transform(bench::count(1, 1000))
            ->type_name("N")
            ->capture_default_str();
        cli.add_option("--out", out, "Write the table as a JSON list")
            ->type_name("FILE")
            ->check(goopt::bench::writable_file());
        if (!cli.parse_flags(argc, argv)) return 0;
        std::vector<row> rows;
#ifdef GOOPT_BENCH_HAS_GNMT
        rows.push_back(measure("gnmt-8", models::gnmt({.layers = 8}), repeat));
#endif
        rows.push_back(measure("unrolled_lstm 8x200", unrolled_lstm(8, 200, 64, 512), repeat));
        std::printf("%-22s %12s %13s %14s %13s %10s\n", "graph", "forward ops", "training ops", "transform [s]",
                    "validate [s]", "total [s]");
        std::string json = "[\n";
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const row& r = rows[i];
            std::printf("%-22s %12zu %13zu %14.3f %13.3f %10.3f\n", r.graph.c_str(), r.forward_ops, r.training_ops,
                        r.transform_seconds, r.validate_seconds, r.transform_seconds + r.validate_seconds);
            char buf[256];
            std::snprintf(
                buf, sizeof buf,
                "  {\"graph\": \"%s\", \"forward_ops\": %zu, \"training_ops\": %zu, \"transform_seconds\": %.6f, "
                "\"validate_seconds\": %.6f}%s\n",
                r.graph.c_str(), r.forward_ops, r.training_ops, r.transform_seconds, r.validate_seconds,
                i + 1 < rows.size() ? "," : "");
            json += buf;
        }
        json += "]\n";
        if (!out.empty()) bench::write_results(out, json);
        return 0;
    });
}
