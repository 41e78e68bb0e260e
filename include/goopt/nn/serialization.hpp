#pragma once
/// @file
/// @brief Saving and loading a network's parameters: an io::binary_record ("goopt-nn", version 2),
/// written atomically.
///
/// Fields: u scalar bytes | u count | count x (bytes name | matrix values). Binary rather than JSON:
/// a 128-wide policy has ~0.5 M scalars, and exact round trips matter.

#include <goopt/error.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/nn/types.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace goopt::nn {

/// Version 1 was a host-order blob without a checksum; it is refused as an older format.
inline constexpr std::uint32_t parameters_format_version = 2;

/// @brief Writes every parameter's name, shape and values to `path` (atomically: a crash leaves the
/// old file). Throws goopt::error when the file cannot be written.
template <std::floating_point S> void save_parameters(const parameter_list<S>& ps, const std::filesystem::path& path) {
    io::record_writer out("goopt-nn", parameters_format_version);
    out.u64(sizeof(S)).u64(ps.size());
    for (const parameter<S>* p : ps) out.bytes(p->name).matrix(p->value);
    out.write(path);
}

/// @brief Reads parameters saved by save_parameters into `ps`, which must have the same names and
/// shapes in the same order. Throws goopt::error naming the file and the first mismatch (wrong magic,
/// version, scalar type, count, name, shape, a NaN or infinite value, checksum, or a file that is too
/// short or too long); on error the parameters are left unchanged.
template <std::floating_point S> void load_parameters(const parameter_list<S>& ps, const std::filesystem::path& path) {
    const std::string where = concat("nn::load_parameters '", path.string(), "'");
    auto in = io::record_reader::from_file(path, where, "goopt-nn", parameters_format_version);
    if (const auto scalar_bytes = in.u64("the scalar size"); scalar_bytes != sizeof(S))
        throw error(where, concat("scalars of ", scalar_bytes, " bytes"), concat(sizeof(S), " bytes"));
    if (const auto count = in.u64("the parameter count"); count != ps.size())
        throw error(where, concat(count, " parameters"), concat(ps.size()));
    std::vector<matrix<S>> values;
    for (const parameter<S>* p : ps) {
        const std::string name = in.bytes("a parameter name");
        if (name != p->name) throw error(where, concat("parameter '", name, "' found"), concat("'", p->name, "'"));
        matrix<S> v = in.matrix<matrix<S>>(concat("the values of '", name, "'"));
        if (v.rows() != p->value.rows() || v.cols() != p->value.cols())
            throw error(where, concat("parameter '", name, "' is ", v.rows(), "x", v.cols()),
                        concat(p->value.rows(), "x", p->value.cols()));
        if (!v.allFinite())  // a signed file that holds NaN or Inf (crafted, or written by another tool)
            throw error(where, concat("the values of parameter '", name, "' hold a non-finite number"),
                        "finite numbers");
        values.push_back(std::move(v));
    }
    in.finish();
    for (std::size_t i = 0; i < ps.size(); ++i) ps[i]->value = std::move(values[i]);
}

}  // namespace goopt::nn
