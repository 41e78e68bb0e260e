#pragma once
/// @file
/// @brief Equality saturation over the e-graph of a model graph: every round matches every rule
/// of the library (single- and multi-output sources) in the whole e-graph and the built-in rules
/// in the graph extracted last, adds each proven target to the e-graph and merges it with what it
/// replaces, so that one e-graph holds every graph reachable by the rewrites so far; a cheap graph
/// is extracted at the end (subst/search/model_egraph.hpp). A rewrite whose target would read a value
/// computed from what it replaces is filtered out (TENSAT's cycle filter). Tensat (MLSys'21) §3-5.
///
/// Soundness: every merge is a rule instance proven at the matched shapes (instantiate(), as
/// apply() proves it), or, for a built-in rule made for the graph at hand, one whose sides agree
/// on the interpreter at the match (the numeric fallback the other searches use); every graph the
/// e-graph represents therefore computes what the model does.

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/egraph.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/rewriting/builtin_rules.hpp>
#include <goopt/subst/rewriting/instantiate.hpp>
#include <goopt/subst/rewriting/pattern_matcher.hpp>
#include <goopt/subst/rewriting/rewrite.hpp>
#include <goopt/subst/rewriting/soundness_cache.hpp>
#include <goopt/subst/rewriting/standard_fusions.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/search/concepts.hpp>
#include <goopt/subst/search/model_egraph.hpp>
#include <goopt/subst/search/rewrite_space.hpp>
#include <goopt/subst/search/rule_library.hpp>
#include <goopt/subst/search/search_result.hpp>

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// Why eqsat_search() stopped its rounds (the graph is extracted after them in every case).
enum class eqsat_bound {
    converged,     ///< a round added nothing: saturated
    iterations,    ///< eqsat_config::iterations rounds ran without saturating
    e_graph_size,  ///< the e-graph reached eqsat_config::max_nodes
    plateau,       ///< a round made the extracted graph less than min_round_gain cheaper
    time,          ///< the opt-in wall-clock limit (rewrite_space::seconds x saturation_share)
    stopped,       ///< the visitor asked to stop
};

inline constexpr std::string_view name(eqsat_bound b) noexcept {
    switch (b) {
        case eqsat_bound::converged:
            return "converged";
        case eqsat_bound::iterations:
            return "iterations";
        case eqsat_bound::e_graph_size:
            return "e_graph_size";
        case eqsat_bound::plateau:
            return "plateau";
        case eqsat_bound::time:
            return "time";
        case eqsat_bound::stopped:
            return "stopped";
    }
    return "?";
}

/// Knobs of eqsat_search(); Tensat's bounds are a few iterations and some 10^4 e-nodes. Every
/// budget is a count; rewrite_space::seconds adds a wall-clock limit only when set.
struct eqsat_config {
    std::size_t iterations = 4;  ///< rounds of matching and applying every rule
    /// Stop after a round whose extracted graph is less than this share cheaper than the one before
    /// (0: never). Each round matches every rule in an e-graph that grows several times over, so a
    /// round that gains nothing costs more than all before it. On the superopt benchmark's models
    /// 0.01 ends the rounds where they stopped gaining and loses no gain (docs/substitution.md).
    double min_round_gain = 0.01;
    std::size_t max_nodes = 20000;       ///< stop adding once the e-graph holds this many e-nodes
    std::size_t matches_per_rule = 256;  ///< matches of one rule applied per round
    /// Passes of the built-in rules per round, each on the graph extracted after the last, while
    /// that gets cheaper (their chains, a merge then a fusion then a join of split pieces, need one
    /// graph each).
    std::size_t builtin_passes = 1;
    /// Local-search costings of each extraction (after every round, and the final one).
    std::size_t extraction_evaluations = extraction_budget{}.evaluations;
    /// With a wall-clock limit (rewrite_space::seconds): the share of it the rounds may take; the
    /// rest is left to the final extraction.
    double saturation_share = 0.7;
    /// An exact method for the final extraction, after its local search (none by default):
    /// subst::cbc_extraction (subst/search/ilp_extraction.hpp) is Tensat's ILP extraction, bounded
    /// by its own time limit (ilp_config::seconds) and the opt-in wall-clock limit.
    extraction_solver final_solver = {};
    /// Where the graph after the standard fusions (subst::standard_fusions: batchnorm fold, bias
    /// and activation epilogues) is cheaper than the model under the search's cost (and
    /// rewrite_space::use_builtins): search a second time, from that graph (its own e-graph, an
    /// equal share of an opt-in time limit each), and return the cheaper result, so that the result is never
    /// costlier than the standard fusions alone. From the model alone, the rounds' merges of
    /// parallel convs leave extractions that fuse fewer epilogues, 3.5-12 % costlier than what a
    /// runtime does without any search on ResNet-50, ResNeXt-50 and Inception-v3; from the fused
    /// graph alone, NasRNN's parallel matmuls no longer merge (their adds are in the epilogues),
    /// 40 % gain instead of 47 % (docs/substitution.md). Not with a final_solver: an exact
    /// extraction's report (its optimum, a lower bound) must be of the e-graph the result came
    /// from, so with one only the search from the model runs.
    bool start_from_standard_fusions = true;
    /// Where the model sums matmuls (builtin_options::sum_of_products): search once more from the
    /// model with those sums joined before the first round, and return the cheapest result. An
    /// LSTM's gate x W + h U + b is a sum only there (the first round fuses its addends into the
    /// products), while joining NasRNN's sums that early made its result 5 % costlier, so neither
    /// search alone is the better one (docs/substitution.md). Not with a final_solver, as above.
    bool join_matmul_sums_first = true;
};

/// @brief Equality saturation for the cheapest graph equivalent to `g` under `rules` (and the
/// built-ins), costed by subst::inference_cost under `cost` on `device`.
/// @param visitor shown the progress after each round (graphs_seen: the e-graph's e-nodes);
/// returning false stops the rounds (the graph is still extracted).
/// @return the extracted graph when it is cheaper than `g` (else `g`; with
/// eqsat_config::start_from_standard_fusions, never costlier than `g` after the standard fusions)
/// and the statistics (of the search returned, its time that of every search run):
/// `applied` lists the rewrites whose ops the graph uses (rules_applied counts them), with the
/// eqsat_bound the rounds stopped at. (rewrite_space::max_ops_factor and matches_per_rule are not
/// used: an e-graph holds every form at once, eqsat_config::max_nodes bounds it.) Where `g` sums
/// matmuls, a further search from `g` joins those sums before its first round
/// (eqsat_config::join_matmul_sums_first), and the cheapest result of all is returned.
template <class Cost, device::DeviceModel Device, SearchVisitor Visitor = null_search_visitor>
requires cost::CostModel<Cost, Device> search_result<eqsat_bound> eqsat_search(
    const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
    const rewrite_space& space = {}, const eqsat_config& config = {}, Visitor&& visitor = {});

/// eqsat_search() as a subst::SubstitutionSearch, for optimize().
struct eqsat_method {
    eqsat_config config = {};
    template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
    requires cost::CostModel<Cost, Device> search_result<eqsat_bound>
    operator()(const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
               const rewrite_space& space, Visitor&& visitor) const {
        return eqsat_search(g, rules, cost, device, space, config, std::forward<Visitor>(visitor));
    }
};

// ---- implementation ----

}  // namespace search

namespace detail {

/// A match of a rule's source in an e-graph: per source op its e-node (output index 0), per
/// variable its class, per source output the class it was matched in.
struct e_match {
    std::vector<e_node> ops;
    std::vector<class_id> variables;
    std::vector<class_id> outputs;
};

/// Top-down e-matching of one rule's source (every output, joined on shared ops and variables),
/// over a snapshot of the e-graph: `classes_of[kind]` lists the classes holding a node of `kind`,
/// `kinds_of[c]` the kinds of class c's nodes.
class e_matcher {
public:
    using kind_set = std::bitset<ops::num_op_kinds>;
    /// `input_rank`: source_input_ranks(r), which depends on the rule only.
    e_matcher(e_graph& eg, const rule& r, const std::vector<std::vector<class_id>>& classes_of,
              std::span<const kind_set> kinds_of, std::span<const std::size_t> input_rank)
        : eg_(eg), r_(r), classes_of_(classes_of), kinds_of_(kinds_of), input_rank_(input_rank) {
        cur_.ops.assign(r.source.ops.size(), e_node{});
        bound_.assign(r.source.ops.size(), false);
        cur_.variables.assign(r.variables.size(), unbound);
        cur_.outputs.assign(r.source.outputs.size(), unbound);
    }

    void run(std::size_t limit, std::vector<e_match>& out) {
        limit_ = limit;
        out_ = &out;
        match_output(0);
    }

private:
    static constexpr class_id unbound = UINT32_MAX;

    bool same_op(const e_node& a, const e_node& b) {
        if (a.kind != b.kind || a.attrs != b.attrs || a.children.size() != b.children.size()) return false;
        for (std::size_t i = 0; i < a.children.size(); ++i)
            if (eg_.find(a.children[i]) != eg_.find(b.children[i])) return false;
        return true;
    }

    void match_output(std::size_t k) {
        if (out_->size() >= limit_) return;
        if (k == r_.source.outputs.size()) {
            // one match per set of e-nodes and of variable classes: the permutations of a symmetric rule
            // add nothing new (the nodes themselves are compared: equal hashes would drop a match)
            placement placed{cur_.ops, {}};
            std::sort(placed.first.begin(), placed.first.end());
            for (auto v : cur_.variables) placed.second.push_back(eg_.find(v));
            std::sort(placed.second.begin(), placed.second.end());
            if (placements_.insert(std::move(placed)).second) out_->push_back(cur_);
            return;
        }
        const value_ref v = r_.source.outputs[k];
        if (v.is_variable()) return;  // not a well-formed source side
        const auto kind = static_cast<std::size_t>(r_.source.ops[v.op].kind);
        for (class_id c : classes_of_[kind]) {
            if (out_->size() >= limit_) return;
            cur_.outputs[k] = eg_.find(c);
            match_value(v, cur_.outputs[k], [&] { match_output(k + 1); });
        }
        cur_.outputs[k] = unbound;
    }

    /// Binds rule value `v` to class `c`, then calls `next`; undoes what it bound.
    void match_value(value_ref v, class_id c, continuation next) {
        c = eg_.find(c);
        if (v.is_variable()) {
            auto& slot = cur_.variables[v.index];
            if (slot != unbound) {
                if (eg_.find(slot) == c) next();
                return;
            }
            if ((eg_.shape(c).rank() == 0) != (r_.variables[v.index].dims.rank() == 0)) return;
            slot = c;
            next();
            slot = unbound;
            return;
        }
        const rule_op& ro = r_.source.ops[v.op];
        // a class's nodes are sorted by kind, then output index (e_graph::rebuild): only that range;
        // matching adds no nodes, so the references stay valid
        const auto& ns = eg_.nodes(c);
        const auto [first, last] =
            std::equal_range(ns.begin(), ns.end(), std::pair{ro.kind, v.index}, kind_and_index_less{});
        for (auto it = first; it != last; ++it) {
            const e_node& n = *it;
            if (out_->size() >= limit_) return;
            if (n.children.size() != ro.inputs.size()) continue;
            if (bound_[v.op]) {
                if (same_op(cur_.ops[v.op], n)) next();
                continue;
            }
            if (!children_may_match(ro, n)) continue;
            const std::size_t rank = n.children.empty() ? 0 : eg_.shape(n.children[0]).rank();
            const std::uint64_t fit_key = (std::uint64_t{v.op} << 48) ^ (std::uint64_t{rank} << 40) ^ n.attrs;
            auto fits = attrs_fit_.find(fit_key);
            if (fits == attrs_fit_.end())
                fits = attrs_fit_
                           .emplace(fit_key, attributes_match(ro.kind, ro.attrs, input_rank_[v.op],
                                                              eg_.attributes(n.attrs), rank))
                           .first;
            if (!fits->second) continue;
            bool taken = false;  // distinct source ops match distinct ops
            for (std::size_t o = 0; o < bound_.size() && !taken; ++o) taken = bound_[o] && same_op(cur_.ops[o], n);
            if (taken) continue;
            e_node key = n;
            key.index = 0;
            cur_.ops[v.op] = std::move(key);
            bound_[v.op] = true;
            match_inputs(ro, n, 0, false, next);
            if (ops::spec(ro.kind).has(ops::commutative) && ro.inputs.size() == 2) match_inputs(ro, n, 0, true, next);
            bound_[v.op] = false;
        }
    }

    /// Whether every input of `ro` that is an op may match the child of `n` in its place: the
    /// child's class holds a node of that op's kind (in either order for a commutative op). A
    /// cheap test that spares most candidates the attribute check and the descent.
    bool children_may_match(const rule_op& ro, const e_node& n) const {
        auto fits = [&](bool swapped) {
            for (std::size_t i = 0; i < ro.inputs.size(); ++i) {
                const value_ref in = ro.inputs[i];
                if (in.is_variable()) continue;
                const class_id child = eg_.find_const(n.children[swapped ? ro.inputs.size() - 1 - i : i]);
                if (child >= kinds_of_.size() ||
                    !kinds_of_[child].test(static_cast<std::size_t>(r_.source.ops[in.op].kind)))
                    return false;
            }
            return true;
        };
        return fits(false) || (ops::spec(ro.kind).has(ops::commutative) && ro.inputs.size() == 2 && fits(true));
    }

    void match_inputs(const rule_op& ro, const e_node& n, std::size_t i, bool swapped, continuation next) {
        if (i == ro.inputs.size()) return next();
        const std::size_t gi = swapped ? ro.inputs.size() - 1 - i : i;
        match_value(ro.inputs[i], n.children[gi], [&] { match_inputs(ro, n, i + 1, swapped, next); });
    }

    /// Orders e-nodes and (kind, output index) keys by kind, then output index.
    struct kind_and_index_less {
        using key = std::pair<ops::op_kind, std::uint16_t>;
        bool operator()(const e_node& n, const key& k) const { return std::pair{n.kind, n.index} < k; }
        bool operator()(const key& k, const e_node& n) const { return k < std::pair{n.kind, n.index}; }
    };

    e_graph& eg_;
    const rule& r_;
    const std::vector<std::vector<class_id>>& classes_of_;
    std::span<const kind_set> kinds_of_;
    std::unordered_map<std::uint64_t, bool> attrs_fit_;  // (source op, rank, attribute id) -> attributes_match
    /// A match as a set: its e-nodes and its variables' classes, each sorted.
    using placement = std::pair<std::vector<e_node>, std::vector<class_id>>;
    std::set<placement> placements_;  // every match recorded
    std::span<const std::size_t> input_rank_;
    e_match cur_;
    std::vector<bool> bound_;
    std::size_t limit_ = 0;
    std::vector<e_match>* out_ = nullptr;
};

/// The rounds of eqsat_search() on one model e-graph.
class saturation {
public:
    saturation(model_egraph& m, const rewrite_space& space, const eqsat_config& config)
        : m_(m), eg_(m.egraph()), space_(space), config_(config) {}

    /// Classes holding a node of each kind, from the e-graph as it is now (rebuilt); the kinds of
    /// each class's nodes go to kinds_of().
    std::vector<std::vector<class_id>> kind_index() {
        eg_.rebuild();
        std::vector<std::vector<class_id>> by(ops::num_op_kinds);
        kinds_of_.assign(eg_.num_class_ids(), {});
        for (class_id c : eg_.classes()) {
            std::size_t last = SIZE_MAX;
            for (const auto& n : eg_.nodes(c)) {
                const auto k = static_cast<std::size_t>(n.kind);
                kinds_of_[c].set(k);
                if (k != last && (by[k].empty() || by[k].back() != c)) by[k].push_back(c);
                last = k;
            }
        }
        return by;
    }
    /// Per class id, the kinds of its nodes when kind_index() last ran.
    std::span<const e_matcher::kind_set> kinds_of() const noexcept { return kinds_of_; }

    /// @brief Records each class's height (the longest path of children below it) in the e-graph
    /// as it is now (rebuilt), so that would_cycle() skips what lies below the classes it looks for.
    void measure_heights() {
        enum : std::uint8_t { fresh, open, done };
        height_.assign(eg_.num_class_ids(), 0);
        std::vector<std::uint8_t> state(eg_.num_class_ids(), fresh);
        struct frame {
            class_id c;
            std::size_t node = 0, child = 0;
        };
        std::vector<frame> stack;
        for (class_id root : eg_.classes()) {
            if (state[root] != fresh) continue;
            stack.push_back({root});
            state[root] = open;
            while (!stack.empty()) {
                frame& f = stack.back();
                const auto& ns = eg_.nodes(f.c);
                if (f.node == ns.size()) {
                    state[f.c] = done;
                    const auto h = height_[f.c];
                    stack.pop_back();
                    if (!stack.empty()) height_[stack.back().c] = std::max(height_[stack.back().c], h + 1);
                    continue;
                }
                const auto& n = ns[f.node];
                if (f.child == n.children.size()) {
                    ++f.node;
                    f.child = 0;
                    continue;
                }
                const class_id k = eg_.find_const(n.children[f.child++]);
                if (state[k] == done) {
                    height_[f.c] = std::max(height_[f.c], height_[k] + 1);
                } else if (state[k] == fresh) {
                    state[k] = open;
                    stack.push_back({k});
                }  // open: a cycle, whose closing edge is left out
            }
        }
    }

    /// Whether a class of `outputs` is reachable from a class of `vars` through children: then a
    /// target reading `vars` cannot replace `outputs` without a cycle (TENSAT's filter). Classes
    /// lower than every output (measure_heights(); merges since may make this miss a path, which
    /// extraction, refusing every cyclic choice, still catches) are not searched.
    bool would_cycle(std::span<const class_id> vars, std::span<const class_id> outputs) {
        ++epoch_;
        if (seen_.size() < eg_.num_class_ids()) seen_.resize(eg_.num_class_ids(), 0);
        auto height = [&](class_id c) { return c < height_.size() ? height_[c] : UINT32_MAX; };
        std::vector<class_id> outs;
        std::uint32_t lowest = UINT32_MAX;
        for (auto o : outputs) {
            outs.push_back(eg_.find(o));
            lowest = std::min(lowest, height(outs.back()));
        }
        std::vector<class_id> stack;
        for (auto v : vars) stack.push_back(eg_.find(v));
        while (!stack.empty()) {
            const class_id c = stack.back();
            stack.pop_back();
            if (seen_[c] == epoch_) continue;
            seen_[c] = epoch_;
            if (std::find(outs.begin(), outs.end(), c) != outs.end()) return true;
            if (height(c) <= lowest) continue;
            for (const auto& n : eg_.nodes(c))
                for (auto k : n.children) {
                    const class_id kc = eg_.find(k);
                    if (seen_[kc] != epoch_) stack.push_back(kc);
                }
        }
        return false;
    }

    /// Adds the target of `at` (a rule proven at these shapes) reading the classes `vars` and
    /// merges its outputs with `outputs`. @return whether the e-graph changed.
    bool add_target(const rule& at, std::span<const class_id> vars, std::span<const class_id> outputs,
                    const std::string& text) {
        if (would_cycle(vars, outputs)) {
            ++filtered_;
            return false;
        }
        const std::size_t before = eg_.num_class_ids();
        m_.begin_rewrite(text);
        std::vector<std::vector<class_id>> vals;
        auto resolve = [&](value_ref v) -> class_id {
            return v.is_variable() ? eg_.find(vars[v.index]) : vals.at(v.op).at(v.index);
        };
        for (const rule_op& ro : at.target.ops) {
            const auto attrs = eg_.intern(ro.attrs);
            std::vector<class_id> children;
            for (auto v : ro.inputs) children.push_back(resolve(v));
            std::vector<class_id> outs;
            if (ro.inputs.empty() && ops::spec(ro.kind).has(ops::source)) {
                const auto c = eg_.add_constant(ro.kind, attrs);
                if (!c) return false;
                outs.push_back(*c);
            } else {
                const std::size_t n =
                    ro.num_outputs > 0 ? ro.num_outputs : ro.attrs.get_ints(ops::attr_id::sizes).size();
                for (std::size_t j = 0; j < n; ++j) {
                    const auto c = eg_.add(ro.kind, attrs, static_cast<std::uint16_t>(j), children);
                    if (!c) return false;
                    outs.push_back(*c);
                }
            }
            e_node added{ro.kind, 0, attrs, {}};
            for (auto c : children) added.children.push_back(c);
            m_.note_added(std::move(added));
            vals.push_back(std::move(outs));
        }
        bool changed = eg_.num_class_ids() != before;
        for (std::size_t k = 0; k < at.target.outputs.size(); ++k)
            changed = eg_.merge(outputs[k], resolve(at.target.outputs[k])) || changed;
        return changed;
    }

    /// Proves rule `r` (number `id` of the library) at match `em`, on the small graph the match
    /// spans, and adds its target. The decision is looked up in the search's soundness_cache under
    /// a key of the rule's number, the attributes of the matched ops and the shapes and types of the
    /// variables: all it depends on, and far cheaper to make than the spanned graph and the rule's
    /// text that the cache's own key needs.
    bool apply_match(const rule& r, std::size_t id, const e_match& em, const std::string& text) {
        std::vector<std::int64_t> key{static_cast<std::int64_t>(id)};
        for (const auto& n : em.ops) key.push_back(n.attrs);
        for (auto v : em.variables) {
            if (v == UINT32_MAX) return false;
            const auto& dims = eg_.shape(v);
            key.push_back(static_cast<std::int64_t>(m_.dtype_of(v)));
            key.push_back(static_cast<std::int64_t>(dims.rank()));
            for (std::size_t d = 0; d < dims.rank(); ++d) key.push_back(dims[d]);
        }
        // a leading NUL: never a rule's text, so never one of the cache's own keys
        std::string bytes(1, '\0');
        bytes.append(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(std::int64_t));
        const soundness_cache::decision* decided = cache_.find(bytes);
        if (!decided) {
            if (auto local = spanned(r, em)) decided = &cache_.decide(std::move(bytes), local->first, r, local->second);
        }
        const rule* sound = decided ? std::get_if<rule>(decided) : nullptr;
        if (!sound) {
            ++refused_;
            return false;
        }
        return add_target(*sound, em.variables, em.outputs, text);
    }

    /// Proves (or, failing that, checks numerically) built-in rule `b` made for graph `x` and adds it.
    bool apply_builtin(const builtin_rewrite& b, const extraction& x) {
        const rule* decided = decide_builtin(x.graph, b.rule, b.where);
        if (!decided) {
            ++refused_;
            return false;
        }
        std::vector<class_id> vars, outs;
        for (auto t : b.where.variables) vars.push_back(x.class_of_tensor.at(t));
        for (auto v : b.rule.source.outputs)
            outs.push_back(x.class_of_tensor.at(x.graph.get_op(b.where.ops.at(v.op)).outputs.at(v.index)));
        return add_target(*decided, vars, outs, to_string(b.rule));
    }

    /// @brief TASO's merge of parallel matmuls (builtin_options::merge_matmuls) as a rule of the
    /// e-graph itself: per class x and attributes, the matmuls reading x with a model weight matrix
    /// (one per class, in class order, up to max_group at a time) become one matmul of their
    /// concatenated weights and its split. Matched in the whole e-graph, not in one extracted
    /// graph, so that the extraction can choose every group merged at once (NasRNN's eight
    /// matmuls of x and of h per step). Checked as a built-in is. @return whether the e-graph changed.
    bool merge_parallel_matmuls() {
        eg_.rebuild();
        const auto constant = m_.constant_classes();
        auto model_weight = [&](class_id w) {
            const auto& ns = eg_.nodes(w);
            return eg_.shape(w).rank() == 2 &&
                   std::any_of(ns.begin(), ns.end(), [](const e_node& n) { return n.is_variable(); });
        };
        // (input class, attributes) -> the classes computing a matmul of it, and the matmul's weight
        std::map<std::pair<class_id, std::uint32_t>, std::vector<std::pair<class_id, class_id>>> groups;
        for (class_id c : eg_.classes())
            for (const auto& n : eg_.nodes(c)) {
                if (n.kind != ops::op_kind::matmul || n.children.size() != 2) continue;
                const class_id x = eg_.find(n.children[0]), w = eg_.find(n.children[1]);
                // a matmul of weights only is weight preprocessing: merging it gains nothing
                if (constant[x] || !model_weight(w)) continue;
                auto& members = groups[{x, n.attrs}];
                if (members.empty() || members.back().first != c) members.emplace_back(c, w);
            }
        bool changed = false;
        const std::size_t group = std::max<std::size_t>(space_.builtins.max_group, 2);
        for (const auto& [key, members] : groups)
            for (std::size_t first = 0; first + 1 < members.size(); first += group) {
                if (eg_.num_nodes() >= config_.max_nodes) return changed;
                const std::size_t n = std::min(group, members.size() - first);
                e_match em;
                em.variables.push_back(key.first);
                std::vector<ops::shape> weights;
                for (std::size_t i = first; i < first + n; ++i) {
                    em.ops.push_back(e_node{ops::op_kind::matmul, 0, key.second, {key.first, members[i].second}});
                    em.variables.push_back(members[i].second);
                    em.outputs.push_back(members[i].first);
                    weights.push_back(eg_.shape(members[i].second));
                }
                std::vector<class_id> placed = em.variables;
                placed.insert(placed.end(), em.outputs.begin(), em.outputs.end());
                if (!merged_.insert(std::move(placed)).second) continue;  // merged in an earlier round
                const rule r = matmul_merge_rule(eg_.shape(key.first), weights, eg_.attributes(key.second));
                auto local = spanned(r, em);
                const rule* decided = local ? decide_builtin(local->first, r, local->second) : nullptr;
                if (!decided) {
                    ++refused_;
                    continue;
                }
                changed = add_target(*decided, em.variables, em.outputs, to_string(r)) || changed;
            }
        return changed;
    }

    std::size_t refused() const noexcept { return refused_; }
    std::size_t filtered() const noexcept { return filtered_; }

private:
    /// The small graph match `em` of `r` spans (its variables as inputs) and the match in it;
    /// nullopt when a variable is unbound or an op does not build there.
    std::optional<std::pair<graph::computation_graph, match>> spanned(const rule& r, const e_match& em) {
        for (auto v : em.variables)
            if (v == UINT32_MAX) return std::nullopt;
        std::pair<graph::computation_graph, match> local{graph::computation_graph("match"), match{}};
        auto& [lg, lm] = local;
        for (std::size_t i = 0; i < r.variables.size(); ++i)
            lm.variables.push_back(
                lg.input(concat("v", i), eg_.shape(em.variables.at(i)), m_.dtype_of(em.variables.at(i))));
        std::vector<graph::output_ids> outs;
        try {
            for (std::size_t i = 0; i < r.source.ops.size(); ++i) {
                const rule_op& ro = r.source.ops[i];
                std::vector<graph::tensor_id> in;
                for (auto v : ro.inputs)
                    in.push_back(v.is_variable() ? lm.variables.at(v.index) : outs.at(v.op).at(v.index));
                outs.push_back(lg.add(ro.kind, in, eg_.attributes(em.ops.at(i).attrs), concat("s", i)));
                lm.ops.push_back(lg.producer(outs.back()[0]));
            }
        } catch (const error&) {
            return std::nullopt;
        }
        return local;
    }

    /// @brief Built-in rule `r` at match `m` of graph `g` proven, or, failing that, checked on the
    /// interpreter (the numeric evidence of soundness_options); nullptr when neither. Remembered by
    /// the soundness_cache under the rule's text and the match's signature, which later rounds
    /// meet again.
    const rule* decide_builtin(const graph::computation_graph& g, const rule& r, const match& m) {
        const auto& decided = cache_.decide(g, r, m, soundness_options{.numeric_fallback_flops = space_.check_flops});
        return std::get_if<rule>(&decided);
    }

    model_egraph& m_;
    e_graph& eg_;
    const rewrite_space& space_;
    const eqsat_config& config_;
    soundness_cache cache_;                   // every rule's decisions at the matches of every round
    std::set<std::vector<class_id>> merged_;  // matmul groups merged (input, weights, outputs)
    std::vector<std::uint32_t> seen_;
    std::vector<e_matcher::kind_set> kinds_of_;
    std::vector<std::uint32_t> height_;
    std::uint32_t epoch_ = 0;
    std::size_t refused_ = 0, filtered_ = 0;
};

}  // namespace detail

namespace detail {

/// Whether a sum_of_products instance joins matmuls (else convs).
inline bool sums_matmuls(const rule& r) {
    return std::none_of(r.source.ops.begin(), r.source.ops.end(),
                        [](const rule_op& o) { return o.kind == ops::op_kind::conv2d; });
}

/// The convs a sum_of_products instance joins.
inline std::size_t joined_convs(const rule& r) {
    return static_cast<std::size_t>(std::count_if(r.source.ops.begin(), r.source.ops.end(),
                                                  [](const rule_op& o) { return o.kind == ops::op_kind::conv2d; }));
}

/// eqsat_search()'s rounds and extraction from `start`: the model `g` itself, or `g` after the
/// standard fusions (`start_rewrites` names them). The result computes what `g` does, costs at
/// most `start_cost`, and its stats' cost_before is `g`'s (`cost_before`).
template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
requires cost::CostModel<Cost, Device> search_result<eqsat_bound> eqsat_from(
    const graph::computation_graph& start, double start_cost, const std::vector<std::string>& start_rewrites,
    double cost_before, const rule_library& library, const Cost& cost, const Device& device, const rewrite_space& space,
    const eqsat_config& config, Visitor& visitor, bool matmul_sums_at_start = false) {
    using clock = std::chrono::steady_clock;
    const wall_clock_limit limit(space.seconds);
    const auto saturation_end = limit.at(config.saturation_share);  // the end of time when there is no limit
    search_stats<eqsat_bound> stats;
    stats.cost_before = cost_before;

    model_egraph m(start);
    detail::saturation sat(m, space, config);
    // the graph extracted last: the start to begin with
    extraction x{start, std::vector<class_id>(start.num_tensors(), 0), start_cost, {}};
    for (graph::tensor_id t = 0; t < start.num_tensors(); ++t) x.class_of_tensor[t] = m.class_of(t);

    // the pool/conv commutes and the sums of convs of the start itself: a commute that sees
    // through a block's branches (from a pool whose relu its input makes redundant) needs them
    // unmerged, a sum needs its convs unmerged (WaveNet's skip convs, which the first round merges
    // with the residual convs of their inputs: 10.95 instead of 9.13 ms on V100), and the first
    // round's merges come before the first extraction; of three convs or more only, since the first
    // round joins a pair by the generated rule anyway (the pairs made NasNet-A's result 0.7 % dearer
    // on T4, 6.7222 -> 6.7488 ms). Only these: the other families on the start
    // made NasRNN's result 14 % dearer (0.709 -> 0.808 ms on T4), the sums of its matmuls 5 %
    // (0.555 -> 0.585 ms on V100), an e-graph grown early in other directions. The sums of matmuls
    // only with `matmul_sums_at_start` (eqsat_search()'s third search: an LSTM's gate x W + h U + b,
    // whose addend the first round fuses into a product, is a sum only on the start).
    if (space.use_builtins) {
        builtin_options commutes = builtin_options::none(), sums = builtin_options::none();
        commutes.pool_conv_commute = space.builtins.pool_conv_commute;
        sums.sum_of_products = space.builtins.sum_of_products;
        bool added = false;
        for (const auto& b : builtin_rules(start, commutes)) added = sat.apply_builtin(b, x) || added;
        for (const auto& b : builtin_rules(start, sums))
            if (matmul_sums_at_start || joined_convs(b.rule) >= 3) added = sat.apply_builtin(b, x) || added;
        if (added) m.egraph().rebuild();
    }
    std::optional<eqsat_bound> bound;
    double round_start_cost = x.cost;                // the extracted graph's cost before the round
    std::vector<std::string> texts(library.size());  // each rule's text, made when first applied
    std::vector<std::optional<std::vector<std::size_t>>> input_ranks(library.size());  // made when first matched
    while (!bound) {
        if (stats.steps >= config.iterations) {
            bound = eqsat_bound::iterations;
            break;
        }
        ++stats.steps;
        const auto classes_of = sat.kind_index();
        sat.measure_heights();
        std::bitset<ops::num_op_kinds> present;
        for (std::size_t k = 0; k < classes_of.size(); ++k) present.set(k, !classes_of[k].empty());
        // search first (on the e-graph as the round found it), then apply: Tensat's order
        std::vector<std::pair<std::size_t, detail::e_match>> found;
        for (std::size_t k = 0; k < library.size() && !bound; ++k) {
            if (!library.may_match(k, present)) continue;
            if (clock::now() >= saturation_end) bound = eqsat_bound::time;
            if (!input_ranks[k]) input_ranks[k] = subst::detail::source_input_ranks(library[k]);
            std::vector<detail::e_match> ms;
            detail::e_matcher(m.egraph(), library[k], classes_of, sat.kinds_of(), *input_ranks[k])
                .run(config.matches_per_rule, ms);
            for (auto& em : ms) found.emplace_back(k, std::move(em));
        }
        bool changed = false;
        for (const auto& [k, em] : found) {
            if (bound) break;
            if (m.egraph().num_nodes() >= config.max_nodes) bound = eqsat_bound::e_graph_size;
            else if (clock::now() >= saturation_end) bound = eqsat_bound::time;
            else {
                if (texts[k].empty()) texts[k] = to_string(library[k]);
                changed = sat.apply_match(library[k], k, em, texts[k]) || changed;
            }
        }
        if (!bound && space.use_builtins && space.builtins.merge_matmuls)
            changed = sat.merge_parallel_matmuls() || changed;
        m.egraph().rebuild();
        // each extraction of a round: its count, and with a wall-clock limit an eighth of the rounds' time
        const auto round_budget = [&] {
            extraction_budget b{.evaluations = config.extraction_evaluations};
            if (space.seconds > 0)
                b.deadline = std::min(
                    saturation_end,
                    clock::now() + std::chrono::duration_cast<clock::duration>(
                                       std::chrono::duration<double>(config.saturation_share * space.seconds / 8)));
            return b;
        };
        x = extract(m, cost, device, round_budget(), &x);
        // the built-ins are made for a graph: for the one extracted (builtin_passes)
        for (std::size_t pass = 0; space.use_builtins && pass < config.builtin_passes && !bound; ++pass) {
            bool added = false;
            for (const auto& b : builtin_rules(x.graph, space.builtins)) {
                if (bound) break;
                if (m.egraph().num_nodes() >= config.max_nodes) bound = eqsat_bound::e_graph_size;
                else if (clock::now() >= saturation_end) bound = eqsat_bound::time;
                else added = sat.apply_builtin(b, x) || added;
            }
            changed = changed || added;
            if (!added) break;
            m.egraph().rebuild();
            auto next = extract(m, cost, device, round_budget(), &x);
            const bool cheaper = next.cost < x.cost;
            x = std::move(next);
            if (!cheaper) break;
        }
        if (!changed && !bound) bound = eqsat_bound::converged;
        if (!bound && x.cost > (1.0 - config.min_round_gain) * round_start_cost) bound = eqsat_bound::plateau;
        round_start_cost = x.cost;
        stats.graphs_seen = m.egraph().num_nodes();
        if (!visitor.progress(
                search_progress{stats.steps, stats.graphs_seen, std::min(x.cost, stats.cost_before), limit.elapsed()}))
            bound = bound.value_or(eqsat_bound::stopped);
    }
    stats.bound = *bound;
    // the final extraction, with the time left where there is a limit
    if (!limit.over()) {
        auto final = extract(m, cost, device,
                             extraction_budget{.evaluations = config.extraction_evaluations, .deadline = limit.at(1.0)},
                             &x, config.final_solver);
        if (final.cost < x.cost) x = std::move(final);
    }
    stats.refused = sat.refused();
    stats.seconds = limit.elapsed();
    stats.applied = start_rewrites;  // the standard fusions the start took are rewrites of the result
    if (!(x.cost < start_cost)) {
        stats.rules_applied = stats.applied.size();
        stats.cost_after = start_cost;
        return {start, std::move(stats)};
    }
    for (auto a : x.rewrites) stats.applied.push_back(m.rewrite_text(a));
    stats.rules_applied = stats.applied.size();
    stats.cost_after = x.cost;
    return {std::move(x.graph), std::move(stats)};
}

}  // namespace detail

inline namespace search {

template <class Cost, device::DeviceModel Device, SearchVisitor Visitor>
requires cost::CostModel<Cost, Device> search_result<eqsat_bound> eqsat_search(
    const graph::computation_graph& g, std::span<const rule> rules, const Cost& cost, const Device& device,
    const rewrite_space& space, const eqsat_config& config, Visitor&& visitor) {
    const wall_clock_limit limit(space.seconds);
    const rule_library library(rules, space.both_directions);
    const double before = inference_cost(g, cost, device);
    // the model after the standard fusions, where they make it cheaper under this cost
    std::optional<graph::computation_graph> fused;
    standard_fusions_stats fused_stats;
    if (config.start_from_standard_fusions && space.use_builtins && !config.final_solver) {
        auto f = standard_fusions(g, space.check_flops, &fused_stats);
        if (inference_cost(f, cost, device) < before) fused = std::move(f);
    }
    // a third search where the model sums matmuls: from the model with those sums in the e-graph
    // before the first round (detail::eqsat_from's matmul_sums_at_start)
    bool matmul_sums = false;
    if (config.join_matmul_sums_first && space.use_builtins && space.builtins.sum_of_products && !config.final_solver) {
        builtin_options sums = builtin_options::none();
        sums.sum_of_products = true;
        for (const auto& b : builtin_rules(g, sums)) matmul_sums = matmul_sums || detail::sums_matmuls(b.rule);
    }
    if (!fused && !matmul_sums)
        return detail::eqsat_from(g, before, {}, before, library, cost, device, space, config, visitor);
    // Two or three searches, each with an equal share of an opt-in time limit: from the model (whose
    // e-graph still has the unfused products, which NasRNN's matmul merges need), from the standard
    // fusions' graph (which the result is then never costlier than), and from the model with its
    // sums of matmuls joined early; the cheapest result is returned.
    const int searches = 1 + (fused ? 1 : 0) + (matmul_sums ? 1 : 0);
    rewrite_space share = space;
    share.seconds = space.seconds / searches;
    auto best = detail::eqsat_from(g, before, {}, before, library, cost, device, share, config, visitor);
    auto next_share = [&](int left) {  // what the searches before left (a limit spent stays a limit: 0 is none)
        if (space.seconds > 0)
            share.seconds = std::max((space.seconds - limit.elapsed()) / left, std::numeric_limits<double>::min());
    };
    int left = searches - 1;
    if (fused) {
        next_share(left--);
        const double fused_cost = inference_cost(*fused, cost, device);
        auto from_fused = detail::eqsat_from(*fused, fused_cost, fused_stats.rules, before, library, cost, device,
                                             share, config, visitor);
        if (from_fused.stats.cost_after <= best.stats.cost_after) best = std::move(from_fused);
    }
    if (matmul_sums) {
        next_share(left--);
        auto joined = detail::eqsat_from(g, before, {}, before, library, cost, device, share, config, visitor, true);
        if (joined.stats.cost_after < best.stats.cost_after) best = std::move(joined);
    }
    best.stats.seconds = limit.elapsed();  // every search's time; the rest is the returned one's
    return best;
}

}  // namespace search
}  // namespace goopt::subst
