#pragma once
// Shared by the bad-input tables (tests/io/, tests/onnx/): a goopt::error message must be one line
// and contain every expected part (the place and what was expected).

#include <doctest/doctest.h>

#include <string>
#include <vector>

inline void check_error_message(const std::string& message, const std::vector<std::string>& expected) {
    CAPTURE(message);
    CHECK(message.find('\n') == std::string::npos);
    for (const std::string& part : expected) {
        CAPTURE(part);
        CHECK(message.find(part) != std::string::npos);
    }
}
