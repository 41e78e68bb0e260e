#pragma once
/// @file
/// @brief Synchronous data-parallel PPO over processes: the ranks of one run draw every sample of
/// an update identically (the same generator, the same order), each evaluates its own share of them,
/// and every rank receives all outcomes in sample order before it runs the same update, whose
/// minibatch loss gradients are summed in fixed blocks of samples that the ranks share (see
/// rl::detail::ppo_minibatch_loss). With the same samples per update the result is the
/// single-process run's, bit for bit, on any rank count.
/// The transport is the user's (goopt::mpi gives mpi::sample_sharding); the core never sees it.

#include <goopt/error.hpp>
#include <goopt/nn/types.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace goopt::rl {

/// @brief The ranks among which rl::ppo shares each update's samples (ppo_config::sharding).
/// Sample s is evaluated by rank s mod ranks(), and block j of a minibatch's loss gradient by rank
/// j mod ranks(). Called once per update and once per minibatch step of several blocks, never in
/// an inner loop, hence a virtual interface (the transport is chosen at run time: under mpirun or not).
struct sample_sharding {
    virtual ~sample_sharding() = default;
    virtual std::size_t rank() const = 0;   ///< this process's, in [0, ranks())
    virtual std::size_t ranks() const = 0;  ///< processes in the run
    /// @brief Every rank calls it with its own bytes; returns every rank's bytes, indexed by rank.
    /// A rank that fails instead must stop the whole run (no rank may wait forever).
    virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

namespace detail {

/// Appends the object representation of `v` (one process image of one machine type per run: the
/// ranks share the layout, as MPI's homogeneous runs do).
template <class T> void append_raw(std::string& out, const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

/// Reads a T at `at` of `in`, advancing `at`; a short buffer is an error naming the rank.
template <class T> T read_raw(const std::string& in, std::size_t& at, std::size_t from_rank) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (at > in.size() || in.size() - at < sizeof(T))
        throw error("rl::sample_sharding", concat("rank ", from_rank, " sent ", in.size(), " bytes, cut short"),
                    "every sample of that rank's share");
    T v;
    std::memcpy(&v, in.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
}

/// @brief Shares the evaluated samples among the ranks: this rank's entries (s mod ranks == rank)
/// of `outs`, and of `actions`, `bias` and `taken` (each node's log-probability of its action,
/// empty for the mode) when the environment decoded them (guided), go to every other rank, and
/// theirs are filled in here. Afterwards every rank holds every sample.
template <class Outcome>
void share_samples(sample_sharding& sh, std::span<Outcome> outs, std::span<std::vector<int>> actions,
                   std::span<nn::matrix<float>> bias, std::span<std::vector<double>> taken) {
    static_assert(std::is_trivially_copyable_v<Outcome>,
                  "rl::ppo shares outcomes between ranks as bytes: a trivially copyable outcome");
    const std::size_t R = sh.ranks(), me = sh.rank(), E = outs.size();
    const bool decoded = !bias.empty();
    std::string mine;
    for (std::size_t s = me; s < E; s += R) {
        append_raw(mine, outs[s]);
        if (!decoded) continue;
        append_raw(mine, static_cast<std::uint64_t>(actions[s].size()));
        for (int a : actions[s]) append_raw(mine, static_cast<std::int32_t>(a));
        append_raw(mine, static_cast<std::uint64_t>(taken[s].size()));
        for (double t : taken[s]) append_raw(mine, t);
        append_raw(mine, static_cast<std::uint64_t>(bias[s].rows()));
        append_raw(mine, static_cast<std::uint64_t>(bias[s].cols()));
        const std::size_t at = mine.size(), bytes = static_cast<std::size_t>(bias[s].size()) * sizeof(float);
        mine.resize(at + bytes);
        if (bytes) std::memcpy(mine.data() + at, bias[s].data(), bytes);
    }
    const std::vector<std::string> all = sh.all_gather(mine);
    if (all.size() != R)
        throw error("rl::sample_sharding", concat("all_gather returned ", all.size(), " parts"), concat(R));
    for (std::size_t r = 0; r < R; ++r) {
        if (r == me) continue;
        std::size_t at = 0;
        for (std::size_t s = r; s < E; s += R) {
            outs[s] = read_raw<Outcome>(all[r], at, r);
            if (!decoded) continue;
            actions[s].resize(static_cast<std::size_t>(read_raw<std::uint64_t>(all[r], at, r)));
            for (int& a : actions[s]) a = read_raw<std::int32_t>(all[r], at, r);
            const auto count = static_cast<std::size_t>(read_raw<std::uint64_t>(all[r], at, r));
            if ((all[r].size() - at) / sizeof(double) < count)
                throw error("rl::sample_sharding",
                            concat("rank ", r, "'s log-probabilities of sample ", s, " are cut short"),
                            concat(count, " values"));
            taken[s].resize(count);
            for (double& t : taken[s]) t = read_raw<double>(all[r], at, r);
            const auto rows = static_cast<Eigen::Index>(read_raw<std::uint64_t>(all[r], at, r));
            const auto cols = static_cast<Eigen::Index>(read_raw<std::uint64_t>(all[r], at, r));
            const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
            if (all[r].size() - at < bytes)
                throw error("rl::sample_sharding", concat("rank ", r, "'s bias of sample ", s, " is cut short"),
                            concat(bytes, " bytes"));
            bias[s].resize(rows, cols);
            if (bytes) std::memcpy(bias[s].data(), all[r].data() + at, bytes);
            at += bytes;
        }
        if (at != all[r].size())
            throw error("rl::sample_sharding", concat("rank ", r, " sent ", all[r].size() - at, " bytes too many"),
                        "exactly its share of the samples");
    }
}

}  // namespace detail

}  // namespace goopt::rl
