#pragma once
/// @file
/// @brief What a measured op time may be: finite, at least 0, at most cost::max_op_seconds.

#include <goopt/error.hpp>

#include <cmath>
#include <string>

namespace goopt::cost {

/// The longest time a cost table may give one op (or a dispatch): an hour. No measured kernel takes
/// that long, and the bound keeps a search's sum of many times finite (two times near the largest
/// double sum to infinity, and every graph's cost would then compare equal).
inline constexpr double max_op_seconds = 3600.0;

/// Whether `s` can be a measured time.
inline bool valid_op_seconds(double s) { return std::isfinite(s) && s >= 0 && s <= max_op_seconds; }

/// What a valid time is, for error messages.
inline std::string valid_op_seconds_text() { return concat("a number of seconds in [0, ", max_op_seconds, "]"); }

}  // namespace goopt::cost
