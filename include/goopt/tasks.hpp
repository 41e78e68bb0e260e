#pragma once
/// @file
/// @brief Heuristic baselines, all scored by the same simulator: single device (TensorFlow default),
/// expert placements, HEFT, critical-path list scheduling, greedy fusion, random search.
/// METIS placement needs libmetis and lives in <goopt/tasks/metis_placement.hpp> (goopt::metis).

#include <goopt/tasks/colocation.hpp>
#include <goopt/tasks/critical_path_priorities.hpp>
#include <goopt/tasks/expert_placement.hpp>
#include <goopt/tasks/greedy_fusion.hpp>
#include <goopt/tasks/heft.hpp>
#include <goopt/tasks/random_search.hpp>
#include <goopt/tasks/single_device.hpp>
#include <goopt/tasks/upward_rank.hpp>
