#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Resize (nearest and linear, as PyTorch's nn.Upsample and F.interpolate export them),
/// lowered exactly onto gathers: both modes are separable, so along each resized axis an output cell
/// reads one input cell (nearest: gather(x, index)) or two with weights summing to 1 (linear:
/// gather(x, lo) * (1 - t) + gather(x, hi) * t), whose indices and weights are constants of the
/// output's extent, built at import time.
///
/// No new op kind (shape rule, cost formula, kernel and gradient) is needed, and the work and
/// memory stay those of a native kernel: O(output) per axis. (Until session 28 each axis was a
/// product with a dense [in, out] interpolation matrix, in*out multiply-adds per row, which priced
/// an upsample as a matmul and needed a bound on in*out.) The tables count against the import's
/// folding budget, as other constants computed at import time do.

#include <goopt/io/onnx/importer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace goopt::io::detail {

/// Resize (operator set 11 on) and Upsample (operator sets 7-9, deprecated at 10), which is a
/// Resize by `scales` with asymmetric coordinates and, when nearest, rounding down (as ONNX's
/// version converter maps it).
inline void onnx_importer::convert_resize(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    const bool upsample = n.op_type() == "Upsample";
    if (!upsample && opset_ < 11) no_kind(concat("Resize of operator set ", opset_), "operator set 11 or later");
    const ops::shape x = dims_in(n, 0);
    const std::size_t r = x.rank();
    if (!ops::is_floating(type_in(n, 0).type))
        no_kind(concat("element type ", ops::name(type_in(n, 0).type)), "a floating-point input");
    const std::string mode = attr_string(n, "mode", "nearest");
    if (mode != "nearest" && mode != "linear" && !(upsample && mode == "bilinear"))
        no_kind(concat("mode '", mode, "'"), "nearest or linear");
    const std::string coords = upsample ? "asymmetric" : attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (coords != "half_pixel" && coords != "pytorch_half_pixel" && coords != "align_corners" &&
        coords != "asymmetric" && !(coords == "tf_half_pixel_for_nn" && mode == "nearest"))
        no_kind(concat("coordinate_transformation_mode '", coords, "' with mode ", mode),
                "half_pixel, pytorch_half_pixel, align_corners, asymmetric (or tf_half_pixel_for_nn when nearest)");
    const std::string rounding = upsample ? "floor" : attr_string(n, "nearest_mode", "round_prefer_floor");
    if (rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" &&
        rounding != "ceil")
        no_kind(concat("nearest_mode '", rounding, "'"), "round_prefer_floor, round_prefer_ceil, floor or ceil");
    if (attr_int(n, "antialias", 0) != 0) no_kind("antialias = 1", "antialias = 0");
    if (attr(n, "axes")) no_kind("an axes attribute", "scales or sizes for every axis");
    if (attr_int(n, "exclude_outside", 0) != 0) no_kind("exclude_outside = 1", "exclude_outside = 0");
    if (const auto p = attr_string(n, "keep_aspect_ratio_policy", "stretch"); p != "stretch")
        no_kind(concat("keep_aspect_ratio_policy '", p, "'"), "stretch");

    // the options as values, not strings compared once per output cell
    const bool linear = mode != "nearest";
    enum class coordinates { half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn };
    const coordinates transform = coords == "pytorch_half_pixel"     ? coordinates::pytorch_half_pixel
                                  : coords == "align_corners"        ? coordinates::align_corners
                                  : coords == "asymmetric"           ? coordinates::asymmetric
                                  : coords == "tf_half_pixel_for_nn" ? coordinates::tf_half_pixel_for_nn
                                                                     : coordinates::half_pixel;
    enum class nearest { prefer_floor, prefer_ceil, floor, ceil };
    const nearest round = rounding == "round_prefer_ceil" ? nearest::prefer_ceil
                          : rounding == "floor"           ? nearest::floor
                          : rounding == "ceil"            ? nearest::ceil
                                                          : nearest::prefer_floor;

    // output extents and the scale of each axis, from sizes or from scales
    std::vector<double> scale(r, 1.0);
    ints out(x.begin(), x.end());
    if (has_input(n, 3) && const_in(n, 3, "sizes").size() > 0) {
        const auto sizes = const_in(n, 3, "sizes").ints();
        if (sizes.size() != r) fail(n, concat("sizes ", ints_string(sizes)), concat(r, " values, one per axis"));
        for (std::size_t a = 0; a < r; ++a) {
            if (sizes[a] < 1 || sizes[a] > (std::int64_t{1} << 24))
                fail(n, concat("size ", sizes[a], " of axis ", a), "sizes in [1, 2^24]");
            out[a] = sizes[a];
            scale[a] = static_cast<double>(sizes[a]) / static_cast<double>(x[a]);
        }
    } else if (const int k = upsample ? 1 : 2;
               (has_input(n, k) && const_in(n, k, "scales").size() > 0) || (upsample && attr(n, "scales"))) {
        std::vector<double> given;  // Upsample of operator set 7 has them as an attribute
        if (has_input(n, k)) {
            const onnx_const& c = const_in(n, k, "scales");
            for (std::size_t a = 0; a < c.size(); ++a) given.push_back(c.at(a));
        } else {
            given.assign(attr(n, "scales")->floats().begin(), attr(n, "scales")->floats().end());
        }
        if (given.size() != r) fail(n, concat(given.size(), " scales"), concat(r, " scales, one per axis"));
        for (std::size_t a = 0; a < r; ++a) {
            scale[a] = given[a];
            const double o = std::floor(static_cast<double>(x[a]) * scale[a]);
            if (!(scale[a] > 0) || !(o >= 1 && o <= static_cast<double>(std::int64_t{1} << 24)))
                fail(n, concat("scale ", scale[a], " of axis ", a, " (extent ", x[a], ")"),
                     "a positive scale giving 1 to 2^24 cells");
            out[a] = static_cast<std::int64_t>(o);
        }
    } else {
        fail(n, "neither scales nor sizes is given", "a constant scales or sizes input");
    }

    const graph::tensor_id x_in = tensor_in(n, 0);
    graph::tensor_id y = x_in;
    for (std::size_t a = 0; a < r; ++a) {
        const std::int64_t in = x[a], o = out[a];
        const bool changes = in != o || (scale[a] != 1.0 && transform != coordinates::align_corners);
        if (!changes) continue;
        // the tables, charged to the folding budget before they are built (a fuzzed 16 -> 16.8
        // million cells is refused here): the index, and for linear a second index and the weights
        const std::string what = concat("resizing axis ", a, " from ", in, " to ", o, " cells");
        charge_tables(n, linear ? 3 * o : o, what);
        // per output cell j: the input cells lo[j] and hi[j] it reads and the weight t[j] of hi
        std::vector<std::int64_t> lo(static_cast<std::size_t>(o)), hi(lo.size());
        std::vector<double> t(lo.size(), 0.0);
        bool blends = false, identity = in == o;
        for (std::int64_t j = 0; j < o; ++j) {
            // the output cell's coordinate in the input
            const double jd = static_cast<double>(j), s = scale[a];
            double c = transform == coordinates::asymmetric ? jd / s
                       : transform == coordinates::align_corners
                           ? (o == 1 ? 0.0 : jd * static_cast<double>(in - 1) / static_cast<double>(o - 1))
                       : transform == coordinates::tf_half_pixel_for_nn         ? (jd + 0.5) / s
                       : transform == coordinates::pytorch_half_pixel && o == 1 ? 0.0
                                                                                : (jd + 0.5) / s - 0.5;
            const auto k = static_cast<std::size_t>(j);
            auto cell = [&](double i) { return std::clamp(static_cast<std::int64_t>(i), std::int64_t{0}, in - 1); };
            if (linear) {
                c = std::clamp(c, 0.0, static_cast<double>(in - 1));
                const double fl = std::floor(c);
                lo[k] = cell(fl);
                hi[k] = cell(fl + 1);
                t[k] = c - fl;
            } else {
                const double fl = std::floor(c), frac = c - fl;
                const double pick = round == nearest::floor  ? fl
                                    : round == nearest::ceil ? std::ceil(c)
                                    : frac == 0.5            ? (round == nearest::prefer_floor ? fl : fl + 1)
                                    : frac < 0.5             ? fl
                                                             : fl + 1;
                lo[k] = hi[k] = cell(std::clamp(pick, -1.0, static_cast<double>(in)));
            }
            blends = blends || t[k] != 0.0;
            identity = identity && !blends && lo[k] == j;
        }
        if (identity) continue;
        const std::string step = concat(name, "/axis", a);
        auto gather = [&](const std::vector<std::int64_t>& index, const std::string& part) {
            return gather_along(y, a, index, step + part);
        };
        if (!blends) {
            y = gather(lo, "/nearest");
            continue;
        }
        // weights [o, 1, ..., 1]: broadcast over the axes after this one
        ops::shape wdims{o};
        for (std::size_t b = a + 1; b < r; ++b) wdims.push_back(1);
        auto weighted = [&](const std::vector<std::int64_t>& index, bool upper, const std::string& part) {
            onnx_const w = onnx_const::make(type_in(n, 0).type, wdims);
            for (std::size_t k = 0; k < t.size(); ++k) w.f[k] = upper ? t[k] : 1.0 - t[k];
            return add1(ops::op_kind::ewmul, {gather(index, part), constant(step + part + "_weight", w)}, {},
                        step + part + "_weighted");
        };
        const graph::tensor_id below = weighted(lo, false, "/lower"), above = weighted(hi, true, "/upper");
        y = add1(ops::op_kind::ewadd, {below, above}, {}, step);
    }
    bind(n, 0, y);
}

}  // namespace goopt::io::detail
