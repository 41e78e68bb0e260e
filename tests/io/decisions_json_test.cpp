#include <goopt/io/decisions_json.hpp>

#include "../error_message_check.hpp"
#include "../test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

using namespace goopt;

namespace {
/// The message of the goopt::error that reading `text` (a decisions document for 3 ops) raises.
std::string decisions_error(const std::string& text, std::string_view pointer = "") {
    try {
        (void)io::decisions_from_json(nlohmann::json::parse(text), 3, "d.json", pointer);
    } catch (const error& e) {
        return e.what();
    }
    FAIL("accepted: " << text);
    return "";
}
std::string decisions_doc(const std::string& body) {
    return R"({"format": "goopt.decisions", "version": 1, )" + body + "}";
}
}  // namespace

TEST_CASE("goopt.decisions: the text the program writes, and a round trip through a file") {
    const io::decisions_document plain{{.placement = {0, 1, 1}, .priorities = {}, .fusion = {}}, "heft"};
    CHECK(io::decisions_to_json(plain).dump() ==
          R"({"format":"goopt.decisions","version":1,"placement":[0,1,1],"priorities":null,)"
          R"("fusion_groups":null,"method":"heft"})");
    CHECK_FALSE(io::decisions_to_json({{.placement = {0}, .priorities = {}, .fusion = {}}, ""})
                    .contains("method"));  // unnamed: no key

    const io::decisions_document full{{.placement = {2, 0, 1},
                                       .priorities = {0.5, -3, 1e300},
                                       .fusion = {-1, 4, 4},
                                       .transfers = sim::transfer_order::priority,
                                       .dispatch = sim::dispatch_order::sequence},
                                      "ppo_placement"};
    CHECK(io::decisions_to_json(full).at("dispatch") == "sequence");
    CHECK_FALSE(io::decisions_to_json(plain).contains("dispatch"));
    CHECK(io::decisions_to_json(full).at("transfer_order") == "priority");
    CHECK_FALSE(io::decisions_to_json(plain).contains("transfer_order"));  // the default is not written
    const test::temp_dir dir("goopt_decisions_");
    const auto path = dir.path / "d.json";
    io::write_decisions_file(path, full);
    const auto back = io::read_decisions_file(path, 3);
    CHECK(back.decision.placement == full.decision.placement);
    CHECK(back.decision.priorities == full.decision.priorities);
    CHECK(back.decision.fusion == full.decision.fusion);
    CHECK(back.decision.transfers == sim::transfer_order::priority);
    CHECK(back.decision.dispatch == sim::dispatch_order::sequence);
    CHECK(back.method == "ppo_placement");
    const auto none = io::decisions_from_json(nlohmann::json::parse(io::decisions_to_json(plain).dump()), 3, "x");
    CHECK(none.decision.priorities.empty());                          // null: FIFO
    CHECK(none.decision.fusion.empty());                              // null: no fusion
    CHECK(none.decision.transfers == sim::transfer_order::produced);  // absent: FIFO links
    CHECK(none.decision.dispatch == sim::dispatch_order::ready);      // absent: list scheduling
    // a document of its own needs no method, priorities or fusion groups
    CHECK(io::decisions_from_json(nlohmann::json::parse(decisions_doc(R"("placement": [0, 0, 0])")), 3, "x")
              .method.empty());
}

TEST_CASE("goopt.decisions: every malformed document names the file, the field and what was expected") {
    struct row {
        std::string text;
        std::vector<std::string> expected;
    };
    const std::vector<row> rows{
        {R"({"format": "goopt.graph", "version": 1})", {"d.json: /format: expected \"goopt.decisions\""}},
        {R"({"format": "goopt.decisions", "version": 2, "placement": [0, 0, 0]})", {"d.json: /version: expected 1"}},
        {R"([0, 0, 0])", {"d.json: the document is an array: expected an object"}},
        {decisions_doc(R"("placement": [0, 0, 0], "priority": [1, 2, 3])"),
         {"d.json: top level: unknown key 'priority'", "expected format, version, placement, priorities"}},
        {decisions_doc(R"("priorities": [1, 2, 3])"),
         {"d.json: /placement: missing", "expected a device index per op"}},
        {decisions_doc(R"("placement": [0, 0])"), {"d.json: /placement: has 2 entries: expected one per op (3)"}},
        {decisions_doc(R"("placement": {"a": 0})"), {"d.json: /placement: is an object: expected an array of"}},
        {decisions_doc(R"("placement": [0, -1, 0])"), {"d.json: /placement/1: is -1: expected a device index"}},
        {decisions_doc(R"("placement": [0, 0, 1.5])"), {"d.json: /placement/2: is 1.5"}},
        {decisions_doc(R"("placement": [0, 0, 4294967296])"), {"d.json: /placement/2: is 4294967296"}},
        {decisions_doc(R"("placement": [0, 0, 0], "priorities": [1, "2", 3])"),
         {"d.json: /priorities/1: is \"2\": expected a finite number"}},
        {decisions_doc(R"("placement": [0, 0, 0], "fusion_groups": [-1, -2, 0])"),
         {"d.json: /fusion_groups/1: is -2: expected a group id (an integer >= -1)"}},
        {decisions_doc(R"("placement": [0, 0, 0], "transfer_order": "fifo")"),
         {"d.json: /transfer_order: is \"fifo\": expected \"produced\" or \"priority\""}},
        {decisions_doc(R"("placement": [0, 0, 0], "transfer_order": 1)"),
         {"d.json: /transfer_order: is 1: expected \"produced\" or \"priority\""}},
        {decisions_doc(R"("placement": [0, 0, 0], "dispatch": "strict")"),
         {"d.json: /dispatch: is \"strict\": expected \"ready\" or \"sequence\""}},
        {decisions_doc(R"("placement": [0, 0, 0], "method": 7)"),
         {"d.json: /method: is the integer 7: expected a string"}},
    };
    for (const auto& r : rows) {
        CAPTURE(r.text);
        check_error_message(decisions_error(r.text), r.expected);
    }
    // inside a larger document the messages carry the document's JSON pointer
    check_error_message(decisions_error(decisions_doc(R"("placement": [0, -1, 0])"), "/decisions"),
                        {"d.json: /decisions/placement/1: is -1"});
    check_error_message(decisions_error(R"({"format": "goopt.decisions"})", "/decisions"),
                        {"d.json: /decisions/version: expected 1"});
    // and a file's errors name the file
    const test::temp_dir dir("goopt_decisions_bad_");
    const auto path = dir.path / "bad.json";
    std::ofstream(path) << decisions_doc(R"("placement": [0, 0])");
    CHECK_THROWS_WITH_AS(io::read_decisions_file(path, 3),
                         doctest::Contains((path.string() + ": /placement: has 2 entries").c_str()), error);
}
