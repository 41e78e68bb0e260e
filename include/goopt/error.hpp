#pragma once
/// @file
/// @brief The one exception type goopt throws for bad input, and the internal-invariant macro.

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace goopt {

/// Joins streamable parts into one string: how a message's pieces (names, shapes, numbers) are put
/// together, instead of `+` chains with `std::to_string`.
template <class... Parts> std::string concat(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return std::move(out).str();
}

/// Raised for bad input: a malformed file, an unknown op, a cyclic graph, an impossible device.
/// Every message has one form, on one line: `<module>: <what>: expected <expected>`, where `module`
/// names the part of goopt (or the file) that refused, `what` names the place (op, file, field, flag)
/// and what was found, and `expected` says what would have been accepted.
class error : public std::runtime_error {
public:
    /// `<module>: <what>: expected <expected>`.
    error(std::string_view module, std::string_view what, std::string_view expected)
        : std::runtime_error(concat(module, ": ", what, ": expected ", expected)) {}
    /// `<module>: <what>`, for failures with nothing to expect instead (an unreadable file, a cycle).
    error(std::string_view module, std::string_view what) : std::runtime_error(concat(module, ": ", what)) {}
    /// A message already in the form above (a caller adding its own context to a caught error).
    explicit error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line) {
    std::fprintf(stderr, "goopt: internal invariant violated: %s (%s:%d)\n", expr, file, line);
    std::abort();
}
}  // namespace detail

}  // namespace goopt

/// Internal invariants (never user input): active unless NDEBUG, and always in goopt's own tests,
/// which define GOOPT_ENABLE_ASSERTS.
#if !defined(NDEBUG) || defined(GOOPT_ENABLE_ASSERTS)
#define GOOPT_ASSERT(expr) ((expr) ? void(0) : ::goopt::detail::assert_fail(#expr, __FILE__, __LINE__))
#else
#define GOOPT_ASSERT(expr) ((void)0)
#endif
