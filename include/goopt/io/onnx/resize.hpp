#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief Resize (nearest and linear, as PyTorch's nn.Upsample and F.interpolate export them),
/// lowered exactly onto matmuls: both modes are separable, so along each resized axis the output is
/// the input times a constant interpolation matrix [in, out] built at import time (one 1 per column
/// for nearest, two weights summing to 1 for linear).
///
/// This costs more FLOPs than a native kernel (in*out multiply-adds per row instead of 2 or 1) but
/// needs no new op kind (no shape rule, cost formula, kernel and gradient to add), and the
/// simulator, rewriting and training transform handle matmuls already.

#include <goopt/io/onnx/importer.hpp>

#include <cmath>
#include <string>

namespace goopt::io::detail {

inline void onnx_importer::convert_resize(const node_t& n, const onnx_handler&) {
    const std::string name = node_name(n);
    if (opset_ < 11) fail(n, concat("Resize of operator set ", opset_), "operator set 11 or later");
    const ops::shape x = dims_in(n, 0);
    const std::size_t r = x.rank();
    if (!ops::is_floating(type_in(n, 0).type))
        fail(n, concat("element type ", ops::name(type_in(n, 0).type)), "a floating-point input");
    const std::string mode = attr_string(n, "mode", "nearest");
    if (mode != "nearest" && mode != "linear") fail(n, concat("mode '", mode, "'"), "nearest or linear");
    const std::string coords = attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (coords != "half_pixel" && coords != "pytorch_half_pixel" && coords != "align_corners" &&
        coords != "asymmetric" && !(coords == "tf_half_pixel_for_nn" && mode == "nearest"))
        fail(n, concat("coordinate_transformation_mode '", coords, "' with mode ", mode),
             "half_pixel, pytorch_half_pixel, align_corners, asymmetric (or tf_half_pixel_for_nn when nearest)");
    const std::string rounding = attr_string(n, "nearest_mode", "round_prefer_floor");
    if (rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" &&
        rounding != "ceil")
        fail(n, concat("nearest_mode '", rounding, "'"), "round_prefer_floor, round_prefer_ceil, floor or ceil");
    if (attr_int(n, "antialias", 0) != 0) fail(n, "antialias = 1", "antialias = 0");
    if (attr(n, "axes")) fail(n, "an axes attribute", "scales or sizes for every axis");
    if (attr_int(n, "exclude_outside", 0) != 0) fail(n, "exclude_outside = 1", "exclude_outside = 0");
    if (const auto p = attr_string(n, "keep_aspect_ratio_policy", "stretch"); p != "stretch")
        fail(n, concat("keep_aspect_ratio_policy '", p, "'"), "stretch");

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
    } else if (has_input(n, 2) && const_in(n, 2, "scales").size() > 0) {
        const onnx_const& s = const_in(n, 2, "scales");
        if (s.size() != r) fail(n, concat(s.size(), " scales"), concat(r, " scales, one per axis"));
        for (std::size_t a = 0; a < r; ++a) {
            scale[a] = s.at(a);
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
        const bool changes = in != o || (scale[a] != 1.0 && coords != "align_corners");
        if (!changes) continue;
        if (r < 2 || a + 2 < r)
            fail(n, concat("resizing axis ", a, " of ", x.to_string()), "resizing of the last two axes only");
        // the axis becomes a product with a dense in x o interpolation matrix: bound its cells, as the
        // extents are bounded (16 to 2^24 cells made 1.7 GB and 10 s of import under the fuzzer)
        if (static_cast<double>(in) * static_cast<double>(o) > static_cast<double>(std::int64_t{1} << 24))
            fail(n, concat("resizing axis ", a, " from ", in, " to ", o, " cells"),
                 "an interpolation matrix (input x output extent) of at most 2^24 cells");
        onnx_const m = onnx_const::make(type_in(n, 0).type, ops::shape{in, o});
        for (std::int64_t j = 0; j < o; ++j) {
            // the output cell's coordinate in the input
            const double jd = static_cast<double>(j), s = scale[a];
            double c = coords == "asymmetric" ? jd / s
                       : coords == "align_corners"
                           ? (o == 1 ? 0.0 : jd * static_cast<double>(in - 1) / static_cast<double>(o - 1))
                       : coords == "tf_half_pixel_for_nn"         ? (jd + 0.5) / s
                       : coords == "pytorch_half_pixel" && o == 1 ? 0.0
                                                                  : (jd + 0.5) / s - 0.5;
            auto cell = [&](std::int64_t i, double weight) {
                i = std::clamp<std::int64_t>(i, 0, in - 1);
                m.f[static_cast<std::size_t>(i * o + j)] += weight;
            };
            if (mode == "linear") {
                c = std::clamp(c, 0.0, static_cast<double>(in - 1));
                const double lo = std::floor(c);
                cell(static_cast<std::int64_t>(lo), 1.0 - (c - lo));
                if (c > lo) cell(static_cast<std::int64_t>(lo) + 1, c - lo);
            } else {
                const double fl = std::floor(c), frac = c - fl;
                const double pick = rounding == "floor"  ? fl
                                    : rounding == "ceil" ? std::ceil(c)
                                    : frac == 0.5        ? (rounding == "round_prefer_floor" ? fl : fl + 1)
                                    : frac < 0.5         ? fl
                                                         : fl + 1;
                cell(static_cast<std::int64_t>(std::clamp(pick, -1.0, static_cast<double>(in))), 1.0);
            }
        }
        y = along_axis(y, a, m, concat(name, "/axis", a));
    }
    bind(n, 0, y);
}

}  // namespace goopt::io::detail
