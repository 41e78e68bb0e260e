#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Values known at import time (initializers, Constant nodes, folded shape subgraphs) and
/// ONNX's element types.

#include <goopt/error.hpp>
#include <goopt/ops/op_table.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace goopt::io::detail {

/// A value known at import time, with integers held exactly.
struct onnx_const {
    ops::dtype type = ops::dtype::f32;
    ops::shape dims;
    std::vector<double> f;        ///< floating types
    std::vector<std::int64_t> i;  ///< integer and boolean types

    bool integral() const noexcept { return !ops::is_floating(type); }
    std::size_t size() const noexcept { return integral() ? i.size() : f.size(); }
    /// Value k; a file can give fewer values than an operator needs, so the index is checked.
    double at(std::size_t k) const {
        in_range(k);
        return integral() ? static_cast<double>(i[k]) : f[k];
    }
    void in_range(std::size_t k) const {
        if (k >= size())
            throw error("onnx", concat("a constant of shape ", dims.to_string(), " has no value ", k),
                        concat("an index below ", size()));
    }
    /// v truncated to an int64 (shapes and indices held in a floating constant, folded results):
    /// NaN, infinities and values beyond int64 are bad input, not undefined behaviour.
    static std::int64_t to_int(double v) {
        constexpr double two63 = 9223372036854775808.0;  // 2^63, exact as a double
        if (!(v >= -two63 && v < two63))
            throw error("onnx", concat("the value ", v, " is not in the range of a 64-bit integer"),
                        "an integer in [-2^63, 2^63)");
        return static_cast<std::int64_t>(v);
    }
    std::int64_t int_at(std::size_t k) const {
        in_range(k);
        if (integral()) return i[k];
        return to_int(f[k]);
    }
    std::vector<std::int64_t> ints() const {
        if (integral()) return i;
        std::vector<std::int64_t> r;
        for (double v : f) r.push_back(to_int(v));
        return r;
    }
    /// Largest constant the importer reads from a file (an initializer or a Constant node): 2^26
    /// elements, more than GPT-2's token embedding (38.6 M).
    static constexpr std::int64_t max_elements = std::int64_t{1} << 26;
    /// Elements that folding may compute for one model beyond 4 per element of the file's own
    /// constants: 2^22, a 2048 x 2048 attention mask. Folding is for shape subgraphs, masks and
    /// weight arithmetic; a file that would fold a few bytes into hundreds of MB is refused.
    static constexpr std::int64_t max_folded_elements = std::int64_t{1} << 22;
    static constexpr std::int64_t fold_budget_per_file_element = 4;

    /// A zero constant; `fold_budget`, for a result that folding computes, is what it may still compute.
    static onnx_const make(ops::dtype t, ops::shape s, std::int64_t fold_budget = max_elements) {
        onnx_const c;
        c.type = t;
        c.dims = s;
        if (s.num_elements() > max_elements)
            throw error("onnx", concat("a constant of shape ", s.to_string(), " is too large to hold at import time"),
                        concat("at most ", max_elements, " elements"));
        if (s.num_elements() > fold_budget)
            throw error("onnx",
                        concat("a constant of shape ", s.to_string(),
                               " is more than folding may still compute at import time (", fold_budget,
                               " elements left of ", max_folded_elements, " plus ", fold_budget_per_file_element,
                               " per element of the file's own constants)"),
                        concat("at most ", fold_budget, " elements"));
        const auto n = static_cast<std::size_t>(s.num_elements());
        if (c.integral()) c.i.assign(n, 0);
        else c.f.assign(n, 0.0);
        return c;
    }
    void set(std::size_t k, double v) {
        if (type == ops::dtype::boolean) i[k] = v != 0.0;
        else if (integral()) i[k] = to_int(v);
        else f[k] = v;
    }
    void set_int(std::size_t k, std::int64_t v) {
        if (integral()) i[k] = v;
        else f[k] = static_cast<double>(v);
    }
};

/// goopt's element type of an ONNX TensorProto data type, if goopt has it.
inline std::optional<ops::dtype> onnx_dtype(int t) {
    switch (t) {
        case onnx::TensorProto_DataType_FLOAT:
            return ops::dtype::f32;
        case onnx::TensorProto_DataType_DOUBLE:
            return ops::dtype::f64;
        case onnx::TensorProto_DataType_FLOAT16:
            return ops::dtype::f16;
        case onnx::TensorProto_DataType_BFLOAT16:
            return ops::dtype::bf16;
        case onnx::TensorProto_DataType_INT64:
            return ops::dtype::i64;
        case onnx::TensorProto_DataType_INT32:
            return ops::dtype::i32;
        case onnx::TensorProto_DataType_INT8:
            return ops::dtype::i8;
        case onnx::TensorProto_DataType_UINT8:
            return ops::dtype::u8;
        case onnx::TensorProto_DataType_BOOL:
            return ops::dtype::boolean;
        default:
            return std::nullopt;
    }
}

/// `[a,b,c]`, as shapes print.
inline std::string ints_string(const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t k = 0; k < v.size(); ++k) {
        if (k) s += ',';
        s += concat(v[k]);
    }
    return s + "]";
}

/// Row-major offsets into `in` for every element of `out`, numpy broadcasting `in` to `out`.
inline std::vector<std::size_t> onnx_broadcast_offsets(const ops::shape& out, const ops::shape& in) {
    const std::size_t r = out.rank();
    std::vector<std::size_t> stride(r, 0);
    std::size_t s = 1;
    for (std::size_t k = in.rank(); k-- > 0;) {
        const std::size_t o = k + r - in.rank();
        stride[o] = in[k] == 1 ? 0 : s;
        s *= static_cast<std::size_t>(in[k]);
    }
    const auto n = static_cast<std::size_t>(out.num_elements());
    std::vector<std::size_t> offs(n);
    std::vector<std::int64_t> idx(r, 0);
    for (std::size_t e = 0; e < n; ++e) {
        std::size_t off = 0;
        for (std::size_t k = 0; k < r; ++k) off += static_cast<std::size_t>(idx[k]) * stride[k];
        offs[e] = off;
        for (std::size_t k = r; k-- > 0;) {
            if (++idx[k] < out[k]) break;
            idx[k] = 0;
        }
    }
    return offs;
}

}  // namespace goopt::io::detail
