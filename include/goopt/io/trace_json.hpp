#pragma once
/// @file
/// @brief A simulated step as JSON ("goopt.trace" version 1): summary per device, then every op and
/// transfer with its times, named by op and tensor names so the file reads without the graph.
/// @code
/// {"format": "goopt.trace", "version": 1, "graph": "gnmt", "cluster": "4xV100:nvlink",
///  "step_time": 0.0123, "bytes_moved": 123456, "oom": false,
///  "devices": [{"name": "V100", "busy_time": 0.01, "peak_memory": 123, "capacity": 1.7e10, "out_of_memory": false}],
///  "links": [{"name": "nvlink 0->1"}],
///  "ops": [{"op": "matmul_3", "device": 0, "start": 0.0, "end": 1e-5}],
///  "transfers": [{"tensor": "matmul_3:0", "from": 0, "to": 1, "link": 0, "start": 1e-5, "end": 2e-5, "bytes": 4096}]}
/// @endcode

#include <goopt/device/cluster.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/sim/simulation_result.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace goopt::io {

inline constexpr std::string_view trace_format_name = "goopt.trace";

/// The trace document of one simulation of `g` on `c`.
template <device::DeviceModel D>
nlohmann::ordered_json trace_to_json(const graph::computation_graph& g, const device::cluster<D>& c,
                                     const sim::simulation_result& r) {
    nlohmann::ordered_json j;
    j["format"] = trace_format_name;
    j["version"] = 1;
    j["graph"] = g.name();
    j["cluster"] = c.description();
    j["step_time"] = r.step_time;
    j["bytes_moved"] = r.bytes_moved;
    j["oom"] = r.oom;
    auto& devs = j["devices"] = nlohmann::ordered_json::array();
    for (std::size_t d = 0; d < c.num_devices(); ++d)
        devs.push_back({{"name", device::device_traits<D>::name(c.device(d))},
                        {"busy_time", d < r.busy_time.size() ? r.busy_time[d] : 0.0},
                        {"peak_memory", d < r.peak_memory.size() ? r.peak_memory[d] : 0},
                        {"capacity", static_cast<double>(c.device(d).mem_capacity())},
                        {"out_of_memory", d < r.out_of_memory.size() && r.out_of_memory[d] != 0}});
    auto& links = j["links"] = nlohmann::ordered_json::array();
    for (const auto& l : c.links()) links.push_back({{"name", l.name}});
    auto& ops = j["ops"] = nlohmann::ordered_json::array();
    for (const auto& e : r.ops)
        ops.push_back({{"op", g.get_op(e.op).name}, {"device", e.device}, {"start", e.start}, {"end", e.end}});
    auto& tr = j["transfers"] = nlohmann::ordered_json::array();
    for (const auto& e : r.transfers) {
        const auto& t = g.get_tensor(e.tensor);
        tr.push_back({{"tensor", g.get_op(t.producer).name + ":" + std::to_string(t.index)},
                      {"from", e.from},
                      {"to", e.to},
                      {"link", e.link},
                      {"start", e.start},
                      {"end", e.end},
                      {"bytes", e.bytes}});
    }
    return j;
}

/// Writes trace_to_json atomically (io::atomic_write).
template <device::DeviceModel D>
void write_trace_file(const std::filesystem::path& path, const graph::computation_graph& g, const device::cluster<D>& c,
                      const sim::simulation_result& r) {
    atomic_write(path, trace_to_json(g, c, r).dump(1) + "\n");
}

}  // namespace goopt::io
