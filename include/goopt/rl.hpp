#pragma once
/// @file
/// @brief Reinforcement learning: PPO generic in the environment and the network, its settings,
/// checkpoints and progress output.

#include <goopt/rl/concepts.hpp>
#include <goopt/rl/environment_dealing.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/rl/ppo_config.hpp>
#include <goopt/rl/progress.hpp>
