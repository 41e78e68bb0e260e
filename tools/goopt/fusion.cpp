// Hook of `--tasks fusion`: a PPO-trained policy (GO, NeurIPS'20) that decides a fusion priority for every op, merged
// greedily into fusion groups, scored by the simulator. A trainer over rl/ and tasks/ plugs in here: train within
// ctx.limits from ctx.checkpoint (if any) and return the best decisions with the training curve.
#include "optimizer.hpp"

namespace goopt::cli {

task_status fusion_status() { return {false, "the PPO-trained fusion policy, which is not written yet"}; }

method_result optimize_fusion(const optimize_context&) {
    throw missing_capability("fusion", fusion_status().capability);
}

}  // namespace goopt::cli
