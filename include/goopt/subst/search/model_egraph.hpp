#pragma once
/// @file
/// @brief A model graph held in an e-graph (each tensor a class, each source op a variable leaf)
/// and the extraction of a cheap graph from it: TENSAT's greedy extraction by the cost of each
/// class's cheapest term, then a local search on the true cost of the extracted DAG (ops shared
/// by several outputs counted once, weight preprocessing and views free, as inference_cost counts
/// them), whose moves switch a class to another e-node together with the sibling outputs of the
/// same multi-output op (the split of a merged conv). Extraction never returns a cyclic graph: a
/// choice of e-nodes with a cycle is rejected. Tensat (MLSys'21) §4-5. An exact solver can take the
/// local search's choice further: the extraction as a 0-1 program (extraction_problem), solved by
/// an extraction_solver such as CBC's (subst/search/ilp_extraction.hpp, Tensat's ILP extraction).

#include <goopt/cost/concepts.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/egraph.hpp>
#include <goopt/subst/inference_cost.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// @brief The e-graph of a computation graph: one class per tensor, one e-node per op output
/// (e_node::index is the output index), each source op (input, weight, constant) a variable leaf.
/// Remembers which rewrite added each op, so that an extracted graph can say which rules it uses.
class model_egraph {
public:
    /// @throws goopt::error when `g` has more than 65536 source ops.
    explicit model_egraph(const graph::computation_graph& g);

    e_graph& egraph() noexcept { return eg_; }
    const e_graph& egraph() const noexcept { return eg_; }
    const graph::computation_graph& model() const noexcept { return *g_; }
    /// The class of tensor `t` of the model graph.
    class_id class_of(graph::tensor_id t) { return eg_.find(tensor_class_.at(t)); }
    /// The model's source op that variable leaf `v` stands for.
    graph::op_id source_of(std::uint16_t v) const { return sources_.at(v); }
    std::size_t num_sources() const noexcept { return sources_.size(); }
    /// Whether variable leaf `v` stands for a fixed weight or a constant (not a graph input, not a
    /// weight the model updates every step: subst::weight_only).
    bool fixed_source(std::uint16_t v) const { return fixed_.at(v); }
    /// The element type of class `c`'s values where a variable leaf says it (f32 otherwise).
    ops::dtype dtype_of(class_id c) const;
    /// @brief Per class id, whether the class has a term reading fixed weights and constants only
    /// (fixed_source): weight preprocessing, which no step runs. For the e-graph as it
    /// is (rebuild it first).
    std::vector<bool> constant_classes() const;

    /// @brief Starts recording a rewrite (the rule's text): ops added until the next call are its.
    void begin_rewrite(std::string rule_text) { applications_.push_back(std::move(rule_text)); }
    /// Records that op `n` (its e-node, any output index) was added by the current rewrite.
    void note_added(e_node n) {
        n.index = 0;
        if (!applications_.empty()) added_.emplace_back(std::move(n), applications_.size() - 1);
    }
    /// The rule text of rewrite `a`.
    const std::string& rewrite_text(std::size_t a) const { return applications_.at(a); }
    /// Ops added by rewrites: (e-node, rewrite), children as they were when added.
    const std::vector<std::pair<e_node, std::size_t>>& added() const noexcept { return added_; }

private:
    const graph::computation_graph* g_;
    std::vector<bool> fixed_;  // per variable: fixed_source
    e_graph eg_;
    std::vector<class_id> tensor_class_;
    std::vector<graph::op_id> sources_;
    std::vector<std::string> applications_;
    std::vector<std::pair<e_node, std::size_t>> added_;
};

/// A graph extracted from a model_egraph.
struct extraction {
    graph::computation_graph graph;
    std::vector<class_id> class_of_tensor;  ///< per tensor of `graph`, its class
    double cost = 0;                        ///< seconds, inference_cost of `graph`
    std::vector<std::size_t> rewrites;      ///< the rewrites (model_egraph::rewrite_text) whose ops it uses
};

/// @brief Extraction as a 0-1 program (Tensat §5): choose at most one node per class and one per
/// root class, for each chosen node a node of each of its child classes, and no cycle; minimize
/// the summed cost of the ops chosen, each op once (the sibling outputs of a multi-output op are
/// nodes of one op). Classes are indexed by class id; only classes reachable from the roots have
/// nodes. A weight-only class (a term of it reads no model input) offers only its weight-only
/// nodes, which cost nothing: that keeps the program linear and loses nothing, since weight
/// preprocessing is free wherever it is chosen.
struct extraction_problem {
    struct node {
        std::int32_t index = 0;               ///< the node's position in its e-class
        std::uint32_t op = 0;                 ///< index into op_cost
        std::vector<std::uint32_t> children;  ///< child classes, distinct, never the node's own
    };
    std::vector<std::vector<node>> nodes;  ///< per class id
    std::vector<double> op_cost;           ///< seconds per inference, per op
    std::vector<std::uint32_t> roots;      ///< classes of the model's outputs, distinct
};

/// A choice of nodes: per class id, the position of its chosen node in the e-class, or -1.
using extraction_choice = std::vector<std::int32_t>;

/// @brief An exact extraction method: given the program, a feasible choice (the local search's)
/// and a deadline, returns a choice at least as good, or nullopt when it has none in time. The
/// extraction checks what it returns (a cycle or a missing class is refused) and keeps it only
/// when it is cheaper. Made by subst::cbc_extraction (subst/search/ilp_extraction.hpp).
using extraction_solver = std::function<std::optional<extraction_choice>(
    const extraction_problem&, const extraction_choice& incumbent, std::chrono::steady_clock::time_point deadline)>;

/// @brief How long an extraction's local search may run: a count of DAG costings, so that the same
/// e-graph gives the same graph on any machine and load; a deadline only when a caller opts in.
struct extraction_budget {
    /// Costings of a whole choice (each a walk of the classes it reaches) by the local search. With
    /// this default, every eqsat row of benchmarks/superopt reaches the cost it reached when the
    /// extraction was bounded by a share of a 10 s limit instead (docs/substitution.md).
    std::size_t evaluations = 20000;
    /// Opt-in wall-clock end (also handed to the solver); none by default.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

/// @brief The cheapest graph that the extraction finds in `m` (rebuilt first) under `cost` on
/// `device`: TENSAT's greedy choice and the model's own ops as starting points, improved by
/// switching classes (with sibling outputs) while the DAG's cost drops and `budget` lasts,
/// then by `solver` when one is given and the deadline is ahead.
/// Ops of the model keep their names, layers and colocation groups; ops added by rewrites get
/// fresh names and no layer (-1). Every source op of the model is kept.
/// With `from` (a graph extracted from `m` earlier), its choice is a starting point too, so that
/// extraction after more rewrites is never worse than before.
template <class Cost, device::DeviceModel Device>
requires cost::CostModel<Cost, Device> extraction extract(model_egraph& m, const Cost& cost, const Device& device,
                                                          const extraction_budget& budget,
                                                          const extraction* from = nullptr,
                                                          const extraction_solver& solver = {});

// ---- implementation ----

inline model_egraph::model_egraph(const graph::computation_graph& g) : g_(&g), tensor_class_(g.num_tensors(), 0) {
    const auto fixed = weight_only(g);
    for (const auto i : graph::topological_order(g)) {
        const auto o = static_cast<graph::op_id>(i);
        const auto& op = g.get_op(o);
        if (op.spec().has(ops::source)) {
            if (sources_.size() > UINT16_MAX)
                throw error("eqsat_search", concat("graph '", g.name(), "': ", sources_.size() + 1, " source ops"),
                            "at most 65536 inputs, weights and constants");
            const auto v = static_cast<std::uint16_t>(sources_.size());
            sources_.push_back(o);
            fixed_.push_back(fixed[o]);
            for (auto t : op.outputs) tensor_class_[t] = eg_.add_variable(v, g.type_of(t).dims);
            continue;
        }
        const auto attrs = eg_.intern(op.attrs);
        std::vector<class_id> children;
        for (auto t : op.inputs) children.push_back(tensor_class_[t]);
        for (std::size_t k = 0; k < op.outputs.size(); ++k)
            tensor_class_[op.outputs[k]] =
                eg_.add_known(op.kind, attrs, static_cast<std::uint16_t>(k), children, g.type_of(op.outputs[k]).dims);
    }
    eg_.rebuild();
}

inline ops::dtype model_egraph::dtype_of(class_id c) const {
    for (const auto& n : eg_.nodes(c))
        if (n.is_variable()) return g_->type_of(g_->get_op(sources_.at(n.index)).outputs[0]).type;
    return ops::dtype::f32;
}

inline std::vector<bool> model_egraph::constant_classes() const {
    const auto ids = eg_.classes();
    std::vector<bool> constant(eg_.num_class_ids(), false);
    for (bool changed = true; changed;) {
        changed = false;
        for (class_id c : ids) {
            if (constant[c]) continue;
            for (const auto& n : eg_.nodes(c)) {
                bool all = n.is_variable() ? fixed_source(n.index) : true;
                for (auto ch : n.children) all = all && constant[eg_.find_const(ch)];
                if (all) {
                    constant[c] = true;
                    changed = true;
                    break;
                }
            }
        }
    }
    return constant;
}

}  // namespace search

namespace detail {

/// The extraction's state: op ids of e-nodes (siblings of one op share one), their costs, and
/// evaluation of a choice of one e-node per class as the DAG it spans.
template <class Cost, device::DeviceModel Device> class dag_extractor {
public:
    static constexpr double infinity = std::numeric_limits<double>::infinity();

    dag_extractor(model_egraph& m, const Cost& cost, const Device& device)
        : m_(m), eg_(m.egraph()), cost_(cost), device_(device) {
        eg_.rebuild();
        ids_ = eg_.classes();
        const std::size_t n = eg_.num_class_ids();
        op_of_.resize(n);
        const_class_ = m_.constant_classes();  // before the costs: an operand from weights keys as one
        for (class_id c : ids_) {
            const auto& ns = eg_.nodes(c);
            for (const auto& node : ns) {
                e_node key = node;
                key.index = 0;
                const auto [it, fresh] =
                    op_ids_.try_emplace(std::move(key), static_cast<std::uint32_t>(op_cost_.size()));
                if (fresh) {
                    op_cost_.push_back(base_cost(c, node));
                    op_members_.emplace_back();
                }
                op_of_[c].push_back(it->second);
                op_members_[it->second].emplace_back(c, static_cast<std::uint32_t>(op_of_[c].size() - 1));
            }
        }
        stamp_.assign(op_cost_.size(), 0);
        class_state_.assign(n, 0);
        class_epoch_.assign(n, 0);
        class_const_.assign(n, 0);
    }

    extraction run(const extraction_budget& budget, const extraction* from, const extraction_solver& solver);

private:
    using choice_t = extraction_choice;

    /// Per weight-only class a node that makes it so, all of whose children are weight-only too
    /// (acyclic, and free: weight preprocessing); -1 elsewhere.
    choice_t weight_only_choice() const;
    /// The 0-1 program of this e-graph (extraction_problem).
    extraction_problem problem() const;

    double base_cost(class_id c, const e_node& n);
    choice_t greedy_choice() const;
    /// The choice that gives back graph `g` whose tensors are in classes `class_of` (its op of
    /// each class the earliest in topological order, so that the choice is acyclic).
    choice_t choice_of(const graph::computation_graph& g, std::span<const class_id> class_of);
    /// Cost of the DAG `ch` spans from the model's outputs (nullopt: a cycle or a class without a
    /// choice); its classes in post-order go to `order` when given.
    std::optional<double> evaluate(const choice_t& ch, std::vector<class_id>* order = nullptr);
    extraction build(const choice_t& ch, const std::vector<class_id>& order);

    model_egraph& m_;
    e_graph& eg_;
    const Cost& cost_;
    const Device& device_;
    std::vector<class_id> ids_;
    std::unordered_map<e_node, std::uint32_t, e_node_hash> op_ids_;
    std::vector<std::vector<std::uint32_t>> op_of_;  // per class, per node: op id
    std::vector<double> op_cost_;                    // per op: time per inference unless weight-only
    std::vector<std::vector<std::pair<class_id, std::uint32_t>>> op_members_;  // per op: its (class, node)s
    std::vector<bool> const_class_;
    std::unordered_map<std::string, double> cost_memo_;
    std::vector<std::uint32_t> stamp_;
    std::uint32_t epoch_ = 0;
    std::vector<std::uint8_t> class_state_;
    std::vector<std::uint32_t> class_epoch_;
    std::vector<std::uint8_t> class_const_;
};

template <class Cost, device::DeviceModel Device>
double dag_extractor<Cost, Device>::base_cost(class_id c, const e_node& n) {
    if (n.is_variable() || n.children.empty()) return 0;
    // an operand computed from weights alone is a weight of the op's own graph, so that its key is
    // the one the extracted graph's op will have (cost::op_config_key marks it `w:`: a runtime folds it
    // and runs the op on a prepared constant, and a measured table prices it so)
    auto fixed = [&](class_id ch) { return static_cast<bool>(const_class_[eg_.find_const(ch)]); };
    std::string key = concat(static_cast<int>(n.kind), '|', n.attrs);
    for (auto ch : n.children)
        key += concat('|', fixed(ch) ? "w:" : "", eg_.shape(ch).to_string(), ':', static_cast<int>(m_.dtype_of(ch)));
    if (auto it = cost_memo_.find(key); it != cost_memo_.end()) return it->second;
    double t = infinity;
    try {
        graph::computation_graph tiny("op");
        std::vector<graph::tensor_id> in;
        for (std::size_t k = 0; k < n.children.size(); ++k) {
            const auto ch = n.children[k];
            in.push_back(fixed(ch) ? tiny.weight(concat("x", k), eg_.shape(ch), m_.dtype_of(ch))
                                   : tiny.input(concat("x", k), eg_.shape(ch), m_.dtype_of(ch)));
        }
        const auto out = tiny.add(n.kind, in, eg_.attributes(n.attrs), "op");
        const auto o = tiny.producer(out[0]);
        t = is_view(tiny, o) ? 0.0 : cost_.op_time(tiny, o, device_);
        if (!std::isfinite(t) || t < 0) t = infinity;
    } catch (const error&) {
        t = infinity;  // an op this cost model cannot cost is never chosen
    }
    (void)c;
    cost_memo_.emplace(std::move(key), t);
    return t;
}

template <class Cost, device::DeviceModel Device> auto dag_extractor<Cost, Device>::greedy_choice() const -> choice_t {
    choice_t ch(eg_.num_class_ids(), -1);
    std::vector<double> best(eg_.num_class_ids(), infinity);
    for (bool changed = true; changed;) {
        changed = false;
        for (class_id c : ids_) {
            const auto& ns = eg_.nodes(c);
            for (std::size_t i = 0; i < ns.size(); ++i) {
                bool all_const = true;
                double t = 0;
                for (auto k : ns[i].children) {
                    const auto kc = eg_.find_const(k);
                    t += best[kc];
                    all_const = all_const && const_class_[kc];
                }
                if (!all_const || ns[i].children.empty()) t += op_cost_[op_of_[c][i]];
                if (t < best[c]) {
                    best[c] = t;
                    ch[c] = static_cast<std::int32_t>(i);
                    changed = true;
                }
            }
        }
    }
    return ch;
}

template <class Cost, device::DeviceModel Device>
auto dag_extractor<Cost, Device>::choice_of(const graph::computation_graph& g, std::span<const class_id> class_of)
    -> choice_t {
    choice_t ch(eg_.num_class_ids(), -1);
    for (const auto i : graph::topological_order(g)) {
        const auto o = static_cast<graph::op_id>(i);
        const auto& op = g.get_op(o);
        for (std::size_t k = 0; k < op.outputs.size(); ++k) {
            const class_id c = eg_.find(class_of[op.outputs[k]]);
            if (ch[c] >= 0) continue;
            const auto& ns = eg_.nodes(c);
            for (std::size_t j = 0; j < ns.size() && ch[c] < 0; ++j) {
                const e_node& n = ns[j];
                if (op.spec().has(ops::source)) {
                    // a variable leaf of this source op, or a constant of its kind and attributes
                    if (n.is_variable()
                            ? m_.source_of(n.index) == o || m_.model().get_op(m_.source_of(n.index)).name == op.name
                            : n.children.empty() && n.kind == op.kind && eg_.attributes(n.attrs) == op.attrs)
                        ch[c] = static_cast<std::int32_t>(j);
                    continue;
                }
                if (n.kind != op.kind || n.index != k || n.children.size() != op.inputs.size() ||
                    !(eg_.attributes(n.attrs) == op.attrs))
                    continue;
                bool same = true;
                for (std::size_t a = 0; a < op.inputs.size() && same; ++a)
                    same = eg_.find(n.children[a]) == eg_.find(class_of[op.inputs[a]]);
                if (same) ch[c] = static_cast<std::int32_t>(j);
            }
        }
    }
    return ch;
}

template <class Cost, device::DeviceModel Device>
std::optional<double> dag_extractor<Cost, Device>::evaluate(const choice_t& ch, std::vector<class_id>* order) {
    enum : std::uint8_t { fresh, open, done };
    ++epoch_;
    // a class's state is fresh unless stamped in this evaluation (no pass over every class)
    auto state = [&](class_id c) -> std::uint8_t {
        return class_epoch_[c] == epoch_ ? class_state_[c] : std::uint8_t{fresh};
    };
    auto set_state = [&](class_id c, std::uint8_t s) {
        class_epoch_[c] = epoch_;
        class_state_[c] = s;
    };
    double total = 0;
    std::vector<std::pair<class_id, std::size_t>> stack;
    const auto& model = m_.model();
    for (auto t : model.outputs()) {
        const class_id root = m_.class_of(t);
        if (state(root) == done) continue;
        stack.emplace_back(root, 0);
        set_state(root, open);
        while (!stack.empty()) {
            auto& [c, next] = stack.back();
            if (ch[c] < 0) return std::nullopt;
            const e_node& n = eg_.nodes(c)[static_cast<std::size_t>(ch[c])];
            if (next < n.children.size()) {
                const class_id k = eg_.find(n.children[next++]);
                if (state(k) == open) return std::nullopt;  // a cycle
                if (state(k) == fresh) {
                    set_state(k, open);
                    stack.emplace_back(k, 0);
                }
                continue;
            }
            bool weight_only = n.is_variable() ? m_.fixed_source(n.index) : true;
            for (auto k : n.children) weight_only = weight_only && class_const_[eg_.find(k)];
            class_const_[c] = weight_only;
            const auto op = op_of_[c][static_cast<std::size_t>(ch[c])];
            if (stamp_[op] != epoch_) {
                stamp_[op] = epoch_;
                if (!weight_only) total += op_cost_[op];
            }
            set_state(c, done);
            if (order) order->push_back(c);
            stack.pop_back();
        }
    }
    if (!std::isfinite(total)) return std::nullopt;
    return total;
}

template <class Cost, device::DeviceModel Device>
auto dag_extractor<Cost, Device>::weight_only_choice() const -> choice_t {
    // constant_classes()'s fixpoint, remembering the node that made each class weight-only: its
    // children were weight-only before it, so the choice is acyclic
    choice_t ch(eg_.num_class_ids(), -1);
    for (bool changed = true; changed;) {
        changed = false;
        for (class_id c : ids_) {
            if (ch[c] >= 0 || !const_class_[c]) continue;
            const auto& ns = eg_.nodes(c);
            for (std::size_t i = 0; i < ns.size(); ++i) {
                bool all = ns[i].is_variable() ? m_.fixed_source(ns[i].index) : true;
                for (auto k : ns[i].children) all = all && ch[eg_.find_const(k)] >= 0;
                if (all) {
                    ch[c] = static_cast<std::int32_t>(i);
                    changed = true;
                    break;
                }
            }
        }
    }
    return ch;
}

template <class Cost, device::DeviceModel Device> extraction_problem dag_extractor<Cost, Device>::problem() const {
    extraction_problem p;
    p.nodes.resize(eg_.num_class_ids());
    p.op_cost = op_cost_;
    std::vector<bool> seen(eg_.num_class_ids(), false);
    std::vector<class_id> todo;
    for (auto t : m_.model().outputs()) {
        const class_id r = m_.class_of(t);
        if (seen[r]) continue;
        seen[r] = true;
        p.roots.push_back(r);
        todo.push_back(r);
    }
    while (!todo.empty()) {
        const class_id c = todo.back();
        todo.pop_back();
        const auto& ns = eg_.nodes(c);
        for (std::size_t i = 0; i < ns.size(); ++i) {
            extraction_problem::node n{static_cast<std::int32_t>(i), op_of_[c][i], {}};
            bool self = false, weight_only = true;
            for (auto k : ns[i].children) {
                const class_id kc = eg_.find_const(k);
                self = self || kc == c;
                weight_only = weight_only && const_class_[kc];
                if (std::find(n.children.begin(), n.children.end(), kc) == n.children.end()) n.children.push_back(kc);
            }
            if (ns[i].is_variable()) weight_only = m_.fixed_source(ns[i].index);
            if (self || (const_class_[c] && !weight_only)) continue;
            if (weight_only) p.op_cost[n.op] = 0;
            for (auto kc : n.children)
                if (!seen[kc]) {
                    seen[kc] = true;
                    todo.push_back(kc);
                }
            p.nodes[c].push_back(std::move(n));
        }
    }
    return p;
}

template <class Cost, device::DeviceModel Device>
extraction dag_extractor<Cost, Device>::run(const extraction_budget& budget, const extraction* from,
                                            const extraction_solver& solver) {
    const auto deadline = budget.deadline;
    std::size_t evaluations = 0;
    auto spent = [&] { return evaluations >= budget.evaluations || std::chrono::steady_clock::now() >= deadline; };
    choice_t current = greedy_choice();
    std::vector<class_id> model_classes;
    for (graph::tensor_id t = 0; t < m_.model().num_tensors(); ++t) model_classes.push_back(m_.class_of(t));
    std::vector<choice_t> starts{choice_of(m_.model(), model_classes)};
    if (from) starts.push_back(choice_of(from->graph, from->class_of_tensor));
    auto best = evaluate(current);
    for (auto& s : starts) {
        // classes a start leaves open take the greedy node
        for (class_id c : ids_)
            if (s[c] < 0) s[c] = current[c];
        if (auto t = evaluate(s); t && (!best || *t < *best)) {
            current = s;
            best = t;
        }
    }
    if (!best) throw error("eqsat_search", "extraction: no acyclic choice", "the model's own graph in its e-graph");
    // local search: switch one class (and the sibling outputs of its new op) while the DAG gets cheaper
    for (bool improved = true; improved && !spent();) {
        improved = false;
        std::vector<class_id> reach;
        evaluate(current, &reach);
        ++evaluations;
        for (class_id c : reach) {
            if (spent()) break;
            const auto& ns = eg_.nodes(c);
            for (std::size_t i = 0; i < ns.size(); ++i) {
                if (static_cast<std::int32_t>(i) == current[c]) continue;
                std::vector<std::pair<class_id, std::int32_t>> undo;
                for (auto [d, j] : op_members_[op_of_[c][i]]) {
                    undo.emplace_back(d, current[d]);
                    current[d] = static_cast<std::int32_t>(j);
                }
                ++evaluations;
                if (auto t = evaluate(current); t && *t < *best * (1 - 1e-9)) {
                    best = t;
                    improved = true;
                    break;
                }
                for (auto it = undo.rbegin(); it != undo.rend(); ++it) current[it->first] = it->second;
            }
        }
    }
    if (solver && std::chrono::steady_clock::now() < deadline) {
        // the program offers weight-only classes their weight-only nodes only: start from such a choice
        const auto folded = weight_only_choice();
        choice_t start = current;
        for (class_id c : ids_)
            if (folded[c] >= 0) start[c] = folded[c];
        if (auto t = evaluate(start); t && *t <= *best) {
            current = start;
            best = t;
        }
        const auto p = problem();
        if (auto proposed = solver(p, current, deadline); proposed && proposed->size() == current.size()) {
            choice_t next = current;  // classes outside the program keep their choice
            bool valid = true;
            for (class_id c : ids_) {
                if (p.nodes[c].empty()) continue;
                const auto j = (*proposed)[c];
                valid = valid && j >= -1 && j < static_cast<std::int32_t>(eg_.nodes(c).size());
                next[c] = j;
            }
            if (auto t = valid ? evaluate(next) : std::nullopt; t && *t < *best * (1 - 1e-9)) {
                current = std::move(next);
                best = t;
            }
        }
    }
    std::vector<class_id> order;
    evaluate(current, &order);
    return build(current, order);
}

template <class Cost, device::DeviceModel Device>
extraction dag_extractor<Cost, Device>::build(const choice_t& ch, const std::vector<class_id>& order) {
    const auto& g = m_.model();
    extraction x{graph::computation_graph(g.name()), {}, 0, {}};
    auto& out = x.graph;
    std::vector<graph::tensor_id> tensor_of(eg_.num_class_ids(), UINT32_MAX);
    std::unordered_map<std::uint32_t, graph::output_ids> built;  // op id -> its outputs
    std::unordered_set<std::string> names;
    for (const auto& op : g.ops()) names.insert(op.name);
    // every source op, as in the model
    std::vector<graph::tensor_id> source_tensor(g.num_ops(), UINT32_MAX);
    for (const auto i : graph::topological_order(g)) {
        const auto& op = g.get_op(static_cast<graph::op_id>(i));
        if (!op.spec().has(ops::source)) continue;
        const auto ids = out.add(op.kind, std::span<const graph::tensor_id>{}, op.attrs, op.name);
        out.set_layer(out.producer(ids[0]), op.layer);
        out.set_colocation(out.producer(ids[0]), op.colocation);
        source_tensor[i] = ids[0];
    }
    // which op of the model (first one) and which rewrite each op id comes from
    std::unordered_map<std::uint32_t, graph::op_id> model_op;
    for (const auto i : graph::topological_order(g)) {
        const auto& op = g.get_op(static_cast<graph::op_id>(i));
        if (op.spec().has(ops::source)) continue;
        e_node key{op.kind, 0, eg_.intern(op.attrs), {}};
        for (auto t : op.inputs) key.children.push_back(m_.class_of(t));
        if (auto it = op_ids_.find(key); it != op_ids_.end())
            model_op.try_emplace(it->second, static_cast<graph::op_id>(i));
    }
    std::unordered_map<std::uint32_t, std::size_t> rewrite_of;
    for (const auto& [node, a] : m_.added()) {
        e_node key = node;
        for (auto& k : key.children) k = eg_.find(k);
        if (auto it = op_ids_.find(key); it != op_ids_.end()) rewrite_of.try_emplace(it->second, a);
    }
    std::unordered_set<std::size_t> used_rewrites;
    std::size_t serial = 0;
    for (class_id c : order) {
        const e_node& n = eg_.nodes(c)[static_cast<std::size_t>(ch[c])];
        if (n.is_variable()) {
            tensor_of[c] = source_tensor[m_.source_of(n.index)];
            continue;
        }
        const auto op = op_of_[c][static_cast<std::size_t>(ch[c])];
        auto it = built.find(op);
        if (it == built.end()) {
            std::vector<graph::tensor_id> in;
            for (auto k : n.children) in.push_back(tensor_of[eg_.find(k)]);
            const auto from = model_op.find(op);
            std::string name;
            if (from != model_op.end()) {
                name = g.get_op(from->second).name;
            } else {
                do name = concat("eqsat_", ops::name(n.kind), "_", serial++);
                while (!names.insert(name).second);
            }
            const auto ids = out.add(n.kind, in, eg_.attributes(n.attrs), std::move(name));
            const auto id = out.producer(ids[0]);
            if (from != model_op.end()) {
                out.set_layer(id, g.get_op(from->second).layer);
                out.set_colocation(id, g.get_op(from->second).colocation);
            }
            if (auto r = rewrite_of.find(op); r != rewrite_of.end() && from == model_op.end())
                used_rewrites.insert(r->second);
            it = built.emplace(op, ids).first;
        }
        tensor_of[c] = it->second.at(n.index);
    }
    for (auto t : g.outputs()) out.mark_output(tensor_of[m_.class_of(t)]);
    x.class_of_tensor.assign(out.num_tensors(), 0);
    for (class_id c : order)
        if (tensor_of[c] != UINT32_MAX) x.class_of_tensor[tensor_of[c]] = c;
    for (graph::op_id o = 0; o < g.num_ops(); ++o)
        if (source_tensor[o] != UINT32_MAX) x.class_of_tensor[source_tensor[o]] = m_.class_of(g.get_op(o).outputs[0]);
    x.cost = inference_cost(out, cost_, device_);
    x.rewrites.assign(used_rewrites.begin(), used_rewrites.end());
    std::sort(x.rewrites.begin(), x.rewrites.end());
    return x;
}

}  // namespace detail

inline namespace search {

template <class Cost, device::DeviceModel Device>
requires cost::CostModel<Cost, Device> extraction extract(model_egraph& m, const Cost& cost, const Device& device,
                                                          const extraction_budget& budget, const extraction* from,
                                                          const extraction_solver& solver) {
    return detail::dag_extractor<Cost, Device>(m, cost, device).run(budget, from, solver);
}

}  // namespace search
}  // namespace goopt::subst
