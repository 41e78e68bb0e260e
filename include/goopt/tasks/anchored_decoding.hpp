#pragma once
/// @file
/// @brief A guided decoder's placement scores anchored on a given placement (the best placement
/// heuristic's, a user's expert placement): m-ETF still walks the ops and says where each could
/// start, but greedy decoding keeps the anchor's device, and samples depart from it towards the
/// devices m-ETF prefers. m-ETF as the decoder is only as good as m-ETF; on a graph where m-SCT or
/// HEFT places better, a policy guided by m-ETF starts behind the best heuristic and rarely catches
/// up, while one anchored on that heuristic starts from it (local search around an incumbent, as
/// large-neighbourhood search does; PPO-BiHyb's "improve the heuristic's solution").

#include <goopt/sim/decision.hpp>

#include <cmath>
#include <limits>
#include <span>

namespace goopt::tasks {

/// @brief Rewrites m-ETF's start-time scores of one op (`score[q]` as guided_earliest_task_first gives
/// them: 0 at m-ETF's choice, negative elsewhere, -infinity where the op does not fit) relative to
/// the anchor's device `anchor`: it gets 0, every other device where the op fits `-strength + its
/// m-ETF score`, so zero logits decoded greedily choose the anchor's device. Where the anchor's device
/// has no room (or names no device), the scores are left as m-ETF's. Results are float-rounded, as a
/// decoder stores them. @return the device greedy decoding takes: `anchor`, or m-ETF's `best`.
inline sim::device_id anchor_scores(std::span<double> score, sim::device_id anchor, sim::device_id best,
                                    double strength) {
    constexpr double blocked = -std::numeric_limits<double>::infinity();
    if (anchor >= score.size() || score[anchor] == blocked) return best;
    for (std::size_t q = 0; q < score.size(); ++q)
        if (score[q] != blocked)
            score[q] = q == anchor ? 0.0 : static_cast<double>(static_cast<float>(score[q] - strength));
    return anchor;
}

}  // namespace goopt::tasks
