#pragma once
/// @file
/// @brief Tables with one entry per op_kind whose completeness is a compile error. Each module
/// that gives the op kinds a meaning (the op table, the interpreter's kernels, the gradient rules,
/// the fingerprint semantics) declares it in such a table, so a new kind that lacks a piece does
/// not compile, instead of failing at run time in a `default:` branch.

#include <goopt/ops/op_kind.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace goopt::ops {

/// A function pointer that cannot be null: it is only made from a function reference, and there is
/// no default. Checking `fn != nullptr` in a consteval check is not a constant expression where a
/// function's address may be null (GCC with -fsanitize=undefined or -fno-delete-null-pointer-checks),
/// so a missing or null function is made a type error instead.
template <class Fn> struct required_fn {
    Fn fn;
    // implicit, so that a row names its function plainly: shape_rules::conv2d
    constexpr required_fn(std::remove_pointer_t<Fn>& f) noexcept : fn(&f) {}
};

/// One row of a kind table: the kind it describes, written out so that a reader (and the check
/// below) sees which kind each entry belongs to.
template <class Entry> struct kind_row {
    op_kind kind;
    Entry entry;
};

/// The rows of a kind table, one per op_kind. `Entry` must not be default-constructible: then a
/// table with a row missing does not compile (the array's last element has no initializer).
template <class Entry> using kind_rows = std::array<kind_row<Entry>, num_op_kinds>;

namespace detail {
// Not constexpr: reaching it during constant evaluation is the compile error, and its name says why.
inline void kind_table_row_out_of_op_kind_order() {}

template <class Entry, std::size_t... I>
consteval std::array<Entry, sizeof...(I)> entries_of(const kind_rows<Entry>& rows, std::index_sequence<I...>) {
    return {rows[I].entry...};
}
}  // namespace detail

/// @brief The entries of `rows`, indexed by op_kind. A row out of op_kind order is a compile error,
/// so is a missing row (see kind_rows), so the table is complete whenever it compiles.
template <class Entry> consteval std::array<Entry, num_op_kinds> by_kind(const kind_rows<Entry>& rows) {
    static_assert(!std::is_default_constructible_v<Entry>, "a kind table's entries must be written out");
    for (std::size_t i = 0; i < num_op_kinds; ++i)
        if (static_cast<std::size_t>(rows[i].kind) != i) detail::kind_table_row_out_of_op_kind_order();
    return detail::entries_of(rows, std::make_index_sequence<num_op_kinds>{});
}

/// Every op kind, in order: for tests and tools that walk all kinds.
inline constexpr std::array<op_kind, num_op_kinds> all_op_kinds = [] {
    std::array<op_kind, num_op_kinds> r{};
    for (std::size_t i = 0; i < num_op_kinds; ++i) r[i] = static_cast<op_kind>(i);
    return r;
}();

}  // namespace goopt::ops
