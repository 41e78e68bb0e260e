#pragma once
/// @file
/// @brief What the library knows about one operator kind, as a literal type for the constexpr table.

#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/shape.hpp>

#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <span>
#include <string_view>

namespace goopt::ops {

/// Output types of one op; most ops have one output, split and lstm_cell have more.
using output_types = boost::container::small_vector<tensor_type, 2>;

/// A span over a contiguous container (Boost 1.74's small_vector is not a std::contiguous_range).
template <class C> std::span<const typename C::value_type> view(const C& c) noexcept { return {c.data(), c.size()}; }

/// Shape (and dtype) inference: throws goopt::error `<what>: expected <expected>` (or `<what>`);
/// the caller that names the op (graph, interpreter, importer) prefixes its module and the op.
using infer_fn = output_types (*)(std::span<const tensor_type> inputs, const attribute_map& attrs);
/// FLOPs or bytes of memory traffic of one execution of the op.
using cost_fn = double (*)(std::span<const tensor_type> inputs, std::span<const tensor_type> outputs,
                           const attribute_map& attrs);

/// One attribute an op declares: its type and whether it must be given, else its default.
struct attr_spec {
    attr_id id;
    attr_type type;
    bool required = false;
    std::int64_t int_default = 0;
    double real_default = 0.0;
    std::span<const std::int64_t> ints_default = {};
};

/// Algebraic and structural facts, used by the substitution generator and by fusion.
enum property : std::uint32_t {
    none_property = 0,
    source = 1u << 0,            ///< no inputs: graph input, weight or constant
    constant = 1u << 1,          ///< value is determined by the attributes alone
    elementwise = 1u << 2,       ///< output element i depends only on input elements i (after broadcast)
    commutative = 1u << 3,       ///< f(a, b) = f(b, a)
    associative = 1u << 4,       ///< f(f(a, b), c) = f(a, f(b, c))
    broadcasts = 1u << 5,        ///< numpy broadcasting of the inputs' shapes
    linear = 1u << 6,            ///< linear in all inputs taken together (when the fused activation is none)
    fused_activation = 1u << 7,  ///< has an `activation` attribute applied to its result
    data_movement = 1u << 8,     ///< moves or selects elements, computes nothing
    multi_output = 1u << 9,
    // what one fused kernel can hold (sim/fusion_legality.hpp): every computing op has exactly one
    // of contraction, reduction or a loop property (elementwise, pointwise, data_movement)
    contraction = 1u << 10,  ///< sums products over contracted axes (conv, matmul, recurrent cell): a library kernel
    reduction = 1u << 11,    ///< an output element combines many input elements (reduce, pool, normalize)
    pointwise = 1u << 12,    ///< per element as elementwise, but broadcast along any axis (batchnorm's channels)
};
constexpr property operator|(property a, property b) noexcept {
    return static_cast<property>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}

/// Arity marker for ops taking any number of inputs (concat).
inline constexpr std::uint16_t variadic = 0xffff;

/// Everything the library knows about one operator kind.
struct op_spec {
    op_kind kind;
    std::string_view name;
    std::uint16_t min_inputs;
    std::uint16_t max_inputs;   ///< ops::variadic for no upper bound
    std::uint16_t num_outputs;  ///< 0: given by the attributes (split: one per size)
    std::span<const attr_spec> attrs;
    infer_fn infer;
    cost_fn flops;
    cost_fn bytes;  ///< memory traffic: bytes read plus bytes written
    property props = none_property;
    std::uint8_t linear_in = 0;  ///< bit k: linear in input k with the others fixed (activation none)
    std::string_view semantics = {};

    constexpr bool has(property p) const noexcept { return (props & p) != 0; }
    constexpr bool takes(attr_id id) const noexcept {
        for (const auto& a : attrs)
            if (a.id == id) return true;
        return false;
    }
};

}  // namespace goopt::ops
