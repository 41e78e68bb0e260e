#pragma once
/// @file
/// @brief What the fuzz harnesses share with the normal test build, which replays their inputs
/// (tests/io/fuzz_regression_test.cpp, tests/onnx/bad_input_test.cpp): how a broken promise on an
/// accepted input is reported.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace goopt::fuzz {

/// An accepted input that breaks a reader's promise (an invalid graph, a round trip that changes
/// it). Deliberately not a goopt::error: the harnesses let it escape, libFuzzer records the
/// uncaught exception as a crash with its input, and the replaying tests report it.
struct finding : std::logic_error {
    using std::logic_error::logic_error;
};

inline std::string_view as_text(const void* data, std::size_t size) noexcept {
    return {static_cast<const char*>(data), size};
}

/// Shortens what an accepted input produced, for a finding's one-line message.
inline std::string excerpt(std::string_view s) {
    constexpr std::size_t max_shown = 200;
    return std::string(s.substr(0, max_shown)) + (s.size() > max_shown ? "..." : "");
}

}  // namespace goopt::fuzz
