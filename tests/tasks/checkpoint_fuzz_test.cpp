// The checkpoint fuzz harness's inputs (tests/fuzz/checkpoint_input.hpp) replayed with its checks:
// the seeds tests/data/fuzz/checkpoint/ resume, the regressions are refused or read cleanly; and
// the harness itself: fresh seeds of its own generator resume, and what it must refuse it refuses.
// GOOPT_WRITE_FUZZ_SEEDS=DIR writes the seeds, the NaN-weight regression made from the first and the
// accept_ regression the second test makes, into DIR first (after a change of the network's shape or of the checkpoint
// format: GOOPT_WRITE_FUZZ_SEEDS=tests/data/fuzz/checkpoint build/tests/goopt_tasks_tests -tc='*checkpoint*').
#include "../fuzz/checkpoint_input.hpp"
#include "../fuzz/replay.hpp"

#include <goopt/io/atomic_write.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

TEST_CASE("checkpoint fuzz harness: its seeds resume, its regressions replay cleanly") {
    using namespace goopt::fuzz;
    const std::string seeds[] = {checkpoint_fuzz_seed(1, 1, true), checkpoint_fuzz_seed(2, 2, true),
                                 checkpoint_fuzz_seed(1, 3, false), checkpoint_fuzz_seed(1, 4, true, true)};
    if (const char* dir = std::getenv("GOOPT_WRITE_FUZZ_SEEDS")) {
        const char* names[] = {"one_update_split.bin", "two_updates_split.bin", "one_update_whole.bin",
                               "pair_head_split.bin"};
        for (int i = 0; i < 4; ++i) goopt::io::atomic_write(std::filesystem::path(dir) / names[i], seeds[i]);
    }
    for (const auto& s : seeds) CHECK(checkpoint_input(s));
    CHECK(pair_head_input(seeds[3]));
    CHECK_FALSE(pair_head_input(seeds[0]));
    replay("checkpoint", checkpoint_input);
    // the NaN weight a fuzzer found, kept in the current format (the first seed with the first value of
    // the network's first parameter, a float matrix after its name, its type byte and its shape, made
    // NaN), is refused where the weights are read (not earlier, at a field the format no longer has)
    std::string nan_weight = seeds[0];
    const std::string first = "sage0.self.w";
    const std::size_t name_at = nan_weight.find(first);
    REQUIRE(name_at != std::string::npos);
    const std::size_t value_at = name_at + first.size() + 1 + 16;
    REQUIRE(nan_weight[name_at + first.size()] == static_cast<char>(goopt::io::detail::field_type::f32_matrix));
    goopt::io::detail::store_le(nan_weight.data() + value_at,
                                std::bit_cast<std::uint32_t>(std::numeric_limits<float>::quiet_NaN()), 4);
    if (const char* dir = std::getenv("GOOPT_WRITE_FUZZ_SEEDS"))
        goopt::io::atomic_write(std::filesystem::path(dir) / "regressions" / "reject_nan_weight.bin", nan_weight);
    CHECK(bytes_of(std::filesystem::path(GOOPT_TEST_DATA_DIR) / "fuzz" / "checkpoint" / "regressions" /
                   "reject_nan_weight.bin") == nan_weight);
    CHECK_THROWS_WITH_AS(resume_from(nan_weight), doctest::Contains("hold a non-finite number"), goopt::error);
}

TEST_CASE("a resumed checkpoint's best decision is checked when it is read, not when training ends") {
    using namespace goopt::fuzz;
    CHECK_FALSE(checkpoint_input(""));
    const std::string seed = checkpoint_fuzz_seed(1, 1, true);
    CHECK_FALSE(checkpoint_input(seed.substr(0, seed.size() / 2)));  // cut short, signed again
    // the trainer's record: source, index, reward, step, oom, valid, agreement, action count, the
    // actions (each field a type byte and 8 bytes)
    const std::size_t record = seed.find(train_marker) + train_marker.size();
    REQUIRE(seed.size() == record + 16 * 9);
    auto with = [&](std::size_t field, std::uint64_t bits) {
        std::string s = seed;
        goopt::io::detail::store_le(s.data() + record + 9 * field + 1, bits, 8);
        return s;
    };
    auto refusal = [](const std::string& input) {
        try {
            resume_from(input);
        } catch (const goopt::error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(refusal(seed).empty());
    CHECK(refusal(with(15, 2)).find("an action 2 of the best decision: expected a choice in [0, 2)") !=
          std::string::npos);
    CHECK(refusal(with(15, std::uint64_t(-1))).find("an action -1 of the best decision") != std::string::npos);
    CHECK(refusal(with(3, std::bit_cast<std::uint64_t>(std::numeric_limits<double>::quiet_NaN())))
              .find("a finite reward and a finite step >= 0") != std::string::npos);
    CHECK(refusal(with(6, std::bit_cast<std::uint64_t>(2.0))).find("a warm-start agreement of 2") != std::string::npos);
    // a record without a best decision, its training already done: the incumbent just scored is kept,
    // not replaced by nothing (regressions/accept_no_best_after_last_update.bin)
    const std::string two = checkpoint_fuzz_seed(2, 2, true);
    const std::size_t at = two.find(train_marker) + train_marker.size();
    std::string none = two.substr(0, at + 8 * 9);                     // the record's fields without its actions
    goopt::io::detail::store_le(none.data() + at + 1, 0, 8);          // source: none
    goopt::io::detail::store_le(none.data() + at + 7 * 9 + 1, 0, 8);  // no actions
    CHECK(refusal(none).empty());
    CHECK(checkpoint_input(none));
    if (const char* dir = std::getenv("GOOPT_WRITE_FUZZ_SEEDS"))
        goopt::io::atomic_write(std::filesystem::path(dir) / "regressions" / "accept_no_best_after_last_update.bin",
                                none);
    for (const auto& input : {with(15, 2), with(3, std::bit_cast<std::uint64_t>(-1.0))})
        CHECK_FALSE(checkpoint_input(input));
}
