#pragma once
// goopt: optional-edge (needs MPI: link goopt::mpi, Debian's libopenmpi-dev)
/// @file
/// @brief subst::generation_sharding over MPI: the ranks of MPI_COMM_WORLD divide rule generation
/// (set subst::generation_config::sharding to one, on every rank). Each fingerprint and each graph
/// crosses to the rank that owns it, so that the table and the graph store are divided by the ranks.

#include <goopt/error.hpp>
#include <goopt/mpi/session.hpp>
#include <goopt/subst/generation/generation_sharding.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace goopt::mpi {

/// @brief The ranks of MPI_COMM_WORLD as a subst::generation_sharding. Counts the bytes it sends to
/// other ranks and the most it held in one exchange, for the scaling model of benchmarks/distributed.
class generation_sharding final : public subst::generation_sharding {
public:
    explicit generation_sharding(const session& s) : s_(&s) {}
    std::size_t rank() const override { return s_->rank(); }
    std::size_t ranks() const override { return s_->size(); }

    /// MPI_Alltoall of the part sizes, then one nonblocking message per part and 1 GiB piece (MPI's
    /// int counts), so that no part size is too large; a rank's own part does not cross.
    std::vector<std::string> all_to_all(std::vector<std::string> parts) override {
        const std::size_t n = ranks(), me = rank();
        if (parts.size() != n)
            throw error("mpi::generation_sharding", concat(parts.size(), " parts"), concat("one per rank: ", n));
        std::vector<std::uint64_t> out_sizes(n), in_sizes(n);
        for (std::size_t r = 0; r < n; ++r) out_sizes[r] = parts[r].size();
        MPI_Alltoall(out_sizes.data(), 1, MPI_UINT64_T, in_sizes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
        std::vector<std::string> received(n);
        std::vector<MPI_Request> requests;
        constexpr std::size_t piece = std::size_t{1} << 30;
        auto pieces = [&](std::string& s, std::size_t size, std::size_t peer, bool receive) {
            for (std::size_t at = 0, tag = 0; at < size; at += piece, ++tag) {
                const int count = static_cast<int>(std::min(piece, size - at));
                MPI_Request q;
                if (receive)
                    MPI_Irecv(s.data() + at, count, MPI_BYTE, static_cast<int>(peer), static_cast<int>(tag),
                              MPI_COMM_WORLD, &q);
                else
                    MPI_Isend(s.data() + at, count, MPI_BYTE, static_cast<int>(peer), static_cast<int>(tag),
                              MPI_COMM_WORLD, &q);
                requests.push_back(q);
            }
        };
        std::uint64_t held = 0;
        for (std::size_t r = 0; r < n; ++r) {
            held += out_sizes[r] + (r == me ? 0 : in_sizes[r]);
            if (r == me) continue;
            received[r].resize(in_sizes[r]);
            pieces(received[r], in_sizes[r], r, true);
        }
        for (std::size_t r = 0; r < n; ++r)
            if (r != me) {
                pieces(parts[r], out_sizes[r], r, false);
                bytes_sent_ += out_sizes[r];
            }
        MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
        received[me] = std::move(parts[me]);
        most_held_ = std::max(most_held_, held);
        return received;
    }

    /// Bytes this rank has sent to other ranks so far.
    std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
    /// The most bytes of parts (sent and received) this rank held in one all_to_all.
    std::uint64_t most_held() const noexcept { return most_held_; }

private:
    const session* s_;
    std::uint64_t bytes_sent_ = 0;
    std::uint64_t most_held_ = 0;
};

}  // namespace goopt::mpi
