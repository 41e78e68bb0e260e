#include <goopt/io/rule_json.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/generation/generate_rules.hpp>

#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <random>
#include <string>

using namespace goopt;
using ops::op_kind;

namespace {

std::vector<subst::rule> some_rules() {
    subst::world w = subst::taso_world();
    w.variables = {{"x0", {4, 4}}, {"x1", {4, 4}}, {"s0", {}}};
    w.kinds = {op_kind::matmul, op_kind::concat, op_kind::split, op_kind::smul};
    w.choices[static_cast<std::size_t>(op_kind::matmul)].resize(1);
    subst::world c = w;
    c.variables = {{"x0", {3, 3}}, {"x1", {3, 3}}, {"s0", {}}};
    for (auto k : {op_kind::split}) {  // halves of 2n at n = 3
        auto& ch = c.choices[static_cast<std::size_t>(k)];
        ch = subst::taso_world({.n = 3}).choices[static_cast<std::size_t>(k)];
    }
    const subst::world cs[] = {c};
    return subst::generate_rules(w, cs, {.max_ops = 3, .threads = 2}).rules;
}

std::string first_rule_text(const nlohmann::ordered_json& j) { return j["rules"][0]["text"].get<std::string>(); }

}  // namespace

TEST_CASE("rule file round trip: graphs, text and multi-output rules survive") {
    const auto rules = some_rules();
    REQUIRE(rules.size() > 5);
    bool multi = false;
    for (const auto& r : rules) multi = multi || r.source.outputs.size() > 1 || r.target.outputs.size() > 1;
    CHECK(multi);  // matmul(x0,x1), matmul(x0,x2) => split(matmul(x0,concat(x1,x2))) has two outputs
    const auto path = std::filesystem::temp_directory_path() / ("goopt_rules_" + std::to_string(::getpid()) + ".json");
    io::write_rules_file(path, rules);
    const auto back = io::read_rules_file(path);
    std::filesystem::remove(path);
    REQUIRE(back.size() == rules.size());
    std::mt19937_64 rng(3);
    for (std::size_t i = 0; i < rules.size(); ++i) {
        CHECK(subst::to_string(back[i]) == subst::to_string(rules[i]));
        CHECK(io::rules_to_json(std::span(&back[i], 1)) == io::rules_to_json(std::span(&rules[i], 1)));
        CHECK(!subst::check_rule(back[i], rng));
    }
}

TEST_CASE("rule file errors name the place") {
    const auto rules = some_rules();
    const nlohmann::ordered_json good = io::rules_to_json(rules);
    auto fails_with = [](nlohmann::ordered_json j, const std::string& part) {
        try {
            io::rules_from_json(nlohmann::json::parse(j.dump()), "r.json");
        } catch (const error& e) {
            const std::string m = e.what();
            CHECK_MESSAGE(m.find(part) != std::string::npos, m);
            CHECK(m.rfind("r.json: ", 0) == 0);
            return;
        }
        FAIL("no error for " << part);
    };
    auto j = good;
    j["version"] = 2;
    fails_with(j, "version");
    j = good;
    j["rules"][0]["source"]["ops"][0]["op"] = "frobnicate";
    fails_with(j, "rules[0].source.ops[0].op: unknown op 'frobnicate'");
    j = good;
    j["rules"][0]["source"]["outputs"][0] = "%9";
    fails_with(j, "rules[0].source.outputs[0]");
    j = good;
    j["rules"][0]["target"]["ops"][0]["inputs"][0] = "nope";
    fails_with(j, "unknown variable 'nope'");
    j = good;
    j["rules"][0]["text"] = "x0 => x0";
    fails_with(j, "rules[0].text");
    // a rule with matmul(x0,x1) no longer type-checks when x0 is [4,5] and x1 [4,4]
    std::size_t k = 0;
    while (k < rules.size() && subst::to_string(rules[k]).find("matmul(x0,x1)") == std::string::npos) ++k;
    REQUIRE(k < rules.size());
    REQUIRE(rules[k].variables[0].name == "x0");
    j = good;
    j["rules"][k]["variables"][0]["shape"] = {4, 5};
    fails_with(j, "rules[" + std::to_string(k) + "]");
    CHECK(first_rule_text(good) == subst::to_string(rules[0]));
    CHECK_THROWS_AS(io::read_rules_file("/nonexistent/rules.json"), error);
}
