// Helpers that several test files need. Defined once here because the test files of a module compile
// as one translation unit (GOOPT_UNITY_BUILD), where two files' helpers of one name would clash.
#pragma once

#include <goopt/error.hpp>
#include <goopt/sim/decision_refused.hpp>

#include <doctest/doctest.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

namespace goopt::test {

/// The whole file as bytes ("" when it cannot be read: the caller's CHECK then fails).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != text.npos; }

/// Non-overlapping occurrences of `part` in `text`.
inline std::size_t count_of(std::string_view text, std::string_view part) {
    std::size_t n = 0;
    for (std::size_t p = text.find(part); p != text.npos; p = text.find(part, p + part.size())) ++n;
    return n;
}

/// What calling `f` throws: "refused" (a sim::decision_refused: the decision is at fault), "error"
/// (any other goopt::error: a bug or bad input, which must never become a reward), "other" (another
/// exception) or "nothing".
template <class F> std::string thrown_by(F&& f) {
    try {
        f();
    } catch (const sim::decision_refused&) {
        return "refused";
    } catch (const error&) {
        return "error";
    } catch (const std::exception&) {
        return "other";
    }
    return "nothing";
}

/// A fresh directory under the system's temporary directory, removed with everything in it.
struct temp_dir {
    std::filesystem::path path;
    explicit temp_dir(std::string_view prefix) {
        std::random_device rd;
        path = std::filesystem::temp_directory_path() / (std::string(prefix) + std::to_string(rd()));
        std::filesystem::create_directories(path);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace goopt::test

/// Checks that `text` contains `part`, printing `text` when it does not.
#define CHECK_HAS(text, part) CHECK_MESSAGE(goopt::test::contains(text, part), text)
