#pragma once
// The generated rule library the build ships (GOOPT_RULES_FILE), or none where the build has none
// (the sanitizer build): what the search tests run on.

#include <goopt/subst/rule.hpp>
#if defined(GOOPT_RULES_FILE)
#include <goopt/io/rule_json.hpp>
#endif

#include <cstdint>
#include <vector>

inline std::vector<goopt::subst::rule> shipped_rules() {
#if defined(GOOPT_RULES_FILE)
    return goopt::io::read_rules_file(GOOPT_RULES_FILE);
#else
    return {};
#endif
}

/// (x0 + x1) * x2 => x0 * x2 + x1 * x2 at [4, 8]: a rule the axioms prove, for tests that must not
/// depend on the shipped library.
inline goopt::subst::rule distributivity_rule() {
    using namespace goopt::subst;
    using goopt::ops::op_kind;
    const auto v = [](std::uint16_t i) { return value_ref{variable_op, i}; };
    rule r;
    r.variables = {{"x0", {4, 8}}, {"x1", {4, 8}}, {"x2", {4, 8}}};
    r.source.ops = {{op_kind::ewadd, {}, {v(0), v(1)}}, {op_kind::ewmul, {}, {value_ref{0, 0}, v(2)}}};
    r.source.outputs = {value_ref{1, 0}};
    r.target.ops = {{op_kind::ewmul, {}, {v(0), v(2)}},
                    {op_kind::ewmul, {}, {v(1), v(2)}},
                    {op_kind::ewadd, {}, {value_ref{0, 0}, value_ref{1, 0}}}};
    r.target.outputs = {value_ref{2, 0}};
    return r;
}
