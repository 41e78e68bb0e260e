#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Conv, MaxPool, AveragePool and ConvTranspose, 1-D and 2-D. ONNX's explicit pads become
/// TensorFlow-style SAME or VALID where they coincide with it, and an explicit pad op followed by a VALID window
/// otherwise.
///
/// ConvTranspose has no op kind of its own; it is lowered exactly onto existing ones: along each
/// spatial axis a gather puts input cell i at i*stride + offset of a zero tensor (zero insertion,
/// padding and cropping in one; the zeros are gathered from one zero cell padded onto the input),
/// and a stride-1 VALID conv2d with the weights flipped and transposed at import time then gives the
/// transposed convolution (Dumoulin & Visin, "A guide to convolution arithmetic", 2016, §4). The
/// conv multiplies the inserted zeros, stride^2 times the useful work for a 2-D stride s, more FLOPs
/// than a native kernel. It was chosen because it needs no new op kind (no shape rule, cost
/// formula, kernel and gradient to add), and every existing piece (simulator, rewriting, training
/// transform) handles it already. (Until session 28 the zero insertion was a product with a dense
/// 0/1 matrix [in, L] per axis, in*L multiply-adds per row.)

#include <goopt/io/onnx/importer.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <vector>

namespace goopt::io::detail {

/// A 1-D window's attribute as the 2-D one of height 1: [v] (kernel, stride, dilation, output
/// padding) becomes [unit, v], and pads [begin, end] become [unit, begin, unit, end]; any other
/// length is returned as it is, for the caller to refuse.
inline std::optional<std::vector<std::int64_t>> height_one(std::optional<std::vector<std::int64_t>> v,
                                                           std::int64_t unit) {
    if (!v) return v;
    if (v->size() == 1) return std::vector<std::int64_t>{unit, (*v)[0]};
    if (v->size() == 2) return std::vector<std::int64_t>{unit, (*v)[0], unit, (*v)[1]};
    return v;
}

inline void onnx_importer::convert_conv(const node_t& n, const onnx_handler&) { window_op(n, true, false); }

inline void onnx_importer::convert_max_pool(const node_t& n, const onnx_handler&) {
    if (wants_output(n, 1)) no_kind("the Indices output is used", "one output");
    window_op(n, false, true);
}

inline void onnx_importer::convert_average_pool(const node_t& n, const onnx_handler&) { window_op(n, false, false); }

inline void onnx_importer::window_op(const node_t& n, bool conv, bool max_pool) {
    using ops::attr_id;
    const std::string name = node_name(n);
    const ops::shape& given = dims_in(n, 0);
    // a 1-D window on [N, C, L] is the 2-D window of height 1 on [N, C, 1, L]
    const bool one_d = given.rank() == 3;
    if (given.rank() != 4 && !one_d)
        fail(n, concat("input has shape ", given.to_string()),
             "a 1-D window on NCL (rank 3) or a 2-D one on NCHW (rank 4)");
    const ops::shape x = one_d ? ops::shape{given[0], given[1], 1, given[2]} : given;
    const std::size_t spatial = one_d ? 1 : 2;
    auto as_2d = [&](std::optional<ints> v, std::int64_t unit) { return one_d ? height_one(std::move(v), unit) : v; };
    ints kernel;
    if (conv) {
        const ops::shape& w = dims_in(n, 1);
        if (w.rank() != spatial + 2)
            fail(n, concat("weight has shape ", w.to_string()), one_d ? "[O, C/group, k]" : "[O, C/group, kh, kw]");
        kernel = one_d ? ints{1, w[2]} : ints{w[2], w[3]};
        const auto group = attr_int(n, "group", 1);
        std::int64_t channels = 0;
        if (group < 1 || __builtin_mul_overflow(w[1], group, &channels) || channels != x[1])
            fail(n, concat("group ", group, " does not match input channels ", x[1], " and weight ", w.to_string()),
                 "group x weight's C/group = input channels");
    } else {
        kernel = as_2d(attr_ints(n, "kernel_shape"), 1).value_or(ints{});
    }
    if (kernel.size() != 2)
        fail(n, concat("kernel_shape ", ints_string(attr_ints(n, "kernel_shape").value_or(ints{}))),
             concat(spatial, " values (a ", spatial, "-D window)"));
    const ints stride = as_2d(attr_ints(n, "strides"), 1).value_or(ints{1, 1});
    const ints dil = as_2d(attr_ints(n, "dilations"), 1).value_or(ints{1, 1});
    ints pads = as_2d(attr_ints(n, "pads"), 0).value_or(ints{0, 0, 0, 0});
    if (stride.size() != 2 || dil.size() != 2 || pads.size() != 4)
        fail(n, "strides / dilations / pads have the wrong length",
             concat(spatial, " strides, ", spatial, " dilations and ", 2 * spatial, " pads"));
    constexpr std::int64_t big = std::int64_t{1} << 30;
    for (const ints* v : std::array<const ints*, 4>{&kernel, &stride, &dil, &pads})
        for (auto d : *v)
            if (d < 0 || d > big)
                fail(n, concat("kernel, strides, dilations or pads ", ints_string(*v)), "values in [0, 2^30]");
    if (!conv && (dil[0] != 1 || dil[1] != 1)) no_kind("dilated pooling", "dilations of 1");
    const bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    const bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
    const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
    ints out(2), kernel_eff(2);
    bool all_same = true, all_valid = true;
    for (std::size_t a = 0; a < 2; ++a) {
        const std::int64_t in = x[2 + a], k = (kernel[a] - 1) * dil[a] + 1, s = stride[a];
        if (k < 1 || s < 1) fail(n, "kernel, stride or dilation is 0", "values >= 1");
        kernel_eff[a] = k;
        const std::int64_t same_out = (in + s - 1) / s;
        const std::int64_t total = std::max<std::int64_t>((same_out - 1) * s + k - in, 0);
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            pads[a] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads[a + 2] = total - pads[a];
        } else if (auto_pad == "VALID") {
            pads[a] = pads[a + 2] = 0;
        } else if (auto_pad != "NOTSET") {
            fail(n, concat("auto_pad '", auto_pad, "'"), "NOTSET, SAME_UPPER, SAME_LOWER or VALID");
        }
        const std::int64_t span = in + pads[a] + pads[a + 2] - k;
        if (span < 0)
            fail(n, concat("the window does not fit the padded input along axis ", one_d ? 2 : 2 + a),
                 "a smaller window");
        std::int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        if (ceil_mode && (o - 1) * s >= in + pads[a]) --o;  // the last window starts inside the input
        out[a] = o;
        all_same = all_same && o == same_out && pads[a] == total / 2 && pads[a + 2] == total - total / 2;
        all_valid = all_valid && pads[a] == 0 && pads[a + 2] == 0 && o == (in - k) / s + 1;
    }
    // an average that counts padded cells cannot use SAME, whose average leaves them out
    const bool average = !conv && !max_pool;
    if (average && include_pad && !all_valid) all_same = false;
    ops::padding_mode mode = all_valid ? ops::padding_mode::valid : ops::padding_mode::same;
    // Otherwise the input is padded explicitly (at the end as far as the last window reaches, which
    // ceil_mode can put past the given pads) and the window runs unpadded. An average then divides
    // by the whole window everywhere, as onnxruntime does with count_include_pad = 1 (even for a
    // ceil_mode window past the pads); with 0 it divides by the window's cells inside the input,
    // which a constant map of window / divisor corrects, per output cell the product of the two
    // axes' ratios.
    ints p;
    std::array<std::vector<double>, 2> ratio;
    bool corrected = false;
    if (!all_valid && !all_same) {
        p.assign(8, 0);
        for (std::size_t a = 0; a < 2; ++a) {
            const std::int64_t in_a = x[2 + a], k = kernel_eff[a];
            p[2 + a] = pads[a];
            p[6 + a] = std::max<std::int64_t>((out[a] - 1) * stride[a] + k - in_a - pads[a], 0);
            if (!average || include_pad) continue;
            ratio[a].resize(static_cast<std::size_t>(out[a]));
            for (std::int64_t o = 0; o < out[a]; ++o) {
                const std::int64_t start = o * stride[a] - pads[a];
                const std::int64_t lo = std::max<std::int64_t>(start, 0), hi = std::min(start + k, in_a);
                if (hi <= lo)
                    no_kind(concat("an average window with no input cell along axis ", one_d ? 2 : 2 + a),
                            "windows that overlap the input");
                ratio[a][static_cast<std::size_t>(o)] = static_cast<double>(k) / static_cast<double>(hi - lo);
                corrected = corrected || hi - lo != k;
            }
        }
        if (corrected) charge_tables(n, out[0] * out[1], "an average pool's divisor map");
    }
    graph::tensor_id in = one_d ? reshape(tensor_in(n, 0), x, name + "/as_2d") : tensor_in(n, 0);
    if (!p.empty()) {
        const double fill = max_pool ? static_cast<double>(std::numeric_limits<float>::lowest()) : 0.0;
        in = add1(ops::op_kind::pad, {in}, {{attr_id::pads, p}, {attr_id::value, fill}}, name + "/pad");
        mode = ops::padding_mode::valid;
    }
    const auto padding = static_cast<std::int64_t>(mode);
    graph::tensor_id y;
    if (conv) {
        const ops::shape& wd = dims_in(n, 1);
        const graph::tensor_id w = one_d ? tensor_as(n, 1, ops::shape{wd[0], wd[1], 1, wd[2]}) : tensor_in(n, 1);
        y = add1(ops::op_kind::conv2d, {in, w},
                 {{attr_id::stride, stride}, {attr_id::padding, padding}, {attr_id::dilation, dil}}, name);
        if (has_input(n, 2)) {
            const graph::tensor_id b = tensor_as(n, 2, ops::shape{g_.type_of(y).dims[1], 1, 1});
            y = add1(ops::op_kind::ewadd, {y, b}, {}, name + "/bias");
        }
    } else {
        y = add1(max_pool ? ops::op_kind::maxpool2d : ops::op_kind::avgpool2d, {in},
                 {{attr_id::kernel, kernel}, {attr_id::stride, stride}, {attr_id::padding, padding}}, name);
        if (corrected) {
            onnx_const c = onnx_const::make(type_in(n, 0).type, ops::shape{1, 1, out[0], out[1]});
            for (std::int64_t i = 0; i < out[0]; ++i)
                for (std::int64_t j = 0; j < out[1]; ++j)
                    c.set(static_cast<std::size_t>(i * out[1] + j),
                          ratio[0][static_cast<std::size_t>(i)] * ratio[1][static_cast<std::size_t>(j)]);
            y = add1(ops::op_kind::ewmul, {y, constant(name + "/divisor", c)}, {}, name + "/divisor");
        }
    }
    [[maybe_unused]] const ops::shape& yd = g_.type_of(y).dims;  // read by the assertion only
    GOOPT_ASSERT(yd[2] == out[0] && yd[3] == out[1]);
    if (one_d) y = reshape(y, ops::shape{yd[0], yd[1], yd[3]}, name + "/as_1d");
    bind(n, 0, y);
}

/// y[o] = sum_i sum_p x[i] w[p] over o = i*s - pad_begin + p*d, computed as a stride-1 conv of
/// the zero-inserted input z (z[i*s + k_eff-1 - pad_begin] = x[i], length out + k_eff - 1) with the
/// kernel flipped; cells of z outside [0, L) only reach outputs outside [0, out), so dropping them
/// is exact.
inline void onnx_importer::convert_conv_transpose(const node_t& n, const onnx_handler&) {
    using ops::attr_id;
    const std::string name = node_name(n);
    const ops::shape given = dims_in(n, 0);
    // a 1-D transposed convolution on [N, C, L] is the 2-D one of height 1 on [N, C, 1, L]
    const bool one_d = given.rank() == 3;
    if (given.rank() != 4 && !one_d)
        fail(n, concat("input has shape ", given.to_string()),
             "a 1-D transposed convolution on NCL or a 2-D one on NCHW");
    const ops::shape x = one_d ? ops::shape{given[0], given[1], 1, given[2]} : given;
    onnx_const w = const_in(n, 1, "W");
    if (!ops::is_floating(w.type) || !ops::is_floating(type_in(n, 0).type))
        fail(n, concat("element types ", ops::name(type_in(n, 0).type), " and ", ops::name(w.type)),
             "a floating-point input and weight");
    if (w.dims.rank() != (one_d ? 3u : 4u))
        fail(n, concat("weight has shape ", w.dims.to_string()), one_d ? "[C, O/group, k]" : "[C, O/group, kh, kw]");
    if (one_d) w.dims = ops::shape{w.dims[0], w.dims[1], 1, w.dims[2]};  // the same values, row-major
    const std::int64_t group = attr_int(n, "group", 1);
    if (group < 1 || w.dims[0] != x[1] || x[1] % group != 0)
        fail(n, concat("group ", group, " with input channels ", x[1], " and weight ", w.dims.to_string()),
             "weight [C, O/group, kh, kw] with C the input channels, a multiple of group");
    const ints kernel{w.dims[2], w.dims[3]};
    auto as_2d = [&](std::optional<ints> v, std::int64_t unit) { return one_d ? height_one(std::move(v), unit) : v; };
    if (auto k = as_2d(attr_ints(n, "kernel_shape"), 1); k && *k != kernel)
        fail(n, concat("kernel_shape ", ints_string(*k), " differs from the weight's ", ints_string(kernel)),
             "the weight's spatial shape");
    const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
        fail(n, concat("auto_pad '", auto_pad, "'"), "NOTSET, VALID, SAME_UPPER or SAME_LOWER");
    const ints stride = as_2d(attr_ints(n, "strides"), 1).value_or(ints{1, 1});
    const ints dil = as_2d(attr_ints(n, "dilations"), 1).value_or(ints{1, 1});
    const ints out_pad = as_2d(attr_ints(n, "output_padding"), 0).value_or(ints{0, 0});
    ints pads = as_2d(attr_ints(n, "pads"), 0).value_or(ints{0, 0, 0, 0});
    if (auto_pad == "VALID") pads = {0, 0, 0, 0};
    const std::size_t spatial = one_d ? 1 : 2;
    if (stride.size() != 2 || dil.size() != 2 || out_pad.size() != 2 || pads.size() != 4)
        fail(n, "strides / dilations / output_padding / pads have the wrong length",
             concat(spatial, " strides, ", spatial, " dilations, ", spatial, " output paddings and ", 2 * spatial,
                    " pads"));
    constexpr std::int64_t big = std::int64_t{1} << 20;
    for (const ints* v : std::array<const ints*, 4>{&stride, &dil, &out_pad, &pads})
        for (auto d : *v)
            if (d < 0 || d > big)
                fail(n, concat("strides, dilations, output_padding or pads ", ints_string(*v)), "values in [0, 2^20]");
    // an output_shape (its spatial extents, or the whole shape), or SAME_UPPER / SAME_LOWER (the input's
    // extents times the strides), sets the pads as ONNX defines them: the total the natural extent
    // exceeds the target by, its odd cell at the end for SAME_UPPER, at the start otherwise. A target
    // above the natural extent widens the output at the end with zeros, as onnxruntime does (it
    // clamps the total at 0); the gathers below insert them like any other
    std::optional<ints> target = attr_ints(n, "output_shape");
    if (target && target->size() == spatial + 2) target = ints(target->end() - spatial, target->end());
    target = as_2d(std::move(target), 1);
    if (!target && auto_pad.starts_with("SAME")) target = ints{x[2] * stride[0], x[3] * stride[1]};
    if (target) {
        if (target->size() != 2 || (*target)[0] < 1 || (*target)[1] < 1 || (*target)[0] > big || (*target)[1] > big)
            fail(n, concat("output extents ", ints_string(*target)),
                 concat(spatial, " spatial extents in [1, 2^20] (output_shape: those, or the whole output shape)"));
        for (std::size_t a = 0; a < 2; ++a) {
            const std::int64_t total =
                stride[a] * (x[2 + a] - 1) + out_pad[a] + (kernel[a] - 1) * dil[a] + 1 - (*target)[a];
            const std::int64_t half = std::max<std::int64_t>(total, 0) / 2, rest = total - half;
            pads[a] = auto_pad == "SAME_UPPER" || total < 0 ? half : rest;
            pads[a + 2] = auto_pad == "SAME_UPPER" || total < 0 ? rest : half;
        }
    }
    graph::tensor_id z = one_d ? reshape(tensor_in(n, 0), x, name + "/as_2d") : tensor_in(n, 0);
    for (std::size_t a = 0; a < 2; ++a) {
        const std::int64_t in = x[2 + a], s = stride[a], d = dil[a], k_eff = (kernel[a] - 1) * d + 1;
        if (s < 1 || d < 1) fail(n, "a stride or dilation of 0", "values >= 1");
        if (out_pad[a] >= std::max(s, d))
            fail(n, concat("output_padding ", out_pad[a], " along axis ", 2 + a), "less than the stride or dilation");
        // in, s, d, k and the pads are at most 2^26, 2^20, 2^20, 2^26 and 2^20: no overflow in int64
        if (in > onnx_const::max_elements)
            fail(n, concat("input extent ", in), concat("at most ", onnx_const::max_elements));
        const std::int64_t out = s * (in - 1) + out_pad[a] + k_eff - pads[a] - pads[a + 2];
        if (out < 1) fail(n, concat("the output along axis ", 2 + a, " has ", out, " cells"), "at least 1");
        const std::int64_t length = out + k_eff - 1, offset = k_eff - 1 - pads[a];
        // z along this axis: cell `at` takes input cell i where at = i * s + offset, the others a
        // zero, gathered from one zero cell appended to the input (index `in`)
        charge_tables(n, length, concat("inserting zeros along axis ", 2 + a, " to ", length, " cells"));
        ints index(static_cast<std::size_t>(length), in);
        for (std::int64_t i = 0; i < in; ++i)
            if (const std::int64_t at = i * s + offset; at >= 0 && at < length) index[static_cast<std::size_t>(at)] = i;
        bool identity = length == in;
        for (std::int64_t at = 0; identity && at < length; ++at) identity = index[static_cast<std::size_t>(at)] == at;
        if (identity) continue;
        const std::string step = concat(name, a == 0 ? "/insert_rows" : "/insert_columns");
        if (std::ranges::find(index, in) != index.end()) {
            ints zero_cell(8, 0);
            zero_cell[4 + 2 + a] = 1;  // pads [begins..., ends...]: one cell at the end of this axis
            z = add1(ops::op_kind::pad, {z}, {{attr_id::pads, zero_cell}, {attr_id::value, 0.0}}, step + "/zero");
        }
        z = gather_along(z, 2 + a, index, step);
    }
    // conv weight [O, C/group, kh, kw] from ONNX's [C, O/group, kh, kw], flipped in space
    const std::int64_t cg = x[1] / group, og = w.dims[1], kh = kernel[0], kw = kernel[1];
    onnx_const cw = onnx_const::make(w.type, ops::shape{og * group, cg, kh, kw});
    for (std::int64_t g = 0; g < group; ++g)
        for (std::int64_t o = 0; o < og; ++o)
            for (std::int64_t c = 0; c < cg; ++c)
                for (std::int64_t p = 0; p < kh; ++p)
                    for (std::int64_t q = 0; q < kw; ++q)
                        cw.f[static_cast<std::size_t>((((g * og + o) * cg + c) * kh + p) * kw + q)] =
                            w.at(static_cast<std::size_t>((((g * cg + c) * og + o) * kh + (kh - 1 - p)) * kw +
                                                          (kw - 1 - q)));
    graph::tensor_id y = add1(ops::op_kind::conv2d, {z, constant(n.input(1) + "/flipped", cw, parameter_in(n, 1))},
                              {{attr_id::stride, ints{1, 1}},
                               {attr_id::padding, static_cast<std::int64_t>(ops::padding_mode::valid)},
                               {attr_id::dilation, dil}},
                              name);
    if (has_input(n, 2))
        y = add1(ops::op_kind::ewadd, {y, tensor_as(n, 2, ops::shape{og * group, 1, 1})}, {}, name + "/bias");
    if (one_d) {
        const ops::shape& yd = g_.type_of(y).dims;
        y = reshape(y, ops::shape{yd[0], yd[1], yd[3]}, name + "/as_1d");
    }
    bind(n, 0, y);
}

}  // namespace goopt::io::detail
