#pragma once
/// @file
/// @brief Validation of a computation graph: everything an importer or a rewrite could get wrong,
/// reported with the op's name and what was expected.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>

#include <cmath>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace goopt::graph {

/// @brief What is wrong with the value `v` of a real attribute, or an empty string when nothing is.
/// A NaN clip bound or a NaN, infinite or negative epsilon makes every output NaN, which no model
/// means; pad and fill values may be anything, NaN included (a mask), and clip bounds may be infinite.
inline std::string real_attribute_problem(ops::attr_id id, double v) {
    if (id == ops::attr_id::epsilon && !(std::isfinite(v) && v >= 0))
        return concat("epsilon is ", v, ", expected a finite number >= 0");
    if ((id == ops::attr_id::min || id == ops::attr_id::max) && std::isnan(v))
        return concat(ops::name(id), " is NaN, expected a number (an infinite bound is allowed)");
    return {};
}

/// @brief Every problem found in g, one message each (empty when g is valid): duplicate names,
/// dangling tensor references, arity and attribute errors, cycles (naming the ops on one), shape and
/// dtype mismatches (re-inferred from the op table and compared with the stored types), bad outputs.
inline std::vector<std::string> problems(const computation_graph& g) {
    std::vector<std::string> found;
    const auto& ops = g.ops();
    const auto& tensors = g.tensors();

    std::unordered_map<std::string_view, op_id> first;
    for (op_id v = 0; v < ops.size(); ++v) {
        auto [it, fresh] = first.emplace(ops[v].name, v);
        if (!fresh) found.push_back(concat("op ", g.describe(v), ": duplicate name, also used by op ", it->second));
    }

    std::vector<bool> wired(ops.size(), true);  // inputs all refer to existing tensors
    for (op_id v = 0; v < ops.size(); ++v) {
        const std::string where = concat("op ", g.describe(v));
        for (std::size_t k = 0; k < ops[v].inputs.size(); ++k)
            if (ops[v].inputs[k] >= tensors.size()) {
                found.push_back(
                    concat(where, ": input ", k, " refers to tensor ", ops[v].inputs[k], ", which does not exist"));
                wired[v] = false;
            }
        auto attrs = ops[v].attrs;
        try {
            computation_graph::normalize_attributes(ops[v].spec(), attrs, ops[v].inputs.size(), where);
        } catch (const error& e) {
            found.push_back(e.what());
            wired[v] = false;
        }
        for (const auto& [id, value] : ops[v].attrs)
            if (const double* r = std::get_if<double>(&value))
                if (auto p = real_attribute_problem(id, *r); !p.empty()) found.push_back(concat(where, ": ", p));
    }
    for (std::size_t i = 0; i < g.outputs().size(); ++i)
        if (g.outputs()[i] >= tensors.size())
            found.push_back(concat("graph output ", i, " refers to tensor ", g.outputs()[i], ", which does not exist"));

    bool dangling = false;
    for (bool w : wired) dangling |= !w;
    if (dangling) return found;  // the checks below walk the edges

    const auto cycle = find_cycle(g);
    if (!cycle.empty()) {
        std::string names;
        for (auto v : cycle) names += concat(names.empty() ? "'" : " -> '", ops[v].name, "'");
        found.push_back(concat("graph has a cycle: ", names, " -> '", ops[cycle.front()].name, "'"));
        return found;
    }

    for (op_id v = 0; v < ops.size(); ++v) {
        const auto& s = ops[v].spec();
        try {
            const auto in = g.input_types(v);
            const auto inferred = s.infer(ops::view(in), ops[v].attrs);
            const auto stored = g.output_types(v);
            if (inferred.size() != stored.size()) {
                found.push_back(concat("op ", g.describe(v), ": has ", stored.size(),
                                       " outputs, its inputs and attributes give ", inferred.size()));
                continue;
            }
            for (std::size_t k = 0; k < stored.size(); ++k)
                if (!(inferred[k] == stored[k]))
                    found.push_back(concat("op ", g.describe(v), ": output ", k, " is recorded as ",
                                           ops::to_string(stored[k]), ", but its inputs give ",
                                           ops::to_string(inferred[k])));
        } catch (const error& e) {
            found.push_back(concat("op ", g.describe(v), ": ", e.what()));
        }
    }
    return found;
}

/// @brief Throws goopt::error with the first problem of g (and how many more there are).
inline void validate(const computation_graph& g) {
    const auto p = problems(g);
    if (p.empty()) return;
    throw error(g.name().empty() ? std::string("graph") : concat("graph '", g.name(), "'"),
                p.size() > 1 ? concat(p.front(), " (and ", p.size() - 1, " more problems)") : p.front());
}

}  // namespace goopt::graph
