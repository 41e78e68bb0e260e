#pragma once
/// @file
/// @brief File I/O: graphs as JSON (goopt.graph v1), Graphviz drawings, atomic file replacement.
/// The only module that includes nlohmann/json; core headers stay free of it.

#include <goopt/io/atomic_write.hpp>
#include <goopt/io/dot.hpp>
#include <goopt/io/graph_json.hpp>
