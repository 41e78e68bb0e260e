#pragma once
/// @file
/// @brief One fuzz input for the ONNX importer (io::import_onnx_bytes): a goopt::error is a clean
/// rejection; an imported graph must be valid (graph::problems).

#include "fuzz_input.hpp"

#include <goopt/error.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/onnx.hpp>

#include <string_view>

namespace goopt::fuzz {

/// @return true when the importer accepted the input. @throws fuzz::finding for a broken promise.
inline bool onnx_input(std::string_view bytes) {
    io::onnx_model m;
    try {
        m = io::import_onnx_bytes(bytes, "<fuzz>");
    } catch (const error&) {
        return false;
    }
    if (const auto p = graph::problems(m.graph); !p.empty())
        throw finding("the importer returned an invalid graph: " + p.front());
    return true;
}

}  // namespace goopt::fuzz
