#include <goopt/goopt.hpp>
#include <goopt/io/rule_json.hpp>

#include <iostream>
#include <string_view>

int main() {
    const std::string_view version = goopt::version_string;
    std::cout << "goopt " << version << '\n';
    if (version.empty()) return 1;
#if defined(GOOPT_RULES_FILE)
    // the installed rule library, found through the package: a matmul merge applies to a user's graph
    const auto rules = goopt::subst::both_directions(goopt::io::read_default_rules());
    goopt::graph::computation_graph g("user");
    const auto x = g.input("x", {8, 32});
    g.mark_output(g.add1(goopt::ops::op_kind::matmul, {x, g.weight("a", {32, 16})}));
    g.mark_output(g.add1(goopt::ops::op_kind::matmul, {x, g.weight("b", {32, 24})}));
    std::size_t applied = 0;
    for (const auto& r : rules)
        for (const auto& m : goopt::subst::find_matches(g, r, 4)) try {
                (void)goopt::subst::apply(g, r, m);
                ++applied;
            } catch (const goopt::error&) {}
    std::cout << rules.size() << " rules from " << goopt::io::default_rules_file() << ", " << applied
              << " rewrites apply\n";
    return applied > 0 ? 0 : 1;
#else
    std::cout << "this installation has no rule library (built without the benchmarks)\n";
    return 0;
#endif
}
