// The decision document `goopt simulate` scores, and the "decisions" object of result.json:
//   {"format": "goopt.decisions", "version": 1,
//    "placement": [device of op 0, op 1, ...],      // required, one per op, in the graph's op order
//    "priorities": [priority of op 0, ...],         // optional: list scheduling, larger runs first
//    "fusion_groups": [group of op 0, ...]}         // optional: ops with one id >= 0 run fused; -1 alone
// A goopt.result file (what `goopt optimize --out` writes) is read through its "decisions", and
// through its "graph" when substitution rewrote the graph the decisions were made for.
#include "cli.hpp"

#include <goopt/io/cluster_json.hpp>
#include <goopt/io/graph_json.hpp>

#include <cmath>

namespace goopt::cli {

namespace {

template <class T, class Check>
std::vector<T> read_list(const nlohmann::json& j, const std::string& source, const char* key, std::size_t n,
                         std::string_view expected, Check check) {
    const auto& v = j.at(key);
    if (!v.is_array())
        throw error(source, concat("/", key, ": is ", io::detail::describe(v)), concat("an array of ", expected));
    if (v.size() != n)
        throw error(source, concat("/", key, ": has ", v.size(), " entries"), concat("one per op (", n, ")"));
    std::vector<T> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& x = v[i];
        if (!x.is_number() || !check(x)) throw error(source, concat("/", key, "/", i, ": is ", x.dump()), expected);
        out.push_back(x.get<T>());
    }
    return out;
}

}  // namespace

decision_file read_decisions_file(const std::string& path, const graph::computation_graph& given) {
    nlohmann::json j = io::detail::parse_json_text(io::detail::read_text_file(path, "decisions"), path);
    std::string source = path;
    decision_file out;
    if (j.is_object() && j.contains("format") && j["format"] == "goopt.result") {
        io::detail::check_header(j, path, "goopt.result");
        if (j.contains("graph") && !j["graph"].is_null()) {
            // written after substitution: the decisions index the ops of this graph, not the given one's
            const auto& before = j.contains("ops_before_substitution") ? j["ops_before_substitution"] : j["ops"];
            if (before.is_number_unsigned() && before.get<std::size_t>() != given.num_ops())
                throw error(path,
                            concat("/ops_before_substitution: the result was made for a graph of ", before.dump(),
                                   " ops, the graph given has ", given.num_ops()),
                            "the graph that 'goopt optimize' read");
            out.graph = io::graph_from_json(j["graph"], path, "/graph");
        }
        if (!j.contains("decisions") || !j["decisions"].is_object())
            throw error(path, "/decisions: missing", "the decisions object of a goopt.result");
        j = nlohmann::json(j["decisions"]);
        source = path + ": /decisions";
    } else {
        io::detail::check_header(j, path, "goopt.decisions");
    }
    for (const auto& [key, value] : j.items())
        if (key != "format" && key != "version" && key != "method" && key != "placement" && key != "priorities" &&
            key != "fusion_groups")
            throw error(source, concat("unknown key \"", key, "\""), "placement, priorities or fusion_groups");
    if (!j.contains("placement")) throw error(source, "/placement: missing", "a device index per op");
    const graph::computation_graph& g = out.graph ? *out.graph : given;
    const std::size_t n = g.num_ops();
    decisions& d = out.chosen;
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
    return out;
}

nlohmann::ordered_json decisions_to_json(const decisions& d) {
    nlohmann::ordered_json j{{"format", "goopt.decisions"}, {"version", 1}, {"placement", d.placement}};
    j["priorities"] = d.priorities.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.priorities);
    j["fusion_groups"] = d.fusion.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.fusion);
    return j;
}

}  // namespace goopt::cli
