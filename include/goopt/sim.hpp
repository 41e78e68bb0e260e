#pragma once
/// @file
/// @brief The execution simulator: placements, fusion groups, results and traces.

#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulation_result.hpp>
#include <goopt/sim/simulator.hpp>
