#pragma once
/// @file
/// @brief What a policy decides: the Task concept, the tasks (placement, scheduling, fusion and
/// any of them jointly), one trainer for all of them, and training a placement with PPO in one call.

#include <goopt/tasks/anchored_decoding.hpp>
#include <goopt/tasks/concepts.hpp>
#include <goopt/tasks/fusion.hpp>
#include <goopt/tasks/guided_decoding.hpp>
#include <goopt/tasks/joint.hpp>
#include <goopt/tasks/joint_bases.hpp>
#include <goopt/tasks/joint_curriculum.hpp>
#include <goopt/tasks/ladder.hpp>
#include <goopt/tasks/level_prior.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/placement_features.hpp>
#include <goopt/tasks/pretrain.hpp>
#include <goopt/tasks/ranked_decoding.hpp>
#include <goopt/tasks/scheduling.hpp>
#include <goopt/tasks/scheduling_rounds.hpp>
#include <goopt/tasks/simulated_task.hpp>
#include <goopt/tasks/step_reward.hpp>
#include <goopt/tasks/train.hpp>
#include <goopt/tasks/train_placement.hpp>
