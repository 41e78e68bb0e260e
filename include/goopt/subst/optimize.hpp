#pragma once
/// @file
/// @brief Substitution as a pipeline stage: a graph in, a cheaper equivalent graph out, with the
/// names, layers and colocation groups of the ops it keeps, so that placement, scheduling and
/// fusion run on it as on the original. One entry point over the searches of subst/.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/subst/greedy_search.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search.hpp>
#include <goopt/subst/taso_search.hpp>

#include <span>
#include <string_view>

namespace goopt::subst {

/// Which search optimize() runs.
enum class search_method {
    greedy,  ///< greedy_search: first improvement with lookahead (the default: fastest, as good on the zoo)
    taso,    ///< taso_search: TASO's cost-ordered backtracking search (the reference)
};

/// The method named `text` ("greedy" or "taso"); goopt::error otherwise.
inline search_method parse_search_method(std::string_view text) {
    if (text == "greedy") return search_method::greedy;
    if (text == "taso") return search_method::taso;
    throw error("search method '" + std::string(text) + "': expected 'greedy' or 'taso'");
}

/// Knobs of optimize(): the method and each method's own knobs.
struct optimize_config {
    search_method method = search_method::greedy;
    greedy_config greedy = {};
    taso_config taso = {};
};

/// @brief The cheapest graph equivalent to `g` that the chosen search finds with `rules` (used in
/// both directions) and the built-in rules, costed by subst::inference_cost under `cost` on `device`.
/// @return the graph and the search statistics (costs, rewrites, seconds, which bound it hit).
template <class Cost, device::DeviceModel Device, SearchVisitor Visitor = null_search_visitor>
    requires cost::CostModel<Cost, Device>
search_result optimize(const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost,
                       const Device& device, const optimize_config& config = {}, Visitor&& visitor = {}) {
    if (config.method == search_method::taso)
        return taso_search(g, rules, cost, device, config.taso, std::forward<Visitor>(visitor));
    return greedy_search(g, rules, cost, device, config.greedy, std::forward<Visitor>(visitor));
}

}  // namespace goopt::subst
