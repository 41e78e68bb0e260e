#pragma once
/// @file
/// @brief Cost models: the CostModel concept, the roofline model and the measured-table model.

#include <goopt/cost/concepts.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/cost/table_model.hpp>
