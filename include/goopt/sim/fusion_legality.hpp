#pragma once
/// @file
/// @brief Which ops a compiler emits as one kernel: the one rule every fuser and the simulator
/// apply, after XLA's instruction fusion (loop fusion of elementwise and broadcast ops, input fusion
/// of a reduction with its producers, output fusion of a GEMM or convolution with its epilogue).

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops/op_spec.hpp>
#include <goopt/ops/op_table.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace goopt::sim {

/// What an op can be inside a fused kernel, from its op spec's properties.
enum class fusion_role : std::uint8_t {
    none,         ///< a source (input, weight, constant): launches nothing, never in a group
    loop,         ///< elementwise, pointwise or data movement: fuses with anything that allows it
    reduction,    ///< the last op of its kernel: fuses into it its producers, never its consumers
    contraction,  ///< conv, matmul or a recurrent cell: fuses only its elementwise epilogue
    alone,        ///< an ONNX operator kept opaque: semantics unknown, so it runs as its own kernel
};

constexpr fusion_role fusion_role_of(const ops::op_spec& s) noexcept {
    if (s.has(ops::source)) return fusion_role::none;
    if (s.kind == ops::op_kind::opaque) return fusion_role::alone;
    if (s.has(ops::contraction)) return fusion_role::contraction;
    if (s.has(ops::reduction)) return fusion_role::reduction;
    return fusion_role::loop;  // ops::op_table's static_assert: every other computing op is a loop op
}

/// An epilogue op of a contraction: computed per output element (not data movement).
constexpr bool is_epilogue(const ops::op_spec& s) noexcept {
    return !s.has(ops::source) && (s.has(ops::elementwise) || s.has(ops::pointwise));
}

/// @brief Whether consumer `c` may join a kernel through its producer `p`, looking at the two ops
/// alone: no source; a reduction takes no consumer into its kernel; a contraction takes only an
/// epilogue (elementwise or pointwise) consumer and never joins its producer's kernel.
constexpr bool can_fuse(const ops::op_spec& p, const ops::op_spec& c) noexcept {
    const fusion_role rp = fusion_role_of(p), rc = fusion_role_of(c);
    if (rp == fusion_role::none || rc == fusion_role::none) return false;
    if (rp == fusion_role::alone || rc == fusion_role::alone) return false;
    if (rp == fusion_role::reduction || rc == fusion_role::contraction) return false;
    if (rp == fusion_role::contraction) return is_epilogue(c);
    return true;
}

static_assert(can_fuse(ops::spec(ops::op_kind::conv2d), ops::spec(ops::op_kind::relu)));
static_assert(!can_fuse(ops::spec(ops::op_kind::matmul), ops::spec(ops::op_kind::matmul)));
static_assert(!can_fuse(ops::spec(ops::op_kind::weight), ops::spec(ops::op_kind::relu)));
static_assert(!can_fuse(ops::spec(ops::op_kind::opaque), ops::spec(ops::op_kind::relu)));
static_assert(!can_fuse(ops::spec(ops::op_kind::relu), ops::spec(ops::op_kind::opaque)));
static_assert(can_fuse(ops::spec(ops::op_kind::relu), ops::spec(ops::op_kind::reduce_sum)));

/// Why a group cannot be one kernel (fusion_check::why names it).
struct fusion_violation {
    enum kind_t : std::uint8_t {
        source,                ///< a source in a group of two or more ops
        two_contractions,      ///< two contractions in one kernel
        contraction_prologue,  ///< the contraction reads a member of its own group
        not_epilogue,          ///< beside a contraction, an op that is not its elementwise epilogue
        reduction_consumer,    ///< a member reads the group's reduction
        two_reductions,        ///< two reductions in one kernel
        disconnected,          ///< members not joined by producer/consumer edges inside the group
        opaque,                ///< an op of unknown semantics (fusion_role::alone) in a group
    } kind;
    graph::op_id op;  ///< the op at fault
};

/// @brief The legality check of whole groups on one graph, with reusable scratch (one per user:
/// not thread-safe). The rule, for a group of two or more ops (convexity and one device are the
/// simulator's other checks):
/// - no source;
/// - at most one contraction, and then only with its epilogue: the contraction reads no member, and
///   every other member is elementwise or pointwise and reads a member (so it descends from the
///   contraction inside the group); a contraction never shares a kernel with a reduction;
/// - at most one reduction, and no member reads it (a reduction ends its kernel);
/// - the members are connected by producer/consumer edges inside the group (no horizontal fusion).
class fusion_check {
public:
    explicit fusion_check(const graph::computation_graph& g) : g_(&g), mark_(g.num_ops(), 0) {}
    fusion_check(graph::computation_graph&&) = delete;

    /// The first violation of `group` (op ids), or nothing when the group is one legal kernel.
    std::optional<fusion_violation> violation(std::span<const graph::op_id> group);
    bool legal(std::span<const graph::op_id> group) { return !violation(group).has_value(); }
    /// One line saying what is wrong, naming the op.
    std::string why(const fusion_violation& v) const;
    const graph::computation_graph& graph() const noexcept { return *g_; }

private:
    const graph::computation_graph* g_;
    std::vector<std::uint32_t> mark_;  // == stamp_: in the group being checked
    std::vector<graph::op_id> stack_;
    std::uint32_t stamp_ = 0;
};

/// The expected-text of a refused group, for error messages.
inline constexpr std::string_view fusion_rule_text =
    "fusion groups a compiler emits as one kernel: no source; a contraction only with its elementwise epilogue; "
    "a reduction last; one contraction or reduction per group; connected by producer/consumer edges";

// ---- implementation ----

inline std::optional<fusion_violation> fusion_check::violation(std::span<const graph::op_id> group) {
    if (group.size() < 2) return std::nullopt;
    if (++stamp_ == 0) {  // wrapped: clear the marks once in 2^32 checks
        std::fill(mark_.begin(), mark_.end(), 0u);
        stamp_ = 1;
    }
    for (graph::op_id o : group) mark_[o] = stamp_;
    auto inside = [&](graph::op_id o) { return mark_[o] == stamp_; };
    auto reads_member = [&](graph::op_id o) {
        for (graph::tensor_id t : g_->get_op(o).inputs)
            if (inside(g_->producer(t))) return true;
        return false;
    };
    graph::op_id contraction = graph::no_op, reduction = graph::no_op;
    for (graph::op_id o : group) {
        switch (fusion_role_of(g_->get_op(o).spec())) {
            case fusion_role::none:
                return fusion_violation{fusion_violation::source, o};
            case fusion_role::alone:
                return fusion_violation{fusion_violation::opaque, o};
            case fusion_role::contraction:
                if (contraction != graph::no_op) return fusion_violation{fusion_violation::two_contractions, o};
                contraction = o;
                break;
            case fusion_role::reduction:
                if (reduction != graph::no_op) return fusion_violation{fusion_violation::two_reductions, o};
                reduction = o;
                break;
            case fusion_role::loop:
                break;
        }
    }
    if (contraction != graph::no_op) {
        if (reads_member(contraction)) return fusion_violation{fusion_violation::contraction_prologue, contraction};
        for (graph::op_id o : group)
            if (o != contraction && (!is_epilogue(g_->get_op(o).spec()) || !reads_member(o)))
                return fusion_violation{fusion_violation::not_epilogue, o};
    }
    if (reduction != graph::no_op)
        for (graph::tensor_id t : g_->get_op(reduction).outputs)
            for (const graph::use& u : g_->get_tensor(t).uses)
                if (inside(u.op)) return fusion_violation{fusion_violation::reduction_consumer, u.op};
    // connectivity: walk producer/consumer edges inside the group from its first op
    std::size_t reached = 0;
    stack_.assign(1, group[0]);
    mark_[group[0]] = stamp_ - 1;  // visited: leaves the "inside" stamp
    while (!stack_.empty()) {
        const graph::op_id o = stack_.back();
        stack_.pop_back();
        ++reached;
        auto visit = [&](graph::op_id n) {
            if (mark_[n] != stamp_) return;
            mark_[n] = stamp_ - 1;
            stack_.push_back(n);
        };
        for (graph::tensor_id t : g_->get_op(o).inputs) visit(g_->producer(t));
        for (graph::tensor_id t : g_->get_op(o).outputs)
            for (const graph::use& u : g_->get_tensor(t).uses) visit(u.op);
    }
    if (reached != group.size())
        for (graph::op_id o : group)
            if (mark_[o] == stamp_) return fusion_violation{fusion_violation::disconnected, o};
    return std::nullopt;
}

inline std::string fusion_check::why(const fusion_violation& v) const {
    const std::string op = g_->describe(v.op);
    switch (v.kind) {
        case fusion_violation::source:
            return concat("op ", op, " is a source (input, weight or constant), no kernel's op");
        case fusion_violation::two_contractions:
            return concat("op ", op, " is a second contraction (conv or matmul) in one kernel");
        case fusion_violation::contraction_prologue:
            return concat("contraction ", op, " reads an op of its own group (a contraction takes only an epilogue)");
        case fusion_violation::not_epilogue:
            return concat("op ", op, " shares a kernel with a contraction but is not its elementwise epilogue");
        case fusion_violation::reduction_consumer:
            return concat("op ", op, " reads the group's reduction (a reduction ends its kernel)");
        case fusion_violation::two_reductions:
            return concat("op ", op, " is a second reduction in one kernel");
        case fusion_violation::disconnected:
            return concat("op ", op, " is not joined to the rest of its group by producer/consumer edges inside it");
        case fusion_violation::opaque:
            return concat("op ", op, " is an operator goopt keeps opaque (its semantics are unknown): it runs alone");
    }
    return "unknown";
}

}  // namespace goopt::sim
