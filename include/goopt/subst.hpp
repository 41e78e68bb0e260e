#pragma once
/// @file
/// @brief Umbrella header of the substitution module (subst/), in three parts over a shared vocabulary:
/// - subst/ itself: the world, patterns, fingerprints, rules, the e-graph and the inference cost;
/// - subst/generation/ (goopt::subst::generation): enumeration, pruning, float re-check, the axioms
///   and the prover that turn small graphs into proven rules;
/// - subst/rewriting/ (goopt::subst::rewriting): matching a rule in a graph, instantiating it at the
///   match's shapes, applying it, the built-in rules and the equivalence check of a rewritten graph;
/// - subst/search/ (goopt::subst::search): the searches over rewrites (greedy, TASO's, equality
///   saturation and its extractions) and optimize().
/// Each part is an inline namespace, so goopt::subst::search::eqsat_search is also
/// goopt::subst::eqsat_search: the parts show the structure without renaming what users call.
/// A part includes only the vocabulary and the parts listed before it. The JSON rule file is in
/// io/rule_json.hpp.

#include <goopt/subst/egraph.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/generation/axiom.hpp>
#include <goopt/subst/generation/axioms.hpp>
#include <goopt/subst/generation/axioms_algebra.hpp>
#include <goopt/subst/generation/axioms_concat_conv.hpp>
#include <goopt/subst/generation/candidate_pruning.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/generation/enumerate_graphs.hpp>
#include <goopt/subst/generation/generate_rules.hpp>
#include <goopt/subst/generation/generation_store.hpp>
#include <goopt/subst/generation/prover.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/rewriting/builtin_rules.hpp>
#include <goopt/subst/rewriting/equivalence.hpp>
#include <goopt/subst/rewriting/instantiate.hpp>
#include <goopt/subst/rewriting/pattern_matcher.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rewriting/soundness_cache.hpp>
#include <goopt/subst/rewriting/standard_fusions.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search/concepts.hpp>
#include <goopt/subst/search/eqsat_search.hpp>
#include <goopt/subst/search/greedy_search.hpp>
#include <goopt/subst/search/match_applier.hpp>
#include <goopt/subst/search/model_egraph.hpp>
#include <goopt/subst/search/optimize.hpp>
#include <goopt/subst/search/rewrite_space.hpp>
#include <goopt/subst/search/rule_library.hpp>
#include <goopt/subst/search/search_result.hpp>
#include <goopt/subst/search/taso_search.hpp>
#include <goopt/subst/world.hpp>
