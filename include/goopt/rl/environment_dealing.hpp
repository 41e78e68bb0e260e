#pragma once
/// @file
/// @brief Which rank holds which environment when ranks hold different environments
/// (rl::ppo::update_mixed under ppo_config::sharding). Every minibatch step waits for the slowest
/// rank, so environments of unequal sizes are dealt by their work, not by their index: the longest
/// processing time first rule (Graham, 1969), within 4/3 of the best balance. The gradients are
/// summed in environment order whoever holds them, so the dealing changes the time, never the result.

#include <goopt/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

namespace goopt::rl {

/// @brief The rank of each environment: the `ranks` heaviest environments one per rank, then each
/// next heaviest (ties: the lower index) to the rank with the least work so far (ties: the lower
/// rank). Deterministic, so every rank computes the same dealing from the same works.
/// @param work an estimate of each environment's cost per update (e.g. its ops times its devices)
/// @throws goopt::error for no rank, fewer environments than ranks (a rank with none would only
/// wait), or a work that is negative or not finite.
inline std::vector<std::size_t> deal_by_work(std::span<const double> work, std::size_t ranks) {
    constexpr std::string_view who = "rl::deal_by_work";
    if (ranks == 0) throw error(who, "0 ranks", "at least 1");
    if (work.size() < ranks)
        throw error(who, concat(work.size(), " environments on ", ranks, " ranks"), "at least one per rank");
    for (std::size_t k = 0; k < work.size(); ++k)
        if (!std::isfinite(work[k]) || work[k] < 0)
            throw error(who, concat("environment ", k, "'s work is ", work[k]), "a finite number >= 0");
    std::vector<std::size_t> by_work(work.size());
    std::iota(by_work.begin(), by_work.end(), std::size_t{0});
    std::stable_sort(by_work.begin(), by_work.end(), [&](std::size_t a, std::size_t b) { return work[a] > work[b]; });
    std::vector<std::size_t> owner(work.size());
    std::vector<double> load(ranks, 0.0);
    for (std::size_t i = 0; i < by_work.size(); ++i) {
        const std::size_t k = by_work[i];
        const std::size_t r =
            i < ranks ? i : static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        owner[k] = r;
        load[r] += work[k];
    }
    return owner;
}

/// @brief The dealing by index (environment k on rank k mod ranks), for environments of one size.
inline std::vector<std::size_t> deal_by_index(std::size_t environments, std::size_t ranks) {
    if (ranks == 0) throw error("rl::deal_by_index", "0 ranks", "at least 1");
    std::vector<std::size_t> owner(environments);
    for (std::size_t k = 0; k < environments; ++k) owner[k] = k % ranks;
    return owner;
}

}  // namespace goopt::rl
