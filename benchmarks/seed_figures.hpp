#pragma once
// A learned row's step times, one per seed: a learning result is a claim over seeds, reported as
// the mean and the spread (max - min) beside every seed's figure.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace goopt::bench {

struct seed_figures {
    std::vector<double> ms;  ///< per seed, in ms
    double mean() const {
        double sum = 0;
        for (double x : ms) sum += x;
        return ms.empty() ? 0 : sum / static_cast<double>(ms.size());
    }
    double spread() const {
        return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()) - *std::min_element(ms.begin(), ms.end());
    }
    /// `key`_ms (the mean), `key`_spread_ms and `key`_seeds_ms.
    void write(nlohmann::ordered_json& row, const std::string& key) const {
        row[key + "_ms"] = mean();
        row[key + "_spread_ms"] = spread();
        row[key + "_seeds_ms"] = ms;
    }
};

}  // namespace goopt::bench
