#pragma once
// Comparing what two graphs compute, and the stored inputs of the test models, for the tests of
// tests/onnx/ that read a model back.
#include <goopt/interp/interpreter.hpp>

#include "external_tools.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnx_testing {

using goopt::interp::value;

/// Largest per-output max |a - b| / max |a| (1 where a is all zeros); outputs must match in shape.
inline double max_rel_diff(const std::vector<value<double>>& a, const std::vector<value<double>>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(a[i].shape() == b[i].shape());
        double diff = 0, scale = 0;
        for (std::size_t k = 0; k < a[i].size(); ++k) {
            const double u = a[i].data()[k], v = b[i].data()[k];
            diff = std::isnan(u - v) ? INFINITY : std::max(diff, std::abs(u - v));
            scale = std::max(scale, std::abs(u));
        }
        worst = std::max(worst, diff / (scale > 0 ? scale : 1.0));
    }
    return worst;
}

/// The inputs stored beside a test model (tests/data/onnx/<stem>.json: "inputs", each a name with
/// its "shape" and "data") as interpreter feeds.
inline goopt::interp::feed_map<double> stored_inputs(const std::filesystem::path& json_file) {
    goopt::interp::feed_map<double> feeds;
    const auto stored = nlohmann::json::parse(slurp(json_file));
    for (const auto& [name, t] : stored.at("inputs").items()) {
        goopt::ops::shape s;
        for (auto d : t.at("shape")) s.push_back(d.get<std::int64_t>());
        auto v = goopt::interp::detail::filled(s, 0.0);
        std::size_t k = 0;
        for (const auto& x : t.at("data")) v.data()[k++] = x.get<double>();
        feeds.emplace(name, std::move(v));
    }
    return feeds;
}

}  // namespace onnx_testing
