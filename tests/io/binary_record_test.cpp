#include <goopt/io/binary_record.hpp>
#include <goopt/nn/types.hpp>

#include <doctest/doctest.h>

#include "../test_support.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

using namespace goopt;

namespace {
std::string record_of_every_type() {
    nn::matrix<float> mf(2, 3);
    mf << 1.5f, -2.f, 0.f, std::numeric_limits<float>::infinity(), 1e-30f, -0.f;
    nn::matrix<double> md(3, 1);
    md << 3.25, -1e300, std::numeric_limits<double>::denorm_min();
    io::record_writer w("goopt-test", 3);
    w.u64(0).u64(~std::uint64_t{0}).i64(-5).i64(std::numeric_limits<std::int64_t>::min());
    w.f64(0.1).f64(-0.0).f32(2.5f).bytes("").bytes(std::string("a\0b", 3)).matrix(mf).matrix(md);
    w.matrix(nn::matrix<double>(0, 4));
    return w.bytes();
}
}  // namespace

TEST_CASE("binary record: every field type round-trips exactly") {
    io::record_reader r(record_of_every_type(), "test record", "goopt-test", 3);
    CHECK(r.version() == 3);
    CHECK(r.u64("a") == 0);
    CHECK(r.u64("b") == ~std::uint64_t{0});
    CHECK(r.i64("c") == -5);
    CHECK(r.i64("d") == std::numeric_limits<std::int64_t>::min());
    CHECK(r.f64("e") == 0.1);
    const double neg_zero = r.f64("f");
    CHECK(neg_zero == 0.0);
    CHECK(std::signbit(neg_zero));
    CHECK(r.f32("g") == 2.5f);
    CHECK(r.bytes("h").empty());
    CHECK(r.bytes("i") == std::string("a\0b", 3));
    const auto mf = r.matrix<nn::matrix<float>>("j");
    REQUIRE(mf.rows() == 2);
    REQUIRE(mf.cols() == 3);
    CHECK(mf(0, 0) == 1.5f);
    CHECK(mf(0, 1) == -2.f);
    CHECK(std::isinf(mf(1, 0)));
    CHECK(mf(1, 1) == 1e-30f);
    CHECK(std::signbit(mf(1, 2)));
    const auto md = r.matrix<nn::matrix<double>>("k");
    REQUIRE(md.rows() == 3);
    CHECK(md(1, 0) == -1e300);
    CHECK(md(2, 0) == std::numeric_limits<double>::denorm_min());
    const auto empty = r.matrix<nn::matrix<double>>("l");
    CHECK(empty.rows() == 0);
    CHECK(empty.cols() == 4);
    r.finish();
}

TEST_CASE("binary record: the bytes are little-endian whatever the host") {
    nn::matrix<float> m(1, 2);
    m << 1.0f, -2.0f;
    const std::string got = io::record_writer("ab", 0x01020304)
                                .u64(0x1122334455667788)
                                .i64(-2)
                                .f64(1.0)
                                .f32(1.0f)
                                .bytes("xy")
                                .matrix(m)
                                .bytes();
    const std::vector<unsigned char> body_and_header = {
        'a', 'b',  0x04, 0x03, 0x02, 0x01,                                                // tag, version
        68,  0,    0,    0,    0,    0,    0,    0,                                       // body length
        1,   0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,                              // unsigned
        2,   0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,                              // signed -2
        3,   0,    0,    0,    0,    0,    0,    0xf0, 0x3f,                              // double 1.0
        4,   0,    0,    0x80, 0x3f,                                                      // float 1.0
        5,   2,    0,    0,    0,    0,    0,    0,    0,    'x', 'y',                    // bytes
        6,   1,    0,    0,    0,    0,    0,    0,    0,    2,   0,   0, 0, 0, 0, 0, 0,  // float matrix 1 x 2
        0,   0,    0x80, 0x3f, 0,    0,    0,    0xc0};                                   // 1.0f, -2.0f
    REQUIRE(got.size() == body_and_header.size() + 8);
    for (std::size_t i = 0; i < body_and_header.size(); ++i) {
        CAPTURE(i);
        CHECK(static_cast<unsigned char>(got[i]) == body_and_header[i]);
    }
    // the trailer: FNV-1a 64 of everything before it, least significant byte first
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : body_and_header) h = (h ^ c) * 1099511628211ull;
    for (int i = 0; i < 8; ++i)
        CHECK(static_cast<unsigned char>(got[body_and_header.size() + static_cast<std::size_t>(i)]) ==
              ((h >> (8 * i)) & 0xff));
}

TEST_CASE("binary record: record_bytes closes an edited body, and the reader sees the edit, not corruption") {
    const std::string whole = io::record_writer("goopt-test", 3).u64(7).f64(0.5).bytes();
    const std::size_t header = 10 + 12;
    std::string body = whole.substr(header, whole.size() - header - 8);
    CHECK(io::record_bytes("goopt-test", 3, body) == whole);
    body[1] = 9;  // the unsigned field's low byte
    io::record_reader r(io::record_bytes("goopt-test", 3, body), "edited", "goopt-test", 3);
    CHECK(r.u64("n") == 9);
    CHECK(r.f64("x") == 0.5);
    r.finish();
}

TEST_CASE("binary record: cut at every byte, it is refused as truncated, never read") {
    const std::string whole = record_of_every_type();
    for (std::size_t n = 0; n < whole.size(); ++n) {
        CAPTURE(n);
        CHECK_THROWS_WITH_AS(io::record_reader(whole.substr(0, n), "cut record", "goopt-test", 3),
                             doctest::Contains("truncated"), error);
    }
    CHECK_THROWS_WITH_AS(io::record_reader(whole + "x", "long record", "goopt-test", 3),
                         "long record: 1 bytes after the end of the record: expected none", error);
}

TEST_CASE("binary record: a flipped byte is refused; the header's fields name what they found") {
    const std::string whole = record_of_every_type();
    const std::size_t header = 10 + 12;
    for (std::size_t i = header; i < whole.size(); ++i) {
        CAPTURE(i);
        std::string bad = whole;
        bad[i] = static_cast<char>(bad[i] ^ 0x10);
        CHECK_THROWS_WITH_AS(io::record_reader(bad, "flipped", "goopt-test", 3), doctest::Contains("checksum"), error);
    }
    for (std::size_t i = 0; i < header; ++i) {  // tag, version or length: refused, whatever it says
        std::string bad = whole;
        bad[i] = static_cast<char>(bad[i] ^ 0x01);
        CHECK_THROWS_AS(io::record_reader(bad, "flipped", "goopt-test", 3), error);
    }
    CHECK_THROWS_WITH_AS(io::record_reader(whole, "f", "goopt-other", 3),
                         doctest::Contains("not a 'goopt-other' record"), error);
    CHECK_THROWS_WITH_AS(io::record_reader(whole, "f", "goopt-test", 4),
                         "f: format version 3 (an older format, no longer read): expected format version 4 (write the "
                         "file again with this goopt)",
                         error);
    CHECK_THROWS_WITH_AS(io::record_reader(whole, "f", "goopt-test", 2), doctest::Contains("(a newer format)"), error);
}

TEST_CASE("binary record: reading other fields than were written names the field and the type") {
    const std::string rec = io::record_writer("t", 1).u64(7).bytes("abc").bytes();
    io::record_reader r(rec, "rec 'x.bin'", "t", 1);
    CHECK_THROWS_WITH_AS(r.f64("the baseline"),
                         "rec 'x.bin': the baseline is stored as an unsigned integer: expected a double", error);
    io::record_reader r2(rec, "rec", "t", 1);
    CHECK(r2.u64("count") == 7);
    CHECK_THROWS_WITH_AS(r2.finish(), "rec: 12 bytes of fields after the last one read: expected none", error);
    CHECK(r2.bytes("name") == "abc");
    CHECK_THROWS_WITH_AS(r2.u64("more"), doctest::Contains("the record ends at byte"), error);
    r2.finish();
    // a float matrix is not read as a double one
    const std::string m = io::record_writer("t", 1).matrix(nn::matrix<float>::Zero(2, 2)).bytes();
    io::record_reader r3(m, "rec", "t", 1);
    CHECK_THROWS_WITH_AS(r3.matrix<nn::matrix<double>>("w"),
                         "rec: w is stored as a float matrix: expected a double matrix", error);
}

TEST_CASE("binary record: a matrix shape no Eigen matrix can have is refused; an empty one is read at once") {
    // a body signed as a writer would sign it, holding one double matrix of the given shape and no values
    const auto record = [](std::uint64_t rows, std::uint64_t cols) {
        std::string body(1, '\x07');
        io::detail::append_le(body, rows, 8);
        io::detail::append_le(body, cols, 8);
        std::string out = "t";
        io::detail::append_le(out, 1, 4);
        io::detail::append_le(out, body.size(), 8);
        out += body;
        io::detail::append_le(out, io::detail::fnv1a(out), 8);
        return out;
    };
    const std::uint64_t past = std::uint64_t{1} << 63;  // one past the largest std::ptrdiff_t
    io::record_reader r1(record(past, 0), "rec", "t", 1);
    CHECK_THROWS_WITH_AS(r1.matrix<nn::matrix<double>>("w"), doctest::Contains("(a corrupt shape)"), error);
    io::record_reader r2(record(0, past), "rec", "t", 1);
    CHECK_THROWS_WITH_AS(r2.matrix<nn::matrix<double>>("w"), doctest::Contains("each side at most"), error);
    // 2^62 rows of nothing: read without a pass over the rows
    io::record_reader r3(record(std::uint64_t{1} << 62, 0), "rec", "t", 1);
    const auto empty = r3.matrix<nn::matrix<double>>("w");
    CHECK(empty.rows() == (std::int64_t{1} << 62));
    CHECK(empty.cols() == 0);
    r3.finish();
}

TEST_CASE("binary record: written atomically and read back from a file") {
    const test::temp_dir dir("goopt_io_");
    const auto path = dir.path / "record.bin";
    io::record_writer("goopt-test", 1).f64(2.0).write(path);
    auto r = io::record_reader::from_file(path, "rec", "goopt-test", 1);
    CHECK(r.f64("x") == 2.0);
    r.finish();
    std::filesystem::remove(path);
    CHECK_THROWS_WITH_AS(io::record_reader::from_file(path, "rec", "goopt-test", 1), "rec: cannot open the file",
                         error);
}
