// Your own accelerator in ten lines: a type with three member functions models device::DeviceModel
// (launch overhead and name are optional). Two of them joined by a link run a small two-layer MLP
// placed layer by layer; the simulator reports the step, and the trace is written as JSON and as an
// SVG timeline (step.json, step.svg in the current directory).
//
//   build/examples/custom_device
#include <goopt/baselines.hpp>
#include <goopt/device.hpp>
#include <goopt/io/svg_timeline.hpp>
#include <goopt/io/trace_json.hpp>
#include <goopt/sim.hpp>

#include <cstdio>
#include <exception>

using namespace goopt;

/// A made-up inference chip: fast in f16, slower in everything else.
struct my_npu {
    double peak_flops(ops::dtype t) const { return t == ops::dtype::f16 ? 400e12 : 50e12; }
    double mem_bandwidth() const { return 2e12; }             // bytes/s
    double mem_capacity() const { return 32.0 * (1 << 30); }  // bytes
    double launch_overhead() const { return 2e-6; }           // seconds (optional)
    const char* name() const { return "my-npu"; }             // optional
};
static_assert(device::DeviceModel<my_npu>);

int main() try {
    graph::computation_graph g("mlp");
    auto x = g.input("x", {256, 4096}, ops::dtype::f16);
    for (int layer = 0; layer < 2; ++layer) {
        const auto w = g.weight("w" + std::to_string(layer), {4096, 4096}, ops::dtype::f16);
        x = g.add1(ops::op_kind::matmul, {x, w}, {}, "fc" + std::to_string(layer));
        g.set_layer(g.producer(x), layer);
        g.set_layer(g.producer(w), layer);
        x = g.add1(ops::op_kind::relu, {x}, {}, "relu" + std::to_string(layer));
        g.set_layer(g.producer(x), layer);
    }
    g.mark_output(x);

    // two chips, one link each way at 100 GB/s and 3 us
    const auto cluster = device::cluster<my_npu>::all_to_all(my_npu{}, 2, 100e9, 3e-6, "link");
    sim::simulator s(g, cluster);
    const auto placement = baselines::expert_placement(g, 2, baselines::model_family::layered);
    const auto r = s.run(placement);
    std::printf("step %.1f us, %lld bytes moved, peak memory %lld / %lld bytes, busy %.1f / %.1f us\n",
                r.step_time * 1e6, static_cast<long long>(r.bytes_moved), static_cast<long long>(r.peak_memory[0]),
                static_cast<long long>(r.peak_memory[1]), r.busy_time[0] * 1e6, r.busy_time[1] * 1e6);
    const auto one = s.run(baselines::single_device_placement(g));
    std::printf("on one chip: step %.1f us\n", one.step_time * 1e6);
    io::write_trace_file("step.json", g, cluster, r);
    io::write_svg_timeline("step.svg", g, cluster, r);
    std::printf("wrote step.json and step.svg\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "custom_device: error: %s\n", e.what());
    return 1;
}
