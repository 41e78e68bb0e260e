#pragma once
/// @file
/// @brief Heuristic baselines, all scored by the same simulator: single device (TensorFlow default),
/// expert placements, HEFT, Baechi's memory-aware m-TOPO, m-ETF and m-SCT, critical-path list scheduling, greedy
/// fusion, random search. METIS placement needs libmetis and lives in <goopt/baselines/metis_placement.hpp>
/// (goopt::metis).

#include <goopt/baselines/baechi.hpp>
#include <goopt/baselines/colocation.hpp>
#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/baselines/expert_placement.hpp>
#include <goopt/baselines/greedy_fusion.hpp>
#include <goopt/baselines/hdp_placement.hpp>
#include <goopt/baselines/heft.hpp>
#include <goopt/baselines/priority_fusion.hpp>
#include <goopt/baselines/random_search.hpp>
#include <goopt/baselines/single_device.hpp>
#include <goopt/baselines/upward_rank.hpp>
