#pragma once
/// @file
/// @brief Clusters and measured cost tables as JSON ("goopt.cluster" and "goopt.cost_table", version
/// 1). Reading builds device::device_spec devices: the one place where a device's type is erased.
///
/// goopt.cluster:
/// @code
/// {"format": "goopt.cluster", "version": 1,
///  "spec": "4xV100:nvlink"}                         // either a spec string (device::parse_cluster) ...
/// {"format": "goopt.cluster", "version": 1,          // ... or devices and links
///  "devices": [{"preset": "V100"},                   // a preset, figures optionally overridden
///              {"name": "my-npu", "peak_flops": {"f32": 2e14, "f16": 8e14},  // missing dtypes: f32's
///               "mem_bandwidth": 1.2e12, "mem_capacity": 34359738368, "launch_overhead": 3e-6,
///               "count": 2}],                        // count: this many copies (default 1)
///  "links": [{"name": "bus", "bandwidth": 1.6e10, "latency": 1e-5,
///             "routes": [[0, 1], [1, 0]]}]}           // [from, to] device pairs that use the link
/// @endcode
/// goopt.cost_table: {"format": "goopt.cost_table", "version": 1,
///   "times": [{"device": "V100", "op": "matmul_3", "seconds": 1.2e-5}, ...]}

#include <goopt/cost/measured_time.hpp>
#include <goopt/cost/table_model.hpp>
#include <goopt/device/cluster.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/device/device_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/graph_json.hpp>
#include <goopt/io/json_reading.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goopt::io {

inline constexpr std::string_view cluster_format_name = "goopt.cluster";
inline constexpr std::string_view cost_table_format_name = "goopt.cost_table";

/// @brief Builds a cluster from a parsed goopt.cluster document.
/// @throws goopt::error `<source>: <JSON pointer>: <what was wrong, what was expected>`, also for NaN,
/// infinite, zero or negative figures and routes naming missing devices.
inline device::cluster<> cluster_from_json(const nlohmann::json& j, std::string_view source = "<json>");
/// Parses a goopt.cluster text; invalid JSON is reported with its byte offset.
inline device::cluster<> cluster_from_json_string(std::string_view text, std::string_view source = "<string>");
/// Reads a goopt.cluster file.
inline device::cluster<> read_cluster_file(const std::filesystem::path& path);
/// A cluster of any device type as a goopt.cluster document (devices written with all their figures).
template <device::DeviceModel D> nlohmann::ordered_json cluster_to_json(const device::cluster<D>& c);
/// Writes cluster_to_json(c) to a file atomically.
template <device::DeviceModel D>
void write_cluster_file(const std::filesystem::path& path, const device::cluster<D>& c) {
    atomic_write(path, cluster_to_json(c).dump(2) + "\n");
}

/// @brief Measured per-op times from a goopt.cost_table document into a table model.
template <class Fallback = cost::roofline_model>
cost::table_model<Fallback> cost_table_from_json(const nlohmann::json& j, std::string_view source = "<json>",
                                                 Fallback fallback = {});
/// Reads a goopt.cost_table file.
template <class Fallback = cost::roofline_model>
cost::table_model<Fallback> read_cost_table_file(const std::filesystem::path& path, Fallback fallback = {});

// ---- implementation ----

namespace detail {

/// A number at JSON pointer `at` of document `source` that must be finite and > 0 (or >= 0 when zero_ok).
inline double positive_number(const nlohmann::json& v, std::string_view source, const std::string& at,
                              bool zero_ok = false) {
    if (!v.is_number()) throw error(source, concat(at, ": is ", describe(v)), "a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (!zero_ok && x == 0))
        throw error(source, concat(at, ": is ", v.dump()), zero_ok ? "a finite number >= 0" : "a finite number > 0");
    return x;
}

inline std::size_t index_in(const nlohmann::json& v, std::string_view source, const std::string& at, std::size_t size,
                            std::string_view what) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
        throw error(source, concat(at, ": is ", describe(v)), concat("a ", what, " index"));
    const auto i = v.get<std::uint64_t>();
    if (i >= size)
        throw error(source, concat(at, ": ", what, " ", i, " does not exist (there are ", size, ")"),
                    concat("a ", what, " index below ", size));
    return static_cast<std::size_t>(i);
}

/// The device at JSON pointer `where` of document `source`.
inline device::device_spec device_from_json(const nlohmann::json& d, std::string_view source,
                                            const std::string& where) {
    if (!d.is_object()) throw error(source, concat(where, ": is ", describe(d)), "an object");
    device::device_spec s;
    bool from_preset = false;
    if (d.contains("preset")) {
        if (!d["preset"].is_string())
            throw error(source, concat(where, "/preset: is ", describe(d["preset"])), "a string");
        const auto p = device::find_preset(d["preset"].get<std::string>());
        if (!p)
            throw error(source, concat(where, "/preset: unknown device ", quote(d["preset"].get<std::string>())),
                        concat("one of ", device::preset_names()));
        s = device::describe(*p);
        from_preset = true;
    }
    for (const auto& [key, v] : d.items()) {
        const std::string at = concat(where, "/", pointer_token(key));
        if (key == "preset" || key == "count") continue;
        if (key == "name") {
            if (!v.is_string()) throw error(source, concat(at, ": is ", describe(v)), "a string");
            s.label = v.get<std::string>();
        } else if (key == "peak_flops") {
            if (v.is_number()) {
                s.peak.fill(positive_number(v, source, at));
            } else if (v.is_object()) {
                if (!from_preset && !v.contains("f32"))
                    throw error(source, concat(at, ": missing \"f32\""), "\"f32\" (other dtypes default to it)");
                if (v.contains("f32")) s.peak.fill(positive_number(v["f32"], source, concat(at, "/f32")));
                for (const auto& [tk, tv] : v.items()) {
                    const std::string dtype_at = concat(at, "/", pointer_token(tk));
                    const auto t = ops::parse_dtype(tk);
                    if (!t) throw error(source, concat(dtype_at, ": unknown dtype"), concat("one of ", dtype_list()));
                    s.peak[static_cast<std::size_t>(*t)] = positive_number(tv, source, dtype_at);
                }
            } else {
                throw error(source, concat(at, ": is ", describe(v)), "a number or an object of numbers by dtype");
            }
        } else if (key == "mem_bandwidth") {
            s.bandwidth = positive_number(v, source, at);
        } else if (key == "mem_capacity") {
            s.capacity = positive_number(v, source, at);
        } else if (key == "launch_overhead") {
            s.launch = positive_number(v, source, at, true);
        } else {
            throw error(source, concat(at, ": unknown key"),
                        "preset, name, peak_flops, mem_bandwidth, mem_capacity, launch_overhead or count");
        }
    }
    if (!from_preset)
        for (const char* k : {"peak_flops", "mem_bandwidth", "mem_capacity"})
            if (!d.contains(k))
                throw error(source, concat(where, ": missing \"", k, "\""), concat("\"", k, "\" (or a \"preset\")"));
    s.validate(concat(source, ": ", where));
    return s;
}

}  // namespace detail

inline device::cluster<> cluster_from_json(const nlohmann::json& j, std::string_view source) {
    detail::check_header(j, source, cluster_format_name);
    if (j.contains("spec")) {
        if (!j["spec"].is_string()) throw error(source, concat("/spec: is ", detail::describe(j["spec"])), "a string");
        if (j.contains("devices") || j.contains("links"))
            throw error(source, "/spec: both a spec string and devices or links",
                        "either a spec string or devices and links");
        try {
            return device::parse_cluster(j["spec"].get<std::string>());
        } catch (const error& e) {
            throw error(concat(source, ": /spec: ", e.what()));
        }
    }
    for (const auto& [key, v] : j.items())
        if (key != "format" && key != "version" && key != "devices" && key != "links")
            throw error(source, concat("/", detail::pointer_token(key), ": unknown key"),
                        "format, version, spec, devices, links");
    if (!j.contains("devices") || !j["devices"].is_array() || j["devices"].empty())
        throw error(source, "/devices", "a non-empty array of devices");
    device::cluster<> c;
    const auto& devs = j["devices"];
    for (std::size_t i = 0; i < devs.size(); ++i) {
        const std::string where = concat("/devices/", i);
        const auto d = detail::device_from_json(devs[i], source, where);
        std::size_t count = 1;
        if (devs[i].contains("count")) {
            const auto& v = devs[i]["count"];
            if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1024)
                throw error(source, concat(where, "/count: is ", detail::describe(v)), "an integer from 1 to 1024");
            count = static_cast<std::size_t>(v.get<std::int64_t>());
        }
        // the route table grows as the square of the device count: the spec strings' limit, in all
        if (c.num_devices() + count > 1024)
            throw error(source,
                        concat(where, devs[i].contains("count") ? "/count: " : ": ", c.num_devices() + count,
                               " devices in all"),
                        "at most 1024 devices (more than 1024 devices are not supported)");
        for (std::size_t k = 0; k < count; ++k) c.add_device(d);
    }
    if (j.contains("links")) {
        const auto& links = j["links"];
        if (!links.is_array()) throw error(source, concat("/links: is ", detail::describe(links)), "an array");
        for (std::size_t i = 0; i < links.size(); ++i) {
            const std::string where = concat("/links/", i);
            const auto& l = links[i];
            if (!l.is_object()) throw error(source, concat(where, ": is ", detail::describe(l)), "an object");
            for (const auto& [key, v] : l.items())
                if (key != "name" && key != "bandwidth" && key != "latency" && key != "routes")
                    throw error(source, concat(where, "/", detail::pointer_token(key), ": unknown key"),
                                "name, bandwidth, latency, routes");
            device::link lk;
            lk.name = concat("link ", i);
            if (l.contains("name")) {
                if (!l["name"].is_string()) throw error(source, concat(where, "/name"), "a string");
                lk.name = l["name"].get<std::string>();
            }
            if (!l.contains("bandwidth"))
                throw error(source, concat(where, ": missing \"bandwidth\""), "\"bandwidth\" (bytes/s)");
            lk.bandwidth = detail::positive_number(l["bandwidth"], source, concat(where, "/bandwidth"));
            lk.latency = l.contains("latency")
                             ? detail::positive_number(l["latency"], source, concat(where, "/latency"), true)
                             : 0.0;
            const auto id = c.add_link(lk);
            if (!l.contains("routes") || !l["routes"].is_array())
                throw error(source, concat(where, "/routes"), "an array of [from, to] device pairs");
            for (std::size_t r = 0; r < l["routes"].size(); ++r) {
                const auto& pr = l["routes"][r];
                const std::string at = concat(where, "/routes/", r);
                if (!pr.is_array() || pr.size() != 2) throw error(source, at, "a [from, to] pair of device indices");
                const auto a = detail::index_in(pr[0], source, concat(at, "/0"), c.num_devices(), "device");
                const auto b = detail::index_in(pr[1], source, concat(at, "/1"), c.num_devices(), "device");
                if (a == b)
                    throw error(source, concat(at, ": a route from a device to itself"),
                                "two different devices (a device needs no link to itself)");
                c.connect(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b), id);
            }
        }
    }
    return c;
}

inline device::cluster<> cluster_from_json_string(std::string_view text, std::string_view source) {
    return cluster_from_json(detail::parse_json_text(text, source), source);
}

inline device::cluster<> read_cluster_file(const std::filesystem::path& path) {
    return cluster_from_json_string(detail::read_text_file(path, "cluster"), path.string());
}

template <device::DeviceModel D> nlohmann::ordered_json cluster_to_json(const device::cluster<D>& c) {
    nlohmann::ordered_json j;
    j["format"] = cluster_format_name;
    j["version"] = 1;
    auto& devs = j["devices"] = nlohmann::ordered_json::array();
    for (const auto& d : c.devices()) {
        const device::device_spec s = device::describe(d);
        nlohmann::ordered_json x;
        x["name"] = s.label;
        auto& peak = x["peak_flops"] = nlohmann::ordered_json::object();
        for (std::size_t i = 0; i < ops::num_dtypes; ++i)
            peak[std::string(ops::name(static_cast<ops::dtype>(i)))] = s.peak[i];
        x["mem_bandwidth"] = s.bandwidth;
        x["mem_capacity"] = s.capacity;
        x["launch_overhead"] = s.launch;
        devs.push_back(std::move(x));
    }
    // routes bucketed by link in one pass over the pairs: an all-to-all cluster has n^2 links
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> routes_of(c.num_links());
    for (std::size_t a = 0; a < c.num_devices(); ++a)
        for (std::size_t b = 0; b < c.num_devices(); ++b)
            if (const auto l = c.route(a, b); a != b && l != device::no_link) routes_of[l].emplace_back(a, b);
    auto& links = j["links"] = nlohmann::ordered_json::array();
    for (std::size_t l = 0; l < c.num_links(); ++l) {
        nlohmann::ordered_json x;
        x["name"] = c.get_link(l).name;
        x["bandwidth"] = c.get_link(l).bandwidth;
        x["latency"] = c.get_link(l).latency;
        auto& routes = x["routes"] = nlohmann::ordered_json::array();
        for (const auto& [a, b] : routes_of[l]) routes.push_back({a, b});
        links.push_back(std::move(x));
    }
    return j;
}

template <class Fallback>
cost::table_model<Fallback> cost_table_from_json(const nlohmann::json& j, std::string_view source, Fallback fallback) {
    detail::check_header(j, source, cost_table_format_name);
    if (!j.contains("times") || !j["times"].is_array()) throw error(source, "/times", "an array");
    cost::table_model<Fallback> m(std::move(fallback));
    const auto& times = j["times"];
    for (std::size_t i = 0; i < times.size(); ++i) {
        const std::string where = concat("/times/", i);
        const auto& e = times[i];
        if (!e.is_object()) throw error(source, concat(where, ": is ", detail::describe(e)), "an object");
        for (const char* k : {"device", "op"})
            if (!e.contains(k) || !e[k].is_string()) throw error(source, concat(where, "/", k), "a string");
        if (!e.contains("seconds")) throw error(source, concat(where, ": missing \"seconds\""), "\"seconds\"");
        const double seconds = detail::positive_number(e["seconds"], source, concat(where, "/seconds"), true);
        if (!cost::valid_op_seconds(seconds))
            throw error(source, concat(where, "/seconds: is ", e["seconds"].dump()), cost::valid_op_seconds_text());
        m.set(e["device"].get<std::string>(), e["op"].get<std::string>(), seconds);
    }
    return m;
}

template <class Fallback>
cost::table_model<Fallback> read_cost_table_file(const std::filesystem::path& path, Fallback fallback) {
    return cost_table_from_json(detail::parse_json_text(detail::read_text_file(path, "cost table"), path.string()),
                                path.string(), std::move(fallback));
}

}  // namespace goopt::io
