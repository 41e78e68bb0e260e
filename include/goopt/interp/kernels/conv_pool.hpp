#pragma once
/// @file
/// @brief Convolution and pooling reference kernels and their gradients, all walking the same
/// windows (conv_geometry, pad_before), so that finite differences of the forward ops check the backward.

#include <goopt/interp/kernels/common.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>

namespace goopt::interp::detail {

/// Grouped NCHW convolution as direct loops: for every weight tap the valid output range is
/// computed once, so the innermost loop is a branch-free axpy over an output row.
template <std::floating_point T> value<T> conv2d(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto [N, C, H, W, O, Cg, kh, kw, OH, OW, Og, sh, sw, dh, dw, top, left] =
        conv_geometry(a.in_dims(0), a.in_dims(1), a.out_dims(), a.attrs());
    value<T> r = filled(a.out_dims(), T(0));
    const T* x = a.data(0);
    const T* w = a.data(1);
    T* y = r.data();
    for (index n = 0; n < N; ++n)
        for (index oc = 0; oc < O; ++oc) {
            T* yp = y + (n * O + oc) * OH * OW;
            const index g = oc / Og;
            for (index c = 0; c < Cg; ++c) {
                const T* xp = x + (n * C + g * Cg + c) * H * W;
                const T* wp = w + (oc * Cg + c) * kh * kw;
                for (index i = 0; i < kh; ++i) {
                    const auto [oh0, oh1] = tap_range(H, OH, sh, top, i * dh);
                    for (index j = 0; j < kw; ++j) {
                        const auto [ow0, ow1] = tap_range(W, OW, sw, left, j * dw);
                        const T wv = wp[i * kw + j];
                        for (index oh = oh0; oh < oh1; ++oh) {
                            const index row = (oh * sh - top + i * dh) * W - left + j * dw;  // + ow * sw: the tap
                            T* yrow = yp + oh * OW;
                            for (index ow = ow0; ow < ow1; ++ow) yrow[ow] += wv * xp[row + ow * sw];
                        }
                    }
                }
            }
        }
    epilogue(r, a, 2);
    return r;
}

/// Pooling windows with SAME / VALID geometry; padded cells are not part of any window, so the
/// average divides by the cells actually covered (count_include_pad = false) and the max ignores them.
template <std::floating_point T, bool Max> value<T> pool2d(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto& xd = a.in_dims(0);
    const auto& od = a.out_dims();
    const index NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = od[2], OW = od[3];
    const auto& k = a.attrs().get_ints(attr_id::kernel);
    const auto& st = a.attrs().get_ints(attr_id::stride);
    const auto padding = a.attrs().get_int(attr_id::padding);
    const index top = pad_before(H, OH, k[0], st[0], padding), left = pad_before(W, OW, k[1], st[1], padding);
    value<T> r = filled(od, T(0));
    T* z = r.data();
    for (index p = 0; p < NC; ++p) {
        const T* xp = a.data(0) + p * H * W;
        for (index oh = 0; oh < OH; ++oh) {
            const index h0 = std::max<index>(oh * st[0] - top, 0), h1 = std::min(oh * st[0] - top + k[0], H);
            for (index ow = 0; ow < OW; ++ow) {
                const index w0 = std::max<index>(ow * st[1] - left, 0), w1 = std::min(ow * st[1] - left + k[1], W);
                GOOPT_ASSERT(h0 < h1 && w0 < w1);  // SAME and VALID windows always cover a cell
                T acc = Max ? -std::numeric_limits<T>::infinity() : T(0);
                for (index h = h0; h < h1; ++h)
                    for (index w = w0; w < w1; ++w) acc = Max ? nan_max(acc, xp[h * W + w]) : acc + xp[h * W + w];
                *z++ = Max ? acc : acc / static_cast<T>((h1 - h0) * (w1 - w0));
            }
        }
    }
    activate(r, a.attrs().get_int(attr_id::activation));
    return r;
}

template <std::floating_point T> value<T> global_avgpool(const kernel_args<T>& a) {
    const auto& xd = a.in_dims(0);
    const index NC = xd[0] * xd[1], S = prod(xd, 2, xd.rank());
    value<T> r = filled(a.out_dims(), T(0));
    for (index p = 0; p < NC; ++p) {
        T acc = 0;
        for (index s = 0; s < S; ++s) acc += a.data(0)[p * S + s];
        r.data()[p] = acc / static_cast<T>(S);
    }
    return r;
}

/// The loops of conv2d with the roles turned around: Input accumulates into dx from (dy, w),
/// otherwise into dw from (x, dy). Shapes: x = dx or input 0, w = dw or input 1, y = dy.
template <std::floating_point T, bool Input> value<T> conv2d_grad(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto [N, C, H, W, O, Cg, kh, kw, OH, OW, Og, sh, sw, dh, dw, top, left] =
        conv_geometry(Input ? a.out_dims() : a.in_dims(0), Input ? a.in_dims(1) : a.out_dims(),
                      Input ? a.in_dims(0) : a.in_dims(1), a.attrs());
    value<T> r = filled(a.out_dims(), T(0));
    const T* dy = Input ? a.data(0) : a.data(1);
    for (index n = 0; n < N; ++n)
        for (index oc = 0; oc < O; ++oc) {
            const T* yp = dy + (n * O + oc) * OH * OW;
            const index g = oc / Og;
            for (index c = 0; c < Cg; ++c) {
                const index xoff = (n * C + g * Cg + c) * H * W, woff = (oc * Cg + c) * kh * kw;
                for (index i = 0; i < kh; ++i) {
                    const auto [oh0, oh1] = tap_range(H, OH, sh, top, i * dh);
                    for (index j = 0; j < kw; ++j) {
                        const auto [ow0, ow1] = tap_range(W, OW, sw, left, j * dw);
                        T acc = 0;
                        for (index oh = oh0; oh < oh1; ++oh) {
                            const index row = (oh * sh - top + i * dh) * W - left + j * dw;
                            const T* yrow = yp + oh * OW;
                            if constexpr (Input) {
                                const T wv = a.data(1)[woff + i * kw + j];
                                T* xp = r.data() + xoff;
                                for (index ow = ow0; ow < ow1; ++ow) xp[row + ow * sw] += wv * yrow[ow];
                            } else {
                                const T* xp = a.data(0) + xoff;
                                for (index ow = ow0; ow < ow1; ++ow) acc += xp[row + ow * sw] * yrow[ow];
                            }
                        }
                        if constexpr (!Input) r.data()[woff + i * kw + j] += acc;
                    }
                }
            }
        }
    return r;
}

/// Pooling gradients with pool2d's windows: the average spreads dy over the covered cells, the
/// max routes it to the window's first maximum (pool2d's nan_max keeps the first of equal values).
template <std::floating_point T, bool Max> value<T> pool2d_grad(const kernel_args<T>& a) {
    using ops::attr_id;
    const auto& xd = a.out_dims();
    const auto& od = a.in_dims(a.in.size() - 1);
    const index NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = od[2], OW = od[3];
    const auto& k = a.attrs().get_ints(attr_id::kernel);
    const auto& st = a.attrs().get_ints(attr_id::stride);
    const auto padding = a.attrs().get_int(attr_id::padding);
    const index top = pad_before(H, OH, k[0], st[0], padding), left = pad_before(W, OW, k[1], st[1], padding);
    value<T> r = filled(xd, T(0));
    const T* dy = a.data(a.in.size() - 1);
    for (index p = 0; p < NC; ++p) {
        T* dx = r.data() + p * H * W;
        const T* xp = Max ? a.data(0) + p * H * W : nullptr;
        for (index oh = 0; oh < OH; ++oh) {
            const index h0 = std::max<index>(oh * st[0] - top, 0), h1 = std::min(oh * st[0] - top + k[0], H);
            for (index ow = 0; ow < OW; ++ow) {
                const index w0 = std::max<index>(ow * st[1] - left, 0), w1 = std::min(ow * st[1] - left + k[1], W);
                const T g = *dy++;
                if constexpr (Max) {
                    T acc = -std::numeric_limits<T>::infinity();
                    index at = h0 * W + w0;
                    for (index h = h0; h < h1; ++h)
                        for (index w = w0; w < w1; ++w)
                            if (xp[h * W + w] > acc || std::isnan(xp[h * W + w])) {
                                acc = xp[h * W + w];
                                at = h * W + w;
                            }
                    dx[at] += g;
                } else {
                    const T share = g / static_cast<T>((h1 - h0) * (w1 - w0));
                    for (index h = h0; h < h1; ++h)
                        for (index w = w0; w < w1; ++w) dx[h * W + w] += share;
                }
            }
        }
    }
    return r;
}

}  // namespace goopt::interp::detail
