// Determinism of rule generation: a seed fixes every fingerprint and float check, and the thread
// count changes only the wall time: the same rules in the same order, the same rejections with the
// same reasons, the same stage counts.
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/structural_hash.hpp>
#include <goopt/models/nasrnn.hpp>
#include <goopt/models/squeezenet.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace goopt;
using namespace goopt::subst;

namespace {

/// Everything generate_rules reports except the wall time, as one comparable value.
struct outcome {
    std::string counts;  // the bytes of generation_stats with the seconds zeroed: every counter, present and future
    std::size_t graphs = 0;
    std::vector<std::string> rules;
    std::vector<std::pair<std::string, std::string>> rejected;
    friend bool operator==(const outcome&, const outcome&) = default;
};

outcome run(const world& w, std::span<const world> check, std::size_t threads,
            std::uint64_t seed = generation_config{}.seed) {
    const auto r = generate_rules(w, check, {.max_ops = 2, .threads = threads, .seed = seed});
    // counters and seconds only (8 bytes each, so no padding bytes of unspecified value)
    static_assert(std::is_trivially_copyable_v<generation_stats> && sizeof(generation_stats) % 8 == 0);
    generation_stats s;
    std::memcpy(&s, &r.stats, sizeof s);
    s.seconds = 0;
    outcome o;
    o.counts.assign(reinterpret_cast<const char*>(&s), sizeof s);
    o.graphs = r.stats.graphs;
    for (const auto& x : r.rules) o.rules.push_back(to_string(x));
    for (const auto& x : r.rejected) o.rejected.emplace_back(to_string(x.candidate), x.reason);
    return o;
}

/// One enumerated graph, exactly: its fingerprint and every op's kind, choice, outputs and inputs.
struct graph_key {
    std::uint64_t fingerprint;
    std::vector<std::uint32_t> ops;
    bool reads_variable = false;
    friend bool operator==(const graph_key&, const graph_key&) = default;
};

std::vector<graph_key> enumerate(const world& w, enumeration_config c) {
    std::vector<graph_key> out;
    enumerate_graphs(w, c, [&](const enumerated_graph& g) {
        graph_key k{g.fingerprint, {}, false};
        for (const auto& o : g.graph.ops) {
            k.ops.push_back(static_cast<std::uint32_t>(o.kind) << 16 | o.choice);
            k.ops.push_back(o.num_outputs);
            for (auto v : o.inputs) {
                k.ops.push_back(std::uint32_t{v.op} << 16 | v.index);
                k.reads_variable = k.reads_variable || v.is_variable();
            }
            k.ops.push_back(0xffffffffu);  // end of this op's inputs
        }
        out.push_back(std::move(k));
    });
    return out;
}

}  // namespace

TEST_CASE("generate_rules on TASO's world, depth 2: identical results for 1, 2 and 3 threads and across runs") {
    const world w = taso_world();
    const world check[] = {taso_world({.n = 5, .c = 2, .h = 7, .w = 4}), taso_world({.n = 3, .c = 4, .h = 6, .w = 6})};
    const outcome one = run(w, check, 1);
    // not vacuous: many graphs, many rules
    REQUIRE(one.rules.size() > 20);
    CHECK(one.graphs > 10000);
    const outcome two = run(w, check, 2);
    const outcome three = run(w, check, 3);
    const outcome three_again = run(w, check, 3);
    CHECK(two.counts == one.counts);
    CHECK(three.counts == one.counts);
    CHECK(two.rules == one.rules);  // same texts in the same order
    CHECK(three.rules == one.rules);
    CHECK(two.rejected == one.rejected);  // same candidates rejected, same reasons, same order
    CHECK(three.rejected == one.rejected);
    CHECK(three_again == three);
}

TEST_CASE("the seed fixes the fingerprints: same seed, same values; another seed, other values") {
    const world w = taso_world();
    const auto a = variable_values(w, 7), b = variable_values(w, 7), c = variable_values(w, 8);
    REQUIRE(a.size() == w.variables.size());
    bool all_equal = true, any_differs = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        all_equal = all_equal && a[i].dims == b[i].dims && a[i].data == b[i].data;
        any_differs = any_differs || a[i].data != c[i].data;
    }
    CHECK(all_equal);
    CHECK(any_differs);
    const auto e7 = enumerate(w, {.max_ops = 1, .seed = 7});
    const auto e8 = enumerate(w, {.max_ops = 1, .seed = 8});
    REQUIRE(e7.size() == e8.size());  // the same graphs (pruning does not depend on the values) ...
    std::size_t same_fingerprint = 0, constants = 0;
    for (std::size_t i = 0; i < e7.size(); ++i) {
        CHECK(e7[i].ops == e8[i].ops);  // ... in the same order
        if (e7[i].reads_variable) same_fingerprint += e7[i].fingerprint == e8[i].fingerprint;
        else {  // a constant's value does not depend on the seed
            ++constants;
            CHECK(e7[i].fingerprint == e8[i].fingerprint);
        }
    }
    CHECK(constants > 0);
    CHECK(constants < e7.size() / 10);
    CHECK(same_fingerprint == 0);  // ... with other fingerprints (a collision has probability ~n/2^64)
}

TEST_CASE("enumerate_graphs: each shard repeats exactly, and the shards are an order-preserving partition") {
    const world w = taso_world();
    const auto all = enumerate(w, {.max_ops = 2});
    REQUIRE(all.size() > 10000);
    CHECK(enumerate(w, {.max_ops = 2}) == all);
    for (std::size_t shards : {2u, 3u, 5u}) {
        CAPTURE(shards);
        std::vector<std::vector<graph_key>> parts;
        std::size_t total = 0;
        for (std::size_t s = 0; s < shards; ++s) {
            parts.push_back(enumerate(w, {.max_ops = 2, .shard = s, .num_shards = shards}));
            CHECK(enumerate(w, {.max_ops = 2, .shard = s, .num_shards = shards}) == parts.back());
            CHECK(!parts.back().empty());
            total += parts.back().size();
        }
        CHECK(total == all.size());
        // walk the unsharded sequence: each graph must be the next unconsumed graph of some shard.
        // Every graph is enumerated once, so at most one shard can match; a graph no shard offers
        // next means a shard reordered, lost or invented graphs.
        std::vector<std::size_t> next(shards, 0);
        std::size_t unmatched = 0;
        for (const auto& g : all) {
            bool matched = false;
            for (std::size_t s = 0; s < shards && !matched; ++s)
                if (next[s] < parts[s].size() && parts[s][next[s]] == g) {
                    ++next[s];
                    matched = true;
                }
            unmatched += !matched;
        }
        CHECK(unmatched == 0);
        for (std::size_t s = 0; s < shards; ++s) CHECK(next[s] == parts[s].size());
    }
}

TEST_CASE("the searches' default budgets are counts: the same input gives the same graph, run after run") {
    // shipped rules are absent from the sanitizer build: the built-ins alone still rewrite these
    const std::vector<rule> rules;
    const std::vector<graph::computation_graph> graphs{
        models::nasrnn({.hidden = 16, .steps = 2}),
        models::squeezenet({.image = 35, .num_classes = 10, .channel_divisor = 4})};
    auto same = [](const auto& a, const auto& b) {
        CHECK(graph::structural_hash(a.graph) == graph::structural_hash(b.graph));
        CHECK(a.stats.applied == b.stats.applied);
        CHECK(a.stats.cost_after == b.stats.cost_after);
        CHECK(a.stats.steps == b.stats.steps);
        CHECK(a.stats.graphs_seen == b.stats.graphs_seen);
        CHECK(a.stats.refused == b.stats.refused);
        CHECK(a.stats.bound == b.stats.bound);
    };
    for (const auto& g : graphs) {
        CAPTURE(g.name());
        CHECK(rewrite_space{}.seconds == 0);
        same(greedy_search(g, rules, cost::roofline_model{}, device::t4),
             greedy_search(g, rules, cost::roofline_model{}, device::t4));
        same(taso_search(g, rules, cost::roofline_model{}, device::t4, {}, {.budget = 8}),
             taso_search(g, rules, cost::roofline_model{}, device::t4, {}, {.budget = 8}));
        same(eqsat_search(g, rules, cost::roofline_model{}, device::t4),
             eqsat_search(g, rules, cost::roofline_model{}, device::t4));
    }
}
