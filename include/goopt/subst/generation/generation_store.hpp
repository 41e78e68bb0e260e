#pragma once
/// @file
/// @brief How rule generation holds the hundred million graphs of depth 4 (generate_rules.hpp, stage 1):
/// patterns packed in 25 bytes, stored in the buckets of the fingerprints that more than one graph has,
/// filled by threads. TASO (SOSP'19) §3.

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/subst/fingerprint.hpp>
#include <goopt/subst/generation/check_rule.hpp>
#include <goopt/subst/generation/enumerate_graphs.hpp>
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
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>
namespace goopt::subst::detail {

inline constexpr std::size_t max_packed_ops = 4;

/// A pattern in 25 bytes (per op: kind, choice, outputs, inputs, two input refs), so that the
/// hundred million graphs of depth 4 that share a fingerprint with another fit in memory. Its
/// fingerprint is where it is stored (the bucket), not a field.
struct packed_graph {
    std::array<std::uint8_t, 6 * max_packed_ops> bytes{};
    std::uint8_t num_ops = 0;
    friend bool operator<(const packed_graph& a, const packed_graph& b) {
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

inline packed_graph pack(const pattern& p) {
    packed_graph g;
    // generate_rules admits at most max_packed_ops ops of at most two inputs; the bounds say so here
    g.num_ops = static_cast<std::uint8_t>(std::min(p.ops.size(), max_packed_ops));
    for (std::size_t i = 0; i < g.num_ops; ++i) {
        const auto& o = p.ops[i];
        auto* b = &g.bytes[6 * i];
        b[0] = static_cast<std::uint8_t>(o.kind);
        b[1] = static_cast<std::uint8_t>(o.choice);
        b[2] = static_cast<std::uint8_t>(o.num_outputs);
        b[3] = static_cast<std::uint8_t>(std::min<std::size_t>(o.inputs.size(), 2));
        for (std::size_t k = 0; k < b[3]; ++k) b[4 + k] = pack_ref(o.inputs[k]);
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

/// The fingerprints that more than one graph has (the buckets), sorted, and where each bucket's
/// graphs go in the store. Built from the threads' sorted fingerprint lists by a merge, so the
/// 8-bytes-a-graph table of pass 1 is never copied; found by a table of the top bits, so that a
/// lookup costs two cache misses instead of a binary search's ~25.
class bucket_table {
public:
    /// @param sorted one sorted fingerprint list per thread (all the graphs)
    explicit bucket_table(const std::vector<std::vector<std::uint64_t>>& sorted) {
        std::vector<std::size_t> at(sorted.size(), 0);
        std::uint64_t total = 0;
        for (;;) {
            std::optional<std::uint64_t> least;
            for (std::size_t t = 0; t < sorted.size(); ++t)
                if (at[t] < sorted[t].size() && (!least || sorted[t][at[t]] < *least)) least = sorted[t][at[t]];
            if (!least) break;
            std::uint64_t n = 0;
            for (std::size_t t = 0; t < sorted.size(); ++t)
                for (; at[t] < sorted[t].size() && sorted[t][at[t]] == *least; ++at[t]) ++n;
            if (n < 2) continue;
            fingerprints_.push_back(*least);
            begin_.push_back(static_cast<std::uint32_t>(total));
            total += n;
            if (total > std::numeric_limits<std::uint32_t>::max())
                throw error("generate_rules", "more than 2^32 graphs share a fingerprint", "fewer (lower max_ops)");
        }
        begin_.push_back(static_cast<std::uint32_t>(total));
        while (bits_ < 24 && (std::size_t{1} << (bits_ + 1)) <= fingerprints_.size()) ++bits_;
        top_.assign((std::size_t{1} << bits_) + 1, 0);
        for (std::size_t b = 0, t = 0; t < top_.size(); ++t) {
            while (b < fingerprints_.size() && top_bits(fingerprints_[b]) < t) ++b;
            top_[t] = static_cast<std::uint32_t>(b);
        }
    }
    static constexpr std::size_t none = ~std::size_t{0};
    std::size_t size() const { return fingerprints_.size(); }
    /// Graphs in all buckets.
    std::size_t graphs() const { return begin_.back(); }
    /// Bucket b's graphs are store[begin(b), end(b)).
    std::size_t begin(std::size_t b) const { return begin_[b]; }
    std::size_t end(std::size_t b) const { return begin_[b + 1]; }
    /// The bucket of fingerprint `f`, or none when no other graph has it.
    std::size_t find(std::uint64_t f) const {
        const auto t = top_bits(f);
        const auto first = fingerprints_.begin() + top_[t], last = fingerprints_.begin() + top_[t + 1];
        const auto it = std::lower_bound(first, last, f);
        return it != last && *it == f ? static_cast<std::size_t>(it - fingerprints_.begin()) : none;
    }

private:
    std::size_t top_bits(std::uint64_t f) const { return bits_ ? static_cast<std::size_t>(f >> (64 - bits_)) : 0; }
    std::vector<std::uint64_t> fingerprints_;
    std::vector<std::uint32_t> begin_;
    std::vector<std::uint32_t> top_;  // top_[t]: first bucket whose fingerprint's top bits are >= t
    unsigned bits_ = 0;
};

}  // namespace goopt::subst::detail
