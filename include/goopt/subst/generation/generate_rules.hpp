#pragma once
/// @file
/// @brief The substitution generator: enumerate graphs, bucket them by fingerprint, turn equal
/// fingerprints into candidate rewrites, prune redundant candidates, re-check the rest numerically.
/// TASO (SOSP'19) §3-§4, Table 3 (the counts after each pruning stage).

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/generation/candidate_pruning.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/generation/enumerate_graphs.hpp>
#include <goopt/subst/generation/generation_sharding.hpp>
#include <goopt/subst/generation/generation_store.hpp>
#include <goopt/subst/generation/prover.hpp>
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
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace goopt::subst {
inline namespace generation {

/// Knobs of rule generation.
struct generation_config {
    std::size_t max_ops = 3;           ///< k: graphs of up to k ops on each side
    std::size_t threads = 0;           ///< 0: std::thread::hardware_concurrency()
    std::uint64_t seed = 0x7a50'2019;  ///< fixed random inputs of fingerprints and of float checks
    double tolerance = 1e-9;           ///< float check, relative per element (double precision)
    /// Bounds of each proof from the axioms (subst/generation/prover.hpp). The node and iteration bounds decide;
    /// the time bound is far above what they allow, so that a loaded machine cannot change the
    /// rules (output is the same on every run and for every thread count).
    proof_limits proof{.max_iterations = 8, .max_nodes = 1000, .max_time = std::chrono::seconds(2)};
    /// The ranks among which the work is divided (nullptr: this process alone). Every rank calls
    /// generate_rules with the same world, check worlds, max_ops and seed (threads may differ), and
    /// every rank returns the same result: the single process's, rule for rule.
    generation_sharding* sharding = nullptr;
    /// Under sharding, pass 2 sends each graph to the rank that owns its fingerprint in rounds of
    /// about this many bytes per rank, so that the buffers stay small beside the graph store.
    /// (4 MiB: depth 3 in 8 rounds on 2 ranks, where one round would hold as much as the store; the
    /// rounds cost a walk over the first ops and a synchronization each, milliseconds.)
    std::size_t exchange_bytes = std::size_t{4} << 20;
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
    std::size_t verified = 0;    ///< passed verification: kept
    std::size_t rejected = 0;    ///< failed it: reported with the reason
    std::size_t not_proven = 0;  ///< of the rejected: passed the float re-check, but no proof was found
    /// of the verified: rules with a side without ops (`matmul(x0,const_imm) => x0`), found where the
    /// enumeration prunes a value equal to a variable; they are not counted in the stages before
    std::size_t op_free = 0;
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
///    then the graphs whose fingerprint occurs twice, packed (25 bytes a graph) straight into their
///    bucket's place (depth 4 of TASO's world: 181 M graphs, 103 M of them kept, 3.3 GB at the peak);
/// 2. candidates: every pair of graphs in a fingerprint bucket;
/// 3. renaming: pairs equal after a shape-preserving renaming of the variables (either side first)
///    count once; the count keeps no key per pair: a pair is counted where it is the member of its
///    renaming class with the least hash (every member is a candidate too, as a renaming of two
///    equal graphs gives two equal graphs), and stages 4-5 are counted the same way;
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
///    The same rule found in buckets that differ by a renaming of the variables is kept once, and
///    verified once per thread (the answer is remembered by the pair's renaming class).
/// Under cfg.sharding the ranks divide stages 1 and 2-7: each enumerates its share of the first
/// ops, sends each fingerprint (pass 1) and each graph (pass 2) to the rank that owns it by hash, and
/// prunes and verifies that rank's buckets only; the rules found are then shared with every rank.
/// The side with more ops becomes the source; the variables are renamed, and the outputs ordered,
/// to give the least text, and the ops put in a normal order, so that one rule has one spelling.
/// @param check_worlds the same world at other shapes (same variables, kinds and attribute choice
///        lists, as taso_world(taso_dims) gives): every surviving candidate is instantiated in each
///        and re-checked with the float interpreter; one that fails to build or to agree is rejected.
/// @throws goopt::error for a world whose ops take more than two inputs or that has more than 127
///         variables (the packed graph store's limits) or an invalid configuration.
inline generation_result generate_rules(const world& w, std::span<const world> check_worlds,
                                        const generation_config& cfg = {});

// ---- implementation ----

// (the helpers are in generation_store.hpp and candidate_pruning.hpp)

}  // namespace generation

namespace detail {

/// Prefix of the reason of a rule that passed the float re-check but could not be proven.
inline constexpr std::string_view not_proven_reason = "not proven from the axioms: ";

/// A rule that stage 7 took: its text, the rule, the spelling it was made from (the rule is
/// make_rule(w, source, target): what the ranks send each other) and why it failed verification
/// (nullopt: verified).
struct found_rule {
    std::string text;
    rule r;
    pattern source, target;
    std::optional<std::string> why;
};

/// The rule `source => target` spelled with the renaming of its variables and the order of its
/// outputs that give the least text, and why it fails verification (nullopt: verified): the float
/// re-check of that spelling in every check world and in `w` (first: a false candidate can only
/// blow up the prover's e-graph), then the proof. The answer depends only on the spelling and on `canon` (the seed of
/// the float inputs), which are the same for every renaming of the pair, so a pair met again in another bucket may
/// reuse it.
inline found_rule verify(const world& w, std::span<const world> check_worlds, const pattern& source,
                         const pattern& target, const std::vector<std::vector<std::uint16_t>>& renamings,
                         const generation_config& cfg, std::uint64_t canon) {
    found_rule f;
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
            const pattern s = renamed(flip ? target : source), t = renamed(flip ? source : target);
            // the outputs in every order (the sides' outputs are paired by position)
            std::vector<std::size_t> order(s.outputs.size());
            for (std::size_t o = 0; o < order.size(); ++o) order[o] = o;
            do {
                pattern so = s, to = t;
                for (std::size_t o = 0; o < order.size(); ++o) {
                    so.outputs[o] = s.outputs[order[o]];
                    to.outputs[o] = t.outputs[order[o]];
                }
                so = in_term_order(w, so);
                to = in_term_order(w, to);
                rule q = make_rule(w, so, to);
                std::string qt = to_string(q);
                if (f.text.empty() || qt < f.text) {
                    f.text = std::move(qt);
                    f.r = std::move(q);
                    f.source = std::move(so);
                    f.target = std::move(to);
                }
            } while (std::next_permutation(order.begin(), order.end()));
        }
    }
    std::mt19937_64 rng(cfg.seed ^ mix(canon));
    std::optional<std::string>& why = f.why;
    for (const auto& cw : check_worlds) {
        try {
            why = float_mismatch(to_graph(cw, f.source), to_graph(cw, f.target), rng, cfg.tolerance);
        } catch (const error& e) {
            why = std::string("does not build at other shapes: ") + e.what();
        }
        if (why) break;
    }
    if (!why) why = float_mismatch(to_graph(w, f.source), to_graph(w, f.target), rng, cfg.tolerance);
    if (!why) {
        const proof_result proof = prove(f.r, cfg.proof);
        if (!proof.proven) why = std::string(not_proven_reason) + proof.reason;
    }
    return f;
}

/// The same message from this rank to every rank (an all-gather over all_to_all).
inline std::vector<std::string> all_gather(generation_sharding& sh, const std::string& mine) {
    auto parts = sh.all_to_all(std::vector<std::string>(sh.ranks(), mine));
    if (parts.size() != sh.ranks())
        throw error("generate_rules", concat("all_to_all returned ", parts.size(), " parts"), concat(sh.ranks()));
    return parts;
}

/// Checks that every rank runs the same generation (a rank with another depth or seed would make
/// another table) and returns the most threads of any rank: pass 1's shards per rank.
inline std::size_t agree_on_generation(generation_sharding& sh, const world& w, std::span<const world> check_worlds,
                                       const generation_config& cfg, std::size_t threads) {
    const std::uint64_t mine[] = {cfg.max_ops,         cfg.seed, w.variables.size(), w.kinds.size(),
                                  check_worlds.size(), threads};
    const char* names[] = {"max_ops", "seed", "variables", "operator kinds", "check worlds"};
    std::string part;
    for (auto v : mine) io::detail::append_le(part, v, 8);
    std::size_t most = threads;
    const auto all = all_gather(sh, part);
    for (std::size_t r = 0; r < all.size(); ++r) {
        part_reader in(all[r], r);
        for (std::size_t i = 0; i < std::size(names); ++i)
            if (const auto v = in.next(8); v != mine[i])
                throw error("generate_rules", concat("rank ", r, " generates with ", names[i], " ", v),
                            concat(mine[i], " as rank ", sh.rank(), ": the same generation on every rank"));
        most = std::max<std::size_t>(most, in.next(8));
    }
    return most;
}

/// The largest `mine` of any rank (every rank calls it at the same point).
inline std::uint64_t max_over_ranks(generation_sharding& sh, std::uint64_t mine) {
    std::string part;
    io::detail::append_le(part, mine, 8);
    std::uint64_t most = mine;
    const auto all = all_gather(sh, part);
    for (std::size_t r = 0; r < all.size(); ++r) {
        part_reader in(all[r], r);
        most = std::max(most, in.next(8));
    }
    return most;
}

/// Counts of the stages that each rank adds up over its own share.
struct stage_counts {
    std::uint64_t graphs = 0, candidates = 0, renamed = 0, subgraph = 0, supergraph = 0;
};

/// Every rank's rules found (and stage counts) to every rank: afterwards each holds all of them,
/// the ranks' in rank order, and the counts summed. A received rule is made again from its spelling.
inline std::vector<found_rule> share_found(generation_sharding& sh, const world& w, std::vector<found_rule> mine,
                                           stage_counts& counts) {
    std::string part;
    for (auto c : {counts.graphs, counts.candidates, counts.renamed, counts.subgraph, counts.supergraph})
        io::detail::append_le(part, c, 8);
    io::detail::append_le(part, mine.size(), 8);
    for (const auto& f : mine) {
        append_pattern(part, f.source);
        append_pattern(part, f.target);
        io::detail::append_le(part, f.why ? 1 : 0, 1);
        if (!f.why) continue;
        io::detail::append_le(part, f.why->size(), 8);
        part += *f.why;
    }
    const auto all = all_gather(sh, part);
    counts = {};
    std::vector<found_rule> every;
    for (std::size_t r = 0; r < all.size(); ++r) {
        part_reader in(all[r], r);
        for (auto* c : {&counts.graphs, &counts.candidates, &counts.renamed, &counts.subgraph, &counts.supergraph})
            *c += in.next(8);
        const std::uint64_t n = in.next(8);
        if (r == sh.rank()) {
            std::move(mine.begin(), mine.end(), std::back_inserter(every));
            continue;
        }
        for (std::uint64_t i = 0; i < n; ++i) {
            found_rule f;
            f.source = read_pattern(in);
            f.target = read_pattern(in);
            if (in.next(1)) f.why = std::string(in.bytes(in.next(8)));
            f.r = make_rule(w, f.source, f.target);
            f.text = to_string(f.r);
            every.push_back(std::move(f));
        }
        if (!in.done())
            throw error("generate_rules", concat("rank ", r, " sent bytes after its rules"), "its rules only");
    }
    return every;
}

/// @brief Pass 1's fingerprints in blocks of a fixed capacity instead of one growing vector: a
/// vector that doubles copies itself, holding twice its size for a moment, and a block that has
/// been sent can be freed at once. 32 MiB a block: above glibc's largest threshold for serving an
/// allocation by mmap, so a freed block goes back to the system, and its untouched pages never count.
class fingerprint_blocks {
public:
    static constexpr std::size_t block_entries = std::size_t{1} << 22;
    void push_back(std::uint64_t f) {
        if (blocks_.empty() || blocks_.back().size() == block_entries) blocks_.emplace_back().reserve(block_entries);
        blocks_.back().push_back(f);
        ++size_;
    }
    std::size_t size() const noexcept { return size_; }
    std::vector<std::vector<std::uint64_t>>& blocks() noexcept { return blocks_; }

private:
    std::vector<std::vector<std::uint64_t>> blocks_;
    std::size_t size_ = 0;
};

/// @brief Pass 1's fingerprints of this rank, per thread and per owner, to their owners, in rounds
/// of about `round_bytes` per rank: each round a rank sends every other rank the next equal share
/// of that rank's fingerprints (8 bytes each), frees the blocks it has sent, and files what it
/// receives in its own blocks before the next round. So a rank holds its fingerprints and those it
/// owns, never a copy of them all in messages (one exchange of all of them held 1.26 GB per rank at
/// depth 4). Returns the blocks of the fingerprints this rank owns, unsorted: the multiset, in an
/// order that depends on the rounds, which the bucket table does not see once each block is sorted.
inline std::vector<std::vector<std::uint64_t>> send_to_owners(generation_sharding& sh,
                                                              std::vector<std::vector<fingerprint_blocks>> fps,
                                                              std::size_t round_bytes) {
    const std::size_t ranks = sh.ranks(), me = sh.rank();
    std::vector<std::vector<std::uint64_t>> owned;
    std::vector<std::uint64_t> to(ranks, 0);  // fingerprints for each rank
    std::uint64_t outgoing = 0;
    for (auto& per_owner : fps)
        for (std::size_t o = 0; o < ranks; ++o) {
            to[o] += per_owner[o].size();
            if (o == me) {
                std::move(per_owner[o].blocks().begin(), per_owner[o].blocks().end(), std::back_inserter(owned));
                per_owner[o] = {};
            } else {
                outgoing += per_owner[o].size();
            }
        }
    const std::uint64_t rounds =
        std::max<std::uint64_t>(1, max_over_ranks(sh, (8 * outgoing + round_bytes - 1) / round_bytes));
    // where each owner's next fingerprint is: thread, block, entry
    struct cursor {
        std::size_t thread = 0, block = 0, entry = 0;
        std::uint64_t sent = 0;
    };
    std::vector<cursor> next(ranks);
    fingerprint_blocks incoming;
    for (std::uint64_t round = 0; round < rounds; ++round) {
        std::vector<std::string> parts(ranks);
        for (std::size_t o = 0; o < ranks; ++o) {
            if (o == me) continue;
            auto& c = next[o];
            // fingerprints [to[o] * round / rounds, to[o] * (round + 1) / rounds) of those for o
            const std::uint64_t until = to[o] * (round + 1) / rounds;
            parts[o].resize(8 * (until - c.sent));
            char* out = parts[o].data();
            while (c.sent < until) {
                auto& blocks = fps[c.thread][o].blocks();
                if (c.block == blocks.size()) {
                    ++c.thread;
                    c.block = 0;
                    continue;
                }
                auto& block = blocks[c.block];
                const std::size_t n = std::min<std::uint64_t>(block.size() - c.entry, until - c.sent);
                for (std::size_t i = 0; i < n; ++i, out += 8) io::detail::store_le(out, block[c.entry + i], 8);
                c.entry += n;
                c.sent += n;
                if (c.entry == block.size()) {
                    std::vector<std::uint64_t>().swap(block);  // sent: freed now
                    ++c.block;
                    c.entry = 0;
                }
            }
        }
        auto received = sh.all_to_all(std::move(parts));
        for (std::size_t r = 0; r < received.size(); ++r) {
            if (r == me) continue;
            if (received[r].size() % 8 != 0)
                throw error("generate_rules", concat("rank ", r, "'s fingerprints of ", received[r].size(), " bytes"),
                            "8 bytes a fingerprint");
            part_reader in(received[r], r);
            while (!in.done()) incoming.push_back(in.next(8));
            std::string().swap(received[r]);
        }
    }
    std::move(incoming.blocks().begin(), incoming.blocks().end(), std::back_inserter(owned));
    return owned;
}

/// Pass 1's callback: each fingerprint into the list of its owner (one list: no sharding), and the
/// op-free identities that the enumeration prunes.
template <class List> struct collect_fingerprints {
    std::span<List> per_owner;
    std::vector<std::pair<pattern, pattern>>& identities;
    void operator()(const enumerated_graph& g) {
        per_owner[owner_of(g.fingerprint, per_owner.size())].push_back(g.fingerprint);
    }
    void identity(const pattern& source, std::span<const std::uint16_t> variables) {
        pattern target;
        for (auto v : variables) target.outputs.push_back(value_ref{variable_op, v});
        identities.emplace_back(source, std::move(target));
    }
};

/// Bytes of one graph sent in pass 2: its fingerprint and the packed graph.
inline constexpr std::size_t graph_record_bytes = 8 + sizeof(packed_graph::bytes) + 1;

inline void append_graph_record(std::string& out, std::uint64_t fingerprint, const packed_graph& g) {
    io::detail::append_le(out, fingerprint, 8);
    out.append(reinterpret_cast<const char*>(g.bytes.data()), g.bytes.size());
    out.push_back(static_cast<char>(g.num_ops));
}
inline packed_graph read_graph_record(part_reader& in, std::uint64_t& fingerprint) {
    fingerprint = in.next(8);
    packed_graph g;
    const auto b = in.bytes(g.bytes.size());
    std::copy(b.begin(), b.end(), reinterpret_cast<char*>(g.bytes.data()));
    g.num_ops = static_cast<std::uint8_t>(in.next(1));
    return g;
}

}  // namespace detail

inline namespace generation {

inline generation_result generate_rules(const world& w, std::span<const world> check_worlds,
                                        const generation_config& cfg) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    if (cfg.max_ops == 0 || cfg.max_ops > detail::max_packed_ops)
        throw error("generate_rules", concat("max_ops ", cfg.max_ops), concat("1..", detail::max_packed_ops));
    if (w.variables.size() > 127)
        throw error("generate_rules", concat("world has ", w.variables.size(), " variables"), "at most 127");
    for (auto k : w.kinds) {
        const auto& s = ops::spec(k);
        if ((s.max_inputs == ops::variadic ? w.variadic_arity : s.max_inputs) > 2)
            throw error("generate_rules", concat("op ", ops::name(k), " takes more than 2 inputs"), "at most 2");
    }
    for (const auto& cw : check_worlds) {
        if (cw.variables.size() != w.variables.size() || cw.kinds != w.kinds)
            throw error("generate_rules", "a check world differs from the world in its variables or operator set",
                        "the world's variables and operator set");
        for (auto k : w.kinds)
            if (cw.num_choices(k) != w.num_choices(k))
                throw error("generate_rules",
                            concat("a check world has ", cw.num_choices(k), " attribute choices for ", ops::name(k)),
                            concat(w.num_choices(k), " as the world"));
    }
    if (cfg.sharding && (cfg.sharding->ranks() == 0 || cfg.sharding->rank() >= cfg.sharding->ranks()))
        throw error("generate_rules", concat("rank ", cfg.sharding->rank(), " of ", cfg.sharding->ranks()),
                    "a rank below the rank count");
    if (cfg.sharding && cfg.exchange_bytes == 0)
        throw error("generate_rules", "exchange_bytes 0", "a positive byte count per round");
    const std::size_t threads = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
    generation_sharding* const sh = cfg.sharding;
    const std::size_t ranks = sh ? sh->ranks() : 1, me = sh ? sh->rank() : 0;
    // enumeration shards per rank and pass: one per thread of the rank with the most
    const std::size_t shards = sh ? detail::agree_on_generation(*sh, w, check_worlds, cfg, threads) : threads;
    generation_result result;
    auto& st = result.stats;
    st.max_ops = cfg.max_ops;
    detail::stage_counts counts;
    // runs enumerate_graphs on this rank's `shards` shards of round `round` of `rounds` (the shards
    // dealt to the threads as they come free; the graphs dealt by their first deal_depth + 1 ops)
    auto enumerate_share = [&](std::size_t round, std::size_t rounds, std::size_t deal_depth, auto make_callback) {
        std::atomic<std::size_t> next{0};
        detail::parallel(threads, [&](std::size_t t) {
            auto on_graph = make_callback(t);
            for (std::size_t s; (s = next.fetch_add(1)) < shards;)
                enumerate_graphs(w,
                                 {.max_ops = cfg.max_ops,
                                  .seed = cfg.seed,
                                  .shard = ((round * ranks) + me) * shards + s,
                                  .num_shards = rounds * ranks * shards,
                                  .deal_depth = deal_depth},
                                 on_graph);
        });
    };

    // pass 1: fingerprints only, to find the ones that occur twice (8 bytes a graph, sorted by each
    // thread in place and merged, never copied; under sharding each goes to its owner first, in
    // rounds, and the owner sorts the blocks it holds, detail::send_to_owners); the graphs
    // themselves are kept only for the shared fingerprints, in pass 2
    // pass 1 also collects the op-free identities that the enumeration prunes (a graph equal to
    // variables: matmul(x0,const_imm) => x0), verified below like the pairs
    std::vector<std::vector<std::pair<pattern, pattern>>> identities(threads);
    std::uint64_t my_graphs = 0;
    std::vector<std::vector<std::uint64_t>> owned;  // sorted lists of the fingerprints this rank owns
    if (sh) {
        std::vector<std::vector<detail::fingerprint_blocks>> fps(threads,
                                                                 std::vector<detail::fingerprint_blocks>(ranks));
        enumerate_share(0, 1, 0, [&](std::size_t t) {
            return detail::collect_fingerprints<detail::fingerprint_blocks>{fps[t], identities[t]};
        });
        for (auto& per_owner : fps)
            for (auto& f : per_owner) my_graphs += f.size();
        owned = detail::send_to_owners(*sh, std::move(fps), cfg.exchange_bytes);
        std::atomic<std::size_t> next_list{0};
        detail::parallel(threads, [&](std::size_t) {
            for (std::size_t i; (i = next_list.fetch_add(1)) < owned.size();)
                std::sort(owned[i].begin(), owned[i].end());
        });
    } else {
        std::vector<std::vector<std::uint64_t>> fps(threads);
        enumerate_share(0, 1, 0, [&](std::size_t t) {
            return detail::collect_fingerprints<std::vector<std::uint64_t>>{{&fps[t], 1}, identities[t]};
        });
        for (auto& f : fps) {
            my_graphs += f.size();
            std::sort(f.begin(), f.end());
        }
        owned = std::move(fps);
    }
    counts.graphs = my_graphs;
    const detail::bucket_table buckets(owned);
    std::vector<std::vector<std::uint64_t>>().swap(owned);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
        const std::size_t n = buckets.end(b) - buckets.begin(b);
        counts.candidates += n * (n - 1) / 2;
    }

    // pass 2: each graph whose fingerprint is shared goes to the next free place of its bucket
    // (25 bytes a graph); the order within a bucket is made deterministic when it is processed.
    // Under sharding a graph of another rank's fingerprint is sent to it, in rounds (each a part
    // of the shards) of about cfg.exchange_bytes per rank; the shards are dealt by the first two ops,
    // as one first op alone can carry hundreds of MB of graphs at depth 4 (each round then walks
    // the first two ops of every graph, a depth-2 enumeration: milliseconds)
    std::vector<detail::packed_graph> store(buckets.graphs());
    {
        std::vector<std::atomic<std::uint32_t>> filled(buckets.size());
        auto place = [&](std::uint64_t fingerprint, auto&& graph) {
            const std::size_t b = buckets.find(fingerprint);
            if (b == detail::bucket_table::none) return;
            const std::size_t at = buckets.begin(b) + filled[b].fetch_add(1, std::memory_order_relaxed);
            // the enumeration is deterministic: pass 2 meets exactly the graphs pass 1 counted
            GOOPT_ASSERT(at < buckets.end(b));
            if (at >= buckets.end(b)) return;
            if constexpr (std::is_same_v<std::decay_t<decltype(graph)>, detail::packed_graph>) store[at] = graph;
            else store[at] = detail::pack(graph);
        };
        const std::size_t rounds =
            sh ? std::max<std::uint64_t>(
                     1, detail::max_over_ranks(*sh, (my_graphs * detail::graph_record_bytes + cfg.exchange_bytes - 1) /
                                                        cfg.exchange_bytes))
               : 1;
        std::vector<std::vector<std::string>> outgoing(threads, std::vector<std::string>(ranks));
        for (std::size_t round = 0; round < rounds; ++round) {
            enumerate_share(round, rounds, sh ? 1 : 0, [&](std::size_t t) {
                return [&, t](const enumerated_graph& g) {
                    const std::size_t o = detail::owner_of(g.fingerprint, ranks);
                    if (o == me) place(g.fingerprint, g.graph);
                    else detail::append_graph_record(outgoing[t][o], g.fingerprint, detail::pack(g.graph));
                };
            });
            if (!sh) continue;
            std::vector<std::string> parts(ranks);
            for (auto& per_owner : outgoing)
                for (std::size_t o = 0; o < ranks; ++o) {
                    if (parts[o].empty()) parts[o].swap(per_owner[o]);  // one thread: no copy
                    else parts[o] += per_owner[o];
                    std::string().swap(per_owner[o]);
                }
            auto received = sh->all_to_all(std::move(parts));
            for (std::size_t r = 0; r < received.size(); ++r) {
                detail::part_reader in(received[r], r);
                std::uint64_t fingerprint = 0;
                while (!in.done()) {
                    const auto g = detail::read_graph_record(in, fingerprint);
                    place(fingerprint, g);
                }
                std::string().swap(received[r]);
            }
        }
        for (std::size_t b = 0; b < buckets.size(); ++b)
            GOOPT_ASSERT(buckets.begin(b) + filled[b].load() == buckets.end(b));
    }

    // pruning stages and verification, bucket by bucket (a bucket: the graphs of one fingerprint,
    // all equal to each other when the fingerprint does not collide)
    const auto renamings = detail::shape_preserving_renamings(w);
    const std::size_t R = renamings.size();
    const auto vars = variable_values(w, cfg.seed);
    struct thread_out {
        std::size_t renamed = 0, subgraph = 0, supergraph = 0;  // survivors of each stage, one per renaming class
        std::unordered_map<std::uint64_t, bool> verified;       // canonical key -> kept (see verify())
        std::vector<detail::found_rule> found;
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
            const std::size_t lo = buckets.begin(b), hi = buckets.end(b), n = hi - lo;
            std::sort(store.begin() + static_cast<std::ptrdiff_t>(lo), store.begin() + static_cast<std::ptrdiff_t>(hi));
            graphs.clear();
            values.clear();
            hashes.assign(n * R, 0);
            own_keys.assign(n, {});
            for (std::size_t i = 0; i < n; ++i) {
                graphs.push_back(detail::unpack(store[lo + i]));
                for (std::size_t r = 0; r < R; ++r)
                    hashes[i * R + r] = detail::structure_hash(w, graphs[i], renamings[r], keys);
                detail::op_keys(w, graphs[i], renamings[0], own_keys[i]);
                std::sort(own_keys[i].begin(), own_keys[i].end());
                values.push_back(detail::value_hashes(w, graphs[i], vars));
            }
            detail::union_find classes(n);
            edges.clear();
            for (std::uint32_t i = 0; i < n; ++i)
                for (std::uint32_t j = i + 1; j < n; ++j) {
                    // the pair's renaming class is counted once, at the renaming of it whose
                    // hash is least: renamings[0] is the identity, so at (i, j) when it is that one
                    const std::uint64_t own = detail::unordered_pair_hash(hashes[i * R], hashes[j * R]);
                    std::uint64_t canon = own;
                    for (std::size_t r = 1; r < R; ++r)
                        canon = std::min(canon, detail::unordered_pair_hash(hashes[i * R + r], hashes[j * R + r]));
                    const std::size_t counts = canon == own;
                    out.renamed += counts;
                    if (detail::share_a_key(own_keys[i], own_keys[j])) {  // common subgraph
                        classes.unite(i, j);
                        continue;
                    }
                    out.subgraph += counts;
                    const auto [s, d] = graphs[j].ops.size() > graphs[i].ops.size() ? std::pair{j, i} : std::pair{i, j};
                    const auto aligned = detail::align_outputs(graphs[s], values[s], graphs[d], values[d], vars);
                    if (!aligned) continue;  // a 64-bit fingerprint collision: not equal at all
                    if (detail::common_supergraph(w, graphs[s], values[s], graphs[d], values[d], *aligned, vars)) {
                        classes.unite(i, j);
                        continue;
                    }
                    out.supergraph += counts;
                    edges.push_back({graphs[s].ops.size(), graphs[s].ops.size() + graphs[d].ops.size(), canon, s, d});
                }
            // transitivity: smaller pairs first; a pair whose graphs are already joined by the pairs
            // before it (verified ones, or ones implied by smaller rules) follows from them
            std::sort(edges.begin(), edges.end());
            for (const auto& e : edges) {
                if (classes.find(e.source) == classes.find(e.target)) continue;
                if (const auto seen = out.verified.find(e.canon); seen != out.verified.end()) {
                    if (seen->second) classes.unite(e.source, e.target);
                    continue;
                }
                pattern target = graphs[e.target];
                target.outputs =
                    *detail::align_outputs(graphs[e.source], values[e.source], target, values[e.target], vars);
                auto f = detail::verify(w, check_worlds, graphs[e.source], target, renamings, cfg, e.canon);
                out.verified.emplace(e.canon, !f.why);
                if (!f.why) classes.unite(e.source, e.target);
                out.found.push_back(std::move(f));
            }
        }
    });
    // the op-free identities, verified as the pairs are (one spelling over renamings; the seed of
    // the float check from the structure of the source, so every thread count gives the same answer)
    detail::parallel(threads, [&](std::size_t t) {
        thread_out& out = outs[t];
        std::vector<std::uint16_t> identity_names(w.variables.size());
        for (std::size_t i = 0; i < identity_names.size(); ++i) identity_names[i] = static_cast<std::uint16_t>(i);
        std::vector<std::uint64_t> keys;
        for (const auto& [source, target] : identities[t]) {
            const std::uint64_t canon = detail::structure_hash(w, source, identity_names, keys);
            out.found.push_back(detail::verify(w, check_worlds, source, target, renamings, cfg, canon));
        }
    });
    std::vector<detail::found_rule> found;
    for (auto& o : outs) {
        counts.renamed += o.renamed;
        counts.subgraph += o.subgraph;
        counts.supergraph += o.supergraph;
        std::move(o.found.begin(), o.found.end(), std::back_inserter(found));
    }
    if (sh) found = detail::share_found(*sh, w, std::move(found), counts);
    st.graphs = counts.graphs;
    st.candidates = counts.candidates;
    st.after_renaming = counts.renamed;
    st.after_subgraph = counts.subgraph;
    st.after_supergraph = counts.supergraph;
    // the same pair found in buckets that differ by a renaming of the variables is spelled the same
    // (verify() picks the least text over the renamings): keep one; a rejection anywhere rejects it
    std::vector<detail::found_rule> kept, rejected;
    for (auto& f : found) (f.why ? rejected : kept).push_back(std::move(f));
    auto by_text = [](const detail::found_rule& x, const detail::found_rule& y) { return x.text < y.text; };
    auto same_text = [](const detail::found_rule& x, const detail::found_rule& y) { return x.text == y.text; };
    std::stable_sort(kept.begin(), kept.end(), by_text);
    kept.erase(std::unique(kept.begin(), kept.end(), same_text), kept.end());
    std::stable_sort(rejected.begin(), rejected.end(), by_text);
    rejected.erase(std::unique(rejected.begin(), rejected.end(), same_text), rejected.end());
    for (auto& f : kept)
        if (!std::binary_search(rejected.begin(), rejected.end(), f, by_text)) result.rules.push_back(std::move(f.r));
    for (auto& f : rejected) result.rejected.push_back(rejected_rule{std::move(f.r), std::move(*f.why)});
    st.verified = result.rules.size();
    for (const auto& r : result.rules) st.op_free += r.target.ops.empty();
    st.rejected = result.rejected.size();
    for (const auto& x : result.rejected) st.not_proven += x.reason.starts_with(detail::not_proven_reason);
    st.after_transitivity = st.verified + st.rejected;
    st.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return result;
}

}  // namespace generation
}  // namespace goopt::subst
