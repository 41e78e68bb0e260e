// Your own graph type, unchanged: specialize graph::computation_graph_traits for it (as one
// specializes boost::graph_traits), import it, let a heuristic place the copy on two GPUs, and read
// the placement back by your own node ids.
//
//   build/examples/foreign_graph
#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/graph.hpp>
#include <goopt/sim.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

/// A compiler's own IR, which knows nothing of goopt: node ids are whatever the compiler chose
/// (here dense 0..n-1 in declaration order), edges are an adjacency list, kinds its own enum.
namespace mycc {
enum class kind { param, data, dense, act, sum };
struct node {
    kind k;
    std::string label;
    std::vector<std::int64_t> dims;  ///< for param and data
};
struct program {
    std::vector<node> nodes;
    std::vector<std::vector<std::uint32_t>> in, out;  ///< operand and user lists
    std::uint32_t emit(kind k, std::string label, std::vector<std::uint32_t> operands,
                       std::vector<std::int64_t> dims = {}) {
        const auto id = static_cast<std::uint32_t>(nodes.size());
        nodes.push_back({k, std::move(label), std::move(dims)});
        for (auto o : operands) out[o].push_back(id);
        in.push_back(std::move(operands));
        out.emplace_back();
        return id;
    }
};
}  // namespace mycc

using namespace goopt;

template <> struct goopt::graph::computation_graph_traits<mycc::program> {
    static std::size_t num_ops(const mycc::program& p) { return p.nodes.size(); }
    static std::span<const std::uint32_t> predecessors(const mycc::program& p, std::size_t v) { return p.in[v]; }
    static std::span<const std::uint32_t> successors(const mycc::program& p, std::size_t v) { return p.out[v]; }
    static std::uint64_t op_label(const mycc::program& p, std::size_t v) {
        return static_cast<std::uint64_t>(p.nodes[v].k);
    }
    static ops::op_kind op_kind(const mycc::program& p, std::size_t v) {
        switch (p.nodes[v].k) {
            case mycc::kind::param:
                return ops::op_kind::weight;
            case mycc::kind::data:
                return ops::op_kind::input;
            case mycc::kind::dense:
                return ops::op_kind::matmul;
            case mycc::kind::act:
                return ops::op_kind::relu;
            case mycc::kind::sum:
                return ops::op_kind::ewadd;
        }
        throw error("mycc: node " + std::to_string(v) + ": unknown kind");
    }
    static ops::attribute_map op_attributes(const mycc::program& p, std::size_t v) {
        const auto& n = p.nodes[v];
        if (n.dims.empty()) return {};
        return {{ops::attr_id::shape, n.dims}, {ops::attr_id::dtype, std::int64_t(ops::dtype::f16)}};
    }
    static const std::string& op_name(const mycc::program& p, std::size_t v) { return p.nodes[v].label; }
};
static_assert(graph::ImportableGraph<mycc::program>);

int main() try {
    // two towers of dense layers over one batch, summed: the heuristic may run them side by side
    mycc::program p;
    const auto x = p.emit(mycc::kind::data, "x", {}, {512, 4096});
    std::uint32_t tower[2];
    for (int t = 0; t < 2; ++t) {
        std::uint32_t h = x;
        for (int layer = 0; layer < 3; ++layer) {
            const std::string at = std::to_string(t) + "." + std::to_string(layer);
            const auto w = p.emit(mycc::kind::param, "w" + at, {}, {4096, 4096});
            h = p.emit(mycc::kind::act, "relu" + at, {p.emit(mycc::kind::dense, "dense" + at, {h, w})});
        }
        tower[t] = h;
    }
    p.emit(mycc::kind::sum, "merge", {tower[0], tower[1]});

    const auto imported = graph::import(p);
    const auto cluster = device::cluster<device::preset>::all_to_all(device::v100, 2, 150e9, 5e-6, "nvlink");
    sim::simulator s(imported.graph, cluster);
    const auto heft = baselines::heft(s);
    const sim::decision mine = sim::to_user_ids(heft.decision(), imported.ids);  // indexed by mycc ids
    const auto on_two = sim::run(s, heft.decision());
    const auto on_one = s.run(baselines::single_device_placement(imported.graph));

    std::printf("HEFT placement of %zu mycc nodes on 2 x %s:\n", p.nodes.size(),
                std::string(cluster.device(0).name()).c_str());
    for (std::size_t v = 0; v < p.nodes.size(); ++v)
        std::printf("  node %2zu %-10s -> gpu %u\n", v, p.nodes[v].label.c_str(), mine.placement[v]);
    std::printf("step %.1f us on two GPUs, %.1f us on one\n", on_two.step_time * 1e6, on_one.step_time * 1e6);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "foreign_graph: error: %s\n", e.what());
    return 1;
}
