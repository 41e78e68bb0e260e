#pragma once
/// @file
/// @brief Tensor shapes: a fixed-capacity list of dimensions, so that copying a graph copies no heap.

#include <goopt/error.hpp>
#include <goopt/ops/dtype.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <span>
#include <string>

namespace goopt::ops {

/// Largest rank goopt represents (ONNX vision and transformer models stay well below it).
inline constexpr std::size_t max_rank = 8;

/// Dimensions of a tensor, outermost first (NCHW for images). Rank 0 is a scalar.
class shape {
public:
    constexpr shape() = default;
    constexpr shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.end()); }
    constexpr explicit shape(std::span<const std::int64_t> dims) { assign(dims.begin(), dims.end()); }

    constexpr std::size_t rank() const noexcept { return rank_; }
    constexpr std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
    constexpr std::int64_t& operator[](std::size_t i) noexcept { return dims_[i]; }
    constexpr const std::int64_t* begin() const noexcept { return dims_.data(); }
    constexpr const std::int64_t* end() const noexcept { return dims_.data() + rank_; }
    constexpr std::int64_t* begin() noexcept { return dims_.data(); }
    constexpr std::int64_t* end() noexcept { return dims_.data() + rank_; }
    constexpr std::int64_t back() const noexcept { return dims_[rank_ - 1]; }

    constexpr void push_back(std::int64_t d) {
        if (rank_ == max_rank) throw error("shape", concat("rank exceeds the maximum of ", max_rank));
        dims_[rank_++] = d;
    }

    /// Product of the dimensions; throws goopt::error when it overflows int64 (a huge shape is bad
    /// input, not something to wrap around silently).
    constexpr std::int64_t num_elements() const {
        std::int64_t n = 1;
        for (std::int64_t d : *this) {
            if (d < 0) throw error(concat("shape ", to_string(), ": negative dimension"));
            if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d)
                throw error(concat("shape ", to_string(), ": element count overflows 64 bits"));
            n *= d;
        }
        return n;
    }

    /// Axis normalized to [0, rank) from Python-style negative indexing; throws when out of range.
    constexpr std::size_t axis(std::int64_t a) const {
        const auto r = static_cast<std::int64_t>(rank_);
        if (a < -r || a >= r) throw error(concat("axis ", a, " is out of range for rank ", r));
        return static_cast<std::size_t>(a < 0 ? a + r : a);
    }

    std::string to_string() const {
        std::string s = "[";
        for (std::size_t i = 0; i < rank_; ++i) {
            if (i) s += ',';
            s += std::to_string(dims_[i]);
        }
        s += ']';
        return s;
    }

    /// Writes the shape as to_string() does: for messages built with goopt::concat.
    friend std::ostream& operator<<(std::ostream& o, const shape& s) { return o << s.to_string(); }

    friend constexpr bool operator==(const shape& a, const shape& b) noexcept {
        return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
    }

private:
    template <class It> constexpr void assign(It first, It last) {
        for (; first != last; ++first) push_back(*first);
    }
    std::array<std::int64_t, max_rank> dims_{};
    std::uint8_t rank_ = 0;
};

/// Shape and element type of a tensor: what shape inference computes.
struct tensor_type {
    shape dims;
    dtype type = dtype::f32;

    std::int64_t num_elements() const { return dims.num_elements(); }
    /// Size in bytes; throws goopt::error when it overflows int64.
    std::int64_t bytes() const {
        std::int64_t b = 0;
        if (__builtin_mul_overflow(num_elements(), static_cast<std::int64_t>(size_of(type)), &b))
            throw error(concat("tensor ", dims.to_string(), ": byte count overflows 64 bits"));
        return b;
    }
    friend constexpr bool operator==(const tensor_type&, const tensor_type&) = default;
};

inline std::string to_string(const tensor_type& t) { return std::string(name(t.type)) + t.dims.to_string(); }

}  // namespace goopt::ops
