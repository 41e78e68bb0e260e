#pragma once
/// @file
/// @brief One fuzz input for the rule file reader (io::rules_from_json_string): a goopt::error is a
/// clean rejection; accepted rules must survive write/read/write unchanged.

#include "fuzz_input.hpp"

#include <goopt/error.hpp>
#include <goopt/io/rule_json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace goopt::fuzz {

/// @return true when the reader accepted the input. @throws fuzz::finding for a broken promise.
inline bool rule_json_input(std::string_view bytes) {
    std::vector<subst::rule> rules;
    try {
        rules = io::rules_from_json_string(bytes, "<fuzz>");
    } catch (const error&) {
        return false;
    }
    std::string text;
    try {
        text = io::rules_to_json(rules).dump();
    } catch (const nlohmann::json::exception&) {
        return true;  // a variable name that is not valid UTF-8 cannot be written back
    }
    std::string again;
    try {
        again = io::rules_to_json(io::rules_from_json_string(text, "<round trip>")).dump();
    } catch (const error& e) {
        throw finding(std::string("the reader rejects what the writer wrote: ") + e.what());
    }
    if (again != text) throw finding("write/read/write changed the rules: " + excerpt(text));
    return true;
}

}  // namespace goopt::fuzz
