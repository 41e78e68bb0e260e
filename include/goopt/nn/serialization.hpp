#pragma once
/// @file
/// @brief Saving and loading a network's parameters: a small versioned binary format, written atomically.
///
/// Format (little-endian, version 1): "goopt-nn" | u32 version | u32 scalar bytes | u64 count |
/// count x (u32 name length | name | u64 rows | u64 cols | rows*cols scalars, row-major).
/// Binary rather than JSON: a 128-wide policy has ~0.5 M scalars, and exact round trips matter.

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/nn/types.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace goopt::nn {

inline constexpr std::uint32_t parameters_format_version = 1;

namespace detail {
template <class T> void put(std::string& out, const T& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
}  // namespace detail

/// @brief Writes every parameter's name, shape and values to `path` (atomically: a crash leaves the
/// old file). Throws goopt::error when the file cannot be written.
template <std::floating_point S> void save_parameters(const parameter_list<S>& ps, const std::filesystem::path& path) {
    std::string out = "goopt-nn";
    detail::put(out, parameters_format_version);
    detail::put(out, static_cast<std::uint32_t>(sizeof(S)));
    detail::put(out, static_cast<std::uint64_t>(ps.size()));
    for (const parameter<S>* p : ps) {
        detail::put(out, static_cast<std::uint32_t>(p->name.size()));
        out += p->name;
        detail::put(out, static_cast<std::uint64_t>(p->value.rows()));
        detail::put(out, static_cast<std::uint64_t>(p->value.cols()));
        out.append(reinterpret_cast<const char*>(p->value.data()),
                   static_cast<std::size_t>(p->value.size()) * sizeof(S));
    }
    io::atomic_write(path, out);
}

/// @brief Reads parameters saved by save_parameters into `ps`, which must have the same names and
/// shapes in the same order. Throws goopt::error naming the file and the first mismatch (wrong magic,
/// version, scalar type, count, name, shape, or a file that is too short or too long); on error the
/// parameters are left unchanged.
template <std::floating_point S> void load_parameters(const parameter_list<S>& ps, const std::filesystem::path& path) {
    const std::string where = concat("nn::load_parameters '", path.string(), "'");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error(where, "cannot open the file");
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t pos = 0;
    auto take = [&](void* dst, std::size_t bytes, const std::string& what) {
        if (data.size() - pos < bytes)
            throw error(where, concat("file ends at byte ", data.size(), " while reading ", what));
        std::memcpy(dst, data.data() + pos, bytes);
        pos += bytes;
    };
    char magic[8];
    take(magic, 8, "the header");
    if (std::memcmp(magic, "goopt-nn", 8) != 0) throw error(where, "not a goopt-nn parameter file");
    std::uint32_t version = 0, scalar_bytes = 0;
    std::uint64_t count = 0;
    take(&version, 4, "the version");
    if (version != parameters_format_version)
        throw error(where, concat("format version ", version), concat(parameters_format_version));
    take(&scalar_bytes, 4, "the scalar size");
    if (scalar_bytes != sizeof(S))
        throw error(where, concat("scalars of ", scalar_bytes, " bytes"), concat(sizeof(S), " bytes"));
    take(&count, 8, "the parameter count");
    if (count != ps.size()) throw error(where, concat(count, " parameters"), concat(ps.size()));
    std::vector<matrix<S>> values;
    for (const parameter<S>* p : ps) {
        std::uint32_t len = 0;
        take(&len, 4, "a name length");
        if (len > data.size() - pos)
            throw error(where, concat("file too short for the name of parameter '", p->name, "'"));
        const std::string name = data.substr(pos, len);
        pos += len;
        if (name != p->name) throw error(where, concat("parameter '", name, "' found"), concat("'", p->name, "'"));
        std::uint64_t rows = 0, cols = 0;
        take(&rows, 8, concat("the shape of '", name, "'"));
        take(&cols, 8, concat("the shape of '", name, "'"));
        if (rows != static_cast<std::uint64_t>(p->value.rows()) || cols != static_cast<std::uint64_t>(p->value.cols()))
            throw error(where, concat("parameter '", name, "' is ", rows, "x", cols),
                        concat(p->value.rows(), "x", p->value.cols()));
        matrix<S> v(p->value.rows(), p->value.cols());
        take(v.data(), static_cast<std::size_t>(v.size()) * sizeof(S), concat("the values of '", name, "'"));
        values.push_back(std::move(v));
    }
    if (pos != data.size()) throw error(where, concat(data.size() - pos, " bytes after the last parameter"), "none");
    for (std::size_t i = 0; i < ps.size(); ++i) ps[i]->value = std::move(values[i]);
}

}  // namespace goopt::nn
