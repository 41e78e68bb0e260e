#pragma once
/// @file
/// @brief The one exception type goopt throws for bad input, and the internal-invariant macro.

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace goopt {

namespace detail {
/// Parts concat() appends itself: text (a C string, a char array, std::string, std::string_view),
/// single chars, and integers other than bool and the char types (which a stream prints as text).
template <class T>
inline constexpr bool text_part =
    std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*> ||
    std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> || std::is_same_v<T, char>;
template <class T>
inline constexpr bool integer_part =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> && !std::is_same_v<T, signed char> &&
    !std::is_same_v<T, unsigned char> && !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> &&
    !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

/// Appends `part` as a default-formatted stream writes it in the classic locale; false for a null
/// C string (a stream stops writing there), which concat() then hands to the stream.
template <class T> bool append_part(std::string& out, const T& part) {
    if constexpr (integer_part<T>) {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits, part).ptr;
        out.append(digits, end);
    } else if constexpr (std::is_same_v<T, char>) {
        out.push_back(part);
    } else if constexpr (std::is_pointer_v<T>) {
        if (part == nullptr) return false;
        out.append(part);
    } else {
        out.append(part);
    }
    return true;
}
}  // namespace detail

/// Joins streamable parts into one string: how a message's pieces (names, shapes, numbers) are put
/// together, instead of `+` chains with `std::to_string`. Text and integers are appended directly
/// (the same characters a stream writes; graphs name every op they add with it, so it is on hot
/// paths); any other part (a double, a shape) goes through a stream.
template <class... Parts> std::string concat(const Parts&... parts) {
    if constexpr (sizeof...(Parts) == 0) {
        return {};
    } else {
        if constexpr ((... && (detail::text_part<Parts> || detail::integer_part<Parts>))) {
            std::string out;
            if ((... && detail::append_part(out, parts))) return out;
        }
        std::ostringstream out;
        (out << ... << parts);
        return std::move(out).str();
    }
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
