#include <goopt/io/result_json.hpp>

#include "../error_message_check.hpp"
#include "../test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace goopt;
using ops::op_kind;

namespace {
/// x -> relu -> sigmoid: the graph of the results below (3 ops).
graph::computation_graph three_ops() {
    graph::computation_graph g("three");
    const auto x = g.input("x", {8});
    g.mark_output(g.add1(op_kind::sigmoid, {g.add1(op_kind::relu, {x}, {}, "r")}, {}, "s"));
    return g;
}

/// A result as `goopt optimize` makes one: two methods on two devices, with a curve.
io::optimize_result sample_result() {
    io::optimize_result r{
        .model = "three",
        .ops = 3,
        .ops_before_substitution = 3,
        .cluster = "2xV100:nvlink",
        .devices = {{"V100", 17179869184}, {"V100", 17179869184}},
        .seed = 7,
        .steps = 2,
        .seconds = 0,
        .tasks = {"placement"},
        .methods = {{.name = "single_device",
                     .description = "every op on device 0",
                     .step_time = 2e-5,
                     .speedup = 1,
                     .peak_memory = {96, 0},
                     .oom = false,
                     .transfers = 0,
                     .bytes_moved = 0,
                     .decision_seconds = 1e-6},
                    {.name = "ppo_placement",
                     .description = "GO policy",
                     .step_time = 1e-5,
                     .speedup = 2,
                     .peak_memory = {64, 32},
                     .oom = true,
                     .transfers = 1,
                     .bytes_moved = 32,
                     .decision_seconds = 0.25}},
        .best = "ppo_placement",
        .best_baseline = "single_device",
        .decisions = {{.placement = {0, 0, 1}, .priorities = {3, 2, 1}, .fusion = {}}, "ppo_placement"},
        .graph = {},
        .curve = io::training_curve{"ppo_placement", {{1, 16, 1.5e-5, 2e-5}, {2, 32, 1e-5, 1.2e-5}}}};
    return r;
}

/// The message of the goopt::error that `f` raises ("accepted" when it raises none).
template <class F> std::string result_file_error(F&& f) {
    try {
        f();
    } catch (const error& e) {
        return e.what();
    }
    return "accepted";
}
std::string result_error(const nlohmann::json& j) {
    return result_file_error([&] { (void)io::result_from_json(j, "r.json"); });
}
}  // namespace

TEST_CASE("goopt.result: a round trip keeps every field and the exact text") {
    auto r = sample_result();
    const std::string text = io::result_to_json(r).dump(1);
    auto back = io::result_from_json(nlohmann::json::parse(text), "r.json");
    CHECK(io::result_to_json(back).dump(1) == text);  // the same bytes again
    CHECK(back.model == "three");
    CHECK(back.ops == 3);
    CHECK(back.cluster == "2xV100:nvlink");
    REQUIRE(back.devices.size() == 2);
    CHECK(back.devices[1].mem_capacity == 17179869184);
    CHECK(back.seed == 7);
    CHECK(back.steps == 2);
    CHECK(back.tasks == std::vector<std::string>{"placement"});
    REQUIRE(back.methods.size() == 2);
    CHECK(back.methods[1].step_time == 1e-5);
    CHECK(back.methods[1].peak_memory == std::vector<std::int64_t>{64, 32});
    CHECK(back.methods[1].oom);
    CHECK(back.methods[1].decision_seconds == 0.25);
    CHECK(back.best == "ppo_placement");
    CHECK(back.decisions.method == "ppo_placement");
    CHECK(back.decisions.decision.placement == std::vector<sim::device_id>{0, 0, 1});
    CHECK(back.decisions.decision.priorities == std::vector<double>{3, 2, 1});
    CHECK_FALSE(back.graph);
    REQUIRE(back.curve);
    CHECK(back.curve->points.size() == 2);
    CHECK(back.curve->points[1].samples == 32);
    // the keys in the order the program has always written them; a budget of 0 s stays a real number
    CHECK(text.find(R"("format": "goopt.result",)") < text.find(R"("model": "three")"));
    CHECK(text.find(R"("seconds": 0.0)") != std::string::npos);
    CHECK(text.find(R"("decisions": {)") < text.find(R"("graph": null)"));

    // after substitution the graph travels with the decisions, through a file
    r.graph = three_ops();
    r.ops_before_substitution = 5;
    r.curve.reset();
    const test::temp_dir dir("goopt_result_");
    io::write_result_file(dir.path / "r.json", r);
    back = io::read_result_file(dir.path / "r.json");
    REQUIRE(back.graph);
    CHECK(io::to_json_string(*back.graph) == io::to_json_string(*r.graph));
    CHECK(back.ops_before_substitution == 5);
    CHECK_FALSE(back.curve);
    CHECK(test::slurp(dir.path / "r.json") == io::result_to_json(back).dump(1) + "\n");
}

TEST_CASE("goopt.result: every malformed field is an error naming the file, the field and what was expected") {
    const nlohmann::json good = nlohmann::json::parse(io::result_to_json(sample_result()).dump());
    struct row {
        const char* what;
        std::function<void(nlohmann::json&)> edit;
        std::vector<std::string> expected;
    };
    const std::vector<row> rows{
        {"format", [](auto& j) { j["format"] = "goopt.decisions"; }, {"r.json: /format: expected \"goopt.result\""}},
        {"unknown key",
         [](auto& j) { j["metods"] = 1; },
         {"r.json: top level: unknown key 'metods'", "expected format, version, model"}},
        {"missing", [](auto& j) { j.erase("methods"); }, {"r.json: /methods: missing"}},
        {"ops", [](auto& j) { j["ops"] = -3; }, {"r.json: /ops: is the integer -3: expected an integer >= 0"}},
        {"device",
         [](auto& j) { j["cluster"]["devices"][1].erase("name"); },
         {"r.json: /cluster/devices/1/name: missing"}},
        {"budget",
         [](auto& j) { j["budget"]["seconds"] = "none"; },
         {"r.json: /budget/seconds: is a string: expected a finite number"}},
        {"step time",
         [](auto& j) { j["methods"][0]["step_time_s"] = "fast"; },
         {"r.json: /methods/0/step_time_s: is a string: expected a finite number"}},
        {"oom",
         [](auto& j) { j["methods"][1]["oom"] = 1; },
         {"r.json: /methods/1/oom: is the integer 1: expected true or false"}},
        {"peak memory",
         [](auto& j) { j["methods"][1]["peak_memory_bytes"] = {1}; },
         {"r.json: /methods/1/peak_memory_bytes: has 1 entries: expected one per device of /cluster/devices (2)"}},
        {"best",
         [](auto& j) { j["best"] = "heft"; },
         {"r.json: /best: 'heft' is not a method of /methods: expected the name of a method in /methods"}},
        {"decisions",
         [](auto& j) {
             j["decisions"]["placement"] = {0, 1};
         },
         {"r.json: /decisions/placement: has 2 entries: expected one per op (3)"}},
        {"graph",
         [](auto& j) { j["graph"] = nlohmann::json::parse(io::to_json_string(graph::computation_graph("g"))); },
         {"r.json: /graph: has 0 ops: expected /ops (3)"}},
        {"graph itself",
         [](auto& j) {
             j["graph"] = {{"format", "goopt.graph"}};
         },
         {"r.json: /graph: missing \"version\""}},
        {"curve method",
         [](auto& j) { j["training_curve"]["method"] = "random_search"; },
         {"r.json: /training_curve/method: 'random_search' is not a method of /methods"}},
        {"curve point",
         [](auto& j) { j["training_curve"]["points"][1].erase("samples"); },
         {"r.json: /training_curve/points/1/samples: missing"}},
    };
    for (const auto& r : rows) {
        const std::string name = r.what;
        CAPTURE(name);
        nlohmann::json j = good;
        r.edit(j);
        check_error_message(result_error(j), r.expected);
    }
    // a file's errors name the file
    const test::temp_dir dir("goopt_result_bad_");
    nlohmann::json j = good;
    j["methods"][0]["speedup"] = nullptr;
    std::ofstream(dir.path / "r.json") << j.dump();
    CHECK_THROWS_WITH_AS(io::read_result_file(dir.path / "r.json"),
                         doctest::Contains(((dir.path / "r.json").string() + ": /methods/0/speedup: is null").c_str()),
                         error);
}

TEST_CASE("what simulate reads: a decisions document or a result, made for the graph given") {
    const test::temp_dir dir("goopt_decisions_or_result_");
    const auto doc = dir.path / "d.json", result = dir.path / "r.json", substituted = dir.path / "s.json",
               other = dir.path / "o.json";
    io::write_decisions_file(doc, {{.placement = {1, 1, 0}, .priorities = {}, .fusion = {}}, ""});
    io::write_result_file(result, sample_result());
    auto s = sample_result();
    s.graph = three_ops();
    s.ops_before_substitution = 144;
    io::write_result_file(substituted, s);
    std::ofstream(other) << R"({"format": "goopt.trace", "version": 1})";

    const auto a = io::read_decisions_or_result_file(doc, 3);
    CHECK(a.decisions.decision.placement == std::vector<sim::device_id>{1, 1, 0});
    CHECK_FALSE(a.graph);
    const auto b = io::read_decisions_or_result_file(result, 3);
    CHECK(b.decisions.decision.placement == std::vector<sim::device_id>{0, 0, 1});
    CHECK(b.decisions.method == "ppo_placement");
    const auto c = io::read_decisions_or_result_file(substituted, 144);  // the graph given had 144 ops
    REQUIRE(c.graph);
    CHECK(c.graph->num_ops() == 3);
    check_error_message(result_file_error([&] { (void)io::read_decisions_or_result_file(result, 5); }),
                        {result.string() + ": /ops: the result was made for a graph of 3 ops, the graph given has 5: "
                                           "expected the graph that 'goopt optimize' read"});
    CHECK_THROWS_WITH_AS(io::read_decisions_or_result_file(substituted, 3),
                         doctest::Contains(": /ops_before_substitution: the result was made for a graph of 144 ops"),
                         error);
    CHECK_THROWS_WITH_AS(io::read_decisions_or_result_file(doc, 4),
                         doctest::Contains(": /placement: has 3 entries: expected one per op (4)"), error);
    CHECK_THROWS_WITH_AS(
        io::read_decisions_or_result_file(other, 3),
        doctest::Contains((other.string() + R"(: /format: expected "goopt.decisions" or "goopt.result")").c_str()),
        error);
}

TEST_CASE("goopt.result: the two pipelines of a run whose substitution rewrote the graph (optional keys)") {
    auto r = sample_result();
    r.methods[0].pipeline = "original";
    r.methods[1].pipeline = "rewritten";
    r.substitution = "substitution: one device (FIFO): 2 ms -> 1 ms: the rewritten graph is handed on";
    r.pipelines = {{"original", 3, "single_device", 2e-5}, {"rewritten", 3, "ppo_placement", 1e-5}};
    const std::string text = io::result_to_json(r).dump(1);
    const auto back = io::result_from_json(nlohmann::json::parse(text), "r.json");
    CHECK(io::result_to_json(back).dump(1) == text);
    CHECK(back.methods[0].pipeline == "original");
    CHECK(back.substitution == r.substitution);
    REQUIRE(back.pipelines.size() == 2);
    CHECK(back.pipelines[1].best == "ppo_placement");
    CHECK(back.pipelines[1].step_time == 1e-5);
    // a result without them (one pipeline) writes none of the three keys, and reads as before
    const std::string plain = io::result_to_json(sample_result()).dump(1);
    for (const char* key : {"\"pipeline\"", "\"pipelines\"", "\"substitution\""})
        CHECK(plain.find(key) == std::string::npos);
    // a pipeline is one of the two, and its best is a method of the result
    auto j = nlohmann::json::parse(text);
    j["methods"][0]["pipeline"] = "other";
    CHECK(result_error(j).find("r.json: /methods/0/pipeline: is 'other': expected \"original\" or \"rewritten\"") !=
          std::string::npos);
    j = nlohmann::json::parse(text);
    j["pipelines"][0]["best"] = "nobody";
    CHECK(result_error(j).find("/pipelines/0/best: 'nobody' is not a method of /methods") != std::string::npos);
}

TEST_CASE("goopt.result: the tasks a default run left out, each with its reason (optional key)") {
    auto r = sample_result();
    r.skipped = {{"fusion", "tasks::fusion_decider: graph 'g' has no producer/consumer pair that can fuse"},
                 {"scheduling", "tasks::scheduling_decider: no device has two ops to order", "rewritten"}};
    const std::string text = io::result_to_json(r).dump(1);
    const auto back = io::result_from_json(nlohmann::json::parse(text), "r.json");
    CHECK(io::result_to_json(back).dump(1) == text);
    REQUIRE(back.skipped.size() == 2);
    CHECK(back.skipped[0].task == "fusion");
    CHECK(back.skipped[0].pipeline.empty());
    CHECK(back.skipped[1].reason == r.skipped[1].reason);
    CHECK(back.skipped[1].pipeline == "rewritten");
    // a run that left nothing out writes no "skipped"
    CHECK(io::result_to_json(sample_result()).dump(1).find("\"skipped\"") == std::string::npos);
    // each entry is checked like the rest of the file
    auto j = nlohmann::json::parse(text);
    j["skipped"][0].erase("reason");
    CHECK(result_error(j).find("r.json: /skipped/0/reason: missing") != std::string::npos);
    j = nlohmann::json::parse(text);
    j["skipped"][1]["pipeline"] = "third";
    CHECK(result_error(j).find("r.json: /skipped/1/pipeline: is 'third': expected \"original\" or \"rewritten\"") !=
          std::string::npos);
    j = nlohmann::json::parse(text);
    j["skipped"][0]["why"] = "typo";
    CHECK(result_error(j).find("r.json: /skipped/0: unknown key 'why'") != std::string::npos);
}
