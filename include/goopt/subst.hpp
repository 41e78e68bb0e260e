#pragma once
/// @file
/// @brief Umbrella header of the substitution generator (subst/): enumeration, fingerprints,
/// pruning, float re-check, rules, built-in rules and the searches (TASO's, greedy, equality saturation, optimize()).
/// The JSON rule file is in io/rule_json.hpp.

#include <goopt/subst/axiom.hpp>
#include <goopt/subst/axioms.hpp>
#include <goopt/subst/axioms_algebra.hpp>
#include <goopt/subst/axioms_concat_conv.hpp>
#include <goopt/subst/builtin_rules.hpp>
#include <goopt/subst/candidate_pruning.hpp>
#include <goopt/subst/check_rule.hpp>
#include <goopt/subst/egraph.hpp>
#include <goopt/subst/enumerate_graphs.hpp>
#include <goopt/subst/eqsat_search.hpp>
#include <goopt/subst/equivalence.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/generate_rules.hpp>
#include <goopt/subst/generation_store.hpp>
#include <goopt/subst/greedy_search.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/instantiate.hpp>
#include <goopt/subst/model_egraph.hpp>
#include <goopt/subst/optimize.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/pattern_matcher.hpp>
#include <goopt/subst/prover.hpp>
#include <goopt/subst/rewrite.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search.hpp>
#include <goopt/subst/taso_search.hpp>
#include <goopt/subst/world.hpp>
