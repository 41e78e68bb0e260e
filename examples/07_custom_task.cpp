// A custom task in a few lines: pipeline-stage placement. Each op picks a stage (a device), but no
// op runs on an earlier stage than the ops it reads, so data only flows forward, as in pipeline
// parallelism. A task is its action space, decide and reward (a tasks::Decider); tasks::simulated_task
// supplies the rest, and tasks::train trains GO's policy on it: here for a few updates on a graph of
// four branches on four devices.
//
//   build/examples/custom_task
#include <goopt/baselines/single_device.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/train.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <random>
#include <string>

using namespace goopt;

/// One action (a stage) per op; an op's device is the latest stage among its own action and its
/// inputs' devices. Reward: minus the step time relative to one device.
struct pipeline_stages {
    const graph::computation_graph* g;
    std::size_t stages;
    double one_device;  // seconds
    std::vector<std::size_t> order = graph::topological_order(*g);
    std::size_t num_choices() const { return stages; }
    sim::decision decide(std::span<const int> actions) const {
        sim::decision d;
        d.placement.assign(actions.begin(), actions.end());
        for (const auto o : order)
            for (const auto t : g->get_op(static_cast<graph::op_id>(o)).inputs)
                d.placement[o] = std::max(d.placement[o], d.placement[g->producer(t)]);
        return d;
    }
    double reward(const sim::simulation_result& r) const { return -r.step_time / one_device - (r.oom ? 1.0 : 0.0); }
};

int main() try {
    graph::computation_graph g("four_branches");
    const auto x = g.input("x", {512, 512});
    auto sum = x;
    for (int b = 0; b < 4; ++b) {
        auto t = x;
        for (int k = 0; k < 2; ++k)
            t = g.add1(ops::op_kind::matmul, {t, g.weight("w" + std::to_string(b) + std::to_string(k), {512, 512})});
        sum = b == 0 ? t : g.add1(ops::op_kind::ewadd, {sum, t});
    }
    g.mark_output(sum);
    const auto cluster = device::parse_cluster("4xV100:nvlink");
    const double one = sim::simulator(g, cluster).run(baselines::single_device_placement(g)).step_time;

    tasks::simulated_task task(g, cluster, pipeline_stages{&g, cluster.num_devices(), one});
    std::mt19937_64 rng(3);
    nn::go_policy<float> net(
        {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8, .task_choices = {4}},
        rng);
    const auto r = tasks::train(
        task, net,
        {.ppo = {.updates = 25, .samples_per_update = 8, .minibatch = 8, .epochs = 2, .learning_rate = 3e-3}}, rng);
    std::printf("pipeline stages of %s on %s: one device %.3f ms, best after %zu updates %.3f ms (%.2fx one device)\n",
                g.name().c_str(), cluster.description().c_str(), one * 1e3, r.updates, r.best.result.step_time * 1e3,
                one / r.best.result.step_time);
    if (!(r.best.result.step_time < one))
        throw error("custom_task", "no sampled pipeline beat one device", "a speedup after training");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "custom_task: error: %s\n", e.what());
    return 1;
}
