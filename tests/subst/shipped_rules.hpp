#pragma once
// The generated rule library the build ships (GOOPT_RULES_FILE), or none where the build has none
// (the sanitizer build): what the search tests run on.

#include <goopt/subst/rule.hpp>
#if defined(GOOPT_RULES_FILE)
#include <goopt/io/rule_json.hpp>
#endif

#include <vector>

inline std::vector<goopt::subst::rule> shipped_rules() {
#if defined(GOOPT_RULES_FILE)
    return goopt::io::read_rules_file(GOOPT_RULES_FILE);
#else
    return {};
#endif
}
