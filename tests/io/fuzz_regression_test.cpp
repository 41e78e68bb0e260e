// Replays the fuzzers' inputs in the normal test build, with the harnesses' own checks
// (tests/fuzz/<reader>_input.hpp): the seed corpora tests/data/fuzz/<reader>/ must be accepted (so
// that fuzzing starts from meaningful documents), and every input that once made a reader crash, hang
// or break a promise, kept in tests/data/fuzz/<reader>/regressions/, must now be read (accept_*) or
// refused with a goopt::error (reject_*). ONNX inputs are replayed in tests/onnx/bad_input_test.cpp,
// checkpoints in tests/tasks/checkpoint_fuzz_test.cpp (beside the trainer they resume).
#include "../fuzz/cluster_json_input.hpp"
#include "../fuzz/cost_table_input.hpp"
#include "../fuzz/decisions_json_input.hpp"
#include "../fuzz/graph_json_input.hpp"
#include "../fuzz/rule_json_input.hpp"

#include "../fuzz/replay.hpp"

#include <doctest/doctest.h>

using goopt::fuzz::replay;

TEST_CASE("fuzz corpora: graph JSON seeds read, regressions replay cleanly") {
    replay("graph_json", goopt::fuzz::graph_json_input);
}

TEST_CASE("fuzz corpora: rule file seeds read, regressions replay cleanly") {
    replay("rule_json", goopt::fuzz::rule_json_input);
}

TEST_CASE("fuzz corpora: cluster seeds read, regressions replay cleanly") {
    replay("cluster_json", goopt::fuzz::cluster_json_input);
}

TEST_CASE("fuzz corpora: cost table seeds read and rebuild, regressions replay cleanly") {
    replay("cost_table", goopt::fuzz::cost_table_input);
}

TEST_CASE("fuzz corpora: decisions seeds read and simulate, regressions replay cleanly") {
    replay("decisions_json", goopt::fuzz::decisions_json_input);
}

TEST_CASE("fuzz harness checks catch what they promise to") {
    // Without these, a harness that accepted everything would make the replays above vacuous.
    using goopt::fuzz::graph_json_input;
    CHECK_FALSE(graph_json_input("{"));
    CHECK_FALSE(graph_json_input(
        R"({"format": "goopt.graph", "version": 1, "ops": [{"op": "relu", "inputs": ["a"], "name": "a"}]})"));
    CHECK(graph_json_input(R"({"format": "goopt.graph", "version": 1, "ops": []})"));
    CHECK_FALSE(goopt::fuzz::cluster_json_input(R"({"format": "goopt.cluster", "version": 1, "devices": []})"));
    CHECK(goopt::fuzz::cluster_json_input(R"({"format": "goopt.cluster", "version": 1, "spec": "2xT4:pcie"})"));
    CHECK_FALSE(goopt::fuzz::rule_json_input(R"({"format": "goopt.rules", "version": 1})"));
    CHECK(goopt::fuzz::rule_json_input(R"({"format": "goopt.rules", "version": 1, "rules": []})"));
    using goopt::fuzz::cost_table_input;
    const std::string table = R"x({"format": "goopt.cost_table", "version": 2, "runtime": {"name": "onnxruntime",
        "version": "1.22.0", "threads": 1}, "machine": {"cpu": "x", "cores": 2}, "repetitions": 3,
        "statistic": "median", "dispatch_seconds": 0, "times": [{"config": "relu(;in=f32[4];out=f32[4])",
        "seconds": SECONDS}]})x";
    auto with = [&](const char* seconds) { return std::string(table).replace(table.find("SECONDS"), 7, seconds); };
    CHECK(cost_table_input(with("1e-6")));
    CHECK_FALSE(cost_table_input(with("1e308")));
    CHECK_FALSE(cost_table_input(with("-1")));
    using goopt::fuzz::decisions_json_input;
    CHECK(decisions_json_input(R"({"format": "goopt.decisions", "version": 1, "placement": [0,1,0,0,1,0,1,1,1]})"));
    // a device the cluster lacks, a fusion group across the devices, a cycle through two groups:
    // refused by the simulator, not by the reader
    CHECK_FALSE(
        decisions_json_input(R"({"format": "goopt.decisions", "version": 1, "placement": [0,0,0,0,0,0,0,0,2]})"));
    CHECK_FALSE(decisions_json_input(
        R"({"format": "goopt.decisions", "version": 1, "placement": [0,0,0,0,1,0,0,0,0], "fusion_groups": [-1,-1,-1,0,0,-1,-1,-1,-1]})"));
    CHECK_FALSE(decisions_json_input(
        R"({"format": "goopt.decisions", "version": 1, "placement": [0,0,0,0,0,0,0,0,0], "fusion_groups": [-1,-1,0,1,-1,0,-1,-1,-1]})"));
}
