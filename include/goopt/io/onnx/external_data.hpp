#pragma once
// goopt: optional-edge (needs Debian's libonnx-dev and libprotobuf-dev: CMake target goopt::onnx)
/// @file
/// @brief ONNX external data: tensors kept in a side file beside the model (the TensorProto holds
/// data_location = EXTERNAL and the entries location, offset and length) instead of in the
/// protobuf, which cannot pass 2 GiB. The export moves initializers there when the model would pass
/// that limit, or from a size the caller gives; the import reads them back, the location relative
/// to the model file's directory.

#include <goopt/error.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>

namespace goopt::io::detail {

/// The value of external data entry `key` of t, or empty.
inline std::string external_entry(const onnx::TensorProto& t, std::string_view key) {
    for (const auto& e : t.external_data())
        if (e.key() == key) return e.value();
    return {};
}

/// @brief Moves the raw data of every initializer of at least `min_bytes` into one side file named
/// `location` (a file name in the model's directory), each at an offset aligned to 64 bytes.
/// @return the side file's bytes (empty when no initializer moved).
inline std::string move_to_external_data(onnx::ModelProto& m, const std::string& location, std::size_t min_bytes) {
    std::string data;
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
        if (!t.has_raw_data() || t.raw_data().size() < min_bytes || t.raw_data().empty()) continue;
        data.resize((data.size() + 63) / 64 * 64, '\0');
        const std::size_t offset = data.size(), length = t.raw_data().size();
        data += t.raw_data();
        t.clear_raw_data();
        t.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
        t.clear_external_data();
        auto entry = [&t](const char* key, const std::string& value) {
            auto& e = *t.add_external_data();
            e.set_key(key);
            e.set_value(value);
        };
        entry("location", location);
        entry("offset", std::to_string(offset));
        entry("length", std::to_string(length));
    }
    return data;
}

/// @brief Reads the external data of initializer t from `dir` into its raw data. A side file that
/// does not exist leaves t as it is: a model whose weights were stripped (the import then has no
/// values for them, and an export writes them as graph inputs, saying so). A location outside
/// `dir`, a file shorter than the tensor's bytes or a length that is not the tensor's are errors.
/// @param bytes the tensor's size in bytes (its elements times the element size)
inline void read_external_data(onnx::TensorProto& t, const std::filesystem::path& dir, std::uint64_t bytes,
                               const std::string& place) {
    const std::string location = external_entry(t, "location");
    const std::filesystem::path rel(location);
    if (location.empty() || rel.is_absolute() || rel.has_root_name())
        throw error(place, concat("external data location '", location, "'"),
                    "a file name relative to the model's directory");
    for (const auto& part : rel)
        if (part == "..")
            throw error(place, concat("external data location '", location, "' leaves the model's directory"),
                        "a file in the model's directory or below it");
    const std::filesystem::path file = dir / rel;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return;  // stripped: the values are absent
    auto number = [&](std::string_view key, std::uint64_t fallback) -> std::uint64_t {
        const std::string v = external_entry(t, key);
        if (v.empty()) return fallback;
        std::size_t used = 0;
        unsigned long long n = 0;
        try {
            n = std::stoull(v, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != v.size() || v.front() == '-')
            throw error(place, concat("external data ", key, " '", v, "'"), "a number of bytes");
        return n;
    };
    const std::uint64_t offset = number("offset", 0), length = number("length", bytes);
    if (length != bytes)
        throw error(place, concat("external data of ", length, " bytes in '", location, "'"),
                    concat(bytes, " bytes, the tensor's size"));
    const std::uint64_t size = std::filesystem::file_size(file, ec);
    if (ec || offset > size || size - offset < bytes)
        throw error(place,
                    concat("external data file '", file.string(), "' has ", ec ? 0 : size, " bytes, ",
                           ec ? "or cannot be read" : "too few"),
                    concat(bytes, " bytes from offset ", offset));
    std::ifstream in(file, std::ios::binary);
    std::string raw(static_cast<std::size_t>(bytes), '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in || !in.read(raw.data(), static_cast<std::streamsize>(bytes)))
        throw error(place, concat("external data file '", file.string(), "' cannot be read"),
                    concat(bytes, " bytes from offset ", offset));
    t.set_raw_data(std::move(raw));
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
}

}  // namespace goopt::io::detail
