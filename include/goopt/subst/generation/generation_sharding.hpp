#pragma once
/// @file
/// @brief Rule generation over processes (generation_config::sharding): the ranks of one run divide
/// the enumeration by first op and own the fingerprints by hash (fingerprint mod ranks), so each
/// rank holds only its share of the fingerprint table and of the graph store, and prunes and verifies
/// only its own buckets; the rules found are then shared, and every rank returns the
/// single-process result. The transport is the user's (goopt::mpi gives mpi::generation_sharding);
/// the core never sees it.

#include <goopt/error.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/subst/pattern.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::subst {
inline namespace generation {

/// @brief The ranks among which generate_rules divides its work. Called a few times per pass, never
/// on a hot path, hence a virtual interface (the transport is chosen at run time: under mpirun or not).
struct generation_sharding {
    virtual ~generation_sharding() = default;
    virtual std::size_t rank() const = 0;   ///< this process's, in [0, ranks())
    virtual std::size_t ranks() const = 0;  ///< processes in the run
    /// @brief Every rank calls it with one part per rank (`parts[r]` goes to rank r, its own part
    /// included); returns the parts sent to this rank, indexed by sender. A rank that fails instead
    /// must stop the whole run (no rank may wait forever).
    virtual std::vector<std::string> all_to_all(std::vector<std::string> parts) = 0;
};

}  // namespace generation

namespace detail {

/// The rank that owns fingerprint `f` among `ranks`: its bucket, its graphs, their pruning.
constexpr std::size_t owner_of(std::uint64_t f, std::size_t ranks) noexcept {
    return static_cast<std::size_t>(f % ranks);
}

/// Reads the little-endian fields that generate_rules' ranks send each other, naming the sender
/// when a part is cut short (a transport bug, not bad input).
class part_reader {
public:
    part_reader(std::string_view part, std::size_t from_rank) : part_(part), from_(from_rank) {}
    bool done() const noexcept { return at_ == part_.size(); }
    std::uint64_t next(int bytes) {
        if (part_.size() - at_ < static_cast<std::size_t>(bytes))
            throw error("generate_rules", concat("rank ", from_, "'s part of ", part_.size(), " bytes is cut short"),
                        "whole fields");
        const std::uint64_t v = io::detail::load_le(part_.data() + at_, bytes);
        at_ += static_cast<std::size_t>(bytes);
        return v;
    }
    std::string_view bytes(std::size_t n) {
        if (part_.size() - at_ < n)
            throw error("generate_rules", concat("rank ", from_, "'s part of ", part_.size(), " bytes is cut short"),
                        concat(n, " more bytes"));
        const auto s = part_.substr(at_, n);
        at_ += n;
        return s;
    }

private:
    std::string_view part_;
    std::size_t from_;
    std::size_t at_ = 0;
};

inline void append_value_ref(std::string& out, value_ref v) {
    io::detail::append_le(out, v.op, 2);
    io::detail::append_le(out, v.index, 2);
}
inline value_ref read_value_ref(part_reader& in) {
    const auto op = static_cast<std::uint16_t>(in.next(2));
    return {op, static_cast<std::uint16_t>(in.next(2))};
}

/// A pattern as bytes (any pattern: an op-free side returns variables, which packed_graph cannot).
inline void append_pattern(std::string& out, const pattern& p) {
    io::detail::append_le(out, p.ops.size(), 2);
    for (const auto& o : p.ops) {
        io::detail::append_le(out, static_cast<std::uint64_t>(o.kind), 2);
        io::detail::append_le(out, o.choice, 2);
        io::detail::append_le(out, o.num_outputs, 2);
        io::detail::append_le(out, o.inputs.size(), 2);
        for (auto v : o.inputs) append_value_ref(out, v);
    }
    io::detail::append_le(out, p.outputs.size(), 2);
    for (auto v : p.outputs) append_value_ref(out, v);
}
inline pattern read_pattern(part_reader& in) {
    pattern p;
    p.ops.resize(in.next(2));
    for (auto& o : p.ops) {
        o.kind = static_cast<ops::op_kind>(in.next(2));
        o.choice = static_cast<std::uint16_t>(in.next(2));
        o.num_outputs = static_cast<std::uint16_t>(in.next(2));
        o.inputs.resize(in.next(2));
        for (auto& v : o.inputs) v = read_value_ref(in);
    }
    p.outputs.resize(in.next(2));
    for (auto& v : p.outputs) v = read_value_ref(in);
    return p;
}

}  // namespace detail
}  // namespace goopt::subst
