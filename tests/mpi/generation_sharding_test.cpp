// Distributed rule generation (subst::generation_config::sharding over mpi::generation_sharding),
// run by ctest under mpirun -np 2: the ranks divide the enumeration and own the fingerprints by
// hash, and the rule file is the single-process one byte for byte. Depth 2 in the normal run
// (seconds); depth 3 against the rule library is skipped there (half a minute per rank on 2 cores)
// and run by hand with --no-skip. The fault case is skipped too; ctest runs it alone.
#include "test_session.hpp"

#include <goopt/io/rule_json.hpp>
#include <goopt/mpi.hpp>
#include <goopt/subst/generation/generate_rules.hpp>
#include <goopt/subst/world.hpp>

#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace goopt;

namespace {

const subst::world& taso() {
    static const subst::world w = subst::taso_world();
    return w;
}
std::span<const subst::world> check_worlds() {
    static const subst::world c[] = {subst::taso_world({.n = 5, .c = 2, .h = 7, .w = 4}),
                                     subst::taso_world({.n = 3, .c = 4, .h = 6, .w = 6})};
    return c;
}

/// The bytes of the rule file that goopt generate-rules writes for `r` (through the same writer).
std::string rule_file_bytes(const subst::generation_result& r, const std::string& stem) {
    const auto path = std::filesystem::temp_directory_path() /
                      concat("goopt_mpi_rules_", stem, "_", static_cast<long>(::getpid()), ".json");
    io::write_rules_file(path, r.rules);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    std::filesystem::remove(path);
    return s.str();
}

std::string file_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("distributed rule generation, depth 2: every rank returns the single-process rule file byte for byte") {
    auto& world = mpi_test::world();
    REQUIRE(world.size() >= 2);  // ctest runs this under mpirun -np 2
    mpi::generation_sharding sh(world);
    const auto alone = subst::generate_rules(taso(), check_worlds(), {.max_ops = 2, .threads = 1});
    REQUIRE(alone.rules.size() > 20);  // not vacuous
    const std::string expected = rule_file_bytes(alone, "alone");
    // another thread count per rank (pass 1's shards follow the rank with the most), and the
    // exchanges in rounds of 4 KiB (pass 1's fingerprints in about 10 rounds, pass 2's graphs in about
    // 80), of 64 KiB (pass 1 in one round, pass 2 in a few) and of the default size (one round each)
    for (std::size_t exchange :
         {std::size_t{4} << 10, std::size_t{64} << 10, subst::generation_config{}.exchange_bytes}) {
        CAPTURE(exchange);
        const auto shared = subst::generate_rules(
            taso(), check_worlds(),
            {.max_ops = 2, .threads = world.rank() == 0 ? 2u : 1u, .sharding = &sh, .exchange_bytes = exchange});
        CHECK(rule_file_bytes(shared, "shared") == expected);
        // the counts of every stage are the whole run's, and the rejections the same
        CHECK(shared.stats.graphs == alone.stats.graphs);
        CHECK(shared.stats.candidates == alone.stats.candidates);
        CHECK(shared.stats.after_renaming == alone.stats.after_renaming);
        CHECK(shared.stats.after_subgraph == alone.stats.after_subgraph);
        CHECK(shared.stats.after_supergraph == alone.stats.after_supergraph);
        CHECK(shared.stats.after_transitivity == alone.stats.after_transitivity);
        REQUIRE(shared.rejected.size() == alone.rejected.size());
        for (std::size_t i = 0; i < alone.rejected.size(); ++i) {
            CHECK(to_string(shared.rejected[i].candidate) == to_string(alone.rejected[i].candidate));
            CHECK(shared.rejected[i].reason == alone.rejected[i].reason);
        }
    }
    // the work was divided: each rank sent the other its share of fingerprints and graphs
    CHECK(sh.bytes_sent() > 0);
}

namespace {
/// mpi::generation_sharding that counts the exchanges and the most bytes a rank sent to other ranks
/// in one of them.
struct rounds_recorder final : subst::generation_sharding {
    mpi::generation_sharding inner;
    std::size_t calls = 0, most_sent = 0;
    explicit rounds_recorder(const mpi::session& s) : inner(s) {}
    std::size_t rank() const override { return inner.rank(); }
    std::size_t ranks() const override { return inner.ranks(); }
    std::vector<std::string> all_to_all(std::vector<std::string> parts) override {
        std::size_t sent = 0;
        for (std::size_t r = 0; r < parts.size(); ++r) sent += r == rank() ? 0 : parts[r].size();
        ++calls;
        most_sent = std::max(most_sent, sent);
        return inner.all_to_all(std::move(parts));
    }
};
}  // namespace

TEST_CASE("distributed rule generation: pass 1 sends each fingerprint to its owner once, in rounds of the given size") {
    auto& world = mpi_test::world();
    const std::size_t ranks = world.size(), me = world.rank();
    // each rank's fingerprints on two threads: a block and a part of one for thread 0, a few for
    // thread 1; fingerprint i of rank r is r * 2^40 + (a hash of i), so every rank knows every rank's
    const std::size_t block = subst::detail::fingerprint_blocks::block_entries;
    const std::uint64_t per_thread[2] = {block + 1234, 77};
    auto fingerprint = [](std::size_t rank, std::uint64_t i) {
        return (std::uint64_t{rank} << 40) + i * 0x9e37 % 1000003;
    };
    std::vector<std::uint64_t> expected;
    std::uint64_t most_outgoing = 0;  // fingerprints any rank sends to other ranks
    for (std::size_t r = 0; r < ranks; ++r) {
        std::uint64_t outgoing = 0;
        for (std::uint64_t i = 0; i < per_thread[0] + per_thread[1]; ++i) {
            const auto owner = subst::detail::owner_of(fingerprint(r, i), ranks);
            if (owner == me) expected.push_back(fingerprint(r, i));
            outgoing += owner != r;
        }
        most_outgoing = std::max(most_outgoing, outgoing);
    }
    std::sort(expected.begin(), expected.end());
    for (std::size_t round_bytes : {std::size_t{256} << 10, std::size_t{64} << 20}) {
        CAPTURE(round_bytes);
        std::vector<std::vector<subst::detail::fingerprint_blocks>> fps(
            2, std::vector<subst::detail::fingerprint_blocks>(ranks));
        for (std::uint64_t i = 0; i < per_thread[0] + per_thread[1]; ++i) {
            const auto f = fingerprint(me, i);
            fps[i < per_thread[0] ? 0 : 1][subst::detail::owner_of(f, ranks)].push_back(f);
        }
        rounds_recorder sh(world);
        const auto owned = subst::detail::send_to_owners(sh, std::move(fps), round_bytes);
        std::vector<std::uint64_t> got;
        for (const auto& list : owned) {
            CHECK(list.size() <= block);
            got.insert(got.end(), list.begin(), list.end());
        }
        std::sort(got.begin(), got.end());
        CHECK(got == expected);
        // one exchange to agree on the rounds, then the rounds: 64 of 256 KiB on 2 ranks, or one;
        // none sends more than its size (and the rounding of a share, 8 bytes per rank)
        const std::uint64_t rounds = std::max<std::uint64_t>(1, (8 * most_outgoing + round_bytes - 1) / round_bytes);
        CHECK(sh.calls == 1 + rounds);
        CHECK(sh.most_sent <= round_bytes + 8 * (ranks - 1));
        if (round_bytes < 8 * most_outgoing) CHECK(rounds > 10);
    }
}

TEST_CASE("distributed rule generation: ranks that disagree on the depth stop, naming the other rank") {
    auto& world = mpi_test::world();
    mpi::generation_sharding sh(world);
    const std::size_t depth = world.rank() == 0 ? 1 : 2;
    const std::string other = world.rank() == 0 ? "rank 1 generates with max_ops 2" : "rank 0 generates with max_ops 1";
    try {
        subst::generate_rules(taso(), check_worlds(), {.max_ops = depth, .threads = 1, .sharding = &sh});
        FAIL("ranks with different depths generated");
    } catch (const error& e) {
        CHECK(std::string(e.what()).find(other) != std::string::npos);
    }
}

TEST_CASE("distributed rule generation, depth 3: the rule library byte for byte" *
          doctest::skip()) {  // half a minute per rank on 2 cores: by hand, --no-skip
    auto& world = mpi_test::world();
    mpi::generation_sharding sh(world);
    const auto shared = subst::generate_rules(taso(), check_worlds(), {.max_ops = 3, .threads = 1, .sharding = &sh});
    CHECK(shared.rules.size() > 1000);
    CHECK(rule_file_bytes(shared, "depth3") == file_bytes(io::default_rules_file()));
}

namespace {
/// Generates at depth 2 on the ranks; rank 1 runs `fail` at its second exchange (pass 1's round
/// count), where rank 0 waits for it and would wait for ever without the fault rule.
template <class Fail> void generate_until_rank1_fails(Fail fail) {
    auto& world = mpi_test::world();
    struct failing final : subst::generation_sharding {
        mpi::generation_sharding inner;
        Fail fail;
        std::size_t calls = 0;
        failing(const mpi::session& s, Fail f) : inner(s), fail(f) {}
        std::size_t rank() const override { return inner.rank(); }
        std::size_t ranks() const override { return inner.ranks(); }
        std::vector<std::string> all_to_all(std::vector<std::string> parts) override {
            if (rank() == 1 && ++calls == 2) fail();
            return inner.all_to_all(std::move(parts));
        }
    } sh(world, fail);
    world.run_or_abort(
        [&] { subst::generate_rules(taso(), check_worlds(), {.max_ops = 2, .threads = 1, .sharding = &sh}); });
}
}  // namespace

TEST_CASE("fault: a rank whose rule generation throws stops the run, naming the rank" * doctest::skip()) {
    generate_until_rank1_fails([] { throw error("test", "rank 1's generation fails on purpose"); });
    FAIL("the run went on after rank 1 failed");
}

TEST_CASE("fault: a rank killed by a signal during rule generation stops the run" * doctest::skip()) {
    generate_until_rank1_fails([] { std::raise(SIGKILL); });
    FAIL("the run went on after rank 1 was killed");
}
