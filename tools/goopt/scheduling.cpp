// Hook of `--tasks scheduling`: a PPO-trained policy (GO, NeurIPS'20) that decides a priority for every op (list
// scheduling), scored by the simulator. A trainer over rl/ and tasks/ plugs in here: train within ctx.limits from
// ctx.checkpoint (if any) and return the best decisions with the training curve.
#include "optimizer.hpp"

namespace goopt::cli {

task_status scheduling_status() { return {false, "the PPO-trained scheduling policy, which is not written yet"}; }

method_result optimize_scheduling(const optimize_context&) {
    throw missing_capability("scheduling", scheduling_status().capability);
}

}  // namespace goopt::cli
