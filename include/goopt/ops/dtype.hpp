#pragma once
/// @file
/// @brief Element types of tensors.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace goopt::ops {

/// Element type of a tensor. Sizes matter for memory and traffic; the interpreter evaluates
/// floating types in float or double and integer index tensors (gather) as integers.
enum class dtype : std::uint8_t { f32, f64, f16, bf16, i64, i32, i8, u8, boolean };

inline constexpr std::size_t num_dtypes = 9;

/// Bytes per element.
constexpr std::size_t size_of(dtype t) noexcept {
    switch (t) {
        case dtype::f64:
        case dtype::i64:
            return 8;
        case dtype::f32:
        case dtype::i32:
            return 4;
        case dtype::f16:
        case dtype::bf16:
            return 2;
        case dtype::i8:
        case dtype::u8:
        case dtype::boolean:
            return 1;
    }
    return 0;
}

constexpr std::string_view name(dtype t) noexcept {
    switch (t) {
        case dtype::f32:
            return "f32";
        case dtype::f64:
            return "f64";
        case dtype::f16:
            return "f16";
        case dtype::bf16:
            return "bf16";
        case dtype::i64:
            return "i64";
        case dtype::i32:
            return "i32";
        case dtype::i8:
            return "i8";
        case dtype::u8:
            return "u8";
        case dtype::boolean:
            return "bool";
    }
    return "?";
}

constexpr bool is_floating(dtype t) noexcept {
    return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16;
}

constexpr bool is_integral(dtype t) noexcept { return !is_floating(t) && t != dtype::boolean; }

/// Inverse of name(); nullopt for an unknown spelling.
constexpr std::optional<dtype> parse_dtype(std::string_view s) noexcept {
    for (std::size_t i = 0; i < num_dtypes; ++i)
        if (name(static_cast<dtype>(i)) == s) return static_cast<dtype>(i);
    return std::nullopt;
}

static_assert(parse_dtype("bf16") == dtype::bf16 && !parse_dtype("float"));

}  // namespace goopt::ops
