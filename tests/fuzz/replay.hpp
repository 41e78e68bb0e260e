#pragma once
/// @file
/// @brief Replays a fuzz harness's stored inputs in the normal test build, with the harness's own
/// checks: the seed corpus tests/data/fuzz/<reader>/ must be accepted (so that fuzzing starts from
/// meaningful inputs), and every input of tests/data/fuzz/<reader>/regressions/ that once made a
/// reader crash, hang or break a promise must now be read (accept_*) or refused with a goopt::error
/// (reject_*).

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace goopt::fuzz {

inline std::string bytes_of(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The regular files directly in `dir`, sorted (none when it does not exist).
inline std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    if (std::filesystem::is_directory(dir))
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.is_regular_file()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

/// Replays tests/data/fuzz/`reader`/ through `input` (the harness's: true when accepted).
template <class Input> void replay(const std::string& reader, Input input) {
    const std::filesystem::path dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "fuzz" / reader;
    const auto seeds = files_in(dir);
    CHECK(seeds.size() >= 2);
    for (const auto& p : seeds) {
        CAPTURE(p.string());
        bool accepted = false;
        CHECK_NOTHROW(accepted = input(bytes_of(p)));
        CHECK(accepted);
    }
    // reject_*: must be refused with a goopt::error; accept_*: must be read; either way nothing else
    for (const auto& p : files_in(dir / "regressions")) {
        CAPTURE(p.string());
        const std::string name = p.filename().string();
        bool accepted = false;
        CHECK_NOTHROW(accepted = input(bytes_of(p)));
        if (name.rfind("reject_", 0) == 0) CHECK_FALSE(accepted);
        if (name.rfind("accept_", 0) == 0) CHECK(accepted);
    }
}

}  // namespace goopt::fuzz
