// The optimizers rl::ppo can run (nn::Optimizer): SGD with momentum step by step and to the minimum of a
// quadratic, its refusals, and the state both optimizers expose to a checkpoint.
#include <goopt/nn/adam.hpp>
#include <goopt/nn/sgd.hpp>

#include <doctest/doctest.h>

#include <limits>

using namespace goopt;

namespace {
nn::parameter<double> point(double x, double y) {
    return {"p", (nn::matrix<double>(1, 2) << x, y).finished(), nn::matrix<double>::Zero(1, 2)};
}
}  // namespace

TEST_CASE("sgd: each step follows the velocity, momentum times the last plus the gradient") {
    auto p = point(3, 3);
    nn::parameter_list<double> ps{&p};
    nn::sgd<double> opt(ps, {.learning_rate = 0.1, .momentum = 0.5, .clip_norm = 0});
    p.grad << 2.0, -4.0;
    opt.step();  // v = g; p -= 0.1 v
    CHECK(p.value(0, 0) == doctest::Approx(2.8));
    CHECK(p.value(0, 1) == doctest::Approx(3.4));
    opt.step();  // v = 0.5 g + g
    CHECK(p.value(0, 0) == doctest::Approx(2.5));
    CHECK(p.value(0, 1) == doctest::Approx(4.0));
    CHECK(opt.steps() == 2);
    CHECK(opt.state(0)[0](0, 0) == doctest::Approx(3.0));
    // the trainer's settings: rate and clipping given, momentum at its default
    nn::sgd<double> clipped(ps, nn::optimizer_settings(1.0, 1.0));
    CHECK(clipped.config().momentum == doctest::Approx(0.9));
    p.value << 0, 0;
    p.grad << 3.0, 4.0;
    CHECK(clipped.step() == doctest::Approx(5.0));  // the norm before clipping; the step is the clipped gradient
    CHECK(p.value(0, 0) == doctest::Approx(-0.6));
    CHECK(p.value(0, 1) == doctest::Approx(-0.8));
}

TEST_CASE("sgd and adam reach the minimum of a quadratic; the learning rate can change between steps") {
    auto descend = [](auto& opt, nn::parameter<double>& p) {
        for (int i = 0; i < 500; ++i) {
            p.grad = 2 * (p.value - (nn::matrix<double>(1, 2) << 1, -2).finished());  // f = |p - (1, -2)|^2
            opt.step();
        }
        CHECK(p.value(0, 0) == doctest::Approx(1.0).epsilon(1e-2));
        CHECK(p.value(0, 1) == doctest::Approx(-2.0).epsilon(1e-2));
    };
    auto p = point(3, 3), q = point(3, 3);
    nn::parameter_list<double> ps{&p}, qs{&q};
    nn::sgd<double> sgd(ps, nn::optimizer_settings(0.5, 0));
    sgd.set_learning_rate(0.05);
    CHECK(sgd.learning_rate() == doctest::Approx(0.05));
    descend(sgd, p);
    nn::adam<double> adam(qs, nn::optimizer_settings(0.1, 0));
    CHECK(adam.learning_rate() == doctest::Approx(0.1));
    CHECK(adam.config().beta2 == doctest::Approx(0.999));
    descend(adam, q);
    // Adam's state as a checkpoint sees it: the moments, the second one never negative
    CHECK(&adam.state(0) != &adam.state(1));
    CHECK(nn::adam<double>::nonnegative_state(1));
    CHECK(!nn::adam<double>::nonnegative_state(0));
    CHECK(nn::adam<double>::state_name(1) == "second moments");
    CHECK(nn::sgd<double>::state_name(0) == "velocity");
}

TEST_CASE("sgd: a rate or momentum it cannot run is refused, naming it; so is a gradient of the wrong shape") {
    auto p = point(0, 0);
    nn::parameter_list<double> ps{&p};
    CHECK_THROWS_WITH_AS(nn::sgd<double>(ps, {.momentum = 1.0}), doctest::Contains("momentum 1"), error);
    CHECK_THROWS_WITH_AS(nn::sgd<double>(ps, {.learning_rate = -1}), doctest::Contains("learning rate -1"), error);
    CHECK_THROWS_AS(nn::sgd<double>(ps, {.learning_rate = std::numeric_limits<double>::quiet_NaN()}), error);
    nn::sgd<double> opt(ps);
    p.grad = nn::matrix<double>::Zero(2, 2);
    CHECK_THROWS_WITH_AS(opt.step(), doctest::Contains("gradient of 'p' has the wrong shape"), error);
}

TEST_CASE_TEMPLATE("a step with one gradient of the wrong shape changes no parameter and no step count", Opt,
                   nn::adam<double>, nn::sgd<double>) {
    auto a = point(1, 2), b = point(3, 4);
    b.name = "q";
    nn::parameter_list<double> ps{&a, &b};
    Opt opt(ps, nn::optimizer_settings(0.1, 0.0));
    a.grad = nn::matrix<double>::Ones(a.value.rows(), a.value.cols());
    b.grad = nn::matrix<double>::Zero(3, 3);  // the second parameter's: checked before the first is stepped
    const nn::matrix<double> before = a.value;
    CHECK_THROWS_WITH_AS(opt.step(), doctest::Contains("gradient of 'q' has the wrong shape"), error);
    CHECK(a.value == before);
    CHECK(opt.steps() == 0);
}
