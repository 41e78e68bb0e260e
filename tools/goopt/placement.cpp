// Hook of `--tasks placement`: a PPO-trained policy (GO, NeurIPS'20) that decides a device for every op,
// scored by the simulator. The trainer (rl/, tasks/, issue 14) plugs in here: train within
// ctx.limits from ctx.checkpoint (if any) and return the best decisions with the training curve.
#include "optimizer.hpp"

namespace goopt::cli {

task_status placement_status() { return {false, "the PPO-trained placement policy (rl/, issue 14)"}; }

method_result optimize_placement(const optimize_context&) {
    throw missing_capability("placement", placement_status().capability);
}

}  // namespace goopt::cli
