#include <goopt/io/atomic_write.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#if !defined(_WIN32)
#include <sys/resource.h>
#include <csignal>
#endif

namespace {

namespace fs = std::filesystem;

std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    return out;
}

std::string error_of(const fs::path& target, const std::string& contents) {
    try {
        goopt::io::atomic_write(target, contents);
    } catch (const goopt::error& e) {
        return e.what();
    }
    FAIL("atomic_write did not fail for " << target);
    return {};
}

}  // namespace

TEST_CASE("atomic_write creates and replaces a file, leaving no temporary") {
    goopt::test::temp_dir dir{"goopt_atomic_write_test_"};
    const fs::path target = dir.path / "out.json";
    goopt::io::atomic_write(target, "first");
    CHECK(goopt::test::slurp(target) == "first");
    CHECK(entries(dir.path) == std::vector<std::string>{"out.json"});

    fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    const std::string big(1 << 20, 'x');
    goopt::io::atomic_write(target, big);
    CHECK(goopt::test::slurp(target) == big);
    CHECK(entries(dir.path) == std::vector<std::string>{"out.json"});
#if !defined(_WIN32)
    // the replaced file keeps the permissions of the one it replaced
    CHECK(fs::status(target).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
#endif
    goopt::io::atomic_write(target, "");
    CHECK(fs::file_size(target) == 0);
}

TEST_CASE("atomic_write steps over a temporary left by a killed writer that had the same pid") {
    goopt::test::temp_dir dir{"goopt_atomic_write_test_"};
    const fs::path target = dir.path / "out.json";
    // the next names this process would use, taken by leftovers of an earlier process of this pid
    const fs::path probe = goopt::io::detail::temporary_path_for(target);
    const std::string stem = probe.filename().string();
    const auto dot = stem.rfind('.');
    const unsigned long next = std::stoul(stem.substr(dot + 1)) + 1;
    for (unsigned long k = next; k < next + 5; ++k) {
        std::ofstream(dir.path / (stem.substr(0, dot + 1) + std::to_string(k))) << "left over";
    }
    goopt::io::atomic_write(target, "new contents");
    CHECK(goopt::test::slurp(target) == "new contents");
    CHECK(entries(dir.path).size() == 6);  // the five leftovers are not touched
}

TEST_CASE("atomic_write into a directory that does not exist fails and leaves nothing") {
    goopt::test::temp_dir dir{"goopt_atomic_write_test_"};
    const fs::path target = dir.path / "no_such_dir" / "out.json";
    const auto m = error_of(target, "data");
    CHECK_HAS(m, "cannot write '" + target.string() + "'");
    CHECK_HAS(m, "No such file or directory");
    CHECK(entries(dir.path).empty());
}

TEST_CASE("atomic_write that cannot replace the target leaves the target as it was") {
    goopt::test::temp_dir dir{"goopt_atomic_write_test_"};
    SUBCASE("the target is a directory") {
        const fs::path target = dir.path / "sub";
        fs::create_directory(target);
        fs::create_directory(target / "keep");
        const auto m = error_of(target, "data");
        CHECK_HAS(m, "cannot write '" + target.string() + "'");
        CHECK(fs::is_directory(target / "keep"));
        CHECK(entries(dir.path) == std::vector<std::string>{"sub"});
    }
    SUBCASE("the path names no file") {
        CHECK_HAS(error_of(dir.path / "", "data"), "does not name a file");
        CHECK(entries(dir.path).empty());
    }
#if !defined(_WIN32)
    SUBCASE("the write itself fails (file size limit): old contents intact") {
        // RLIMIT_FSIZE makes write() fail with EFBIG even for root, unlike a read-only directory.
        const fs::path target = dir.path / "out.json";
        goopt::io::atomic_write(target, "old contents");
        rlimit old{};
        REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
        rlimit small = old;
        small.rlim_cur = 64;
        auto previous = std::signal(SIGXFSZ, SIG_IGN);
        REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
        std::string m;
        try {
            goopt::io::atomic_write(target, std::string(4096, 'n'));
        } catch (const goopt::error& e) {
            m = e.what();
        }
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, previous);
        CHECK_HAS(m, "cannot write '" + target.string() + "': writing temporary file");
        CHECK_HAS(m, "File too large");
        CHECK(goopt::test::slurp(target) == "old contents");
        CHECK(entries(dir.path) == std::vector<std::string>{"out.json"});
    }
#endif
}

TEST_CASE("write_problem says before any work why atomic_write would fail, and nothing where it would not") {
    using goopt::io::write_problem;
    goopt::test::temp_dir dir{"goopt_atomic_write_test_"};
    CHECK(write_problem(dir.path / "out.json").empty());
    goopt::io::atomic_write(dir.path / "out.json", "x");
    CHECK(write_problem(dir.path / "out.json").empty());  // an existing file is replaced
    CHECK_HAS(write_problem(dir.path / "no_such_dir" / "out.json"),
              "the folder '" + (dir.path / "no_such_dir").string() + "' of ");
    CHECK_HAS(write_problem(dir.path / "no_such_dir" / "out.json"), "does not exist");
    CHECK_HAS(write_problem(dir.path), "is a folder");
    CHECK_HAS(write_problem(dir.path / "out.json" / "inner.json"), "is not a folder");
    CHECK_HAS(write_problem(""), "does not name a file");
    CHECK_HAS(write_problem(dir.path / "."), "does not name a file");
    // every problem it names is one atomic_write meets
    for (const fs::path& bad : {dir.path / "no_such_dir" / "out.json", dir.path, dir.path / "out.json" / "inner.json"})
        CHECK(!error_of(bad, "data").empty());
    CHECK(entries(dir.path) == std::vector<std::string>{"out.json"});
}
