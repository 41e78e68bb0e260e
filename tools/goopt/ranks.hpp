#pragma once
/// @file
/// @brief The program's processes when it runs under mpirun (built with goopt::mpi; main.cpp sets
/// them up): PPO's samples and rule generation's work are shared among them, and every decision a rank takes from its
/// own clock is taken by all together. Without MPI: one process, and these are no-ops.

#include <goopt/rl/sample_sharding.hpp>
#include <goopt/subst/generation/generation_sharding.hpp>

namespace goopt::cli {

struct run_ranks {
    /// Set under mpirun: rl::ppo_config::sharding of every PPO training the program runs.
    rl::sample_sharding* sharding = nullptr;
    /// Set under mpirun: subst::generation_config::sharding of generate-rules.
    subst::generation_sharding* generation = nullptr;
    /// Set under mpirun: true on every rank when `mine` is true on every rank (a collective call).
    bool (*all)(bool mine) = nullptr;
};

/// This run's ranks (one process unless main.cpp found mpirun).
inline run_ranks& ranks() {
    static run_ranks r;
    return r;
}

/// `mine`, agreed by every rank (one process: `mine`). Every rank must call it at the same point.
inline bool all_ranks(bool mine) { return ranks().all ? ranks().all(mine) : mine; }

}  // namespace goopt::cli
