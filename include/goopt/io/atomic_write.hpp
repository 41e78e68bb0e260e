#pragma once
/// @file
/// @brief Replacing a file so that a crash or a full disk never leaves it half written.

#include <goopt/error.hpp>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#if defined(_WIN32)
#include <process.h>
#include <fstream>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace goopt::io {

namespace detail {

inline std::string errno_text(int e) { return std::generic_category().message(e); }

inline int process_id() noexcept {
#if defined(_WIN32)
    return ::_getpid();
#else
    return static_cast<int>(::getpid());
#endif
}

/// A name next to `target` (rename is only atomic within one file system) that no other process
/// (the pid) and no other thread of this one (the counter) uses at the same time. The leading dot
/// keeps half-written files out of directory listings and globs such as `*.json`.
inline std::filesystem::path temporary_path_for(const std::filesystem::path& target) {
    static std::atomic<unsigned long> counter{0};
    // appended piece by piece: GCC 12 warns falsely (-Wrestrict) about a chain of operator+ here
    std::string name = ".";
    name += target.filename().string();
    name += ".tmp.";
    name += std::to_string(process_id());
    name += '.';
    name += std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    return target.parent_path() / name;
}

/// Whether a path names no file to write ("", a folder's trailing "/", ".", "..").
inline bool names_no_file(const std::filesystem::path& target) {
    return target.filename().empty() || target.filename() == "." || target.filename() == "..";
}

}  // namespace detail

/// @brief Why atomic_write(target, ...) would fail before writing anything, or "" where it would not:
/// the path names no file, names a folder, or its folder does not exist, is not a folder, or cannot
/// be written in. Programs check their output paths with it before a long run, so that a mistyped
/// folder is an error at once and not after an hour of training (the write itself can still fail,
/// e.g. on a full disk).
inline std::string write_problem(const std::filesystem::path& target) {
    namespace fs = std::filesystem;
    if (detail::names_no_file(target)) return concat("'", target.string(), "' does not name a file");
    std::error_code ec;
    if (fs::is_directory(target, ec)) return concat("'", target.string(), "' is a folder");
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const auto st = fs::status(dir, ec);
    if (!fs::exists(st)) return concat("the folder '", dir.string(), "' of '", target.string(), "' does not exist");
    if (!fs::is_directory(st)) return concat("'", dir.string(), "' in '", target.string(), "' is not a folder");
#if !defined(_WIN32)
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return concat("the folder '", dir.string(), "' of '", target.string(),
                      "' is not writable: ", detail::errno_text(errno));
#endif
    return {};
}

/// @brief Writes `contents` to `target` atomically: readers see the old file or the new one, never a
/// mixture, and after a crash the file is one of the two.
///
/// Writes a temporary file in the target's directory, flushes it to the disk (fsync), renames it over
/// the target and flushes the directory so the rename itself survives a crash. An existing target's
/// permission bits are kept. On any failure the temporary is removed, the target is left as it was,
/// and goopt::error names the path and the system's reason. (On Windows the flushes to the disk are
/// left to the operating system.)
/// @param target the file to create or replace; its directory must exist.
/// @param contents the bytes to write.
inline void atomic_write(const std::filesystem::path& target, std::string_view contents) {
    constexpr std::string_view module = "io::atomic_write";
    const std::string where = concat("cannot write '", target.string(), "'");
    if (detail::names_no_file(target))
        throw error(module, concat(where, ": the path does not name a file"), "a file path");
#if defined(_WIN32)
    const std::filesystem::path tmp = detail::temporary_path_for(target);
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw error(module, concat(where, ": cannot create temporary file '", tmp.string(), "'"));
        f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
        f.flush();
        if (!f) {
            f.close();
            std::error_code ignored;
            std::filesystem::remove(tmp, ignored);
            throw error(module, concat(where, ": writing temporary file '", tmp.string(), "' failed"));
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, target, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw error(module, concat(where, ": renaming '", tmp.string(), "' over it failed: ", ec.message()));
    }
#else
    // A writer killed before its rename leaves its temporary behind; a later process that gets the
    // same pid would meet that name again (EEXIST), so it takes the next name. The leftover is never
    // deleted here: goopt cannot tell whether its writer is still running.
    std::filesystem::path tmp;
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
        tmp = detail::temporary_path_for(target);
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt == 63)) {
            const int e = errno;
            throw error(module,
                        concat(where, ": cannot create temporary file '", tmp.string(), "': ", detail::errno_text(e)));
        }
    }
    // Every failure from here on removes the temporary before reporting.
    auto fail = [&](const std::string& step, int e) {
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        throw error(module, concat(where, ": ", step, ": ", detail::errno_text(e)));
    };
    // Replacing a file should not change who may read it; best effort, as the umask default is a
    // sensible fallback and not worth failing the write over.
    struct ::stat st {};
    if (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode)) (void)::fchmod(fd, st.st_mode & 07777);

    const char* p = contents.data();
    std::size_t left = contents.size();
    while (left > 0) {
        // Linux writes at most about 2 GiB per call; larger requests just come back short.
        const std::size_t chunk = left < (std::size_t{1} << 30) ? left : (std::size_t{1} << 30);
        const ::ssize_t n = ::write(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(concat("writing temporary file '", tmp.string(), "' failed"), errno);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) fail(concat("flushing temporary file '", tmp.string(), "' failed"), errno);
    const int closed = ::close(fd);
    fd = -1;  // closed even when close() reports an error: never close it twice
    if (closed != 0) fail(concat("closing temporary file '", tmp.string(), "' failed"), errno);
    if (::rename(tmp.c_str(), target.c_str()) != 0) fail(concat("renaming '", tmp.string(), "' over it failed"), errno);

    // The rename is only durable once the directory entry is on the disk.
    const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        const int e = errno;
        throw error(
            module,
            concat(where, ": written, but its directory cannot be opened to flush it: ", detail::errno_text(e)));
    }
    const int synced = ::fsync(dfd);
    const int e = errno;
    ::close(dfd);
    // Some file systems cannot fsync a directory (EINVAL); there is nothing more to do on them.
    if (synced != 0 && e != EINVAL)
        throw error(module, concat(where, ": written, but flushing its directory failed: ", detail::errno_text(e)));
#endif
}

}  // namespace goopt::io
