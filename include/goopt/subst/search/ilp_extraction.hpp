#pragma once
// goopt: optional-edge (COIN-OR CBC: link goopt::cbc, Debian's coinor-libcbc-dev)
/// @file
/// @brief Tensat's ILP extraction (MLSys'21 §5), solved by COIN-OR CBC: the extraction of a graph
/// from an e-graph as a 0-1 program (subst::extraction_problem), started from the local search's
/// choice, so that it can only improve on it.
///
/// The program: a binary x per (class, node), at most one per class and exactly one per required
/// class (the roots, and every class each derivation of them needs: extraction_ilp::
/// required_classes); a chosen node's child classes chosen (per class and child class, the x of the
/// class's nodes that read the child sum to at most the child's); a multi-output op paid once,
/// through a continuous y >= x of each of its nodes.
///
/// Cycles, three ways (ilp_config):
/// - by default, the program covers an acyclic part of the e-graph (detail::acyclic_part): the
///   incumbent's nodes and every other node that closes no cycle with those kept before it. One
///   solve, and the incumbent stays feasible; an optimum is an optimum of that part.
/// - Tensat's order rows for every class (order_every_class): a continuous t in [0, 1] per class,
///   t_parent >= t_child + eps when the node is chosen. Exact over the whole e-graph, but large,
///   and its relaxation is weak where free views and weight-only ops close cycles.
/// - lazy cycle cuts (acyclic_part = false): solved without order rows; while the solution's
///   graph has cycles, each is cut off (not all of its nodes chosen) and the program solved again.
///
/// Measured on the superopt benchmark's models (README, "ILP extraction"): over the acyclic part,
/// CBC proves the local search's graph optimal on six of the seven models within a second, and
/// stops at the time limit on NasNet-A about 4 % above its bound. CBC's preprocessing is off: CBC
/// 2.10.8 crashed in it on SqueezeNet's program once cycle cuts were added.
///
/// Time: CBC's limit is wall-clock (min of ilp_config::seconds and the extraction's deadline); the
/// best acyclic solution found is returned, proven optimal or not (ilp_report says which).

#include <goopt/subst/search/model_egraph.hpp>

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace goopt::subst {
inline namespace search {

/// Knobs of cbc_extraction().
struct ilp_config {
    double seconds = 10;                   ///< wall-clock limit for all solves together (the deadline also bounds it)
    double relative_gap = 1e-4;            ///< stop once the solution is within this share of CBC's lower bound
    std::size_t max_solves = 8;            ///< solves, each after a solution with a cycle
    std::size_t max_variables = 1u << 20;  ///< refuse larger programs (returns no choice)
    /// How cycles are kept out: the program over an acyclic part of the e-graph (acyclic_part, one
    /// solve), or over all of it with lazy cycle cuts (false; several solves, each with a weak
    /// relaxation where free views and weight-only ops close cycles).
    bool acyclic_part = true;
    bool order_every_class = false;  ///< Tensat's order rows for every class from the first solve
};

/// What the last cbc_extraction() call did.
struct ilp_report {
    std::size_t variables = 0;    ///< columns of the last program (x, y and order variables)
    std::size_t constraints = 0;  ///< rows of the last program
    std::size_t solves = 0;       ///< CBC runs (one more per cycle found)
    std::size_t cycle_cuts = 0;   ///< cycles cut off (rows: not all of its nodes chosen)
    bool found = false;           ///< an acyclic solution was found, and returned
    bool optimal = false;         ///< the returned choice is proven optimal for the program
    bool time_limit = false;      ///< a solve stopped at the time limit
    double objective = 0;         ///< seconds, the returned choice's program cost
    double lower_bound = 0;       ///< seconds, CBC's bound on the program's optimum
    double seconds = 0;           ///< wall-clock time of the call
};

/// @brief An extraction_solver for eqsat_config::final_solver: the 0-1 program solved by CBC from
/// the incumbent choice. `report`, when given, is overwritten by each call.
inline extraction_solver cbc_extraction(const ilp_config& config = {}, std::shared_ptr<ilp_report> report = nullptr);

// ---- implementation ----

}  // namespace search

namespace detail {

/// Per class, the position in the program's node list of the node choice `ch` takes (-1: none,
/// or one the program does not offer).
inline std::vector<std::int32_t> positions(const extraction_problem& p, const extraction_choice& ch) {
    std::vector<std::int32_t> pos(p.nodes.size(), -1);
    for (std::size_t c = 0; c < p.nodes.size(); ++c)
        for (std::size_t j = 0; j < p.nodes[c].size(); ++j)
            if (p.nodes[c][j].index == ch[c]) pos[c] = static_cast<std::int32_t>(j);
    return pos;
}

/// @brief Depth-first walk from the roots over the class graph `children(c)` spans (a range of
/// child classes): `finish(c)` for each class in post-order (children first), `back_edge(stack, k)`
/// for each child k that is on the stack (a cycle from k to the stack's top); either returning
/// false stops the walk, and walk returns false.
template <class Children, class Finish, class BackEdge>
bool walk(const extraction_problem& p, Children&& children, Finish&& finish, BackEdge&& back_edge) {
    std::vector<std::uint8_t> state(p.nodes.size(), 0);        // 0 new, 1 on the stack, 2 finished
    std::vector<std::pair<std::uint32_t, std::size_t>> stack;  // (class, next child position)
    for (auto r : p.roots) {
        if (state[r]) continue;
        state[r] = 1;
        stack.emplace_back(r, 0);
        while (!stack.empty()) {
            auto& [c, next] = stack.back();
            const std::span<const std::uint32_t> kids = children(c);
            if (next < kids.size()) {
                const auto k = kids[next++];
                if (state[k] == 1 && !back_edge(stack, k)) return false;
                if (state[k] == 0) {
                    state[k] = 1;
                    stack.emplace_back(k, 0);
                }
                continue;
            }
            if (!finish(c)) return false;
            state[c] = 2;
            stack.pop_back();
        }
    }
    return true;
}

/// The child classes of the node at `pos[c]` (positions()) of class c (none without one).
inline std::span<const std::uint32_t> chosen_children(const extraction_problem& p, std::span<const std::int32_t> pos,
                                                      std::uint32_t c) {
    return pos[c] < 0 ? std::span<const std::uint32_t>{}
                      : std::span<const std::uint32_t>(p.nodes[c][static_cast<std::size_t>(pos[c])].children);
}

/// The program's columns and rows for one solve: the problem, with Tensat's order rows or not, and
/// the cycle cuts made so far.
class extraction_ilp {
public:
    /// Costs in microseconds: CBC's tolerances are absolute, and op times are 1e-6..1e-2 s.
    static constexpr double scale = 1e6;

    /// A cycle cut: (class, position in the program's node list) pairs, not all chosen together.
    using cut = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

    extraction_ilp(const extraction_problem& p, bool order_every_class, const std::vector<cut>& cuts) : p_(p) {
        const std::size_t n = p.nodes.size();
        col_of_node_.resize(n);
        std::vector<std::uint32_t> members(p.op_cost.size(), 0);
        for (std::size_t c = 0; c < n; ++c)
            for (const auto& node : p.nodes[c]) ++members[node.op];
        // x columns: an op with one node in the program carries its cost on its x
        for (std::size_t c = 0; c < n; ++c)
            for (const auto& node : p.nodes[c]) {
                col_of_node_[c].push_back(columns());
                add_column(members[node.op] == 1 ? p.op_cost[node.op] * scale : 0.0, true);
            }
        // y columns: ops with several nodes (sibling outputs, or one op in merged classes) and a cost
        y_of_op_.assign(p.op_cost.size(), -1);
        for (std::size_t o = 0; o < p.op_cost.size(); ++o)
            if (members[o] > 1 && p.op_cost[o] > 0) {
                y_of_op_[o] = static_cast<std::int32_t>(columns());
                add_column(p.op_cost[o] * scale, false);
            }
        // t columns: each class's place in a topological order (Tensat's order rows)
        t_of_class_.assign(n, -1);
        std::size_t num_ordered = 0;
        for (std::size_t c = 0; c < n; ++c)
            if (order_every_class && !p.nodes[c].empty()) {
                t_of_class_[c] = static_cast<std::int32_t>(columns());
                add_column(0.0, false);
                ++num_ordered;
            }
        const double eps = 1.0 / static_cast<double>(num_ordered + 1);
        // rows
        const std::vector<bool> required = required_classes(p);
        for (std::size_t c = 0; c < n; ++c) {
            if (p.nodes[c].empty()) continue;
            std::vector<std::pair<std::int32_t, double>> row;
            for (auto col : col_of_node_[c]) row.emplace_back(col, 1.0);
            add_row(std::move(row), required[c] ? 1.0 : 0.0, 1.0);
        }
        // a chosen node's child classes are chosen: per class c and child class k, the x of c's
        // nodes reading k sum to at most k's. Summed over c's nodes (at most one of which is
        // chosen) rather than one row per node, which is weaker: it lets the relaxation take a
        // sliver of each of c's nodes and so only a sliver of a child they share.
        std::vector<std::pair<std::uint32_t, std::int32_t>> readers;  // (child class, x of a node of c)
        for (std::size_t c = 0; c < n; ++c) {
            readers.clear();
            for (std::size_t j = 0; j < p.nodes[c].size(); ++j) {
                const auto& node = p.nodes[c][j];
                const std::int32_t x = col_of_node_[c][j];
                for (auto k : node.children) {
                    readers.emplace_back(k, x);
                    if (t_of_class_[c] >= 0 && t_of_class_[k] >= 0)  // t_c - t_k - (1 + eps) x >= -1
                        add_row({{t_of_class_[c], 1.0}, {t_of_class_[k], -1.0}, {x, -(1.0 + eps)}}, -1.0, infinity);
                }
                if (y_of_op_[node.op] >= 0) add_row({{x, 1.0}, {y_of_op_[node.op], -1.0}}, -infinity, 0.0);
            }
            std::sort(readers.begin(), readers.end());
            for (std::size_t a = 0; a < readers.size();) {
                const auto k = readers[a].first;
                std::vector<std::pair<std::int32_t, double>> row;
                for (; a < readers.size() && readers[a].first == k; ++a) row.emplace_back(readers[a].second, 1.0);
                for (auto col : col_of_node_[k]) row.emplace_back(col, -1.0);
                add_row(std::move(row), -infinity, 0.0);
            }
        }
        for (const auto& k : cuts) {
            std::vector<std::pair<std::int32_t, double>> row;
            for (auto [c, j] : k) row.emplace_back(col_of_node_[c][j], 1.0);
            add_row(std::move(row), -infinity, static_cast<double>(k.size()) - 1.0);
        }
        eps_ = eps;
    }

    std::size_t columns() const noexcept { return obj_.size(); }
    std::size_t rows() const noexcept { return row_lb_.size(); }

    /// The column values of a choice (x, y, and t by the DAG's post-order); empty when the choice
    /// has a cycle or leaves a needed class without a node of the program.
    std::vector<double> values(const extraction_choice& ch) const {
        std::vector<double> v(columns(), 0.0);
        std::size_t position = 0;
        const auto pos = positions(p_, ch);
        const bool ok = walk(
            p_, [&](std::uint32_t c) { return chosen_children(p_, pos, c); },
            [&](std::uint32_t c) {
                if (pos[c] < 0) return false;
                const auto j = static_cast<std::size_t>(pos[c]);
                const auto& node = p_.nodes[c][j];
                v[static_cast<std::size_t>(col_of_node_[c][j])] = 1.0;
                if (y_of_op_[node.op] >= 0) v[static_cast<std::size_t>(y_of_op_[node.op])] = 1.0;
                if (t_of_class_[c] >= 0)
                    v[static_cast<std::size_t>(t_of_class_[c])] = eps_ * static_cast<double>(++position);
                return true;
            },
            [](const auto&, std::uint32_t) { return false; });
        if (!ok) v.clear();
        return v;
    }

    /// The choice a solution's x columns make (per class, its node with x = 1).
    extraction_choice choice(const double* solution) const {
        extraction_choice ch(p_.nodes.size(), -1);
        for (std::size_t c = 0; c < p_.nodes.size(); ++c)
            for (std::size_t j = 0; j < p_.nodes[c].size(); ++j)
                if (solution[col_of_node_[c][j]] > 0.5) {
                    ch[c] = p_.nodes[c][j].index;
                    break;
                }
        return ch;
    }

    /// The program in CBC's column-major form.
    void load(Cbc_Model* model) const {
        std::vector<std::vector<std::pair<int, double>>> by_column(columns());
        for (std::size_t r = 0; r < rows(); ++r)
            for (auto [col, coef] : row_entries_[r])
                by_column[static_cast<std::size_t>(col)].emplace_back(static_cast<int>(r), coef);
        std::vector<CoinBigIndex> start{0};
        std::vector<int> index;
        std::vector<double> value;
        for (const auto& col : by_column) {
            for (auto [r, coef] : col) {
                index.push_back(r);
                value.push_back(coef);
            }
            start.push_back(static_cast<CoinBigIndex>(index.size()));
        }
        Cbc_loadProblem(model, static_cast<int>(columns()), static_cast<int>(rows()), start.data(), index.data(),
                        value.data(), col_lb_.data(), col_ub_.data(), obj_.data(), row_lb_.data(), row_ub_.data());
        for (std::size_t i = 0; i < columns(); ++i)
            if (integer_[i]) Cbc_setInteger(model, static_cast<int>(i));
    }

    /// Program cost (seconds) of a choice.
    double cost(const extraction_choice& ch) const {
        const auto v = values(ch);
        double total = 0;
        for (std::size_t i = 0; i < v.size(); ++i) total += v[i] * obj_[i];
        return total / scale;
    }

    /// @brief The classes every choice must take: the roots, and each class that every node of a
    /// required class needs (itself or below it). Their rows are equalities, which keeps the
    /// relaxation from taking half of each of two forms of a class that both read one input, and
    /// so only half of that input, layer after layer. Where the program's class graph has a
    /// cycle (order rows or lazy cuts), only the roots.
    static std::vector<bool> required_classes(const extraction_problem& p) {
        const std::size_t n = p.nodes.size();
        std::vector<bool> required(n, false);
        for (auto r : p.roots) required[r] = true;
        // children-first order of the classes reachable from the roots; none if there is a cycle
        std::vector<std::uint32_t> order, slot(n, UINT32_MAX);
        std::vector<std::vector<std::uint32_t>> kids(n);
        for (std::size_t c = 0; c < n; ++c)
            for (const auto& node : p.nodes[c])
                kids[c].insert(kids[c].end(), node.children.begin(), node.children.end());
        const bool acyclic = walk(
            p, [&](std::uint32_t c) { return std::span<const std::uint32_t>(kids[c]); },
            [&](std::uint32_t c) {
                slot[c] = static_cast<std::uint32_t>(order.size());
                order.push_back(c);
                return true;
            },
            [](const auto&, std::uint32_t) { return false; });
        if (!acyclic) return required;
        const std::size_t m = order.size(), words = (m + 63) / 64;
        if (m > 30000) return required;  // the sets would take over 100 MB
        // need[c]: the classes in every derivation of c (bit sets over slots)
        std::vector<std::uint64_t> need(m * words, 0), meet(words), join(words);
        for (std::size_t i = 0; i < m; ++i) {
            const auto c = order[i];
            std::fill(meet.begin(), meet.end(), ~std::uint64_t{0});
            for (const auto& node : p.nodes[c]) {
                std::fill(join.begin(), join.end(), 0);
                for (auto k : node.children)
                    for (std::size_t w = 0; w < words; ++w) join[w] |= need[slot[k] * words + w];
                for (std::size_t w = 0; w < words; ++w) meet[w] &= join[w];
            }
            if (p.nodes[c].empty()) std::fill(meet.begin(), meet.end(), 0);
            meet[i / 64] |= std::uint64_t{1} << (i % 64);
            std::copy(meet.begin(), meet.end(), need.begin() + static_cast<std::ptrdiff_t>(i * words));
        }
        for (auto r : p.roots)
            for (std::size_t i = 0; i < m; ++i)
                if (need[slot[r] * words + i / 64] >> (i % 64) & 1) required[order[i]] = true;
        return required;
    }

private:
    static constexpr double infinity = 1e30;  // CBC's infinity (COIN_DBL_MAX works as well)

    void add_column(double obj, bool integer) {
        obj_.push_back(obj);
        col_lb_.push_back(0.0);
        col_ub_.push_back(1.0);
        integer_.push_back(integer);
    }
    void add_row(std::vector<std::pair<std::int32_t, double>> entries, double lb, double ub) {
        row_entries_.push_back(std::move(entries));
        row_lb_.push_back(lb);
        row_ub_.push_back(ub);
    }

    const extraction_problem& p_;
    std::vector<std::vector<std::int32_t>> col_of_node_;
    std::vector<std::int32_t> y_of_op_, t_of_class_;
    std::vector<double> obj_, col_lb_, col_ub_, row_lb_, row_ub_;
    std::vector<bool> integer_;
    std::vector<std::vector<std::pair<std::int32_t, double>>> row_entries_;
    double eps_ = 0;
};

/// @brief `p` with only the nodes of an acyclic class graph: the incumbent's nodes first (its graph
/// is acyclic), then every other node unless its edges (its class to each child class) would close
/// a cycle with the nodes kept so far. Every choice of the result is acyclic, so the program needs
/// neither order rows nor cuts, and the incumbent stays feasible (Tensat's cycle filter, §4, here
/// at extraction rather than during exploration).
inline extraction_problem acyclic_part(const extraction_problem& p, const extraction_choice& incumbent) {
    const std::size_t n = p.nodes.size();
    extraction_problem q;
    q.op_cost = p.op_cost;
    q.roots = p.roots;
    q.nodes.resize(n);
    std::vector<std::vector<std::uint32_t>> edges(n);  // class -> child classes of the kept nodes
    std::vector<std::uint32_t> seen(n, 0);
    std::uint32_t epoch = 0;
    std::vector<std::uint32_t> todo;
    auto reaches = [&](std::uint32_t from, std::uint32_t to) {
        ++epoch;
        todo.assign(1, from);
        seen[from] = epoch;
        while (!todo.empty()) {
            const auto c = todo.back();
            todo.pop_back();
            if (c == to) return true;
            for (auto k : edges[c])
                if (seen[k] != epoch) {
                    seen[k] = epoch;
                    todo.push_back(k);
                }
        }
        return false;
    };
    auto keep = [&](std::uint32_t c, const extraction_problem::node& node) {
        for (auto k : node.children) edges[c].push_back(k);
        q.nodes[c].push_back(node);
    };
    for (std::uint32_t c = 0; c < n; ++c)
        for (const auto& node : p.nodes[c])
            if (node.index == incumbent[c]) keep(c, node);
    for (std::uint32_t c = 0; c < n; ++c)
        for (const auto& node : p.nodes[c]) {
            if (node.index == incumbent[c]) continue;
            bool closes = false;
            for (auto k : node.children) closes = closes || reaches(k, c);
            if (!closes) keep(c, node);
        }
    return q;
}

/// The cycles of the graph a choice spans from the roots, one per back edge of a depth-first
/// walk, each as the (class, program position) pairs of its chosen nodes (none: acyclic).
inline std::vector<extraction_ilp::cut> cycles_of(const extraction_problem& p, const extraction_choice& ch) {
    std::vector<extraction_ilp::cut> cycles;
    const auto pos = positions(p, ch);
    walk(
        p, [&](std::uint32_t c) { return chosen_children(p, pos, c); }, [](std::uint32_t) { return true; },
        [&](const std::vector<std::pair<std::uint32_t, std::size_t>>& stack, std::uint32_t k) {
            extraction_ilp::cut cycle;
            for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
                cycle.emplace_back(it->first, static_cast<std::uint32_t>(pos[it->first]));
                if (it->first == k) break;
            }
            cycles.push_back(std::move(cycle));
            return true;
        });
    return cycles;
}

}  // namespace detail

inline namespace search {

inline extraction_solver cbc_extraction(const ilp_config& config, std::shared_ptr<ilp_report> report) {
    return [config, report](const extraction_problem& whole, const extraction_choice& incumbent,
                            std::chrono::steady_clock::time_point deadline) -> std::optional<extraction_choice> {
        using clock = std::chrono::steady_clock;
        const auto start = clock::now();
        const auto end = std::min(deadline, start + std::chrono::duration_cast<clock::duration>(
                                                        std::chrono::duration<double>(config.seconds)));
        ilp_report r;
        const extraction_problem filtered =
            config.acyclic_part ? detail::acyclic_part(whole, incumbent) : extraction_problem{};
        const extraction_problem& p = config.acyclic_part ? filtered : whole;
        std::vector<detail::extraction_ilp::cut> cuts;
        std::optional<extraction_choice> result;
        while (r.solves < config.max_solves && clock::now() < end) {
            const detail::extraction_ilp ilp(p, config.order_every_class, cuts);
            r.variables = ilp.columns();
            r.constraints = ilp.rows();
            if (ilp.columns() > config.max_variables) break;
            std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
            ilp.load(model.get());
            Cbc_setLogLevel(model.get(), 0);
            Cbc_setParameter(model.get(), "timeMode", "elapsed");
            // CBC 2.10.8 crashes in CglPreProcess::postProcess on some of these programs once cycle
            // cuts are added (seen on SqueezeNet); the programs are small enough without it
            Cbc_setParameter(model.get(), "preprocess", "off");
            // CBC checks its clock between nodes and overshoots by a few percent: leave it that margin
            Cbc_setMaximumSeconds(model.get(),
                                  std::max(0.01, 0.95 * std::chrono::duration<double>(end - clock::now()).count()));
            Cbc_setAllowableFractionGap(model.get(), config.relative_gap);
            if (auto v = ilp.values(incumbent); !v.empty()) {
                std::vector<int> cols(v.size());
                for (std::size_t i = 0; i < v.size(); ++i) cols[i] = static_cast<int>(i);
                Cbc_setMIPStartI(model.get(), static_cast<int>(v.size()), cols.data(), v.data());
            }
            Cbc_solve(model.get());
            ++r.solves;
            r.time_limit = r.time_limit || Cbc_isSecondsLimitReached(model.get());
            const double* solution = Cbc_bestSolution(model.get());
            if (!solution) break;
            auto ch = ilp.choice(solution);
            auto cycles = detail::cycles_of(p, ch);
            if (cycles.empty()) {
                r.found = true;
                r.optimal = Cbc_isProvenOptimal(model.get()) != 0;
                r.lower_bound = Cbc_getBestPossibleObjValue(model.get()) / detail::extraction_ilp::scale;
                r.objective = ilp.cost(ch);
                result = std::move(ch);
                break;
            }
            r.cycle_cuts += cycles.size();
            for (auto& k : cycles) cuts.push_back(std::move(k));
        }
        r.seconds = std::chrono::duration<double>(clock::now() - start).count();
        if (report) *report = r;
        return result;
    };
}

}  // namespace search
}  // namespace goopt::subst
