// The bad-input table for the ONNX importer: small models built here with ONNX's own protobuf
// classes, each wrong in one way, must raise goopt::error naming the file, the node or tensor and
// what was expected. Then the fuzzer's ONNX inputs (tests/data/fuzz/onnx/, regressions/ included)
// are replayed with the harness's own checks (tests/fuzz/onnx_input.hpp).
#include "../fuzz/onnx_input.hpp"

#include <goopt/io/onnx.hpp>

#include "../error_message_check.hpp"
#include "model_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

using namespace goopt;

namespace {

using onnx_testing::model_builder;
using onnx_testing::set_attribute;

/// x [2 steps, batch 1, 1] and constant W, R of a one-unit recurrent layer with `gates` gates.
void recurrent_layer(model_builder& b, int gates) {
    b.input("x", {2, 1, 1});
    b.floats("w", {1, gates, 1},
             gates == 4 ? std::initializer_list<float>{1, 2, 3, 4} : std::initializer_list<float>{1, 2, 3});
    b.floats("r", {1, gates, 1},
             gates == 4 ? std::initializer_list<float>{1, 2, 3, 4} : std::initializer_list<float>{1, 2, 3});
}

struct bad_model {
    const char* what;
    std::function<void(model_builder&)> build;
    std::vector<std::string> expected;  ///< substrings of the message
    /// false: a valid form goopt has no kind for, refused only where opaque ops are not kept (the
    /// test "forms goopt has no kind for are kept opaque" imports them with the default)
    bool keep_unknown_ops = true;
};

constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();
constexpr float infinity = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("bad ONNX models: each is a goopt::error naming the file, the node and what was expected") {
    // the good model the rows below break one thing of
    {
        model_builder b;
        b.input("x", {2, 3}).input("y", {2, 3});
        b.node("Add", {"x", "y"}, {"z"});
        b.output("z");
        CHECK(io::import_onnx_bytes(b.bytes(), "good.onnx").graph.num_ops() == 3);
    }
    const std::vector<bad_model> rows = {
        {"empty graph",
         [](model_builder& b) { b.input("x", {2}).output("x"); },
         {"bad.onnx: not an ONNX model (no graph with nodes)"}},
        {"unsupported opset",
         [](model_builder& b) {
             b.m.mutable_opset_import(0)->set_version(99);
             b.input("x", {2});
             b.node("Relu", {"x"}, {"r"});
         },
         {"bad.onnx", "operator set version 99 is not supported: expected 7-22"}},
        {"unknown op",
         [](model_builder& b) {
             b.input("x", {2});
             b.node("Frobnicate", {"x"}, {"f"});
         },
         {"bad.onnx", "'f' (Frobnicate)",
          "operator 'Frobnicate' has no goopt kind, and the type of its output 'f' is unknown"}},
        {"wrong arity",
         [](model_builder& b) {
             b.input("x", {2, 3});
             b.node("Add", {"x"}, {"a"});
         },
         {"bad.onnx: node 'a' (Add)", "has 1 inputs: expected at least 2"}},
        {"cycle: a node consumes its own output",
         [](model_builder& b) {
             b.input("x", {2});
             b.node("Add", {"x", "a"}, {"a"});
         },
         {"bad.onnx", "'a' (Add)", "'a'"}},
        {"shape mismatch",
         [](model_builder& b) {
             b.input("x", {2, 3}).input("y", {4, 5});
             b.node("Add", {"x", "y"}, {"a"});
         },
         {"bad.onnx: node 'a' (Add)", "[2,3]", "[4,5]"}},
        {"zero dimension",
         [](model_builder& b) {
             b.input("x", {2, 0});
             b.node("Relu", {"x"}, {"r"});
         },
         {"bad.onnx: graph input 'x'", "has dimension 0 at axis 1: expected at least 1"}},
        {"negative dimension in an initializer",
         [](model_builder& b) {
             b.input("x", {2});
             b.floats("w", {-2}, {});
             b.node("Add", {"x", "w"}, {"a"});
         },
         {"bad.onnx: initializer 'w'", "negative dimension -2"}},
        {"element count overflows int64",
         [](model_builder& b) {
             b.input("x", {4294967296, 4294967296});
             b.node("Relu", {"x"}, {"r"});
         },
         {"bad.onnx", "overflows 64 bits"}},
        {"initializer with too few values",
         [](model_builder& b) {
             b.input("x", {3});
             b.floats("w", {3}, {1, 2});
             b.node("Add", {"x", "w"}, {"a"});
         },
         {"bad.onnx: initializer 'w'", "holds 2 values: expected 3"}},
        {"NaN as a shape",
         [](model_builder& b) {
             b.input("x", {2, 3});
             b.floats("s", {2}, {not_a_number, 2});
             b.node("Reshape", {"x", "s"}, {"r"});
         },
         {"bad.onnx: node 'r' (Reshape)", "not in the range of a 64-bit integer"}},
        {"infinite shape",
         [](model_builder& b) {
             b.input("x", {2, 3});
             b.floats("s", {2}, {infinity, 2});
             b.node("Reshape", {"x", "s"}, {"r"});
         },
         {"bad.onnx: node 'r' (Reshape)", "not in the range of a 64-bit integer"}},
        {"folded integer overflow",
         [](model_builder& b) {
             b.int64s("a", {1}, {std::numeric_limits<std::int64_t>::max()}).int64s("one", {1}, {1});
             b.node("Add", {"a", "one"}, {"s"});
             b.output("s");
         },
         {"bad.onnx: node 's' (Add)", "integer Add overflows 64 bits"}},
        {"Clip bound with no value",
         [](model_builder& b) {
             b.input("x", {2, 3});
             b.floats("lo", {0}, {});
             b.node("Clip", {"x", "lo"}, {"c"});
         },
         {"bad.onnx: node 'c' (Clip)", "input 1 ('min', tensor 'lo') holds 0 values: expected one value"}},
        {"Range bound with two values",
         [](model_builder& b) {
             b.int64s("start", {2}, {0, 1}).int64s("limit", {}, {4}).int64s("delta", {}, {1});
             b.node("Range", {"start", "limit", "delta"}, {"r"});
             b.output("r");
         },
         {"bad.onnx: node 'r' (Range)", "input 0 ('start', tensor 'start') holds 2 values: expected one value"}},
        {"Range with a NaN bound",
         [](model_builder& b) {
             b.floats("start", {}, {std::numeric_limits<float>::quiet_NaN()}).floats("limit", {}, {4});
             b.floats("delta", {}, {1});
             b.node("Range", {"start", "limit", "delta"}, {"r"});
             b.output("r");
         },
         {"bad.onnx: node 'r' (Range)", "start nan, limit 4, delta 1: expected finite start, limit and delta"}},
        {"Slice with fewer ends than starts",
         [](model_builder& b) {
             b.int64s("v", {4}, {1, 2, 3, 4}).int64s("starts", {1}, {1}).int64s("ends", {0}, {});
             b.node("Slice", {"v", "starts", "ends"}, {"s"});
             b.output("s");
         },
         {"bad.onnx: node 's' (Slice)", "starts, ends, axes and steps differ in length"}},
        {"folding multiplies a few bytes into hundreds of MB",
         [](model_builder& b) {
             b.floats("one", {1}, {1}).int64s("shape", {3}, {2, 3, 8388613});
             b.node("Expand", {"one", "shape"}, {"e"});
             b.output("e");
         },
         {"bad.onnx: node 'e' (Expand)",
          "a constant of shape [2,3,8388613] is more than folding may still compute at import time (4194320 elements "
          "left of 4194304 plus 4 per element of the file's own constants)"}},
        {"folding a shape-only constant past the limit",
         [](model_builder& b) {
             b.int64s("shape", {2}, {4096, 4096});
             b.node("ConstantOfShape", {"shape"}, {"m"});
             b.output("m");
         },
         {"bad.onnx: node 'm' (ConstantOfShape)",
          "a constant of shape [4096,4096] is more than folding may still compute"}},
        {"a chain of folds, each under the limit, computing too much in all",
         [](model_builder& b) {
             // c0..c3 (1 M elements each) fit the budget of 4 M plus 4 per file element; c4 is refused
             // before it is computed
             b.int64s("shape", {2}, {1024, 1024});
             b.node("ConstantOfShape", {"shape"}, {"c0"});
             const std::array<std::string, 5> c = {"c0", "c1", "c2", "c3", "c4"};
             for (std::size_t k = 1; k < c.size(); ++k) b.node("Add", {c[k - 1], c[k - 1]}, {c[k]});
             b.output("c4");
         },
         {"bad.onnx: node 'c4' (Add)",
          "a constant of shape [1024,1024] is more than folding may still compute at import time (8 elements left"}},
        {"copies of a folded constant count towards the budget too",
         [](model_builder& b) {
             b.int64s("shape", {2}, {2048, 2048});
             b.node("ConstantOfShape", {"shape"}, {"m"});
             b.node("Identity", {"m"}, {"i"});
             b.output("i");
         },
         {"bad.onnx: node 'i' (Identity)",
          "folding constants at import time computes more than 4194304 elements plus 4 per element"}},
        {"folded Reshape copying a dimension the constant lacks",
         [](model_builder& b) {
             b.int64s("v", {4}, {1, 2, 3, 4}).int64s("shape", {3}, {4, 0, 0});
             b.node("Reshape", {"v", "shape"}, {"r"});
             b.output("r");
         },
         {"bad.onnx: node 'r' (Reshape)", "shape [4,0,0] copies a dimension the input lacks"}},
        {"Split with no outputs",
         [](model_builder& b) {
             b.input("x", {4});
             b.node("Split", {"x"}, {}).set_name("split");
         },
         {"bad.onnx: node 'split' (Split)", "has no outputs"}},
        {"folded Flatten with an axis beyond the rank",
         [](model_builder& b) {
             b.int64s("v", {4}, {1, 2, 3, 4});
             auto& f = b.node("Flatten", {"v"}, {"f"});
             auto* a = f.add_attribute();
             a->set_name("axis");
             a->set_type(onnx::AttributeProto::INT);
             a->set_i(3);
             b.output("f");
         },
         {"bad.onnx: node 'f' (Flatten)", "axis 3 is outside [-1, 1]"}},
        {"Conv group so large that group x channels overflows",
         [](model_builder& b) {
             b.input("x", {1, 4, 5, 5});
             b.floats("w", {1, 4, 1, 1}, {1, 2, 3, 4});
             auto& c = b.node("Conv", {"x", "w"}, {"y"});
             auto* a = c.add_attribute();
             a->set_name("group");
             a->set_type(onnx::AttributeProto::INT);
             a->set_i(std::int64_t{1} << 62);
         },
         {"bad.onnx: node 'y' (Conv)", "group 4611686018427387904 does not match input channels 4"}},
        {"LSTM with cell clipping",
         [](model_builder& b) {
             recurrent_layer(b, 4);
             set_attribute(b.node("LSTM", {"x", "w", "r"}, {"y"}), "clip", 3.0f);
         },
         {"bad.onnx: node 'y' (LSTM)", "cell clipping (clip): expected no clip attribute"},
         false},
        {"LSTM weights computed at run time",
         [](model_builder& b) {
             b.input("x", {2, 1, 1}).input("w", {1, 4, 1});
             b.floats("r", {1, 4, 1}, {1, 2, 3, 4});
             b.node("LSTM", {"x", "w", "r"}, {"y"});
         },
         {"bad.onnx: node 'y' (LSTM)",
          "input 1 ('W', tensor 'w') is computed: expected a constant known at import time"}},
        {"LSTM with a weight of the wrong shape",
         [](model_builder& b) {
             b.input("x", {2, 1, 1});
             b.floats("w", {1, 3, 1}, {1, 2, 3}).floats("r", {1, 4, 1}, {1, 2, 3, 4});
             b.node("LSTM", {"x", "w", "r"}, {"y"});
         },
         {"bad.onnx: node 'y' (LSTM)", "W [1,3,1] and R [1,4,1]", "expected W [1, 4*hidden, 1]"}},
        {"GRU with the reset gate before the recurrence matmul",
         [](model_builder& b) {
             recurrent_layer(b, 3);
             b.node("GRU", {"x", "w", "r"}, {"y"});
         },
         {"bad.onnx: node 'y' (GRU)", "linear_before_reset = 0", "expected linear_before_reset = 1"},
         false},
        {"GRU with another activation",
         [](model_builder& b) {
             recurrent_layer(b, 3);
             auto& n = b.node("GRU", {"x", "w", "r"}, {"y"});
             set_attribute(n, "linear_before_reset", std::int64_t{1});
             auto* a = n.add_attribute();
             a->set_name("activations");
             a->set_type(onnx::AttributeProto::STRINGS);
             a->add_strings("Relu");
             a->add_strings("Tanh");
         },
         {"bad.onnx: node 'y' (GRU)", "activation 'Relu': expected the default activations"},
         false},
        {"Resize with cubic interpolation",
         [](model_builder& b) {
             b.input("x", {1, 1, 2, 2});
             b.floats("scales", {4}, {1, 1, 2, 2});
             set_attribute(b.node("Resize", {"x", "", "scales"}, {"y"}), "mode", std::string("cubic"));
         },
         {"bad.onnx: node 'y' (Resize)", "mode 'cubic': expected nearest or linear"},
         false},
        {"Resize whose index table passes the import's budget",
         [](model_builder& b) {
             b.input("x", {1, 1, 2, 2});
             b.floats("scales", {4}, {1, 1, 1, 4194304});
             b.node("Resize", {"x", "", "scales"}, {"y"});
         },
         {"bad.onnx: node 'y' (Resize)",
          "resizing axis 3 from 2 to 8388608 cells: expected index and weight tables "
          "within the import's budget for computed constants"}},
        {"Slice with a step of 0",
         [](model_builder& b) {
             b.input("x", {1, 2, 6});
             b.int64s("s", {1}, {0}).int64s("e", {1}, {6}).int64s("a", {1}, {2}).int64s("st", {1}, {0});
             b.node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
         },
         {"bad.onnx: node 'y' (Slice)", "step 0: expected nonzero steps"}},
        {"Slice by a step that keeps no cell",
         [](model_builder& b) {
             b.input("x", {1, 2, 6});
             b.int64s("s", {1}, {5}).int64s("e", {1}, {1}).int64s("a", {1}, {2}).int64s("st", {1}, {2});
             b.node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
         },
         {"bad.onnx: node 'y' (Slice)", "axis 2 sliced from 5 to 1 by 2 keeps no cell: expected at least one cell"}},
        {"Slice of one axis twice",
         [](model_builder& b) {
             b.input("x", {1, 2, 6});
             b.int64s("s", {2}, {0, 1}).int64s("e", {2}, {6, 6}).int64s("a", {2}, {2, -1});
             b.node("Slice", {"x", "s", "e", "a"}, {"y"});
         },
         {"bad.onnx: node 'y' (Slice)", "axis 2 is sliced twice (axes [2,-1]): expected each axis once"}},
        {"Pad that crops an axis to nothing",
         [](model_builder& b) {
             b.input("x", {1, 2, 3});
             b.int64s("p", {6}, {0, 0, -2, 0, 0, -1});
             set_attribute(b.node("Pad", {"x", "p"}, {"y"}), "mode", std::string("edge"));
         },
         {"bad.onnx: node 'y' (Pad)", "pads -2 and -1 leave axis 2 of 3 cells empty: expected at least one cell"}},
        {"Pad in mode wrap (operator set 19) with a pad that crops",
         [](model_builder& b) {
             b.input("x", {1, 2, 3});
             b.int64s("p", {6}, {0, 0, 1, 0, 0, -1});
             set_attribute(b.node("Pad", {"x", "p"}, {"y"}), "mode", std::string("wrap"));
         },
         {"bad.onnx: node 'y' (Pad)",
          "mode 'wrap' with negative pads [0,0,1,0,0,-1]: expected pads >= 0 for mode wrap"},
         false},
        {"Tile with a repeat of 0",
         [](model_builder& b) {
             b.input("x", {2, 3});
             b.int64s("r", {2}, {1, 0});
             b.node("Tile", {"x", "r"}, {"y"});
         },
         {"bad.onnx: node 'y' (Tile)", "repeats [1,0] for shape [2,3]: expected repeats >= 1"}},
        {"PRelu whose slope would widen its input",
         [](model_builder& b) {
             b.input("x", {2, 3});
             b.floats("slope", {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
             b.node("PRelu", {"x", "slope"}, {"y"});
         },
         {"bad.onnx: node 'y' (PRelu)",
          "a slope of shape [4,3] for an input of shape [2,3]: expected a slope that "
          "broadcasts to the input's shape (one per channel, or one)"}},
        {"LRN without its window size",
         [](model_builder& b) {
             b.input("x", {1, 3, 4, 4});
             b.node("LRN", {"x"}, {"y"});
         },
         {"bad.onnx: node 'y' (LRN)", "has no attribute 'size': expected the attribute ONNX requires"}},
        {"InstanceNormalization with a scale that is not one per channel",
         [](model_builder& b) {
             b.input("x", {1, 3, 4, 4});
             b.floats("scale", {2}, {1, 2});
             b.floats("bias", {3}, {0, 0, 0});
             b.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"});
         },
         {"bad.onnx: node 'y' (InstanceNormalization)", "expected [3] (channels)"}},
        {"BatchNormalization with a negative epsilon",
         [](model_builder& b) {
             b.input("x", {1, 2, 2, 2});
             for (const char* name : {"scale", "bias", "mean", "var"}) b.floats(name, {2}, {1, 1});
             set_attribute(b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}), "epsilon",
                           -1.0f);
         },
         {"bad.onnx: node 'y' (BatchNormalization)", "epsilon is -1, expected a finite number >= 0"}},
        {"GroupNormalization with groups that do not divide the channels",
         [](model_builder& b) {
             b.input("x", {1, 4, 2, 2});
             b.floats("scale", {3}, {1, 2, 3});
             b.floats("bias", {3}, {0, 0, 0});
             set_attribute(b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}), "num_groups", std::int64_t{3});
         },
         {"bad.onnx: node 'y' (GroupNormalization)",
          "num_groups 3 for input [1,4,2,2]: expected an input of rank >= 2 whose channels (axis 1) num_groups >= 1 "
          "divides"}},
        {"GroupNormalization with a scale that is not one per group",
         [](model_builder& b) {
             b.input("x", {1, 4, 2, 2});
             b.floats("scale", {4}, {1, 2, 3, 4});
             b.floats("bias", {2}, {0, 0});
             set_attribute(b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}), "num_groups", std::int64_t{2});
         },
         {"bad.onnx: node 'y' (GroupNormalization)", "input 'scale' has shape [4]: expected 2 elements"}},
        {"Conv on a 3-D window",
         [](model_builder& b) {
             b.input("x", {1, 2, 4, 4, 4});
             b.floats("w", {1, 2, 1, 1, 1}, {1, 1});
             b.node("Conv", {"x", "w"}, {"y"});
         },
         {"bad.onnx: node 'y' (Conv)",
          "input has shape [1,2,4,4,4]: expected a 1-D window on NCL (rank 3) or a 2-D one on NCHW (rank 4)"}},
        {"Resize to crop and resize",
         [](model_builder& b) {
             b.input("x", {1, 1, 2, 2});
             b.floats("scales", {4}, {1, 1, 2, 2});
             set_attribute(b.node("Resize", {"x", "", "scales"}, {"y"}), "coordinate_transformation_mode",
                           std::string("tf_crop_and_resize"));
         },
         {"bad.onnx: node 'y' (Resize)", "coordinate_transformation_mode 'tf_crop_and_resize'"},
         false},
        {"Resize with a scale that leaves no cell",
         [](model_builder& b) {
             b.input("x", {1, 1, 2, 2});
             b.floats("scales", {4}, {1, 1, 0.25f, 1});
             b.node("Resize", {"x", "", "scales"}, {"y"});
         },
         {"bad.onnx: node 'y' (Resize)", "scale 0.25 of axis 2 (extent 2): expected a positive scale"}},
        {"ConvTranspose with an output_shape of three extents on a 2-D window",
         [](model_builder& b) {
             b.input("x", {1, 1, 2, 2});
             b.floats("w", {1, 1, 1, 1}, {1});
             set_attribute(b.node("ConvTranspose", {"x", "w"}, {"y"}), "output_shape",
                           std::vector<std::int64_t>{4, 4, 4});
         },
         {"bad.onnx: node 'y' (ConvTranspose)",
          "output extents [4,4,4]: expected 2 spatial extents in [1, 2^20] (output_shape: those, or the whole "
          "output shape)"}},
        {"ConvTranspose whose weight does not match the input channels",
         [](model_builder& b) {
             b.input("x", {1, 2, 2, 2});
             b.floats("w", {1, 1, 1, 1}, {1});
             b.node("ConvTranspose", {"x", "w"}, {"y"});
         },
         {"bad.onnx: node 'y' (ConvTranspose)", "group 1 with input channels 2 and weight [1,1,1,1]"}},
        {"ConvTranspose whose pads leave no output",
         [](model_builder& b) {
             b.input("x", {1, 1, 1, 1});
             b.floats("w", {1, 1, 1, 1}, {1});
             set_attribute(b.node("ConvTranspose", {"x", "w"}, {"y"}), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
         },
         {"bad.onnx: node 'y' (ConvTranspose)", "the output along axis 2 has -1 cells: expected at least 1"}},
        {"output nothing produces",
         [](model_builder& b) {
             b.input("x", {2});
             b.node("Relu", {"x"}, {"r"});
             b.output("nope");
         },
         {"bad.onnx", "graph output 'nope' is produced by no node"}},
    };
    for (const bad_model& row : rows) {
        const std::string name = row.what;
        CAPTURE(name);
        model_builder b;
        row.build(b);
        std::string message;
        try {
            io::onnx_options options;
            options.keep_unknown_ops = row.keep_unknown_ops;
            (void)io::import_onnx_bytes(b.bytes(), "bad.onnx", options);
            FAIL("imported: " << name);
        } catch (const error& e) {
            message = e.what();
        }
        check_error_message(message, row.expected);
    }
}

TEST_CASE("fuzz corpus: ONNX seeds and regressions replay cleanly") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(GOOPT_TEST_DATA_DIR) / "fuzz" / "onnx";
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    CHECK(files.size() >= 4);
    std::size_t accepted = 0;
    for (const auto& p : files) {
        CAPTURE(p.string());
        std::ifstream in(p, std::ios::binary);
        const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        bool ok = false;
        CHECK_NOTHROW(ok = fuzz::onnx_input(bytes));
        accepted += ok;
        // regressions: reject_* must be refused with a goopt::error, accept_* must import
        if (p.parent_path().filename() == "regressions") {
            const std::string name = p.filename().string();
            if (name.rfind("reject_", 0) == 0) CHECK_FALSE(ok);
            if (name.rfind("accept_", 0) == 0) CHECK(ok);
        }
    }
    CHECK(accepted >= 3);  // the seeds include rejected files (dangling, unsupported) on purpose
}
