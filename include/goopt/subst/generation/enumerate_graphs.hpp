#pragma once
/// @file
/// @brief Streaming enumeration of every graph of up to k ops over a subst::world, each with its
/// fingerprint. TASO (SOSP'19) §3.1-3.2 (Algorithm 1), with each graph produced exactly once.

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/pattern.hpp>
#include <goopt/subst/world.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace goopt::subst {
inline namespace generation {

/// Knobs of the enumeration.
struct enumeration_config {
    std::size_t max_ops = 3;           ///< k: graphs of 1..k ops (constants count as ops)
    std::uint64_t seed = 0x7a50'2019;  ///< seed of the fixed random variable values
    std::size_t shard = 0;             ///< enumerate only the graphs whose first op falls in this
    std::size_t num_shards = 1;        ///< shard (first ops dealt round robin): one per thread
    /// 1: deal the graphs by their first two ops instead (a graph of one op counts as its own
    /// prefix), so that a shard can be small: a first op alone may carry a large share of the
    /// graphs at depth 4. Every shard then walks all first two ops (a depth-2 enumeration's work).
    std::size_t deal_depth = 0;
};

/// What the callback sees of one enumerated graph (valid only during the call).
struct enumerated_graph {
    const pattern& graph;                          ///< ops in canonical order, outputs = unread values
    std::uint64_t fingerprint;                     ///< combine_unordered(output_hashes)
    std::span<const std::uint64_t> output_hashes;  ///< value_hash of each output, graph.outputs order
};

/// @brief The fixed random values of `w`'s variables for fingerprinting, from a generator seeded
/// with `seed` (the same seed gives the same values and so the same fingerprints).
inline std::vector<mod_tensor> variable_values(const world& w, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<mod_tensor> vs;
    for (const auto& v : w.variables) vs.push_back(random_mod_tensor(v.dims, rng));
    return vs;
}

/// @brief Calls `on_graph` once for every graph of 1..cfg.max_ops ops over `w`.
///
/// A graph is a set of ops; it is produced once, in its canonical op order (the lexicographically
/// least topological order under structural op keys, the normal form of a trace: an op that reads
/// nothing of the ops just before it must have a larger key than each of them). Pruned during
/// enumeration: an application whose shape rule (ops::op_table) throws; duplicate ops; a value equal
/// to one already in the graph or to a variable (TASO's "no duplicate intermediate values", which
/// also drops identities such as enlarging a kernel to its own size); both orders of a commutative
/// op's inputs (one is kept, unless !w.one_order_for_commutative); kinds in w.inputs_only applied
/// to a computed value; a data value in a kernel slot or a kernel in another slot of the same op
/// (w.kernel_slots); elementwise ops on different shapes when w.same_shape_elementwise;
/// applications the exact evaluator does not support. Constants are ops (they count toward k).
///
/// The op-free identities that the duplicate-value pruning meets are not lost: when `on_graph` also
/// has `identity(const pattern& source, std::span<const std::uint16_t> variables)`, it is called for
/// every application whose outputs each equal a variable (in order) and whose graph is that op and
/// its ancestors only, e.g. `matmul(x0,const_imm)` (x0) or `split(concat(x0,x1))` (x0, x1): the
/// rules with a side without ops, once per shard like the graphs.
/// @return the number of graphs produced.
template <class OnGraph>
requires std::invocable<OnGraph&, const enumerated_graph&> std::size_t enumerate_graphs(const world& w,
                                                                                        const enumeration_config& cfg,
                                                                                        OnGraph&& on_graph);

// ---- implementation ----

}  // namespace generation

namespace detail {

/// Structural key of variable `i`, of an op of kind `k` with attribute choice `choice` before its
/// inputs are mixed in, and of output `i` of an op whose key is `op_key`: the enumerator's canonical
/// op order and generate_rules' structure hashes are built on these.
constexpr std::uint64_t kind_key(ops::op_kind k, std::uint64_t choice) noexcept {
    return mix(static_cast<std::uint64_t>(k) * 4096 + choice);
}
constexpr std::uint64_t variable_key(std::uint64_t i) noexcept { return mix(0x1000 + i); }
constexpr std::uint64_t output_key(std::uint64_t op_key, std::uint64_t i) noexcept {
    return mix(op_key ^ (0x51ed + i));
}

class enumerator {
public:
    enumerator(const world& w, const enumeration_config& cfg) : w_(w), cfg_(cfg) {
        if (cfg.num_shards == 0 || cfg.shard >= cfg.num_shards)
            throw error("enumerate_graphs", concat("shard ", cfg.shard, " of ", cfg.num_shards), "shard < num_shards");
        if (cfg.max_ops == 0 || cfg.max_ops > 8)
            throw error("enumerate_graphs", concat("max_ops ", cfg.max_ops), "1..8");
        if (cfg.deal_depth > 1) throw error("enumerate_graphs", concat("deal_depth ", cfg.deal_depth), "0 or 1");
        for (auto k : w.kinds)
            if (w.num_choices(k) == 0)
                throw error("enumerate_graphs", concat("the world has no attribute choice for ", ops::name(k)),
                            "complete_choices() to have run");
        const auto vars = variable_values(w, cfg.seed);
        // room for every value up front: values_ holds pointers into data_
        data_.reserve(vars.size() + cfg.max_ops * 8);
        for (std::uint16_t i = 0; i < vars.size(); ++i) {
            data_.push_back(vars[i]);
            values_.push_back({value_ref{variable_op, i}, shape_id(vars[i].dims), value_hash(vars[i]), variable_key(i),
                               variable_op, w.variables[i].weight ? role::kernel : role::data});
        }
    }

    template <class OnGraph> std::size_t run(OnGraph& on_graph) {
        std::size_t count = 0;
        extend(on_graph, count);
        return count;
    }

private:
    enum class role : std::uint8_t { data, kernel, either };
    struct value_info {
        value_ref ref;
        std::uint16_t shape;  // index into shapes_
        std::uint64_t hash;   // value_hash of the exact value
        std::uint64_t key;    // structural key: same for the same term whatever the op order
        std::uint16_t op;     // producing op or variable_op
        role kind;            // data, kernel or either (constants)
    };

    std::uint16_t shape_id(const ops::shape& s) {
        for (std::uint16_t i = 0; i < shapes_.size(); ++i)
            if (shapes_[i] == s) return i;
        shapes_.push_back(s);
        return static_cast<std::uint16_t>(shapes_.size() - 1);
    }

    /// Output types of an application, memoized on (kind, choice, input shapes): a shape rule
    /// throwing is what rejects most applications, and exceptions are too slow to raise millions of.
    const ops::output_types* infer(ops::op_kind k, std::uint16_t choice, std::span<const std::size_t> in) {
        std::uint64_t key = kind_key(k, choice);
        for (auto v : in) key = mix(key ^ values_[v].shape);
        auto it = shape_memo_.find(key);
        if (it == shape_memo_.end()) {
            boost::container::small_vector<ops::tensor_type, 2> types;
            for (auto v : in) types.push_back(ops::tensor_type{shapes_[values_[v].shape]});
            it = shape_memo_.try_emplace(key).first;
            try {
                const ops::output_types r = ops::spec(k).infer(
                    std::span<const ops::tensor_type>(types.data(), types.size()), w_.attributes(k, choice));
                it->second.types.assign(r.begin(), r.end());
                it->second.valid = true;
            } catch (const error&) {}
        }
        return it->second.valid ? &it->second.types : nullptr;
    }

    template <class OnGraph> void extend(OnGraph& on_graph, std::size_t& count) {
        const std::size_t depth = p_.ops.size();
        std::vector<std::size_t> in;
        for (const auto k : w_.kinds) {
            const ops::op_spec& s = ops::spec(k);
            const std::size_t hi =
                s.max_inputs == ops::variadic ? std::max<std::size_t>(w_.variadic_arity, s.min_inputs) : s.max_inputs;
            for (std::size_t arity = s.min_inputs; arity <= hi; ++arity)
                for (std::uint16_t c = 0; c < w_.num_choices(k); ++c) {
                    in.assign(arity, 0);
                    const std::size_t n = values_.size();
                    while (true) {
                        try_apply(on_graph, count, k, c, in, depth);
                        std::size_t i = arity;
                        while (i > 0 && ++in[i - 1] == n) in[--i] = 0;
                        if (i == 0) break;
                    }
                }
        }
    }

    template <class OnGraph>
    void try_apply(OnGraph& on_graph, std::size_t& count, ops::op_kind k, std::uint16_t c,
                   std::span<const std::size_t> in, std::size_t depth) {
        const ops::op_spec& s = ops::spec(k);
        if (w_.restricted_to_inputs(k))
            for (auto v : in)
                if (!values_[v].ref.is_variable()) return;
        bool has_kernel_slot = false;
        for (const auto& ks : w_.kernel_slots) has_kernel_slot = has_kernel_slot || ks.kind == k;
        if (has_kernel_slot)
            for (std::size_t i = 0; i < in.size(); ++i) {
                bool kernel = false;
                for (const auto& ks : w_.kernel_slots) kernel = kernel || (ks.kind == k && ks.slot == i);
                if (values_[in[i]].kind == (kernel ? role::data : role::kernel)) return;
            }
        if (w_.one_order_for_commutative && s.has(ops::commutative) && values_[in[0]].key > values_[in[1]].key) return;
        if (w_.same_shape_elementwise && s.has(ops::broadcasts))
            for (auto v : in)
                if (values_[v].shape != values_[in[0]].shape) return;
        // structural key of the op; commutative inputs were put in key order above
        std::uint64_t key = kind_key(k, c);
        for (auto v : in) key = mix(key ^ values_[v].key);
        for (const auto& o : op_keys_)
            if (o == key) return;  // duplicate op
        // canonical order: compare with the ops just before that this op does not read
        for (std::size_t j = depth; j-- > 0;) {
            bool reads = false;
            for (auto v : in) reads = reads || values_[v].op == j;
            if (reads) break;
            if (op_keys_[j] >= key) return;
        }
        const ops::output_types* out = infer(k, c, in);
        if (out == nullptr) return;
        std::vector<mod_tensor> result;
        {
            boost::container::small_vector<const mod_tensor*, 2> args;
            for (auto v : in) args.push_back(&data_[v]);
            try {
                result = evaluate_modular(k, w_.attributes(k, c),
                                          std::span<const mod_tensor* const>(args.data(), args.size()), *out);
            } catch (const error&) {
                return;  // outside the evaluator's operator subset
            }
        }
        std::vector<std::uint64_t> hashes;
        bool duplicate = false;
        identity_vars_.clear();
        for (const auto& r : result) {
            const std::uint64_t h = value_hash(r);
            for (const auto& v : values_)
                if (v.hash == h) {
                    duplicate = true;  // duplicate value
                    if (v.ref.is_variable()) identity_vars_.push_back(v.ref.index);
                    break;
                }
            for (auto x : hashes) duplicate = duplicate || x == h;
            hashes.push_back(h);
        }
        if (duplicate) {
            if constexpr (requires(OnGraph & f, const pattern& p, std::span<const std::uint16_t> v) {
                              f.identity(p, v);
                          })
                if (identity_vars_.size() == result.size() && distinct(identity_vars_) &&
                    (depth > cfg_.deal_depth || prefixes_ % cfg_.num_shards == cfg_.shard))
                    report_identity(on_graph, k, c, in);
            return;
        }
        // the prefixes of deal_depth + 1 ops (and the shorter graphs, each its own) are dealt to the
        // shards; every shard walks the ops before them, to count them
        bool mine = true;
        if (depth <= cfg_.deal_depth) {
            mine = prefixes_++ % cfg_.num_shards == cfg_.shard;
            if (!mine && depth == cfg_.deal_depth) return;
        }
        // push the op
        pattern_op op{k, c, static_cast<std::uint16_t>(result.size()), {}};
        for (auto v : in) op.inputs.push_back(values_[v].ref);
        p_.ops.push_back(std::move(op));
        op_keys_.push_back(key);
        const auto op_index = static_cast<std::uint16_t>(depth);
        // the role of the result: that of its inputs; an op with kernel slots passes on the role of
        // its other slots (a conv's output is data), or is a kernel when it has no other slot (enlarge)
        role r = role::either;
        bool other_slot = false;
        for (std::size_t i = 0; i < in.size(); ++i) {
            bool kernel = false;
            for (const auto& ks : w_.kernel_slots) kernel = kernel || (ks.kind == k && ks.slot == i);
            if (kernel) continue;
            other_slot = true;
            if (values_[in[i]].kind == role::data) r = role::data;
            else if (values_[in[i]].kind == role::kernel && r == role::either) r = role::kernel;
        }
        if (has_kernel_slot) r = other_slot ? (r == role::either ? role::data : r) : role::kernel;
        for (std::uint16_t i = 0; i < result.size(); ++i) {
            values_.push_back(
                {value_ref{op_index, i}, shape_id(result[i].dims), hashes[i], output_key(key, i), op_index, r});
            data_.push_back(std::move(result[i]));
        }
        if (mine) {
            emit(on_graph);
            ++count;
        }
        if (depth + 1 < cfg_.max_ops) extend(on_graph, count);
        // pop it
        for (std::size_t i = 0; i < p_.ops.back().num_outputs; ++i) {
            values_.pop_back();
            data_.pop_back();
        }
        p_.ops.pop_back();
        op_keys_.pop_back();
    }

    static bool distinct(const std::vector<std::uint16_t>& v) {
        for (std::size_t i = 0; i < v.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (v[i] == v[j]) return false;
        return true;
    }

    /// The graph plus the op (k, c, in) as an identity's source, when every op of the graph is an
    /// ancestor of that op (otherwise the same identity comes from a smaller graph).
    template <class OnGraph>
    void report_identity(OnGraph& on_graph, ops::op_kind k, std::uint16_t c, std::span<const std::size_t> in) {
        std::vector<bool> needed(p_.ops.size(), false);
        for (auto v : in)
            if (!values_[v].ref.is_variable()) needed[values_[v].op] = true;
        for (std::size_t j = p_.ops.size(); j-- > 0;)
            if (needed[j])
                for (const auto& v : p_.ops[j].inputs)
                    if (!v.is_variable()) needed[v.op] = true;
        for (bool b : needed)
            if (!b) return;
        pattern source = p_;
        pattern_op op{k, c, static_cast<std::uint16_t>(identity_vars_.size()), {}};
        for (auto v : in) op.inputs.push_back(values_[v].ref);
        source.ops.push_back(std::move(op));
        source.outputs.clear();
        for (std::uint16_t i = 0; i < identity_vars_.size(); ++i)
            source.outputs.push_back(value_ref{static_cast<std::uint16_t>(p_.ops.size()), i});
        on_graph.identity(source, std::span<const std::uint16_t>(identity_vars_));
    }

    template <class OnGraph> void emit(OnGraph& on_graph) {
        p_.outputs = unread_values(p_);
        out_hashes_.clear();
        for (const auto& o : p_.outputs)
            for (const auto& v : values_)
                if (v.ref == o) out_hashes_.push_back(v.hash);
        on_graph(enumerated_graph{p_, combine_unordered(out_hashes_), out_hashes_});
    }

    const world& w_;
    enumeration_config cfg_;
    std::vector<mod_tensor> data_;
    std::vector<value_info> values_;
    std::vector<std::uint64_t> op_keys_;
    std::vector<ops::shape> shapes_;
    struct inferred {
        bool valid = false;
        ops::output_types types;
    };
    std::unordered_map<std::uint64_t, inferred> shape_memo_;
    pattern p_;
    std::vector<std::uint16_t> identity_vars_;  // per output of the op being tried, the variable it equals
    std::vector<std::uint64_t> out_hashes_;
    std::size_t prefixes_ = 0;  // of deal_depth + 1 ops and shorter graphs, met so far
};

}  // namespace detail

inline namespace generation {

template <class OnGraph>
requires std::invocable<OnGraph&, const enumerated_graph&> std::size_t enumerate_graphs(const world& w,
                                                                                        const enumeration_config& cfg,
                                                                                        OnGraph&& on_graph) {
    detail::enumerator e(w, cfg);
    return e.run(on_graph);
}

}  // namespace generation
}  // namespace goopt::subst
