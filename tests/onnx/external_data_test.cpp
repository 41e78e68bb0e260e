// ONNX external data: write_onnx puts initializers into a side file from a size on (here a small
// one, so that small models exercise what a model over 2 GiB needs), onnx.checker accepts the pair,
// and import_onnx reads the values back from beside the model; a side file that is too short, a
// length that is not the tensor's or a location outside the model's directory is a clear error.
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/onnx.hpp>

#include "external_tools.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace goopt;

namespace external_data_test {

const std::filesystem::path onnx_dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx";

/// The import's error message, or empty.
std::string import_error(const std::filesystem::path& file) {
    try {
        (void)io::import_onnx(file);
    } catch (const error& e) {
        return e.what();
    }
    return {};
}

TEST_CASE("initializers from a given size go to a side file that the import reads back") {
    onnx_testing::scratch_dir dir;
    for (const std::string stem : {"squeezenet1_1", "lstm_lm"}) {
        CAPTURE(stem);
        const io::onnx_model m = io::import_onnx(onnx_dir / (stem + ".onnx"));
        const auto file = dir.path / (stem + ".onnx");
        const auto report = io::write_onnx(m.graph, file, {.source = &m, .external_data_min_bytes = 1024});
        CHECK(report.external_data == stem + ".onnx.data");
        REQUIRE(report.external_initializers > 0);
        CHECK(std::filesystem::file_size(dir.path / report.external_data) > 1024 * report.external_initializers);
        // the model holds no data of those: it is smaller than the side file
        CHECK(std::filesystem::file_size(file) < std::filesystem::file_size(dir.path / report.external_data));
        onnx::ModelProto written;
        REQUIRE(written.ParseFromString(onnx_testing::slurp(file)));
        std::size_t external = 0;
        for (const auto& t : written.graph().initializer())
            if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
                ++external;
                CHECK(!t.has_raw_data());
                CHECK(io::detail::external_entry(t, "location") == report.external_data);
            } else {
                CHECK(t.raw_data().size() < 1024);
            }
        CHECK(external == report.external_initializers);
        // read back: every value the export wrote, the same
        const io::onnx_model back = io::import_onnx(file);
        if (stem == "squeezenet1_1") {  // (an LSTM's W without its value is refused: it must be known)
            const io::onnx_model inline_back =
                io::import_onnx_bytes(onnx_testing::slurp(file), "no directory: external data is not read");
            CHECK(inline_back.weight_values.size() < back.weight_values.size());
        }
        const auto r = io::to_onnx(m.graph, {.source = &m});  // the same export, all inline
        const auto all_inline = io::import_onnx_bytes(r.model.SerializeAsString(), stem + " (inline)");
        REQUIRE(back.weight_values.size() == all_inline.weight_values.size());
        for (const auto& [name, v] : all_inline.weight_values) {
            CAPTURE(name);
            REQUIRE(back.weight_values.count(name));
            CHECK(back.weight_values.at(name).type == v.type);
            CHECK(back.weight_values.at(name).values == v.values);
        }
    }
    // by default a small model keeps its initializers inline
    const io::onnx_model m = io::import_onnx(onnx_dir / "squeezenet1_1.onnx");
    const auto report = io::write_onnx(m.graph, dir.path / "inline.onnx", {.source = &m});
    CHECK(report.external_initializers == 0);
    CHECK(report.external_data.empty());
    CHECK(!std::filesystem::exists(dir.path / "inline.onnx.data"));
}

TEST_CASE("onnx.checker accepts a model with external data, given its path") {
    const std::string python = onnx_testing::python_with_onnx();
    if (python.empty()) {
        MESSAGE("skipped: no python3 with the onnx package (Debian: apt-get install python3-onnx)");
        return;
    }
    onnx_testing::scratch_dir dir;
    const io::onnx_model m = io::import_onnx(onnx_dir / "lstm_lm.onnx");
    const auto file = dir.path / "lstm_lm.onnx";
    REQUIRE(io::write_onnx(m.graph, file, {.source = &m, .external_data_min_bytes = 256}).external_initializers > 0);
    CHECK(onnx_testing::onnx_checker(python, file) == "");
    // the checker does read the side file: without it the model is refused
    std::filesystem::remove(dir.path / "lstm_lm.onnx.data");
    CHECK(onnx_testing::onnx_checker(python, file) != "");
}

TEST_CASE("a side file too short, a wrong length or a location outside the model's directory is an error") {
    onnx_testing::scratch_dir dir;
    const io::onnx_model m = io::import_onnx(onnx_dir / "squeezenet1_1.onnx");
    const auto file = dir.path / "m.onnx";
    (void)io::write_onnx(m.graph, file, {.source = &m, .external_data_min_bytes = 1024});
    const auto data = dir.path / "m.onnx.data";
    const std::string bytes = onnx_testing::slurp(data);

    // short: the last tensor does not fit
    io::atomic_write(data, std::string_view(bytes).substr(0, bytes.size() - 4));
    const std::string short_error = import_error(file);
    CHECK(short_error.starts_with(concat(file.string(), ": initializer '")));
    CHECK(short_error.find(concat("': external data file '", data.string(), "' has ", bytes.size() - 4,
                                  " bytes, too few: expected ")) != std::string::npos);
    io::atomic_write(data, bytes);
    CHECK(import_error(file) == "");

    // a model whose entries are edited: a length other than the tensor's, a location outside
    onnx::ModelProto model;
    REQUIRE(model.ParseFromString(onnx_testing::slurp(file)));
    auto edit = [&](const char* key, const std::string& value) {
        onnx::ModelProto copy = model;
        for (auto& t : *copy.mutable_graph()->mutable_initializer())
            for (auto& e : *t.mutable_external_data())
                if (e.key() == key) e.set_value(value);
        const auto edited = dir.path / concat("edited_", key, ".onnx");
        io::atomic_write(edited, copy.SerializeAsString());
        return import_error(edited);
    };
    const std::string length_error = edit("length", "12");
    CHECK(length_error.find("external data of 12 bytes in 'm.onnx.data': expected ") != std::string::npos);
    CHECK(length_error.ends_with(" bytes, the tensor's size"));
    CHECK(
        edit("location", "../m.onnx.data")
            .ends_with(
                "external data location '../m.onnx.data' leaves the model's directory: expected a file in the model's "
                "directory or below it"));
    CHECK(edit("location", "/etc/passwd")
              .ends_with("external data location '/etc/passwd': expected a file name relative to the model's "
                         "directory"));
    CHECK(edit("offset", "-1").ends_with("external data offset '-1': expected a number of bytes"));

    // no side file at all: a model whose weights were stripped, imported without their values
    std::filesystem::remove(data);
    const io::onnx_model stripped = io::import_onnx(file);
    CHECK(stripped.weight_values.size() < m.weight_values.size());
    CHECK(stripped.graph.num_ops() == io::import_onnx(onnx_dir / "squeezenet1_1.onnx").graph.num_ops());
}

}  // namespace external_data_test
