// The decision document `goopt simulate` scores, and the "decisions" object of result.json:
//   {"format": "goopt.decisions", "version": 1,
//    "placement": [device of op 0, op 1, ...],      // required, one per op, in the graph's op order
//    "priorities": [priority of op 0, ...],         // optional: list scheduling, larger runs first
//    "fusion_groups": [group of op 0, ...]}         // optional: ops with one id >= 0 run fused; -1 alone
// A goopt.result file (what `goopt optimize --out` writes) is read through its "decisions".
#include "cli.hpp"

#include <goopt/io/cluster_json.hpp>

#include <cmath>

namespace goopt::cli {

namespace {

template <class T, class Check>
std::vector<T> read_list(const nlohmann::json& j, const std::string& source, const char* key, std::size_t n,
                         std::string_view expected, Check check) {
    const std::string where = source + ": /" + key;
    const auto& v = j.at(key);
    if (!v.is_array())
        throw error(where + ": is " + io::detail::describe(v) + ", expected an array of " + std::string(expected));
    if (v.size() != n)
        throw error(where + ": has " + std::to_string(v.size()) + " entries, expected one per op (" +
                    std::to_string(n) + ")");
    std::vector<T> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& x = v[i];
        if (!x.is_number() || !check(x))
            throw error(where + "/" + std::to_string(i) + ": is " + x.dump() + ", expected " + std::string(expected));
        out.push_back(x.get<T>());
    }
    return out;
}

}  // namespace

decisions read_decisions_file(const std::string& path, const graph::computation_graph& g) {
    nlohmann::json j = io::detail::parse_json_text(io::detail::read_text_file(path, "decisions"), path);
    std::string source = path;
    if (j.is_object() && j.contains("format") && j["format"] == "goopt.result") {
        io::detail::check_header(j, path, "goopt.result");
        if (!j.contains("decisions") || !j["decisions"].is_object())
            throw error(path + ": /decisions: missing, expected the decisions object of a goopt.result");
        j = nlohmann::json(j["decisions"]);
        source = path + ": /decisions";
    } else {
        io::detail::check_header(j, path, "goopt.decisions");
    }
    for (const auto& [key, value] : j.items())
        if (key != "format" && key != "version" && key != "method" && key != "placement" && key != "priorities" &&
            key != "fusion_groups")
            throw error(source + ": unknown key \"" + key + "\", expected placement, priorities or fusion_groups");
    if (!j.contains("placement")) throw error(source + ": /placement: missing, expected a device index per op");
    const std::size_t n = g.num_ops();
    decisions d;
    d.placement = read_list<sim::device_id>(
        j, source, "placement", n, "a device index (an integer >= 0)", [](const nlohmann::json& x) {
            return x.is_number_unsigned() || (x.is_number_integer() && x.get<std::int64_t>() >= 0);
        });
    if (j.contains("priorities") && !j["priorities"].is_null())
        d.priorities = read_list<double>(j, source, "priorities", n, "a finite number",
                                         [](const nlohmann::json& x) { return std::isfinite(x.get<double>()); });
    if (j.contains("fusion_groups") && !j["fusion_groups"].is_null())
        d.fusion = read_list<std::int32_t>(
            j, source, "fusion_groups", n, "a group id (an integer >= -1)", [](const nlohmann::json& x) {
                return x.is_number_integer() && x.get<std::int64_t>() >= -1 && x.get<std::int64_t>() <= INT32_MAX;
            });
    return d;
}

nlohmann::ordered_json decisions_to_json(const decisions& d) {
    nlohmann::ordered_json j{{"format", "goopt.decisions"}, {"version", 1}, {"placement", d.placement}};
    j["priorities"] = d.priorities.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.priorities);
    j["fusion_groups"] = d.fusion.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.fusion);
    return j;
}

}  // namespace goopt::cli
