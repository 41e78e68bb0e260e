// A custom task in a few dozen lines: pipeline-stage placement. Each op picks a stage (a device),
// but no op runs on an earlier stage than the ops it reads, so data only flows forward, as in
// pipeline parallelism. Modelling tasks::Task (an rl::Environment that turns actions into a
// sim::decision, scores it with the simulator and rewards it) is all rl::ppo needs to train GO's
// policy on it; here for a few updates on a graph of four branches on four devices.
//
//   build/examples/custom_task
#include <goopt/baselines/single_device.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/tasks/concepts.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>

using namespace goopt;

/// The task: one action (a stage) per op; an op's device is the latest stage among its own
/// action and its inputs' devices. Reward: minus the step time relative to one device.
class pipeline_task {
public:
    using observation = nn::graph_features<float>;
    struct outcome {
        double reward = 0, step_time = 0;
    };
    using cluster_type = device::cluster<device::device_spec>;

    pipeline_task(const graph::computation_graph& g, const cluster_type& c)
        : g_(&g),
          c_(&c),
          features_(nn::node_features<float>(g)),
          active_(g.num_ops(), 1),
          order_(graph::topological_order(g)) {
        set_workers(1);
        one_device_ = sims_[0]->run(baselines::single_device_placement(g)).step_time;
    }
    // rl::Environment: what the trainer sees
    template <class Rng> const observation& observe(Rng&) const { return features_; }
    std::size_t num_choices() const { return c_->num_devices(); }
    std::span<const std::uint8_t> active() const { return active_; }
    void set_workers(std::size_t k) {  // one simulator per worker: evaluate runs concurrently
        while (sims_.size() < k) sims_.push_back(std::make_unique<sim::simulator<device::device_spec>>(*g_, *c_));
    }
    outcome evaluate(const observation&, std::span<const int> actions, std::size_t worker) {
        const auto r = score(decide(actions), worker);
        return {reward(r), r.step_time};
    }
    // tasks::Task: the decision, its score and its reward
    std::size_t num_nodes() const { return g_->num_ops(); }
    sim::decision decide(std::span<const int> actions) const {
        sim::decision d;
        d.placement.assign(actions.begin(), actions.end());
        for (const auto o : order_)
            for (const auto t : g_->get_op(static_cast<graph::op_id>(o)).inputs)
                d.placement[o] = std::max(d.placement[o], d.placement[g_->producer(t)]);
        return d;
    }
    sim::simulation_result score(const sim::decision& d, std::size_t worker) { return sim::run(*sims_.at(worker), d); }
    double reward(const sim::simulation_result& r) const { return -r.step_time / one_device_ - (r.oom ? 1.0 : 0.0); }
    double one_device() const { return one_device_; }

private:
    const graph::computation_graph* g_;
    const cluster_type* c_;
    observation features_;
    std::vector<std::uint8_t> active_;
    std::vector<std::size_t> order_;
    std::vector<std::unique_ptr<sim::simulator<device::device_spec>>> sims_;
    double one_device_ = 0;
};
static_assert(tasks::Task<pipeline_task>);

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

    pipeline_task task(g, cluster);
    std::mt19937_64 rng(3);
    nn::go_policy<float> net({.hidden = 16,
                              .sage_layers = 1,
                              .shared_attention_layers = 1,
                              .heads = 2,
                              .segment = 8,
                              .task_choices = {cluster.num_devices()}},
                             rng);
    rl::ppo<pipeline_task> trainer(
        task, net, {.updates = 25, .samples_per_update = 8, .minibatch = 8, .epochs = 2, .learning_rate = 3e-3});
    struct best_step {
        double first = 0, best = 1e300, in_update = 1e300;
        void on_sample(std::span<const int>, const pipeline_task::outcome& o) {
            best = std::min(best, o.step_time);
            in_update = std::min(in_update, o.step_time);
        }
        bool on_update(const rl::update_stats& s) {
            if (s.update == 1) first = in_update;
            return true;
        }
    } v;
    trainer.train(rng, v);
    std::printf(
        "pipeline stages of %s on %s: one device %.3f ms, best sample of update 1 %.3f ms, best after %zu "
        "updates %.3f ms (%.2fx one device)\n",
        g.name().c_str(), cluster.description().c_str(), task.one_device() * 1e3, v.first * 1e3, trainer.updates_done(),
        v.best * 1e3, task.one_device() / v.best);
    if (!(v.best < task.one_device()))
        throw error("custom_task", "no sampled pipeline beat one device", "a speedup after training");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "custom_task: error: %s\n", e.what());
    return 1;
}
