#pragma once
/// @file
/// @brief Shipped device presets: figures from vendor datasheets, as compile-time constants.

#include <goopt/ops/dtype.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace goopt::device {

/// A device whose figures are known at compile time. Models DeviceModel.
/// Peak rates are dense (no structured sparsity) and per dtype: tensor-core rates where the datasheet
/// gives them for f16/bf16/i8, the plain FP32 rate for 32-bit and 64-bit integers and booleans (their
/// ops are memory bound in practice), and the FP32 rate where a chip has no faster path for a type.
/// Memory sizes are GiB as the products are sold (a "16 GB" HBM2 stack holds 16 GiB).
struct preset {
    std::string_view label;
    std::array<double, ops::num_dtypes> peak;  ///< FLOP/s, indexed by ops::dtype
    double bandwidth;                          ///< bytes/s
    std::int64_t capacity;                     ///< bytes
    double launch;                             ///< seconds per kernel launch
    double nvlink_bandwidth = 0;               ///< bytes/s per direction per device over NVLink; 0: no NVLink
    double pcie_bandwidth = 0;                 ///< bytes/s per direction of the host bus the device sits on
    std::string_view source = {};              ///< where the figures come from

    constexpr std::string_view name() const noexcept { return label; }
    constexpr double peak_flops(ops::dtype t) const noexcept { return peak[static_cast<std::size_t>(t)]; }
    constexpr double mem_bandwidth() const noexcept { return bandwidth; }
    constexpr double mem_capacity() const noexcept { return static_cast<double>(capacity); }
    constexpr double launch_overhead() const noexcept { return launch; }
};

namespace detail {
/// Peak table in ops::dtype order (f32, f64, f16, bf16, i64, i32, i8, u8, bool).
constexpr std::array<double, ops::num_dtypes> peaks(double f32, double f64, double f16, double bf16, double i8) {
    return {f32, f64, f16, bf16, f32, f32, i8, i8, f32};
}
inline constexpr std::int64_t gib = std::int64_t{1} << 30;
inline constexpr double pcie3_x16 = 15.75e9;  // 8 GT/s x 16 lanes, 128b/130b coding
inline constexpr double pcie4_x16 = 31.5e9;
inline constexpr double pcie5_x16 = 63.0e9;
inline constexpr double gpu_launch = 5e-6;  // assumption: CUDA launch + framework dispatch
}  // namespace detail

/// One GK210 die of a Tesla K80 board (frameworks see a K80 as two devices). NVIDIA Tesla K80
/// datasheet: board 8.73 TFLOP/s FP32 and 2.91 FP64 with GPU Boost, 480 GB/s, 24 GB; halved per die.
/// No fast FP16/INT8 path.
inline constexpr preset k80{"K80",
                            detail::peaks(4.365e12, 1.455e12, 4.365e12, 4.365e12, 4.365e12),
                            240e9,
                            12 * detail::gib,
                            detail::gpu_launch,
                            0,
                            detail::pcie3_x16,
                            "NVIDIA Tesla K80 datasheet (per GK210 die: half the board)"};
/// Tesla P100 SXM2. NVIDIA Tesla P100 datasheet: 10.6 TFLOP/s FP32, 5.3 FP64, 21.2 FP16, 732 GB/s,
/// 16 GB CoWoS HBM2, NVLink 160 GB/s bidirectional (80 GB/s per direction).
inline constexpr preset p100{"P100",
                             detail::peaks(10.6e12, 5.3e12, 21.2e12, 10.6e12, 10.6e12),
                             732e9,
                             16 * detail::gib,
                             detail::gpu_launch,
                             80e9,
                             detail::pcie3_x16,
                             "NVIDIA Tesla P100 (SXM2) datasheet"};
/// Tesla V100 SXM2 16 GB. NVIDIA V100 datasheet: 15.7 TFLOP/s FP32, 7.8 FP64, 125 tensor (FP16),
/// 900 GB/s, NVLink 300 GB/s bidirectional (150 per direction). INT8 via dp4a: 4x FP32 (derived).
inline constexpr preset v100{"V100",
                             detail::peaks(15.7e12, 7.8e12, 125e12, 15.7e12, 62.8e12),
                             900e9,
                             16 * detail::gib,
                             detail::gpu_launch,
                             150e9,
                             detail::pcie3_x16,
                             "NVIDIA Tesla V100 (SXM2) datasheet"};
/// Tesla T4. NVIDIA T4 datasheet: 8.1 TFLOP/s FP32, 65 FP16 mixed precision, 130 TOPS INT8, 320 GB/s,
/// 16 GB GDDR6, PCIe Gen3 x16. FP64 at 1/32 of FP32 (Turing ratio; derived, not on the datasheet).
inline constexpr preset t4{"T4",
                           detail::peaks(8.1e12, 0.253e12, 65e12, 8.1e12, 130e12),
                           320e9,
                           16 * detail::gib,
                           detail::gpu_launch,
                           0,
                           detail::pcie3_x16,
                           "NVIDIA T4 datasheet"};
/// A100 SXM4 40 GB. NVIDIA A100 datasheet: 19.5 TFLOP/s FP32 (no TF32), 9.7 FP64, 312 FP16/BF16
/// tensor, 624 TOPS INT8 (dense), 1,555 GB/s, NVLink 600 GB/s bidirectional, PCIe Gen4.
inline constexpr preset a100{"A100",
                             detail::peaks(19.5e12, 9.7e12, 312e12, 312e12, 624e12),
                             1555e9,
                             40 * detail::gib,
                             detail::gpu_launch,
                             300e9,
                             detail::pcie4_x16,
                             "NVIDIA A100 (SXM4 40GB) datasheet"};
/// H100 SXM5 80 GB. NVIDIA H100 datasheet: 67 TFLOP/s FP32, 34 FP64, 1,979 FP16/BF16 and 3,958 INT8
/// with sparsity (989.5 and 1,979 dense), 3.35 TB/s, NVLink 900 GB/s bidirectional, PCIe Gen5.
inline constexpr preset h100{"H100",
                             detail::peaks(67e12, 34e12, 989.5e12, 989.5e12, 1979e12),
                             3.35e12,
                             80 * detail::gib,
                             detail::gpu_launch,
                             450e9,
                             detail::pcie5_x16,
                             "NVIDIA H100 (SXM5) datasheet"};
/// One Intel Xeon Platinum 8380 socket (Ice Lake SP, 40 cores, 2.3 GHz base, two AVX-512 FMA units):
/// 40 x 2.3e9 x 64 = 5.89 TFLOP/s FP32, half for FP64, 4x for INT8 (VNNI); FP16/BF16 at the FP32 rate
/// (no AVX512-BF16 on Ice Lake). Eight DDR4-3200 channels: 204.8 GB/s (Intel ARK). Capacity 256 GiB
/// (assumed: 8 x 32 GiB DIMMs). Dispatch overhead 1 us (assumed). Between sockets ("pcie" topology):
/// 3 UPI links at 11.2 GT/s, about 67 GB/s per direction.
inline constexpr preset xeon_8380{
    "CPU",   detail::peaks(5.888e12, 2.944e12, 5.888e12, 5.888e12, 23.55e12),
    204.8e9, 256 * detail::gib,
    1e-6,    0,
    67.2e9,  "Intel Xeon Platinum 8380 (Intel ARK); capacity and dispatch overhead assumed"};

/// All shipped presets, for lookups by name (cluster spec strings, JSON).
inline constexpr std::array<const preset*, 7> presets{&k80, &p100, &v100, &t4, &a100, &h100, &xeon_8380};

/// The presets' names, comma separated: what a spec string or a file may name, for error messages.
inline std::string preset_names() {
    std::string out;
    for (const preset* p : presets) (out += out.empty() ? "" : ", ") += p->label;
    return out;
}

/// The preset called `name` (ASCII case-insensitive: "v100" finds V100), if any.
constexpr std::optional<preset> find_preset(std::string_view name) noexcept {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (const preset* p : presets) {
        if (p->label.size() != name.size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < name.size() && same; ++i) same = lower(p->label[i]) == lower(name[i]);
        if (same) return *p;
    }
    return std::nullopt;
}

static_assert(find_preset("v100")->peak_flops(ops::dtype::f32) == 15.7e12 && !find_preset("V200"));

}  // namespace goopt::device
