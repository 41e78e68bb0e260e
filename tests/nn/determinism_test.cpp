// Determinism of the policy network: a seed fixes the initial weights, the sampled actions, and so a
// whole training run (forward, backward, Adam); the parameters are compared byte for byte, and the
// saved parameter files too.
//
// Thread counts: these tests are built without OpenMP, so they cannot vary it. goopt's own programs
// use OpenMP; nn/ keeps every float sum in an order that does not depend on the thread count
// (nn/tall_products.hpp: fixed row chunks summed in chunk order, Eigen serial inside the regions;
// rows of the attention and normalization loops are independent). Measured: the same parameter bytes
// after three training steps for OMP_NUM_THREADS = 1..4 and without OpenMP (README, "Guarantees").
// Another CPU or other compiler flags (-march=native: FMA, vector width) do change the bits.
#include "random_graph.hpp"

#include <goopt/graph/computation_graph.hpp>
#include <goopt/nn.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

using namespace goopt;
using goopt_test::random_graph;

namespace {

/// The bytes of every parameter value, concatenated in parameter order.
template <class S> std::string value_bytes(const nn::parameter_list<S>& ps) {
    std::string b;
    for (const auto* p : ps)
        b.append(reinterpret_cast<const char*>(p->value.data()), static_cast<std::size_t>(p->value.size()) * sizeof(S));
    return b;
}
template <class S> std::string grad_bytes(const nn::parameter_list<S>& ps) {
    std::string b;
    for (const auto* p : ps)
        b.append(reinterpret_cast<const char*>(p->grad.data()), static_cast<std::size_t>(p->grad.size()) * sizeof(S));
    return b;
}

/// Everything one seeded run produces.
struct run_record {
    std::string initial, final_values, final_grads;
    std::vector<std::vector<std::vector<int>>> actions;  // per step, per task
    std::vector<float> losses, values;
    std::string file;
};

/// Builds a policy from `seed`, then `steps` times: sample actions with a generator seeded from `seed`,
/// re-evaluate them, a REINFORCE-like loss (cross-entropy to the sampled actions plus the value), backward, Adam.
run_record seeded_run(std::uint64_t seed, const nn::graph_features<float>& f, int steps,
                      const std::filesystem::path& file) {
    std::mt19937_64 rng(seed);
    nn::go_policy<float> pol({.hidden = 16, .heads = 4, .segment = 8, .task_choices = {3, 5}}, rng);
    auto ps = pol.parameters();
    nn::adam<float> opt(ps, {.learning_rate = 1e-2});
    run_record r;
    r.initial = value_bytes(ps);
    std::mt19937_64 sampler(seed * 3 + 1);
    for (int step = 0; step < steps; ++step) {
        auto [sampled, acts] = pol.sample(f, sampler);
        r.actions.push_back(acts);
        r.values.push_back(sampled.value);
        nn::zero_grad(ps);
        const auto out = pol.evaluate(f, acts);
        std::vector<nn::matrix<float>> d(2);
        float loss = 0;
        for (std::size_t t = 0; t < 2; ++t)
            loss += nn::cross_entropy(out.logits[t], std::span<const int>(acts[t]), d[t]);
        loss += out.value;
        r.losses.push_back(loss);
        pol.backward(d, 1.0f);
        opt.step();
    }
    r.final_values = value_bytes(ps);
    r.final_grads = grad_bytes(ps);
    nn::save_parameters(ps, file);
    r.file = goopt::test::slurp(file);
    return r;
}

}  // namespace

TEST_CASE("go_policy: same seed -> bit-identical init, samples, training steps and saved file") {
    std::mt19937_64 g(17);
    const auto graph = random_graph(37, g);  // 37 nodes: 5 segments of 8, the last one short
    const auto f = nn::node_features<float>(graph);
    const goopt::test::temp_dir scratch("goopt_nn_determinism_");
    const auto& dir = scratch.path;

    const run_record a = seeded_run(123, f, 5, dir / "a.bin");
    const run_record b = seeded_run(123, f, 5, dir / "b.bin");
    CHECK(a.initial == b.initial);
    CHECK(a.actions == b.actions);
    CHECK(std::memcmp(a.losses.data(), b.losses.data(), a.losses.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0);
    CHECK(a.final_grads == b.final_grads);
    CHECK(a.final_values == b.final_values);
    CHECK(a.file.size() > a.final_values.size());  // header, names and shapes, then the values
    CHECK(a.file == b.file);                       // the serialized parameters, byte for byte

    // the comparison can fail: training moved the weights, and another seed gives other ones
    CHECK(a.final_values != a.initial);
    const run_record c = seeded_run(124, f, 5, dir / "c.bin");
    CHECK(c.initial != a.initial);
    CHECK(c.file != a.file);
}

TEST_CASE("go_policy: a forward pass depends only on its inputs, not on earlier passes") {
    std::mt19937_64 rng(8);
    const auto g1 = random_graph(29, rng), g2 = random_graph(50, rng);
    const auto f1 = nn::node_features<float>(g1), f2 = nn::node_features<float>(g2);
    nn::go_policy<float> pol({.hidden = 16, .heads = 2, .segment = 8, .task_choices = {4}}, rng);
    const auto first = pol.evaluate(f1, {});
    (void)pol.evaluate(f2, {});  // a larger graph in between: the layers' caches are resized
    const auto again = pol.evaluate(f1, {});
    REQUIRE(first.logits[0].size() == again.logits[0].size());
    CHECK(std::memcmp(first.logits[0].data(), again.logits[0].data(),
                      static_cast<std::size_t>(first.logits[0].size()) * sizeof(float)) == 0);
    CHECK(std::memcmp(&first.value, &again.value, sizeof(float)) == 0);
    // backward after the repeated forward gives the same gradients as right after the first one
    auto ps = pol.parameters();
    const std::vector<nn::matrix<float>> d{nn::matrix<float>::Constant(29, 4, 0.25f)};
    nn::zero_grad(ps);
    (void)pol.evaluate(f1, {});
    pol.backward(d, 0.5f);
    const std::string g_first = grad_bytes(ps);
    (void)pol.evaluate(f2, {});
    nn::zero_grad(ps);
    (void)pol.evaluate(f1, {});
    pol.backward(d, 0.5f);
    CHECK(grad_bytes(ps) == g_first);
    CHECK(g_first.find_first_not_of('\0') != std::string::npos);  // not all zero
}
