#pragma once
/// @file
/// @brief What one simulated step reports: step time, per-device busy time and peak memory, bytes
/// moved, out-of-memory flags, and a trace of every op and transfer.

#include <goopt/graph/computation_graph.hpp>

#include <cstdint>
#include <vector>

namespace goopt::sim {

/// One op's execution: fused ops share their group's start and end.
struct op_event {
    graph::op_id op;
    std::uint32_t device;
    double start;
    double end;
};

/// One tensor copied to a device that consumes it.
struct transfer_event {
    graph::tensor_id tensor;
    std::uint32_t from;
    std::uint32_t to;
    std::uint32_t link;
    double start;
    double end;
    std::int64_t bytes;
};

struct simulation_result {
    double step_time = 0;                     ///< seconds from the first op's start to the last event's end
    std::vector<double> busy_time;            ///< per device: seconds its compute stream ran ops
    std::vector<std::int64_t> peak_memory;    ///< per device: bytes, persistent parameters included
    std::vector<std::uint8_t> out_of_memory;  ///< per device: 1 when its peak exceeds its capacity
    bool oom = false;                         ///< some device ran out of memory
    std::int64_t bytes_moved = 0;             ///< over all links
    std::size_t num_transfers = 0;
    std::vector<op_event> ops;              ///< trace in start order (empty unless recorded)
    std::vector<transfer_event> transfers;  ///< trace in start order (empty unless recorded)
};

}  // namespace goopt::sim
