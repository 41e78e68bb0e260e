#pragma once
/// @file
/// @brief A ladder of decoder settings, one rung per sample (placement_task_config::anchor_strengths,
/// joint_config::anchor_strengths and ::level_priors): near and far departures in one update, as
/// variable-neighbourhood search varies its radius. The rung drawn becomes part of the sample's
/// stratum (rl::guided_sample::stratum), so that PPO ranks each sample among its own rung's.

#include <goopt/error.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <span>

namespace goopt::tasks {

/// A rung of a ladder of `rungs` (> 0), drawn uniformly from a sample's own generator.
template <std::uniform_random_bit_generator Rng> std::size_t draw_rung(std::size_t rungs, Rng& rng) {
    return std::uniform_int_distribution<std::size_t>(0, rungs - 1)(rng);
}

/// @throws goopt::error from `who`, naming the ladder `name`, for a rung that is not finite, or not
/// above 0 (at 0 too, where `zero_allowed`).
inline void check_ladder(const char* who, const char* name, std::span<const double> ladder, bool zero_allowed) {
    for (double x : ladder)
        if (!std::isfinite(x) || x < 0 || (x == 0 && !zero_allowed))
            throw error(who, concat(name, " holds ", x), zero_allowed ? "finite numbers >= 0" : "finite numbers > 0");
}

}  // namespace goopt::tasks
