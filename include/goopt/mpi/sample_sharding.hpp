#pragma once
// goopt: optional-edge (needs MPI: link goopt::mpi, Debian's libopenmpi-dev)
/// @file
/// @brief rl::sample_sharding over MPI: the ranks of MPI_COMM_WORLD share each PPO update's
/// samples (set rl::ppo_config::sharding to one, on every rank).
///
/// Why outcomes are gathered and block sums exchanged rather than gradients reduced: every rank
/// draws the same samples (one generator, one order), so after an all-gather of the outcomes (and
/// of the decoder's actions, bias and log-probabilities, for a guided environment) in sample order
/// every rank runs the single-process update; the part of it that grows with the samples (the loss
/// gradient with respect to the logits) is summed in fixed blocks of samples, which the ranks
/// compute and all-gather, and every rank adds them in block order. So the result is bit for bit
/// the same on any rank count with no reduction whose order depends on the ranks, and a rank sends
/// nodes x devices doubles per block, not the network's parameters.

#include <goopt/error.hpp>
#include <goopt/mpi/session.hpp>
#include <goopt/rl/sample_sharding.hpp>

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace goopt::mpi {

/// @brief The ranks of MPI_COMM_WORLD as an rl::sample_sharding. Counts the bytes it sends, for
/// the scaling model of benchmarks/distributed.
class sample_sharding final : public rl::sample_sharding {
public:
    explicit sample_sharding(const session& s) : s_(&s) {}
    std::size_t rank() const override { return s_->rank(); }
    std::size_t ranks() const override { return s_->size(); }

    /// MPI_Allgather of the sizes, then MPI_Allgatherv of the bytes (each rank's part below 2 GiB,
    /// MPI's int counts).
    std::vector<std::string> all_gather(const std::string& mine) override {
        if (mine.size() > static_cast<std::size_t>(INT_MAX))
            throw error("mpi::sample_sharding", concat("rank ", rank(), "'s share is ", mine.size(), " bytes"),
                        "less than 2 GiB per rank and update (fewer samples per update, or more ranks)");
        const double cpu0 = process_cpu_seconds();
        const int n = static_cast<int>(ranks());
        const int size = static_cast<int>(mine.size());
        std::vector<int> sizes(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n));
        MPI_Allgather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
        long long total = 0;
        for (int r = 0; r < n; ++r) {
            if (total > INT_MAX)
                throw error("mpi::sample_sharding", concat("an update's samples are ", total, "+ bytes"),
                            "less than 2 GiB in all");
            offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
            total += sizes[static_cast<std::size_t>(r)];
        }
        std::string all(static_cast<std::size_t>(total), '\0');
        MPI_Allgatherv(mine.data(), size, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD);
        bytes_sent_ += mine.size();
        std::vector<std::string> parts;
        for (int r = 0; r < n; ++r)
            parts.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                                       static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)])));
        exchange_cpu_ += process_cpu_seconds() - cpu0;
        return parts;
    }

    /// Bytes this rank has contributed to all_gather so far (each is received by every other rank).
    std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
    /// CPU seconds this process has spent inside all_gather so far: OpenMPI busy-waits for the
    /// slowest rank there, so the process's CPU time less this is the work it did itself.
    double exchange_cpu_seconds() const noexcept { return exchange_cpu_; }

private:
    static double process_cpu_seconds() {
        timespec t{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
    }

    const session* s_;
    std::uint64_t bytes_sent_ = 0;
    double exchange_cpu_ = 0;
};

}  // namespace goopt::mpi
