#pragma once
/// @file
/// @brief What a policy decides: the Task concept and the tasks (placement so far), and training a
/// placement with PPO in one call.

#include <goopt/tasks/concepts.hpp>
#include <goopt/tasks/fusion.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/train.hpp>
#include <goopt/tasks/train_placement.hpp>
