#pragma once
/// @file
/// @brief What a user plugs into the substitution searches: a visitor that watches (and may stop)
/// a search, and a search itself, so that optimize() runs any search, the library's or the user's.

#include <goopt/graph/computation_graph.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search/rewrite_space.hpp>
#include <goopt/subst/search/search_result.hpp>

#include <concepts>
#include <span>
#include <type_traits>

namespace goopt::subst {
inline namespace search {

/// @brief Watches a search: `progress` is called after every step; returning false stops it.
/// Models: subst::null_search_visitor.
/// @code
///   v.progress(p) -> bool   // p: const search_progress&; false: stop now, keep the best so far
/// @endcode
template <class V>
concept SearchVisitor = requires(V& v, const search_progress& p) {
    { v.progress(p) } -> std::convertible_to<bool>;
};

/// The visitor that watches nothing and never stops a search.
struct null_search_visitor {
    bool progress(const search_progress&) const noexcept { return true; }
};
static_assert(SearchVisitor<null_search_visitor>);

}  // namespace search

namespace detail {
template <class R> inline constexpr bool is_search_result = false;
template <class B> inline constexpr bool is_search_result<search_result<B>> = true;
}  // namespace detail

inline namespace search {

/// @brief A substitution search optimize() can run: a callable from a graph, the generated rules,
/// a cost model, a device, the shared rewrite space and a visitor to a search_result of the
/// search's own bound type. Models: subst::greedy_method, subst::taso_method, subst::eqsat_method.
/// @code
///   s(g, rules, cost, device, space, visitor) -> search_result<Bound>
///   // g: const graph::computation_graph&, rules: std::span<const rule>, space: const rewrite_space&
/// @endcode
template <class S, class Cost, class Device>
concept SubstitutionSearch = requires(const S& s, const graph::computation_graph& g, std::span<const rule> rules,
                                      const Cost& cost, const Device& device, const rewrite_space& space,
                                      null_search_visitor& v) {
    requires detail::is_search_result<std::remove_cvref_t<decltype(s(g, rules, cost, device, space, v))>>;
};

}  // namespace search
}  // namespace goopt::subst
