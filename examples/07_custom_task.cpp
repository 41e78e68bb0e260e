// A custom task: pipeline stages. Each op picks a stage (a device), never earlier than its inputs'.
// A task is its action space, decide and reward (a tasks::Decider); tasks::simulated_task supplies
// the rest and tasks::train trains GO's policy on it. On a graph small enough to try every decision,
// training must reach the best one, or the program exits 1.   Run: build/examples/custom_task
#include <goopt/baselines/single_device.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/train.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>

using namespace goopt;

/// A stage per computing op (active(), a Decider's optional hook); an op runs on the latest of its own
/// and its inputs' stages, a weight with its first reader. Reward: -step time / one device's.
struct pipeline_stages {
    const graph::computation_graph* g;
    std::size_t stages;
    double one_device;  // seconds
    std::vector<std::uint8_t> computing;
    std::size_t num_choices() const { return stages; }
    std::span<const std::uint8_t> active() const { return computing; }
    sim::decision decide(std::span<const int> actions) const {
        sim::decision d;
        d.placement.assign(actions.begin(), actions.end());
        for (const auto o : graph::topological_order(*g))
            for (const auto t : g->get_op(static_cast<graph::op_id>(o)).inputs)
                if (computing[g->producer(t)]) d.placement[o] = std::max(d.placement[o], d.placement[g->producer(t)]);
        for (graph::op_id o = 0; o < g->num_ops(); ++o)
            if (!computing[o]) d.placement[o] = d.placement[g->get_tensor(g->get_op(o).outputs[0]).uses[0].op];
        return d;
    }
    double reward(const sim::simulation_result& r) const { return -r.step_time / one_device - (r.oom ? 1.0 : 0.0); }
};

int main() try {
    graph::computation_graph g("four_branches");
    const auto x = g.input("x", {1024, 1024});
    auto sum = x;
    for (int b = 0; b < 4; ++b) {
        auto t = x;
        for (int k = 0; k < 2; ++k) t = g.add1(ops::op_kind::matmul, {t, g.weight(concat("w", b, k), {1024, 1024})});
        sum = b == 0 ? t : g.add1(ops::op_kind::ewadd, {sum, t});
    }
    g.mark_output(sum);
    const auto cluster = device::parse_cluster("3xV100:nvlink");
    const double one = sim::simulator(g, cluster).run(baselines::single_device_placement(g)).step_time;
    std::vector<std::uint8_t> computing(g.num_ops());
    for (graph::op_id o = 0; o < g.num_ops(); ++o) computing[o] = !g.get_op(o).spec().has(ops::source);
    tasks::simulated_task task(g, cluster, pipeline_stages{&g, cluster.num_devices(), one, computing});
    double optimum = one, learned = one;  // optimum: every decision of the task tried, a stage per computing op
    std::vector<int> a(g.num_ops(), 0);
    const auto all = static_cast<std::size_t>(std::pow(3, std::count(computing.begin(), computing.end(), 1)));
    for (std::size_t m = 0; m < all; ++m) {
        for (std::size_t o = 0, k = m; o < a.size(); ++o)
            if (computing[o]) a[o] = static_cast<int>(k % 3), k /= 3;
        optimum = std::min(optimum, task.score(task.decide(a), 0).step_time);
    }
    nn::policy_config shape{.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8};
    shape.task_choices = {3};
    for (const std::uint64_t seed : {3, 4, 5}) {  // fresh policies until one reaches the optimum (restarts)
        std::mt19937_64 rng(seed);
        nn::go_policy<float> net(shape, rng);
        const auto r = tasks::train(
            task, net, {.ppo = {.updates = 60, .samples_per_update = 128, .epochs = 2, .learning_rate = 1e-2}}, rng);
        if ((learned = std::min(learned, r.best.result.step_time)) <= optimum * (1 + 1e-9)) break;
    }
    std::printf("pipeline stages of %s on %s: one device %.3f ms, optimum %.3f ms, learned %.3f ms\n", g.name().c_str(),
                cluster.description().c_str(), one * 1e3, optimum * 1e3, learned * 1e3);
    if (learned > optimum * (1 + 1e-9)) throw error("custom_task", "training missed", "the brute-force optimum");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "custom_task: error: %s\n", e.what());
    return 1;
}
