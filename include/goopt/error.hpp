#pragma once
/// @file
/// @brief The one exception type goopt throws for bad input, and the internal-invariant macro.

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace goopt {

/// Raised for bad input: a malformed file, an unknown op, a cyclic graph, an impossible device.
/// The message says what was wrong, where (file, node name, field) and what was expected, on one line.
class error : public std::runtime_error {
public:
    explicit error(const std::string& what) : std::runtime_error(what) {}
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
