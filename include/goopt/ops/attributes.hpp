#pragma once
/// @file
/// @brief Operator attributes: the closed set of attribute names, their value types, and a small map.

#include <goopt/error.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace goopt::ops {

/// Every attribute any operator has. A closed enum (not strings) keeps attribute maps small and
/// lets the constexpr operator table say which op takes which attribute.
enum class attr_id : std::uint8_t {
    shape,       ///< ints: shape of a source op (input, weight, constant) or reshape's target
    dtype,       ///< int: element type of a source op (ops::dtype)
    stride,      ///< ints [sh, sw]
    kernel,      ///< ints [kh, kw] of a pooling window, or enlarge's target kernel size
    padding,     ///< int: ops::padding_mode
    activation,  ///< int: ops::activation, fused into conv2d / matmul / pooling
    axis,        ///< int, negative counts from the end
    axes,        ///< ints, for reductions (empty = all axes)
    perm,        ///< ints, for transpose (empty = reverse the axes)
    sizes,       ///< ints, split's output sizes along axis
    pads,        ///< ints [begin_0..begin_{r-1}, end_0..end_{r-1}]
    begin,       ///< ints, slice start per axis
    end,         ///< ints, slice end (exclusive) per axis
    keepdims,    ///< int 0/1, for reductions
    epsilon,     ///< real, for batchnorm / layernorm
    min,         ///< real, for clip
    max,         ///< real, for clip
    value,       ///< real, pad value
    dilation,    ///< ints [dh, dw]: spacing of a conv2d kernel's taps (WaveNet's dilated convolutions)
    node,        ///< int: an opaque op's node in the model it was imported from (io::onnx_model::opaque_nodes)
    shapes,      ///< ints: an opaque op's output shapes, each as its rank and then its dimensions
    dtypes,      ///< ints: an opaque op's output element types (ops::dtype), one per output
    alpha,       ///< real: leaky_relu's slope below 0, hard_sigmoid's slope, elu's scale below 0, lrn's scale
    beta,        ///< real: hard_sigmoid's offset, lrn's exponent
    size,        ///< int: lrn's window of channels
    bias,        ///< real: lrn's additive constant
};

inline constexpr std::size_t num_attr_ids = 26;

constexpr std::string_view name(attr_id a) noexcept {
    constexpr std::string_view names[num_attr_ids] = {
        "shape",    "dtype", "stride", "kernel", "padding",  "activation", "axis", "axes", "perm",
        "sizes",    "pads",  "begin",  "end",    "keepdims", "epsilon",    "min",  "max",  "value",
        "dilation", "node",  "shapes", "dtypes", "alpha",    "beta",       "size", "bias"};
    return names[static_cast<std::size_t>(a)];
}

constexpr std::optional<attr_id> parse_attr_id(std::string_view s) noexcept {
    for (std::size_t i = 0; i < num_attr_ids; ++i)
        if (name(static_cast<attr_id>(i)) == s) return static_cast<attr_id>(i);
    return std::nullopt;
}

/// Padding of convolution and pooling windows, as TASO and TensorFlow define them.
enum class padding_mode : std::int64_t { same = 0, valid = 1 };
/// Activation fused into the op that produces a tensor (TASO fuses relu into conv and matmul).
enum class activation : std::int64_t { none = 0, relu = 1, sigmoid = 2, tanh = 3, gelu = 4 };
inline constexpr std::int64_t num_activations = 5;

constexpr std::string_view name(padding_mode p) noexcept { return p == padding_mode::same ? "same" : "valid"; }
constexpr std::string_view name(activation a) noexcept {
    constexpr std::string_view n[] = {"none", "relu", "sigmoid", "tanh", "gelu"};
    return n[static_cast<std::size_t>(a)];
}

enum class attr_type : std::uint8_t { integer, real, ints };

constexpr std::string_view name(attr_type t) noexcept {
    return t == attr_type::integer ? "integer" : t == attr_type::real ? "real" : "list of integers";
}

/// Value of one attribute: an integer, a real or a list of integers.
using attr_value = std::variant<std::int64_t, double, std::vector<std::int64_t>>;

constexpr attr_type type_of(const attr_value& v) noexcept { return static_cast<attr_type>(v.index()); }

/// Attributes of one op, kept sorted by id. After a graph accepts an op, every attribute its spec
/// declares is present (defaults filled in), so shape rules and kernels read without fallbacks.
class attribute_map {
    using item = std::pair<attr_id, attr_value>;
    using storage = boost::container::small_vector<item, 4>;

    storage::const_iterator find(attr_id id) const noexcept {
        return std::lower_bound(items_.begin(), items_.end(), id, [](const item& x, attr_id k) { return x.first < k; });
    }
    storage::iterator find(attr_id id) noexcept {
        return std::lower_bound(items_.begin(), items_.end(), id, [](const item& x, attr_id k) { return x.first < k; });
    }

public:
    attribute_map() = default;
    attribute_map(std::initializer_list<std::pair<attr_id, attr_value>> items) {
        for (const auto& [k, v] : items) set(k, v);
    }

    void set(attr_id id, attr_value v) {
        auto it = find(id);
        if (it != items_.end() && it->first == id) it->second = std::move(v);
        else items_.emplace(it, id, std::move(v));
    }
    bool has(attr_id id) const noexcept {
        auto it = find(id);
        return it != items_.end() && it->first == id;
    }
    void erase(attr_id id) {
        auto it = find(id);
        if (it != items_.end() && it->first == id) items_.erase(it);
    }
    const attr_value& get(attr_id id) const {
        auto it = find(id);
        if (it == items_.end() || it->first != id) throw error(concat("attribute '", name(id), "' is missing"));
        return it->second;
    }
    std::int64_t get_int(attr_id id) const { return as<std::int64_t>(id); }
    double get_real(attr_id id) const { return as<double>(id); }
    const std::vector<std::int64_t>& get_ints(attr_id id) const { return as<std::vector<std::int64_t>>(id); }

    auto begin() const noexcept { return items_.begin(); }
    auto end() const noexcept { return items_.end(); }
    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }

    friend bool operator==(const attribute_map& a, const attribute_map& b) { return a.items_ == b.items_; }

private:
    template <class T> const T& as(attr_id id) const {
        const attr_value& v = get(id);
        if (const T* p = std::get_if<T>(&v)) return *p;
        throw error(concat("attribute '", name(id), "' is a ", name(type_of(v)), ": expected a ",
                           name(type_of(attr_value(T{})))));
    }
    storage items_;
};

}  // namespace goopt::ops
