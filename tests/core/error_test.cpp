#include <goopt/error.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

namespace {

/// What concat() wrote before it appended text and integers itself: every part through a stream.
template <class... Parts> std::string streamed(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return std::move(out).str();
}

}  // namespace

TEST_CASE("concat writes text and integers as a stream does, and streams every other part") {
    const std::string s = "conv1";
    const std::string_view v = "relu";
    const char* c = "op '";
    char mutable_text[] = "x:1";
    CHECK(goopt::concat(c, s, "' (", v, ")") == streamed(c, s, "' (", v, ")"));
    CHECK(goopt::concat(mutable_text, '/', s) == "x:1/conv1");
    CHECK(goopt::concat() == "");
    CHECK(goopt::concat(std::string("a\0b", 3), "|") == std::string("a\0b|", 4));  // the whole string, as a stream
    // integers of every width and sign, their extremes included
    CHECK(goopt::concat(std::numeric_limits<std::int64_t>::min(), " ", std::numeric_limits<std::uint64_t>::max(), " ",
                        std::int16_t{-7}, " ", std::uint32_t{0}, " ", 42L, " ", std::size_t{3133}) ==
          streamed(std::numeric_limits<std::int64_t>::min(), " ", std::numeric_limits<std::uint64_t>::max(), " ",
                   std::int16_t{-7}, " ", std::uint32_t{0}, " ", 42L, " ", std::size_t{3133}));
    // the char types and bool are what a stream makes of them: a character, and 1 or 0
    CHECK(goopt::concat(std::uint8_t{65}, std::int8_t{66}, true, 'C') ==
          streamed(std::uint8_t{65}, std::int8_t{66}, true, 'C'));
    CHECK(goopt::concat(std::uint8_t{65}, true) == "A1");
    // any other part goes through the stream, with its default formatting
    CHECK(goopt::concat("t=", 0.1, " s, ", 1e-7, ", ", 2.5f) == streamed("t=", 0.1, " s, ", 1e-7, ", ", 2.5f));
    // a null C string stops a stream's writing: the same here
    const char* none = nullptr;
    CHECK(goopt::concat("a", none, "b") == streamed("a", none, "b"));
}
