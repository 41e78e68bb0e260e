#pragma once
/// @file
/// @brief Everything in goopt that needs only the required dependencies.

#include <goopt/baselines.hpp>
#include <goopt/cost.hpp>
#include <goopt/device.hpp>
#include <goopt/error.hpp>
#include <goopt/graph.hpp>
#include <goopt/interp.hpp>
#include <goopt/io.hpp>
#include <goopt/models.hpp>
#include <goopt/nn.hpp>
#include <goopt/ops.hpp>
#include <goopt/rl.hpp>
#include <goopt/sim.hpp>
#include <goopt/subst.hpp>
#include <goopt/tasks.hpp>
#include <goopt/version.hpp>
