#pragma once
// The small GO policy of the learning tests of tests/tasks/ (one definition: the module's test files
// share one translation unit).
#include <goopt/nn/go_policy.hpp>

#include <cstddef>
#include <random>

namespace goopt::test {

/// A GO policy small enough that a learning test trains it in seconds: 16 wide, one GraphSAGE and one
/// attention layer of 2 heads over segments of 8, `choices` actions per node.
inline nn::go_policy<float> small_policy(std::size_t choices, std::mt19937_64& rng) {
    return nn::go_policy<float>({.hidden = 16,
                                 .sage_layers = 1,
                                 .shared_attention_layers = 1,
                                 .heads = 2,
                                 .segment = 8,
                                 .task_choices = {choices}},
                                rng);
}

}  // namespace goopt::test
