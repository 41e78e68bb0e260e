#pragma once
/// @file
/// @brief The execution simulator: placements, fusion groups, the shared decision type, results and traces.

#include <goopt/sim/decision.hpp>
#include <goopt/sim/decision_refused.hpp>
#include <goopt/sim/fusion_legality.hpp>
#include <goopt/sim/lower_bound.hpp>
#include <goopt/sim/memory_lower_bound.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/schedule_lower_bound.hpp>
#include <goopt/sim/simulation_result.hpp>
#include <goopt/sim/simulator.hpp>
#include <goopt/sim/user_decision.hpp>
