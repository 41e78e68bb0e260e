// Learned device placement (GO, NeurIPS'20 §4): a graph of four independent branches of matmuls,
// joined at the end, on two V100s. A GO policy trained by PPO for a few updates places it; the
// simulator scores its best sample next to one device and HEFT's list-scheduling placement.
//
//   build/examples/place_with_ppo [--updates N]
#include <goopt/baselines/heft.hpp>
#include <goopt/baselines/single_device.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/tasks/train_placement.hpp>

#include <cstdio>
#include <exception>
#include <random>
#include <string>

using namespace goopt;

namespace {

/// Four chains of three 1024x1024 matmuls on one input, summed: spreading the chains pays.
graph::computation_graph branches() {
    graph::computation_graph g("branches");
    const auto x = g.input("x", {1024, 1024});
    graph::tensor_id sum = x;
    for (int b = 0; b < 4; ++b) {
        auto t = x;
        for (int k = 0; k < 3; ++k) t = g.add1(ops::op_kind::matmul, {t, g.weight(concat("w", b, k), {1024, 1024})});
        sum = b == 0 ? t : g.add1(ops::op_kind::ewadd, {sum, t});
    }
    g.mark_output(sum);
    return g;
}

}  // namespace

int main(int argc, char** argv) try {
    std::size_t updates = 30;
    if (argc == 3 && std::string(argv[1]) == "--updates") updates = std::stoul(argv[2]);
    else if (argc != 1) throw error("place_with_ppo", "unexpected arguments", "none, or --updates N");
    const auto g = branches();
    const auto cluster = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(g, cluster);
    const double one = s.run(baselines::single_device_placement(g)).step_time;
    const double heft = s.run(baselines::heft(s).placement).step_time;

    tasks::placement_config config{
        .ppo = {.updates = updates, .samples_per_update = 8, .minibatch = 8, .epochs = 2, .learning_rate = 3e-3},
        .policy = {.hidden = 16, .sage_layers = 1, .shared_attention_layers = 1, .heads = 2, .segment = 8},
        .progress = {.status = rl::status_mode::never}};
    std::mt19937_64 rng(7);
    const auto r = tasks::train_placement(g, cluster, cost::roofline_model{}, config, rng);
    const double ppo = r.best.result.step_time;
    std::printf("%s, %zu ops on %s\n", g.name().c_str(), g.num_ops(), cluster.description().c_str());
    std::printf(
        "  one device     %8.3f ms\n  heft           %8.3f ms\n  ppo placement  %8.3f ms  (%zu updates, %zu "
        "samples, %.1f s; %.2fx one device, %.2fx heft)\n",
        one * 1e3, heft * 1e3, ppo * 1e3, r.updates, r.samples, r.seconds, one / ppo, heft / ppo);
    if (!(ppo < one)) throw error("place_with_ppo", "the policy found nothing faster than one device", "a speedup");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "place_with_ppo: error: %s\n", e.what());
    return 1;
}
