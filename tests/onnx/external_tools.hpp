#pragma once
// What the tests of tests/onnx/ run beside goopt: Python's onnx.checker (Debian's python3-onnx) and
// onnxruntime (tools/ort, ./bootstrap.sh ort), each skipped, saying why, where it is missing; and
// the files they need.
#include <goopt/error.hpp>

#include "../test_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace onnx_testing {

using goopt::concat;

/// The file's bytes (empty where it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// A directory of its own under the system's temporary directory, removed however the test ends.
struct scratch_dir : goopt::test::temp_dir {
    scratch_dir() : temp_dir("goopt_onnx_export_") {}
};

/// A Python interpreter that imports onnx (Debian's python3-onnx), or empty.
inline std::string python_with_onnx() {
    for (const char* py : {"python3", "/usr/bin/python3"})
        if (std::system(concat(py, " -c 'import onnx' >/dev/null 2>&1").c_str()) == 0) return py;
    return {};
}

/// onnx.checker.check_model on the file by its path (which checks its external data files too), then
/// with full_check on the model loaded with its data: empty when both pass, else the message.
inline std::string onnx_checker(const std::string& python, const std::filesystem::path& file) {
    const auto err = file.string() + ".check";
    const std::string cmd = concat(python,
                                   " -c 'import onnx, sys; onnx.checker.check_model(sys.argv[1]); "
                                   "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' '",
                                   file.string(), "' 2>'", err, "'");
    if (std::system(cmd.c_str()) == 0) return {};
    const std::string text = slurp(err);
    return text.empty() ? "the checker failed" : text;
}

inline const std::filesystem::path ort_dir = GOOPT_ORT_DIR;

/// Why tools/ort cannot run here, or empty.
inline std::string onnxruntime_missing() {
    if (std::system("node --version >/dev/null 2>&1") != 0) return "node is not on PATH";
    if (!std::filesystem::exists(ort_dir / "node_modules" / "onnxruntime-node"))
        return concat("onnxruntime-node is not installed in ", ort_dir.string(), " (./bootstrap.sh ort)");
    return {};
}

/// What is wrong when onnxruntime runs `reference` and `other` on the same random inputs (seeded
/// `seed`; tools/ort/compare_models.js) and an output differs by more than `tolerance` (max |a - b|
/// / max |b|): empty when every output agrees, else the comparison's report. Only where
/// onnxruntime_missing() is empty.
inline std::string onnxruntime_disagreement(const std::filesystem::path& reference, const std::filesystem::path& other,
                                            int seed, double tolerance) {
    const std::string log = other.string() + ".compare.log";
    const std::string cmd = concat("node '", (ort_dir / "compare_models.js").string(), "' '", reference.string(), "' '",
                                   other.string(), "' --seed ", seed, " --tolerance ", tolerance, " >'", log, "' 2>&1");
    if (std::system(cmd.c_str()) == 0) return {};
    const std::string text = slurp(log);
    return text.empty() ? "compare_models.js failed" : text;
}

/// Whether onnxruntime cannot run here; if so the running test case says why.
inline bool onnxruntime_skipped() {
    const std::string missing = onnxruntime_missing();
    if (!missing.empty()) MESSAGE("skipped: ", missing);
    return !missing.empty();
}

}  // namespace onnx_testing
