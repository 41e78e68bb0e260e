#pragma once
/// @file
/// @brief The reference interpreter: kernels for every operator kind and evaluation of whole graphs.

#include <goopt/interp/interpreter.hpp>
#include <goopt/interp/kernels.hpp>
