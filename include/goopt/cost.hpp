#pragma once
/// @file
/// @brief Cost models: the CostModel concept, the roofline model and the measured models (per op name, per op
/// configuration).

#include <goopt/cost/concepts.hpp>
#include <goopt/cost/cost_table.hpp>
#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/measured_time.hpp>
#include <goopt/cost/measurement_environment.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/cost/recording_model.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/cost/table_model.hpp>
