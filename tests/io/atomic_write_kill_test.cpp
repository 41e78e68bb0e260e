// io::atomic_write under SIGKILL: a child process rewrites a file of several MB over and over, each
// version distinct and self-checking; the parent kills it at seeded moments (at once, at random
// times, while the temporary file is being written, and once it is complete but not yet renamed,
// i.e. during fsync), then checks that the target is absent (nothing finished yet) or exactly one
// complete version, never older than the last write that returned, and that what a kill leaves
// behind is only the documented temporary file, which never shadows the target.
#include <goopt/io/atomic_write.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if !defined(_WIN32)
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#endif

namespace {

namespace fs = std::filesystem;

// ---- self-checking contents: "goopt-kill version=V bytes=N\n", a body that depends on V, and the
// FNV-1a hash of all that in the last 8 bytes

std::uint64_t fnv1a(const char* p, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ULL;
    return h;
}

/// Sizes differ between versions (3 to 4 MiB), so a file cut short or mixed is caught by the length too.
std::size_t size_of_version(std::uint64_t v) { return (3u << 20) + static_cast<std::size_t>((v * 7919u) % (1u << 20)); }

std::string header_of(std::uint64_t v) {
    return "goopt-kill version=" + std::to_string(v) + " bytes=" + std::to_string(size_of_version(v)) + "\n";
}

std::string contents_of(std::uint64_t v) {
    std::string s = header_of(v);
    const std::size_t n = size_of_version(v);
    s.reserve(n);
    std::uint64_t x = v * 0x9e3779b97f4a7c15ULL + 1;  // splitmix64 stream seeded by the version
    while (s.size() + 8 < n) {
        std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        const std::size_t k = std::min<std::size_t>(8, n - 8 - s.size());
        s.append(reinterpret_cast<const char*>(&z), k);
    }
    const std::uint64_t h = fnv1a(s.data(), s.size());
    s.append(reinterpret_cast<const char*>(&h), 8);
    return s;
}

/// The version a file holds, or nullopt when it is not exactly one complete version.
std::optional<std::uint64_t> version_in(const std::string& data) {
    const std::string magic = "goopt-kill version=";
    if (data.compare(0, magic.size(), magic) != 0) return std::nullopt;
    std::uint64_t v = 0;
    std::size_t i = magic.size();
    for (; i < data.size() && data[i] >= '0' && data[i] <= '9'; ++i)
        v = v * 10 + static_cast<std::uint64_t>(data[i] - '0');
    if (data.size() != size_of_version(v)) return std::nullopt;
    std::uint64_t h = 0;
    std::memcpy(&h, data.data() + data.size() - 8, 8);
    if (h != fnv1a(data.data(), data.size() - 8)) return std::nullopt;
    if (data != contents_of(v)) return std::nullopt;  // the checksum could only be fooled on purpose; be exact
    return v;
}

#if !defined(_WIN32)

/// The pid in a temporary's name ".<target>.tmp.<pid>.<counter>", or -1 for any other name.
long temporary_owner(const std::string& name, const std::string& target) {
    const std::string prefix = "." + target + ".tmp.";
    if (name.compare(0, prefix.size(), prefix) != 0) return -1;
    const std::string rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size()) return -1;
    for (std::size_t i = 0; i < rest.size(); ++i)
        if (i != dot && (rest[i] < '0' || rest[i] > '9')) return -1;
    return std::stol(rest.substr(0, dot));
}

/// A temporary of `pid` in `dir`: its path and size, if one exists now.
std::optional<std::pair<fs::path, std::uintmax_t>> temporary_of(const fs::path& dir, const std::string& target,
                                                                long pid) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (temporary_owner(it->path().filename().string(), target) != pid) continue;
        std::error_code sec;
        const auto size = fs::file_size(it->path(), sec);
        if (!sec) return std::make_pair(it->path(), size);
    }
    return std::nullopt;
}

/// The declared size of the version being written into a temporary, once its header is there.
std::optional<std::size_t> declared_size(const fs::path& tmp) {
    std::ifstream in(tmp, std::ios::binary);
    std::string head(64, '\0');
    in.read(head.data(), 64);
    head.resize(static_cast<std::size_t>(in.gcount()));
    const auto nl = head.find('\n'), b = head.find(" bytes=");
    if (nl == std::string::npos || b == std::string::npos || b > nl) return std::nullopt;
    return static_cast<std::size_t>(std::stoull(head.substr(b + 7, nl - b - 7)));
}

/// The child: rewrites `target` with versions first, first+1, ... until killed, reporting each
/// version on `report` after atomic_write returned. Never returns.
[[noreturn]] void writer(const fs::path& target, std::uint64_t first, int report) {
    try {
        for (std::uint64_t v = first;; ++v) {
            goopt::io::atomic_write(target, contents_of(v));
            if (::write(report, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) ::_exit(4);
        }
    } catch (...) {
        ::_exit(3);
    }
}

#endif

}  // namespace

#if defined(_WIN32)
TEST_CASE("atomic_write under SIGKILL" * doctest::skip()) { MESSAGE("skipped: needs fork() and SIGKILL (POSIX only)"); }
#else
TEST_CASE(
    "atomic_write under SIGKILL: the target is always absent or one complete version, never older than a returned "
    "write") {
    const goopt::test::temp_dir scratch("goopt_atomic_kill_");  // removed however the test ends
    const fs::path& dir = scratch.path;
    const std::string name = "model.bin";
    const fs::path target = dir / name;

    // one write's duration on this disk, to spread the random kill times over it
    const auto t0 = std::chrono::steady_clock::now();
    goopt::io::atomic_write(dir / "calibration.bin", contents_of(1));
    const double write_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    fs::remove(dir / "calibration.bin");

    std::mt19937_64 rng(20261129);  // seeded: the kill moments are reproducible up to the scheduler
    const int rounds = 32;
    std::uint64_t on_disk = 0;   // version in the target after the last round, 0: absent
    std::uint64_t returned = 0;  // highest version whose atomic_write returned, over all rounds
    std::set<long> killed;       // pids of the killed writers: the only owners a leftover may have
    int leftovers = 0, mid_write = 0, mid_flush = 0, missed = 0;
    for (int round = 0; round < rounds; ++round) {
        CAPTURE(round);
        const int mode = round % 4;
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        const std::uint64_t first = on_disk + 1;
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fds[0]);
            writer(target, first, fds[1]);
        }
        ::close(fds[1]);
        // a failed REQUIRE below must not leave the writer running
        struct reaper {
            pid_t pid;
            ~reaper() {
                if (pid > 0) {
                    ::kill(pid, SIGKILL);
                    ::waitpid(pid, nullptr, 0);
                }
            }
        } reap{pid};
        const auto start = std::chrono::steady_clock::now();
        auto waited = [&] { return std::chrono::steady_clock::now() - start; };
        if (mode == 0) {  // very early: before or while the child makes its first contents
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
        } else if (mode == 1) {  // any moment of the first few writes
            std::this_thread::sleep_for(
                std::chrono::microseconds(rng() % static_cast<std::uint64_t>(3 * write_us + 1000)));
        } else {
            // mode 2: the temporary exists and is partly written (a random fraction of it);
            // mode 3: the temporary holds every byte: the child is in fsync, close, rename or the
            // directory's fsync
            const double fraction = mode == 2 ? 0.1 + 0.8 * static_cast<double>(rng() % 1000) / 1000 : 1.0;
            bool hit = false;
            while (!hit && waited() < std::chrono::seconds(5)) {
                if (const auto t = temporary_of(dir, name, pid)) {
                    if (const auto n = declared_size(t->first)) {
                        const auto want = static_cast<std::uintmax_t>(fraction * static_cast<double>(*n));
                        hit = mode == 2 ? t->second >= want && t->second < *n : t->second == *n;
                    }
                }
            }
            (hit ? (mode == 2 ? mid_write : mid_flush) : missed) += 1;
        }
        REQUIRE(::kill(pid, SIGKILL) == 0);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        reap.pid = 0;
        // killed, not exited: an exit would mean atomic_write failed in the child
        CHECK(WIFSIGNALED(status));
        if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGKILL);
        killed.insert(static_cast<long>(pid));
        std::uint64_t v = 0, last_this_round = 0;
        while (::read(fds[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) last_this_round = v;
        ::close(fds[0]);
        if (last_this_round) returned = last_this_round;

        if (!fs::exists(target)) {
            CHECK(returned == 0);  // absent only before any write finished
            CHECK(on_disk == 0);
        } else {
            const auto got = version_in(goopt::test::slurp(target));
            REQUIRE_MESSAGE(got.has_value(), "the target is not one complete version after a kill");
            // a write that returned is never lost; at most the one in flight (renamed, not yet
            // reported) is newer; with none finished this round, the old file or the first new one
            CHECK(*got >= returned);
            CHECK(*got >= on_disk);
            CHECK(*got <= (last_this_round ? last_this_round + 1 : first));
            on_disk = *got;
        }
        // what a kill leaves: at most one temporary per killed writer, named for it, never the target
        std::set<long> owners;
        for (const auto& e : fs::directory_iterator(dir)) {
            const std::string n = e.path().filename().string();
            if (n == name) continue;
            const long owner = temporary_owner(n, name);
            CHECK_MESSAGE(killed.count(owner) == 1, "unexpected file " << n);
            if (owner == static_cast<long>(pid)) {
                CHECK(owners.insert(owner).second);
                ++leftovers;
            }
        }
    }
    MESSAGE("kills: " << rounds << " rounds, one write " << write_us / 1000 << " ms; killed mid-write " << mid_write
                      << ", with the temporary complete (fsync/rename) " << mid_flush << ", not caught in time "
                      << missed << "; temporaries left " << leftovers << "; last version " << on_disk);
    CHECK(returned > 0);   // writes finished: the test saw replacements, not just first creations
    CHECK(leftovers > 0);  // and kills inside atomic_write, which is what is being tested
    CHECK(mid_write + mid_flush > 0);

    // the leftovers do not get in the way: a new writer replaces the target, and removing them by
    // hand (what a caller does when it knows no writer runs) leaves only the target
    goopt::io::atomic_write(target, contents_of(on_disk + 1));
    CHECK(version_in(goopt::test::slurp(target)) == on_disk + 1);
    for (const auto& e : fs::directory_iterator(dir))
        if (temporary_owner(e.path().filename().string(), name) >= 0) fs::remove(e.path());
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
    CHECK(left == std::vector<std::string>{name});
}
#endif
