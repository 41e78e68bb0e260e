#pragma once
/// @file
/// @brief Operator specs: dtypes, shapes, attributes and the constexpr operator table.

#include <goopt/ops/attributes.hpp>
#include <goopt/ops/dtype.hpp>
#include <goopt/ops/kind_table.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_spec.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>
