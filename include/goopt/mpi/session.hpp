#pragma once
// goopt: optional-edge (needs MPI: link goopt::mpi, Debian's libopenmpi-dev)
/// @file
/// @brief One MPI run of a goopt program: MPI initialized and finalized once (RAII), the rank and
/// the rank count, and the fault rule: a rank that fails stops every rank at once (MPI_Abort) with a
/// message naming it, so that a failure is never a rank waiting forever for a dead peer.

#include <goopt/error.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <utility>

namespace goopt::mpi {

/// @brief Whether a launcher (mpirun/mpiexec of OpenMPI, or a PMI/PMIx launcher such as MPICH's
/// Hydra or Slurm's srun) started this process. A program built with goopt::mpi but started
/// directly runs as before, without initializing MPI.
inline bool launched_by_mpirun() noexcept {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
        if (std::getenv(v)) return true;
    return false;
}

/// @brief MPI for the lifetime of this object (MPI_Init_thread at FUNNELED: goopt's worker threads
/// never call MPI, the thread that made the session does), and MPI_COMM_WORLD's rank and size.
/// MPI_Finalize runs in the destructor when this session initialized MPI.
class session {
public:
    session(int& argc, char**& argv) {
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) {
            int provided = 0;
            if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
                throw error("mpi::session", "MPI_Init_thread failed", "an MPI launcher that starts this program");
            owns_ = true;
        }
        int r = 0, n = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        rank_ = static_cast<std::size_t>(r);
        size_ = static_cast<std::size_t>(n);
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session() {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (owns_ && !finalized) MPI_Finalize();
    }

    std::size_t rank() const noexcept { return rank_; }
    std::size_t size() const noexcept { return size_; }

    /// @brief Stops the whole run: prints "goopt: error: rank R of N: message" on stderr and calls
    /// MPI_Abort, whose launcher ends every other rank (OpenMPI's mpirun within a second here).
    [[noreturn]] void abort(std::string_view message, int code = 1) const noexcept {
        std::fflush(stdout);
        std::fprintf(stderr, "goopt: error: rank %zu of %zu: %.*s\n", rank_, size_, static_cast<int>(message.size()),
                     message.data());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
        std::_Exit(code);  // MPI_Abort does not return; never fall through if it did
    }

    /// @brief Runs `f()`; an exception from it (on this rank) aborts the run naming this rank, where
    /// otherwise the other ranks would wait in their next collective call for ever.
    template <class F> decltype(auto) run_or_abort(F&& f) const {
        try {
            return std::forward<F>(f)();
        } catch (const std::exception& e) {
            abort(e.what());
        } catch (...) {
            abort("an exception that is not a std::exception");
        }
    }

    /// @brief True on every rank when `mine` is true on every rank (MPI_Allreduce, logical and): a
    /// decision each rank takes from its own clock (a time budget) taken by all of them together.
    bool all(bool mine) const {
        int in = mine ? 1 : 0, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        return out != 0;
    }

private:
    std::size_t rank_ = 0, size_ = 1;
    bool owns_ = false;
};

}  // namespace goopt::mpi
