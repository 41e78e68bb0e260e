#pragma once
/// @file
/// @brief File I/O: graphs, rules, clusters, cost tables, decisions, optimization results and
/// simulation traces as JSON, Graphviz drawings, SVG timelines, atomic file replacement, and the
/// one binary record (weights, checkpoints).
/// The only module that includes nlohmann/json; core headers stay free of it.

#include <goopt/io/atomic_write.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/io/cluster_json.hpp>
#include <goopt/io/cost_table_json.hpp>
#include <goopt/io/decisions_json.hpp>
#include <goopt/io/dot.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/io/graph_json_format.hpp>
#include <goopt/io/graph_json_reader.hpp>
#include <goopt/io/graph_json_writer.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/io/result_json.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/io/svg_timeline.hpp>
#include <goopt/io/svg_training_curve.hpp>
#include <goopt/io/trace_json.hpp>
