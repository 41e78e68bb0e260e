#pragma once
/// @file
/// @brief The substitution generator: enumerate graphs, bucket them by fingerprint, turn equal
/// fingerprints into candidate rewrites, prune redundant candidates, re-check the rest numerically.
/// TASO (SOSP'19) §3-§4, Table 3 (the counts after each pruning stage).

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/check_rule.hpp>
#include <goopt/subst/enumerate_graphs.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/prover.hpp>
#include <goopt/subst/rule.hpp>
#include <goopt/subst/world.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace goopt::subst {

/// Knobs of rule generation.
struct generation_config {
    std::size_t max_ops = 3;         ///< k: graphs of up to k ops on each side
    std::size_t threads = 0;         ///< 0: std::thread::hardware_concurrency()
    std::uint64_t seed = 0x7a50'2019;  ///< fixed random inputs of fingerprints and of float checks
    double tolerance = 1e-9;         ///< float check, relative per element (double precision)
    /// Bounds of each proof from the axioms (subst/prover.hpp). The node and iteration bounds decide;
    /// the time bound is far above what they allow, so that a loaded machine cannot change the
    /// rules (output is the same on every run and for every thread count).
    proof_limits proof{.max_iterations = 8, .max_nodes = 1000, .max_time = std::chrono::seconds(2)};
};

/// Counts after each stage, as TASO's Table 3, and the wall time.
struct generation_stats {
    std::size_t max_ops = 0;
    std::size_t graphs = 0;            ///< graphs enumerated
    std::size_t candidates = 0;        ///< pairs of graphs with equal fingerprints
    std::size_t after_renaming = 0;    ///< distinct up to renaming the variables (and swapping sides)
    std::size_t after_subgraph = 0;    ///< and no op common to both sides
    std::size_t after_supergraph = 0;  ///< and not f(A) vs f(B) for a smaller candidate A, B
    /// and not implied by smaller pairs of its bucket through transitivity (A = B and B = C give
    /// A = C): what is verified, verified + rejected
    std::size_t after_transitivity = 0;
    std::size_t verified = 0;          ///< passed verification: kept
    std::size_t rejected = 0;          ///< failed it: reported with the reason
    std::size_t not_proven = 0;        ///< of the rejected: passed the float re-check, but no proof was found
    double seconds = 0;
};

/// A candidate that the float re-check rejected, with the reason.
struct rejected_rule {
    rule candidate;
    std::string reason;
};

/// What generate_rules returns: rules sorted by their one-line form.
struct generation_result {
    generation_stats stats;
    std::vector<rule> rules;
    std::vector<rejected_rule> rejected;
};

/// @brief Generates the rewrite rules of `w`, in stages (counts in generation_stats):
/// 1. enumerate_graphs twice, sharded over the threads: first only fingerprints (8 bytes a graph),
///    then the graphs whose fingerprint occurs twice, packed (40 bytes a graph);
/// 2. candidates: every pair of graphs in a fingerprint bucket;
/// 3. renaming: pairs equal after a shape-preserving renaming of the variables (either side first)
///    count once;
/// 4. common subgraph: a pair whose sides share an op (same kind, attributes and inputs, recursively)
///    is dropped (TASO: it is a special case of the rule with that op replaced by a variable);
/// 5. common supergraph: a pair f(A) vs f(B), every output the same op on equal values, is dropped
///    (A vs B is a smaller candidate);
/// 6. transitivity: within a bucket, the surviving pairs are taken smallest first, and a pair whose
///    two graphs are already joined by verified pairs and by the pairs dropped in 4-5 is dropped
///    (it follows from them); the bucket keeps at most one pair fewer than it has graphs;
/// 7. each pair that stage 6 takes is verified: re-checked with the float interpreter in `w` and in
///    every check world, then proven from the operator axioms (subst::prove, bounded by cfg.proof);
///    it is kept only when both succeed, else rejected with the reason, and a rejected pair joins
///    nothing.
///    The same rule found in buckets that differ by a renaming of the variables is kept once.
/// The side with more ops becomes the source; the variables are renamed to give the least text.
/// @param check_worlds the same world at other shapes (same variables, kinds and attribute choice
///        lists, as taso_world(taso_dims) gives): every surviving candidate is instantiated in each
///        and re-checked with the float interpreter; one that fails to build or to agree is rejected.
/// @throws goopt::error for a world whose ops take more than two inputs or that has more than 127
///         variables (the packed graph store's limits) or an invalid configuration.
inline generation_result generate_rules(const world& w, std::span<const world> check_worlds,
                                        const generation_config& cfg = {});

// ---- implementation ----

namespace detail {

inline constexpr std::size_t max_packed_ops = 4;

/// A pattern in 40 bytes (per op: kind, choice, outputs, inputs, two input refs), so that the
/// millions of graphs that share a fingerprint with another fit in memory.
struct packed_graph {
    std::uint64_t fingerprint = 0;
    std::array<std::uint8_t, 6 * max_packed_ops> bytes{};
    std::uint8_t num_ops = 0;
    friend bool operator<(const packed_graph& a, const packed_graph& b) {
        if (a.fingerprint != b.fingerprint) return a.fingerprint < b.fingerprint;
        if (a.num_ops != b.num_ops) return a.num_ops < b.num_ops;
        return a.bytes < b.bytes;
    }
};

inline std::uint8_t pack_ref(value_ref v) {
    return v.is_variable() ? static_cast<std::uint8_t>(0x80 | v.index) : static_cast<std::uint8_t>(v.op * 8 + v.index);
}
inline value_ref unpack_ref(std::uint8_t b) {
    if (b & 0x80) return {variable_op, static_cast<std::uint16_t>(b & 0x7f)};
    return {static_cast<std::uint16_t>(b / 8), static_cast<std::uint16_t>(b % 8)};
}

inline packed_graph pack(const pattern& p, std::uint64_t fingerprint) {
    packed_graph g;
    g.fingerprint = fingerprint;
    g.num_ops = static_cast<std::uint8_t>(p.ops.size());
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
        const auto& o = p.ops[i];
        auto* b = &g.bytes[6 * i];
        b[0] = static_cast<std::uint8_t>(o.kind);
        b[1] = static_cast<std::uint8_t>(o.choice);
        b[2] = static_cast<std::uint8_t>(o.num_outputs);
        b[3] = static_cast<std::uint8_t>(o.inputs.size());
        for (std::size_t k = 0; k < o.inputs.size(); ++k) b[4 + k] = pack_ref(o.inputs[k]);
    }
    return g;
}

inline pattern unpack(const packed_graph& g) {
    pattern p;
    for (std::size_t i = 0; i < g.num_ops; ++i) {
        const auto* b = &g.bytes[6 * i];
        pattern_op o{static_cast<ops::op_kind>(b[0]), b[1], b[2], {}};
        for (std::size_t k = 0; k < b[3]; ++k) o.inputs.push_back(unpack_ref(b[4 + k]));
        p.ops.push_back(std::move(o));
    }
    p.outputs = unread_values(p);
    return p;
}

/// Every renaming of the variables that keeps shapes: the product of the permutations within each
/// group of equally shaped variables.
inline std::vector<std::vector<std::uint16_t>> shape_preserving_renamings(const world& w) {
    const std::size_t n = w.variables.size();
    std::vector<std::vector<std::uint16_t>> groups;
    std::vector<bool> done(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        std::vector<std::uint16_t> g;
        for (std::size_t j = i; j < n; ++j)
            if (!done[j] && w.variables[j].dims == w.variables[i].dims) {
                g.push_back(static_cast<std::uint16_t>(j));
                done[j] = true;
            }
        groups.push_back(std::move(g));
    }
    std::vector<std::vector<std::uint16_t>> perms{std::vector<std::uint16_t>(n)};
    for (std::size_t i = 0; i < n; ++i) perms[0][i] = static_cast<std::uint16_t>(i);
    for (const auto& g : groups) {
        std::vector<std::vector<std::uint16_t>> next;
        for (const auto& base : perms) {
            auto images = g;
            do {
                auto p = base;
                for (std::size_t k = 0; k < g.size(); ++k) p[g[k]] = images[k];
                next.push_back(std::move(p));
            } while (std::next_permutation(images.begin(), images.end()));
        }
        perms = std::move(next);
    }
    return perms;
}

/// Structural key of every op of `p` with variable v named rename[v]; commutative inputs in key
/// order, so the key of a term does not depend on how its commutative ops list their inputs.
inline void op_keys(const world& w, const pattern& p, std::span<const std::uint16_t> rename,
                    std::vector<std::uint64_t>& keys) {
    keys.clear();
    auto value_key = [&](value_ref v) {
        return v.is_variable() ? mix(0x1000 + rename[v.index]) : mix(keys[v.op] ^ (0x51ed + v.index));
    };
    for (const auto& o : p.ops) {
        std::uint64_t h = mix(static_cast<std::uint64_t>(o.kind) * 4096 + o.choice);
        boost::container::small_vector<std::uint64_t, 2> in;
        for (auto v : o.inputs) in.push_back(value_key(v));
        if (w.one_order_for_commutative && ops::spec(o.kind).has(ops::commutative)) std::sort(in.begin(), in.end());
        for (auto k : in) h = mix(h ^ k);
        keys.push_back(h);
    }
}

inline std::uint64_t structure_hash(const world& w, const pattern& p, std::span<const std::uint16_t> rename,
                                    std::vector<std::uint64_t>& keys) {
    op_keys(w, p, rename, keys);
    std::vector<std::uint64_t> outs;
    for (auto v : p.outputs) outs.push_back(mix(keys[v.op] ^ (0x51ed + v.index)));
    return combine_unordered(outs);
}

inline std::uint64_t unordered_pair_hash(std::uint64_t a, std::uint64_t b) {
    if (a > b) std::swap(a, b);
    return mix(a * 0x9e3779b97f4a7c15ULL + mix(b));
}

/// Runs f(t) on `n` threads and joins them; an exception in any is rethrown (the first by thread).
template <class F> void parallel(std::size_t n, F f) {
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> ts;
    for (std::size_t t = 0; t < n; ++t)
        ts.emplace_back([&, t] {
            try {
                f(t);
            } catch (...) {
                errors[t] = std::current_exception();
            }
        });
    for (auto& t : ts) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

/// Output hashes of `p` at the fingerprint inputs, per op output.
inline std::vector<std::vector<std::uint64_t>> value_hashes(const world& w, const pattern& p,
                                                            std::span<const mod_tensor> vars) {
    std::vector<std::vector<std::uint64_t>> h;
    for (const auto& outs : evaluate_pattern(w, p, vars)) {
        h.emplace_back();
        for (const auto& t : outs) h.back().push_back(value_hash(t));
    }
    return h;
}

using value_hash_table = std::vector<std::vector<std::uint64_t>>;

/// Value hash of `v` in a graph whose op outputs hash to `h`.
inline std::uint64_t hash_of(const value_hash_table& h, std::span<const mod_tensor> vars, value_ref v) {
    return v.is_variable() ? value_hash(vars[v.index]) : h[v.op][v.index];
}

/// Disjoint sets of the graphs of one bucket: which are already known equal.
class union_find {
public:
    explicit union_find(std::size_t n) : parent_(n) {
        for (std::size_t i = 0; i < n; ++i) parent_[i] = static_cast<std::uint32_t>(i);
    }
    std::uint32_t find(std::uint32_t x) {
        while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
        return x;
    }
    void unite(std::uint32_t a, std::uint32_t b) {
        a = find(a);
        b = find(b);
        if (a != b) parent_[std::max(a, b)] = std::min(a, b);
    }

private:
    std::vector<std::uint32_t> parent_;
};

/// Whether two sorted key lists share a key (the two graphs share an op: common subgraph).
inline bool share_a_key(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
    for (std::size_t x = 0, y = 0; x < a.size() && y < b.size();) {
        if (a[x] == b[y]) return true;
        if (a[x] < b[y]) ++x;
        else ++y;
    }
    return false;
}

/// `b`'s outputs in the order of `a`'s equal-valued ones; nullopt when the output values differ
/// (equal fingerprints make the output multisets equal unless the 64-bit hash collided).
inline std::optional<std::vector<value_ref>> align_outputs(const pattern& a, const value_hash_table& ha, const pattern& b,
                                                          const value_hash_table& hb, std::span<const mod_tensor> vars) {
    std::vector<value_ref> bo;
    std::vector<bool> used(b.outputs.size(), false);
    for (auto va : a.outputs)
        for (std::size_t k = 0; k < b.outputs.size(); ++k)
            if (!used[k] && hash_of(hb, vars, b.outputs[k]) == hash_of(ha, vars, va)) {
                used[k] = true;
                bo.push_back(b.outputs[k]);
                break;
            }
    if (bo.size() != a.outputs.size() || bo.size() != b.outputs.size()) return std::nullopt;
    return bo;
}

/// Common supergraph: every output pair is the same op applied to equal values, f(A) vs f(B); then
/// A vs B is a smaller candidate that implies this one.
inline bool common_supergraph(const world& w, const pattern& a, const value_hash_table& ha, const pattern& b,
                              const value_hash_table& hb, const std::vector<value_ref>& b_outputs,
                              std::span<const mod_tensor> vars) {
    for (std::size_t k = 0; k < a.outputs.size(); ++k) {
        if (a.outputs[k].is_variable() || b_outputs[k].is_variable()) return false;
        const auto& oa = a.ops[a.outputs[k].op];
        const auto& ob = b.ops[b_outputs[k].op];
        if (oa.kind != ob.kind || oa.choice != ob.choice || a.outputs[k].index != b_outputs[k].index ||
            oa.inputs.size() != ob.inputs.size())
            return false;
        boost::container::small_vector<std::uint64_t, 2> ia, ib;
        for (auto v : oa.inputs) ia.push_back(hash_of(ha, vars, v));
        for (auto v : ob.inputs) ib.push_back(hash_of(hb, vars, v));
        if (w.one_order_for_commutative && ops::spec(oa.kind).has(ops::commutative)) {
            std::sort(ia.begin(), ia.end());
            std::sort(ib.begin(), ib.end());
        }
        if (ia != ib) return false;
    }
    return true;
}

/// A candidate pair within a bucket, ordered so that smaller rules come first.
struct edge {
    std::size_t max_ops, total_ops;
    std::uint64_t canon;
    std::uint32_t source, target;  // the source has at least as many ops as the target
    friend bool operator<(const edge& x, const edge& y) {
        return std::tie(x.max_ops, x.total_ops, x.canon, x.source, x.target) <
               std::tie(y.max_ops, y.total_ops, y.canon, y.source, y.target);
    }
};

/// Prefix of the reason of a rule that passed the float re-check but could not be proven.
inline constexpr std::string_view not_proven_reason = "not proven from the axioms: ";

/// The rule `source => target` spelled with the renaming of its variables that gives the least
/// text, and why it fails verification (nullopt: verified): the float re-check in every check world
/// and in `w` (first: a false candidate can only blow up the prover's e-graph), then the proof.
inline std::pair<rule, std::optional<std::string>> verify(const world& w, std::span<const world> check_worlds,
                                                          const pattern& source, const pattern& target,
                                                          const std::vector<std::vector<std::uint16_t>>& renamings,
                                                          const generation_config& cfg, std::uint64_t canon) {
    std::mt19937_64 rng(cfg.seed ^ mix(canon));
    std::optional<std::string> why;
    for (const auto& cw : check_worlds) {
        try {
            why = float_mismatch(to_graph(cw, source), to_graph(cw, target), rng, cfg.tolerance);
        } catch (const error& e) {
            why = std::string("does not build at other shapes: ") + e.what();
        }
        if (why) break;
    }
    if (!why) why = float_mismatch(to_graph(w, source), to_graph(w, target), rng, cfg.tolerance);
    rule r = make_rule(w, source, target);
    std::string text = to_string(r);
    // sides of equal size: either may be the source; the spelling decides, so that a rule and its
    // reverse found in two buckets come out as one text
    const bool either_way = source.ops.size() == target.ops.size();
    for (std::size_t k = 0; k < renamings.size(); ++k) {
        auto renamed = [&](pattern p) {
            for (auto& o : p.ops)
                for (auto& v : o.inputs)
                    if (v.is_variable()) v.index = renamings[k][v.index];
            for (auto& v : p.outputs)
                if (v.is_variable()) v.index = renamings[k][v.index];
            return p;
        };
        for (int flip = 0; flip < (either_way ? 2 : 1); ++flip) {
            if (k == 0 && flip == 0) continue;
            rule q = flip ? make_rule(w, renamed(target), renamed(source)) : make_rule(w, renamed(source), renamed(target));
            std::string qt = to_string(q);
            if (qt < text) {
                text = std::move(qt);
                r = std::move(q);
            }
        }
    }
    if (!why) {
        const proof_result proof = prove(r, cfg.proof);
        if (!proof.proven) why = std::string(not_proven_reason) + proof.reason;
    }
    return {std::move(r), std::move(why)};
}

}  // namespace detail

inline generation_result generate_rules(const world& w, std::span<const world> check_worlds,
                                        const generation_config& cfg) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    if (cfg.max_ops == 0 || cfg.max_ops > detail::max_packed_ops)
        throw error("generate_rules: max_ops " + std::to_string(cfg.max_ops) + ", expected 1.." +
                    std::to_string(detail::max_packed_ops));
    if (w.variables.size() > 127) throw error("generate_rules: world has more than 127 variables");
    for (auto k : w.kinds) {
        const auto& s = ops::spec(k);
        if ((s.max_inputs == ops::variadic ? w.variadic_arity : s.max_inputs) > 2)
            throw error("generate_rules: op " + std::string(ops::name(k)) + " takes more than 2 inputs, expected at most 2");
    }
    for (const auto& cw : check_worlds) {
        if (cw.variables.size() != w.variables.size() || cw.kinds != w.kinds)
            throw error("generate_rules: a check world differs from the world in its variables or operator set");
        for (auto k : w.kinds)
            if (cw.num_choices(k) != w.num_choices(k))
                throw error("generate_rules: a check world has " + std::to_string(cw.num_choices(k)) +
                            " attribute choices for " + std::string(ops::name(k)) + ", expected " +
                            std::to_string(w.num_choices(k)) + " as the world");
    }
    const std::size_t threads = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
    generation_result result;
    auto& st = result.stats;
    st.max_ops = cfg.max_ops;
    const enumeration_config ecfg{.max_ops = cfg.max_ops, .seed = cfg.seed, .shard = 0, .num_shards = threads};

    // pass 1: fingerprints only, to find the ones that occur twice (the fingerprint table is 8 bytes
    // a graph; the graphs themselves are kept only for the shared fingerprints, in pass 2)
    std::vector<std::vector<std::uint64_t>> fps(threads);
    detail::parallel(threads, [&](std::size_t t) {
        auto c = ecfg;
        c.shard = t;
        enumerate_graphs(w, c, [&](const enumerated_graph& g) { fps[t].push_back(g.fingerprint); });
    });
    std::vector<std::uint64_t> all;
    for (auto& f : fps) {
        st.graphs += f.size();
        all.insert(all.end(), f.begin(), f.end());
        std::vector<std::uint64_t>().swap(f);
    }
    std::sort(all.begin(), all.end());
    std::vector<std::uint64_t> shared;
    for (std::size_t i = 0; i + 1 < all.size(); ++i)
        if (all[i] == all[i + 1] && (shared.empty() || shared.back() != all[i])) shared.push_back(all[i]);
    std::vector<std::uint64_t>().swap(all);

    // pass 2: the graphs whose fingerprint is shared
    std::vector<std::vector<detail::packed_graph>> parts(threads);
    detail::parallel(threads, [&](std::size_t t) {
        auto c = ecfg;
        c.shard = t;
        enumerate_graphs(w, c, [&](const enumerated_graph& g) {
            if (std::binary_search(shared.begin(), shared.end(), g.fingerprint))
                parts[t].push_back(detail::pack(g.graph, g.fingerprint));
        });
    });
    std::vector<detail::packed_graph> store;
    for (auto& p : parts) {
        store.insert(store.end(), p.begin(), p.end());
        std::vector<detail::packed_graph>().swap(p);
    }
    std::sort(store.begin(), store.end());
    std::vector<std::pair<std::size_t, std::size_t>> buckets;  // [begin, end) in store
    for (std::size_t i = 0; i < store.size();) {
        std::size_t j = i;
        while (j < store.size() && store[j].fingerprint == store[i].fingerprint) ++j;
        buckets.emplace_back(i, j);
        st.candidates += (j - i) * (j - i - 1) / 2;
        i = j;
    }

    // pruning stages and verification, bucket by bucket (a bucket: the graphs of one fingerprint,
    // all equal to each other when the fingerprint does not collide)
    const auto renamings = detail::shape_preserving_renamings(w);
    const std::size_t R = renamings.size();
    const auto vars = variable_values(w, cfg.seed);
    struct thread_out {
        std::vector<std::uint64_t> renamed, subgraph, supergraph;  // canonical keys of the survivors of each stage
        std::vector<std::pair<std::string, rule>> kept;
        std::vector<std::pair<std::string, rejected_rule>> rejected;
    };
    std::vector<thread_out> outs(threads);
    std::atomic<std::size_t> next_bucket{0};
    detail::parallel(threads, [&](std::size_t t) {
        thread_out& out = outs[t];
        std::vector<std::uint64_t> keys, hashes;
        std::vector<pattern> graphs;
        std::vector<std::vector<std::uint64_t>> own_keys;
        std::vector<detail::value_hash_table> values;
        std::vector<detail::edge> edges;
        for (std::size_t b; (b = next_bucket.fetch_add(1)) < buckets.size();) {
            const auto [lo, hi] = buckets[b];
            const std::size_t n = hi - lo;
            graphs.clear();
            values.clear();
            hashes.assign(n * R, 0);
            own_keys.assign(n, {});
            for (std::size_t i = 0; i < n; ++i) {
                graphs.push_back(detail::unpack(store[lo + i]));
                for (std::size_t r = 0; r < R; ++r) hashes[i * R + r] = detail::structure_hash(w, graphs[i], renamings[r], keys);
                detail::op_keys(w, graphs[i], renamings[0], own_keys[i]);
                std::sort(own_keys[i].begin(), own_keys[i].end());
                values.push_back(detail::value_hashes(w, graphs[i], vars));
            }
            detail::union_find classes(n);
            edges.clear();
            for (std::uint32_t i = 0; i < n; ++i)
                for (std::uint32_t j = i + 1; j < n; ++j) {
                    std::uint64_t canon = ~std::uint64_t{0};
                    for (std::size_t r = 0; r < R; ++r)
                        canon = std::min(canon, detail::unordered_pair_hash(hashes[i * R + r], hashes[j * R + r]));
                    out.renamed.push_back(canon);
                    if (detail::share_a_key(own_keys[i], own_keys[j])) {  // common subgraph
                        classes.unite(i, j);
                        continue;
                    }
                    out.subgraph.push_back(canon);
                    const auto [s, d] = graphs[j].ops.size() > graphs[i].ops.size() ? std::pair{j, i} : std::pair{i, j};
                    const auto aligned = detail::align_outputs(graphs[s], values[s], graphs[d], values[d], vars);
                    if (!aligned) continue;  // a 64-bit fingerprint collision: not equal at all
                    if (detail::common_supergraph(w, graphs[s], values[s], graphs[d], values[d], *aligned, vars)) {
                        classes.unite(i, j);
                        continue;
                    }
                    out.supergraph.push_back(canon);
                    edges.push_back({graphs[s].ops.size(), graphs[s].ops.size() + graphs[d].ops.size(), canon, s, d});
                }
            // transitivity: smaller pairs first; a pair whose graphs are already joined by the pairs
            // before it (verified ones, or ones implied by smaller rules) follows from them
            std::sort(edges.begin(), edges.end());
            for (const auto& e : edges) {
                if (classes.find(e.source) == classes.find(e.target)) continue;
                pattern target = graphs[e.target];
                target.outputs = *detail::align_outputs(graphs[e.source], values[e.source], target, values[e.target], vars);
                auto [r, why] = detail::verify(w, check_worlds, graphs[e.source], target, renamings, cfg, e.canon);
                std::string text = to_string(r);
                if (why) {
                    out.rejected.emplace_back(std::move(text), rejected_rule{std::move(r), std::move(*why)});
                } else {
                    classes.unite(e.source, e.target);
                    out.kept.emplace_back(std::move(text), std::move(r));
                }
            }
        }
    });
    auto distinct = [&](std::vector<std::uint64_t> thread_out::*member) {
        std::vector<std::uint64_t> all_keys;
        for (auto& o : outs) {
            all_keys.insert(all_keys.end(), (o.*member).begin(), (o.*member).end());
            std::vector<std::uint64_t>().swap(o.*member);
        }
        std::sort(all_keys.begin(), all_keys.end());
        return static_cast<std::size_t>(std::unique(all_keys.begin(), all_keys.end()) - all_keys.begin());
    };
    st.after_renaming = distinct(&thread_out::renamed);
    st.after_subgraph = distinct(&thread_out::subgraph);
    st.after_supergraph = distinct(&thread_out::supergraph);
    // the same pair found in buckets that differ by a renaming of the variables is spelled the same
    // (verify() picks the least text over the renamings): keep one; a rejection anywhere rejects it
    std::vector<std::pair<std::string, rule>> kept;
    std::vector<std::pair<std::string, rejected_rule>> rejected;
    for (auto& o : outs) {
        std::move(o.kept.begin(), o.kept.end(), std::back_inserter(kept));
        std::move(o.rejected.begin(), o.rejected.end(), std::back_inserter(rejected));
    }
    auto by_text = [](const auto& x, const auto& y) { return x.first < y.first; };
    auto same_text = [](const auto& x, const auto& y) { return x.first == y.first; };
    std::stable_sort(kept.begin(), kept.end(), by_text);
    kept.erase(std::unique(kept.begin(), kept.end(), same_text), kept.end());
    std::stable_sort(rejected.begin(), rejected.end(), by_text);
    rejected.erase(std::unique(rejected.begin(), rejected.end(), same_text), rejected.end());
    for (auto& [text, r] : kept)
        if (!std::binary_search(rejected.begin(), rejected.end(), std::pair{text, rejected_rule{}}, by_text))
            result.rules.push_back(std::move(r));
    for (auto& [text, r] : rejected) result.rejected.push_back(std::move(r));
    st.verified = result.rules.size();
    st.rejected = result.rejected.size();
    for (const auto& x : result.rejected) st.not_proven += x.reason.starts_with(detail::not_proven_reason);
    st.after_transitivity = st.verified + st.rejected;
    st.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return result;
}

}  // namespace goopt::subst
