// Fusion legality: what one kernel may hold (sim/fusion_legality.hpp), and the simulator refusing
// every other group as a decision (sim::decision_refused) that names the op and why.
#include <goopt/device.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/sim.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace goopt;
using graph::op_id;
using ops::op_kind;

namespace {

/// x -> conv -> relu -> reduce_sum; y -> matmul -> matmul -> sigmoid; reshape of the relu.
struct fixture {
    graph::computation_graph g{"legality"};
    op_id x, conv, relu, sum, mm1, mm2, sig, reshape, w1;
    fixture() {
        const auto xt = g.input("x", {1, 8, 16, 16});
        const auto wc = g.weight("wc", {8, 8, 3, 3});
        const auto c = g.add1(op_kind::conv2d, {xt, wc}, {}, "conv");
        const auto r = g.add1(op_kind::relu, {c}, {}, "relu");
        const auto s = g.add1(op_kind::reduce_sum, {r}, {{ops::attr_id::axes, std::vector<std::int64_t>{1}}}, "sum");
        const auto y = g.input("y", {32, 32});
        const auto wt = g.weight("w1", {32, 32});
        const auto m1 = g.add1(op_kind::matmul, {y, wt}, {}, "mm1");
        const auto m2 = g.add1(op_kind::matmul, {m1, wt}, {}, "mm2");
        const auto sg = g.add1(op_kind::sigmoid, {m2}, {}, "sig");
        const auto rs =
            g.add1(op_kind::reshape, {r}, {{ops::attr_id::shape, std::vector<std::int64_t>{8, 256}}}, "reshape");
        g.mark_output(s);
        g.mark_output(sg);
        g.mark_output(rs);
        x = g.producer(xt);
        conv = g.producer(c);
        relu = g.producer(r);
        sum = g.producer(s);
        mm1 = g.producer(m1);
        mm2 = g.producer(m2);
        sig = g.producer(sg);
        reshape = g.producer(rs);
        w1 = g.producer(wt);
    }
    sim::fusion_groups groups(std::vector<op_id> members) const {
        sim::fusion_groups f(g.num_ops(), sim::no_group);
        for (op_id o : members) f[o] = static_cast<std::int32_t>(members[0]);
        return f;
    }
};

}  // namespace

TEST_CASE("fusion legality: roles come from the op table") {
    using sim::fusion_role;
    CHECK(sim::fusion_role_of(ops::spec(op_kind::input)) == fusion_role::none);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::weight)) == fusion_role::none);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::conv2d)) == fusion_role::contraction);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::matmul_bias)) == fusion_role::contraction);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::softmax)) == fusion_role::reduction);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::relu)) == fusion_role::loop);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::batchnorm)) == fusion_role::loop);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::transpose)) == fusion_role::loop);
    CHECK(sim::fusion_role_of(ops::spec(op_kind::opaque)) == fusion_role::alone);  // unknown semantics: alone
    CHECK_FALSE(sim::can_fuse(ops::spec(op_kind::opaque), ops::spec(op_kind::relu)));
    CHECK(sim::can_fuse(ops::spec(op_kind::conv2d), ops::spec(op_kind::relu)));
    CHECK(sim::can_fuse(ops::spec(op_kind::relu), ops::spec(op_kind::reduce_sum)));
    CHECK(sim::can_fuse(ops::spec(op_kind::relu), ops::spec(op_kind::reshape)));
    CHECK_FALSE(sim::can_fuse(ops::spec(op_kind::matmul), ops::spec(op_kind::matmul)));
    CHECK_FALSE(sim::can_fuse(ops::spec(op_kind::relu), ops::spec(op_kind::matmul)));  // no prologue
    CHECK_FALSE(sim::can_fuse(ops::spec(op_kind::matmul), ops::spec(op_kind::reshape)));
    CHECK_FALSE(sim::can_fuse(ops::spec(op_kind::reduce_sum), ops::spec(op_kind::relu)));
    CHECK_FALSE(sim::can_fuse(ops::spec(op_kind::input), ops::spec(op_kind::relu)));
}

TEST_CASE("fusion legality: the checker accepts kernels a compiler emits and names what is wrong otherwise") {
    const fixture f;
    sim::fusion_check check(f.g);
    auto why = [&](std::vector<op_id> members) {
        const auto v = check.violation(members);
        return v ? check.why(*v) : std::string("legal");
    };
    CHECK(why({f.conv, f.relu}) == "legal");            // conv + its epilogue
    CHECK(why({f.relu, f.sum}) == "legal");             // a reduction after its producer
    CHECK(why({f.relu, f.reshape, f.sum}) == "legal");  // loop ops, the reduction last
    CHECK(why({f.mm2, f.sig}) == "legal");
    CHECK(why({f.relu}) == "legal");  // one op is no merge
    CHECK(why({f.mm1, f.mm2}).find("'mm2' (matmul) is a second contraction") != std::string::npos);
    CHECK(why({f.x, f.conv}).find("'x' (input) is a source") != std::string::npos);
    CHECK(why({f.mm1, f.w1}).find("'w1' (weight) is a source") != std::string::npos);
    CHECK(why({f.conv, f.relu, f.sum}).find("'sum' (reduce_sum) shares a kernel with a contraction") !=
          std::string::npos);
    CHECK(why({f.conv, f.relu, f.reshape}).find("'reshape' (reshape) shares a kernel with a contraction") !=
          std::string::npos);
    CHECK(why({f.sig, f.mm2, f.mm1}).find("second contraction") != std::string::npos);
    CHECK(why({f.relu, f.sig}).find("not joined to the rest") != std::string::npos);
    // a reduction ends its kernel: a consumer of it never joins
    graph::computation_graph g2("reduce_then_relu");
    const auto a = g2.add1(op_kind::relu, {g2.input("x", {4, 4})}, {}, "a");
    const auto s = g2.add1(op_kind::reduce_sum, {a}, {{ops::attr_id::axes, std::vector<std::int64_t>{1}}}, "s");
    const auto b = g2.add1(op_kind::relu, {s}, {}, "b");
    g2.mark_output(b);
    sim::fusion_check check2(g2);
    const std::vector<op_id> after{g2.producer(s), g2.producer(b)};
    const auto v = check2.violation(after);
    REQUIRE(v);
    CHECK(check2.why(*v).find("'b' (relu) reads the group's reduction") != std::string::npos);
}

TEST_CASE("fusion legality: the simulator refuses an illegal group as a decision, naming the op and why") {
    const fixture f;
    const auto cl = device::parse_cluster("2xV100:nvlink");
    sim::simulator s(f.g, cl);
    const sim::placement one(f.g.num_ops(), 0);
    CHECK_THROWS_WITH_AS(s.run(one, {.fusion = f.groups({f.mm1, f.mm2})}),
                         doctest::Contains("is not one kernel: op 'mm2' (matmul) is a second contraction"),
                         sim::decision_refused);
    CHECK_THROWS_WITH_AS(s.run(one, {.fusion = f.groups({f.conv, f.x})}),
                         doctest::Contains("op 'x' (input) is a source"), sim::decision_refused);
    CHECK_THROWS_WITH_AS(s.run(one, {.fusion = f.groups({f.conv, f.relu, f.sum})}),
                         doctest::Contains("expected fusion groups a compiler emits as one kernel"),
                         sim::decision_refused);
    // conv + relu is one kernel, faster than the two apart
    const auto fused = s.run(one, {.fusion = f.groups({f.conv, f.relu})});
    CHECK(fused.step_time < s.run(one).step_time);
    // a legal pair on two devices is still refused: a kernel runs on one device
    sim::placement split = one;
    split[f.relu] = 1;
    CHECK_THROWS_WITH_AS(s.run(split, {.fusion = f.groups({f.conv, f.relu})}), doctest::Contains("spans two devices"),
                         sim::decision_refused);
}
