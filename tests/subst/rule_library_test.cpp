// The shipped rule library (TASO's world at depth 3, generated and proven at build time into
// share/goopt/taso_rules_k3.json of the build tree): every rule in it passes the interpreter check
// and is proven again, and the well-known substitutions are in it.
#if defined(GOOPT_RULES_FILE)

#include <goopt/io/rule_json.hpp>
#include <goopt/subst.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace goopt;

TEST_CASE("the shipped rule library: every rule passes the interpreter check and is proven") {
    const auto rules = io::read_rules_file(GOOPT_RULES_FILE);
    REQUIRE(rules.size() >= 743);  // TASO's count of verified, non-redundant substitutions
    std::mt19937_64 rng(2019);
    std::vector<std::string> texts;
    for (const auto& r : rules) {
        const std::string text = subst::to_string(r);
        texts.push_back(text);
        const auto why = subst::check_rule(r, rng, 2);
        CHECK_MESSAGE(!why, text << ": " << why.value_or(""));
        const auto proof = subst::prove(r);
        CHECK_MESSAGE(proof.proven, text << ": " << proof.reason);
    }
    auto has = [&](const std::string& a, const std::string& b) {
        return std::find(texts.begin(), texts.end(), a + " => " + b) != texts.end() ||
               std::find(texts.begin(), texts.end(), b + " => " + a) != texts.end();
    };
    CHECK(has("concat{axis=1}(matmul(x0,x1),matmul(x0,x2))", "matmul(x0,concat{axis=1}(x1,x2))"));
    CHECK(has("concat{axis=1}(relu(x0),relu(x1))", "relu(concat{axis=1}(x0,x1))"));
    CHECK(has("smul(matmul(x0,x1),s0)", "matmul(smul(x0,s0),x1)"));
    // one text per rule: a rule and its reverse are not both listed
    for (const auto& t : texts) {
        const auto arrow = t.find(" => ");
        const std::string reverse = t.substr(arrow + 4) + " => " + t.substr(0, arrow);
        CHECK_MESSAGE(std::count(texts.begin(), texts.end(), reverse) == (reverse == t ? 1 : 0), t);
    }
    // one text per rule up to the order of its outputs: a rule of several outputs is listed once
    for (const auto& r : rules) {
        std::vector<std::size_t> order(r.source.outputs.size());
        for (std::size_t o = 0; o < order.size(); ++o) order[o] = o;
        const std::string text = subst::to_string(r);
        while (std::next_permutation(order.begin(), order.end())) {
            subst::rule q = r;
            for (std::size_t o = 0; o < order.size(); ++o) {
                q.source.outputs[o] = r.source.outputs[order[o]];
                q.target.outputs[o] = r.target.outputs[order[o]];
            }
            const std::string other = subst::to_string(q);
            if (other != text)
                CHECK_MESSAGE(std::count(texts.begin(), texts.end(), other) == 0,
                              text << " is also listed as " << other);
        }
    }
    // nothing false: relu does not distribute over a sum
    for (const auto& t : texts) CHECK(t.find("ewadd(relu(x0),relu(x1))") == std::string::npos);
}

#endif
