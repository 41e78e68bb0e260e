#pragma once
/// @file
/// @brief The computation graph IR, its Boost.Graph adaptation, validation and generic algorithms.

#include <goopt/graph/bgl.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/concepts.hpp>
#include <goopt/graph/critical_path.hpp>
#include <goopt/graph/import.hpp>
#include <goopt/graph/levels.hpp>
#include <goopt/graph/reachability.hpp>
#include <goopt/graph/structural_hash.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/graph/training_step.hpp>
#include <goopt/graph/validate.hpp>
