// training_guard: a small supervised run with a NaN or Inf injected at step k. The error must name
// step k and what was not finite, the parameters in memory must be the checkpoint's (byte for byte),
// the checkpoint file must be the last good one (compared with a copy taken when it was written),
// and the optimizer's state must be restored too (the run then continues exactly as an undisturbed one).
#include <goopt/graph/computation_graph.hpp>
#include <goopt/nn.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;
namespace fs = std::filesystem;

namespace {

std::string value_bytes(const nn::parameter_list<float>& ps) {
    std::string b;
    for (const auto* p : ps)
        b.append(reinterpret_cast<const char*>(p->value.data()),
                 static_cast<std::size_t>(p->value.size()) * sizeof(float));
    return b;
}

/// A tiny supervised task (is the op a relu?) on a fixed random graph, with a seeded policy.
struct trainer {
    graph::computation_graph g{"guarded"};
    nn::graph_features<float> f;
    std::vector<int> labels;
    std::mt19937_64 rng{4};
    nn::go_policy<float> pol;
    nn::parameter_list<float> ps;
    nn::adam<float> opt;

    trainer() : opt({}) {
        std::vector<graph::tensor_id> ts{g.input("x", ops::shape{3})};
        for (int i = 0; i < 24; ++i) {
            const auto a = ts[rng() % ts.size()];
            ts.push_back(i % 3 == 0 ? g.add1(op_kind::ewadd, {a, ts[rng() % ts.size()]})
                                    : g.add1(i % 3 == 1 ? op_kind::relu : op_kind::tanh, {a}));
        }
        f = nn::node_features<float>(g);
        for (const auto& o : g.ops()) labels.push_back(o.kind == op_kind::relu);
        pol = nn::go_policy<float>(
            {.hidden = 8, .shared_attention_layers = 1, .heads = 2, .segment = 8, .task_choices = {2}}, rng);
        ps = pol.parameters();
        opt = nn::adam<float>(ps, {.learning_rate = 1e-2});
    }
    /// Forward and backward of one step: fills the gradients, returns the loss (no update).
    float gradients() {
        nn::zero_grad(ps);
        const auto out = pol.evaluate(f, {});
        nn::matrix<float> d;
        const float loss = nn::cross_entropy(out.logits[0], std::span<const int>(labels), d);
        pol.backward({d}, 0.0f);
        return loss;
    }
};

std::string message_of(auto&& f) {
    try {
        f();
    } catch (const goopt::error& e) {
        return e.what();
    }
    return "(no goopt::error)";
}

constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();
constexpr float infinity = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("training_guard: NaN loss at step 6 -> error names step 6, memory and file are step 5's") {
    const goopt::test::temp_dir dir("goopt_training_guard_");
    const fs::path ckpt = dir.path / "policy.bin", good_copy = dir.path / "step5.bin";
    trainer t;
    nn::training_guard guard(t.ps, t.opt, {.path = ckpt});
    CHECK(fs::exists(ckpt));  // step 0 is a checkpoint too
    std::string at5;
    for (int k = 1; k <= 5; ++k) guard.step(t.gradients());
    at5 = value_bytes(t.ps);
    fs::copy_file(ckpt, good_copy);
    CHECK(guard.steps() == 5);
    CHECK(guard.checkpoint_step() == 5);

    (void)t.gradients();
    const std::string msg = message_of([&] { guard.step(std::numeric_limits<double>::quiet_NaN()); });
    CHECK_MESSAGE(msg.find("step 6: the loss is") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("nan") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("state of step 5") != std::string::npos, msg);
    CHECK(value_bytes(t.ps) == at5);
    CHECK(goopt::test::slurp(ckpt) == goopt::test::slurp(good_copy));
    CHECK(guard.steps() == 5);
    for (const auto* p : t.ps) CHECK(p->grad.isZero(0));

    // one more good step matches an undisturbed run (the NaN was caught before Adam's update; the
    // rollback over an update is checked below, with checkpoint_every = 3)
    trainer ref;
    for (int k = 1; k <= 6; ++k) {
        (void)ref.gradients();
        ref.opt.step();
    }
    guard.step(t.gradients());
    CHECK(guard.steps() == 6);
    CHECK(t.opt.steps() == 6);
    CHECK(value_bytes(t.ps) == value_bytes(ref.ps));
    CHECK(value_bytes(t.ps) != at5);
    CHECK(goopt::test::slurp(ckpt) != goopt::test::slurp(good_copy));  // the good step 6 was saved
}

TEST_CASE("training_guard: an Inf gradient names the parameter tensor and the element") {
    const goopt::test::temp_dir dir("goopt_training_guard_");
    const fs::path ckpt = dir.path / "policy.bin", good_copy = dir.path / "step3.bin";
    trainer t;
    nn::training_guard guard(t.ps, t.opt, {.path = ckpt});
    for (int k = 1; k <= 3; ++k) guard.step(t.gradients());
    const std::string at3 = value_bytes(t.ps);
    fs::copy_file(ckpt, good_copy);
    const float loss = t.gradients();
    nn::parameter<float>& victim = *t.ps[3];
    REQUIRE(victim.grad.cols() > 1);
    victim.grad(0, 1) = -infinity;
    const std::string msg = message_of([&] { guard.step(loss); });
    CHECK_MESSAGE(msg.find("step 4: the gradient of parameter '" + victim.name +
                           "' is not finite (element (0, 1) is -inf)") != std::string::npos,
                  msg);
    CHECK(value_bytes(t.ps) == at3);
    CHECK(goopt::test::slurp(ckpt) == goopt::test::slurp(good_copy));
    CHECK(t.opt.steps() == 3);
}

TEST_CASE("training_guard: parameters that become non-finite in the update are caught after it") {
    trainer t;
    nn::training_guard guard(t.ps, t.opt);  // checkpoints in memory only
    for (int k = 1; k <= 2; ++k) guard.step(t.gradients());
    const std::string at2 = value_bytes(t.ps);
    // finite loss and gradients, but an infinite learning rate: the update itself overflows
    const float loss = t.gradients();
    t.opt.config().learning_rate = std::numeric_limits<double>::infinity();
    const std::string msg = message_of([&] { guard.step(loss); });
    CHECK_MESSAGE(msg.find("step 3: parameter '") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("is not finite after the update") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("saved in") == std::string::npos, msg);  // no file was configured
    CHECK(value_bytes(t.ps) == at2);
    // the whole optimizer is the checkpoint's, its configuration included
    CHECK(t.opt.config().learning_rate == doctest::Approx(1e-2));
    CHECK(t.opt.steps() == 2);
}

TEST_CASE("training_guard: with a checkpoint every 3 steps, a NaN at step 8 rolls back to step 6, Adam's state too") {
    const goopt::test::temp_dir dir("goopt_training_guard_");
    const fs::path ckpt = dir.path / "policy.bin", good_copy = dir.path / "step6.bin";
    trainer t;
    nn::training_guard guard(t.ps, t.opt, {.checkpoint_every = 3, .path = ckpt});
    std::string at6;
    for (int k = 1; k <= 7; ++k) {
        guard.step(t.gradients());
        if (k == 6) {
            at6 = value_bytes(t.ps);
            fs::copy_file(ckpt, good_copy);
        }
    }
    CHECK(guard.checkpoint_step() == 6);
    CHECK(value_bytes(t.ps) != at6);  // step 7 moved on, unsaved
    (void)t.gradients();
    t.ps.back()->grad(0, 0) = not_a_number;  // the last parameter (the value head's)
    const std::string msg = message_of([&] { guard.step(1.0); });
    CHECK_MESSAGE(msg.find("step 8: the gradient of parameter '" + t.ps.back()->name + "'") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("of step 6, saved in '" + ckpt.string() + "'") != std::string::npos, msg);
    CHECK(value_bytes(t.ps) == at6);
    CHECK(goopt::test::slurp(ckpt) == goopt::test::slurp(good_copy));
    CHECK(guard.steps() == 6);
    // Adam had taken step 7 since the checkpoint: its moments and step count are step 6's again,
    // so redoing step 7 matches an undisturbed run of 7 steps
    CHECK(t.opt.steps() == 6);
    trainer ref;
    for (int k = 1; k <= 7; ++k) {
        (void)ref.gradients();
        ref.opt.step();
    }
    guard.step(t.gradients());
    CHECK(value_bytes(t.ps) == value_bytes(ref.ps));
    // the file is a complete parameter file: it loads back into the network
    nn::load_parameters(t.ps, ckpt);
    CHECK(value_bytes(t.ps) == at6);
}

TEST_CASE("training_guard: bad starting points are errors") {
    trainer t;
    CHECK_THROWS_WITH_AS(nn::training_guard(t.ps, t.opt, {.checkpoint_every = 0}),
                         doctest::Contains("checkpoint_every is 0"), goopt::error);
    t.ps[0]->value(0, 0) = not_a_number;
    const std::string msg = message_of([&] { nn::training_guard guard(t.ps, t.opt); });
    CHECK_MESSAGE(msg.find("step 0: parameter '" + t.ps[0]->name +
                           "' is not finite before training (element (0, 0) is nan)") != std::string::npos,
                  msg);
}
