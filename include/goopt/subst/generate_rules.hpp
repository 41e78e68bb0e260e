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
};

/// Counts after each stage, as TASO's Table 3, and the wall time.
struct generation_stats {
    std::size_t max_ops = 0;
    std::size_t graphs = 0;            ///< graphs enumerated
    std::size_t candidates = 0;        ///< pairs of graphs with equal fingerprints
    std::size_t after_renaming = 0;    ///< distinct up to renaming the variables (and swapping sides)
    std::size_t after_subgraph = 0;    ///< and no op common to both sides
    std::size_t after_supergraph = 0;  ///< and not f(A) vs f(B) for a smaller candidate A, B
    std::size_t verified = 0;          ///< passed the float re-check in every check world
    std::size_t rejected = 0;          ///< failed it
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
/// 6. each survivor is re-checked with the float interpreter in `w` and in every check world; it is
///    kept (verified) or rejected with the reason. This is a numerical check, not a proof.
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

struct candidate {
    std::uint64_t canon;
    std::uint32_t a, b;  // indices into the sorted store
    friend bool operator<(const candidate& x, const candidate& y) {
        return std::tie(x.canon, x.a, x.b) < std::tie(y.canon, y.a, y.b);
    }
};

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

    // renaming and common-subgraph stages, bucket by bucket
    const auto renamings = detail::shape_preserving_renamings(w);
    const std::size_t R = renamings.size();
    std::vector<std::vector<std::uint64_t>> canon_parts(threads);
    std::vector<std::vector<detail::candidate>> kept_parts(threads);
    std::atomic<std::size_t> next_bucket{0};
    detail::parallel(threads, [&](std::size_t t) {
        std::vector<std::uint64_t> keys, hashes;
        std::vector<std::vector<std::uint64_t>> own_keys;
        for (std::size_t b; (b = next_bucket.fetch_add(1)) < buckets.size();) {
            const auto [lo, hi] = buckets[b];
            const std::size_t n = hi - lo;
            hashes.assign(n * R, 0);
            own_keys.assign(n, {});
            for (std::size_t i = 0; i < n; ++i) {
                const pattern p = detail::unpack(store[lo + i]);
                for (std::size_t r = 0; r < R; ++r) hashes[i * R + r] = detail::structure_hash(w, p, renamings[r], keys);
                detail::op_keys(w, p, renamings[0], own_keys[i]);
                std::sort(own_keys[i].begin(), own_keys[i].end());
            }
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j) {
                    std::uint64_t canon = ~std::uint64_t{0};
                    for (std::size_t r = 0; r < R; ++r)
                        canon = std::min(canon, detail::unordered_pair_hash(hashes[i * R + r], hashes[j * R + r]));
                    canon_parts[t].push_back(canon);
                    const auto& ka = own_keys[i];
                    const auto& kb = own_keys[j];
                    bool common = false;
                    for (std::size_t x = 0, y = 0; !common && x < ka.size() && y < kb.size();) {
                        if (ka[x] == kb[y]) common = true;
                        else if (ka[x] < kb[y]) ++x;
                        else ++y;
                    }
                    if (!common)
                        kept_parts[t].push_back({canon, static_cast<std::uint32_t>(lo + i), static_cast<std::uint32_t>(lo + j)});
                }
        }
    });
    {
        std::vector<std::uint64_t> canon;
        for (auto& c : canon_parts) {
            canon.insert(canon.end(), c.begin(), c.end());
            std::vector<std::uint64_t>().swap(c);
        }
        std::sort(canon.begin(), canon.end());
        st.after_renaming = static_cast<std::size_t>(std::unique(canon.begin(), canon.end()) - canon.begin());
    }
    std::vector<detail::candidate> kept;
    for (auto& k : kept_parts) kept.insert(kept.end(), k.begin(), k.end());
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end(),
                           [](const detail::candidate& x, const detail::candidate& y) { return x.canon == y.canon; }),
               kept.end());
    st.after_subgraph = kept.size();

    // common supergraph stage, output matching and the float re-check, candidate by candidate
    const auto vars = variable_values(w, cfg.seed);
    struct outcome {
        bool redundant = false;
        std::optional<rule> kept_rule;
        std::optional<rejected_rule> rejected;
    };
    std::vector<outcome> outcomes(kept.size());
    std::atomic<std::size_t> next{0};
    detail::parallel(threads, [&](std::size_t) {
        for (std::size_t c; (c = next.fetch_add(1)) < kept.size();) {
            pattern a = detail::unpack(store[kept[c].a]);
            pattern b = detail::unpack(store[kept[c].b]);
            if (b.ops.size() > a.ops.size()) std::swap(a, b);  // source: the larger side
            const auto ha = detail::value_hashes(w, a, vars);
            const auto hb = detail::value_hashes(w, b, vars);
            auto hash_of = [&](const std::vector<std::vector<std::uint64_t>>& h, value_ref v) {
                return v.is_variable() ? value_hash(vars[v.index]) : h[v.op][v.index];
            };
            // order b's outputs as a's: equal fingerprints make the output multisets equal
            std::vector<value_ref> bo;
            std::vector<bool> used(b.outputs.size(), false);
            for (auto va : a.outputs) {
                for (std::size_t k = 0; k < b.outputs.size(); ++k)
                    if (!used[k] && hash_of(hb, b.outputs[k]) == hash_of(ha, va)) {
                        used[k] = true;
                        bo.push_back(b.outputs[k]);
                        break;
                    }
            }
            if (bo.size() != a.outputs.size()) {  // a 64-bit fingerprint collision: not a candidate at all
                outcomes[c].redundant = true;
                continue;
            }
            b.outputs = bo;
            // common supergraph: every output pair is the same op applied to equal values
            bool super = true;
            for (std::size_t k = 0; super && k < a.outputs.size(); ++k) {
                const auto& oa = a.ops[a.outputs[k].op];
                const auto& ob = b.ops[b.outputs[k].op];
                if (oa.kind != ob.kind || oa.choice != ob.choice || a.outputs[k].index != b.outputs[k].index ||
                    oa.inputs.size() != ob.inputs.size()) {
                    super = false;
                    break;
                }
                std::vector<std::uint64_t> ia, ib;
                for (auto v : oa.inputs) ia.push_back(hash_of(ha, v));
                for (auto v : ob.inputs) ib.push_back(hash_of(hb, v));
                if (w.one_order_for_commutative && ops::spec(oa.kind).has(ops::commutative)) {
                    std::sort(ia.begin(), ia.end());
                    std::sort(ib.begin(), ib.end());
                }
                super = ia == ib;
            }
            if (super) {
                outcomes[c].redundant = true;
                continue;
            }
            std::mt19937_64 rng(cfg.seed ^ mix(c));
            std::optional<std::string> why;
            for (const auto& cw : check_worlds) {
                try {
                    why = float_mismatch(to_graph(cw, a), to_graph(cw, b), rng, cfg.tolerance);
                } catch (const error& e) {
                    why = std::string("does not build at other shapes: ") + e.what();
                }
                if (why) break;
            }
            if (!why) why = float_mismatch(to_graph(w, a), to_graph(w, b), rng, cfg.tolerance);
            // the spelling of the rule: the renaming of its variables with the least text
            rule r = make_rule(w, a, b);
            std::string text = to_string(r);
            for (std::size_t k = 1; k < R; ++k) {
                auto renamed = [&](pattern p) {
                    for (auto& o : p.ops)
                        for (auto& v : o.inputs)
                            if (v.is_variable()) v.index = renamings[k][v.index];
                    return p;
                };
                rule q = make_rule(w, renamed(a), renamed(b));
                std::string qt = to_string(q);
                if (qt < text) {
                    text = std::move(qt);
                    r = std::move(q);
                }
            }
            if (why) outcomes[c].rejected = rejected_rule{std::move(r), *why};
            else outcomes[c].kept_rule = std::move(r);
        }
    });
    for (auto& o : outcomes) {
        if (o.redundant) continue;
        ++st.after_supergraph;
        if (o.kept_rule) result.rules.push_back(std::move(*o.kept_rule));
        if (o.rejected) result.rejected.push_back(std::move(*o.rejected));
    }
    st.verified = result.rules.size();
    st.rejected = result.rejected.size();
    std::vector<std::pair<std::string, std::size_t>> order;
    for (std::size_t i = 0; i < result.rules.size(); ++i) order.emplace_back(to_string(result.rules[i]), i);
    std::sort(order.begin(), order.end());
    std::vector<rule> sorted;
    for (const auto& [text, i] : order) sorted.push_back(std::move(result.rules[i]));
    result.rules = std::move(sorted);
    st.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return result;
}

}  // namespace goopt::subst
