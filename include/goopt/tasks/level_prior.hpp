#pragma once
/// @file
/// @brief A fresh policy for a task of ordered levels (scheduling's priority levels, fusion's) that
/// starts from the task's heuristic: the heuristic's decision is every op at the middle level, so
/// the first head's weights are zeroed and its bias prefers the middle level, less so each level
/// further away. The policy's first mode is then the heuristic's decision (a learned decision that
/// starts at the heuristic, as the guided decoders' zero head does), and its first samples explore
/// the neighbouring levels, not a random initial preference.

#include <cmath>
#include <cstddef>
#include <type_traits>

namespace goopt::tasks {

/// @brief Zeroes the first task head ("task0.head*") of a fresh GO policy and sets its bias to
/// -prior x |level - middle| per level. @param prior >= 0 (0: uniform over the levels).
template <class Net> void start_from_middle_level(Net& net, double prior = 1.0) {
    for (auto* p : net.parameters()) {
        if (!p->name.starts_with("task0.head")) continue;
        p->value.setZero();
        if (!p->name.ends_with(".b") || p->value.rows() != 1) continue;
        using scalar = typename std::decay_t<decltype(p->value)>::Scalar;
        const auto levels = p->value.cols();
        for (decltype(p->value.cols()) l = 0; l < levels; ++l)
            p->value(0, l) = static_cast<scalar>(-prior * std::abs(static_cast<double>(l - levels / 2)));
    }
}

}  // namespace goopt::tasks
