#pragma once
/// @file
/// @brief The one binary record format of goopt (network weights, PPO checkpoints, a trainer's
/// resume state): typed fields, explicitly little-endian whatever the host, versioned and checksummed.
///
/// Layout: tag (its bytes, no length: the reader knows the tag it expects) | u32 version |
/// u64 body length | body | u64 FNV-1a of every byte before it. The body is a sequence of fields,
/// each a one-byte type code and its value:
///   1 unsigned: u64 | 2 signed: i64 (two's complement) | 3 double: IEEE-754 binary64 bits as u64 |
///   4 float: binary32 bits as u32 | 5 bytes: u64 length, the bytes |
///   6 float matrix, 7 double matrix: u64 rows, u64 cols, rows*cols values in row-major order.
/// The body length separates a cut file ("truncated") and bytes after the end from corruption,
/// which the checksum catches; the type codes make a reader that drifts from the writer fail at
/// the first field that differs, naming it.

#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>

namespace goopt::io {

namespace detail {

enum class field_type : std::uint8_t { unsigned_int = 1, signed_int, f64, f32, bytes, f32_matrix, f64_matrix };

inline const char* field_type_name(std::uint8_t t) {
    constexpr const char* names[] = {"an unsigned integer", "a signed integer", "a double", "a float", "bytes",
                                     "a float matrix",      "a double matrix"};
    return t >= 1 && t <= 7 ? names[t - 1] : "an unknown field type";
}

/// FNV-1a, 64 bits, over `s`.
inline std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

/// Writes the low `n` bytes of `v` at `out`, least significant first.
inline void store_le(char* out, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline void append_le(std::string& out, std::uint64_t v, int n) {
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(n));
    store_le(out.data() + at, v, n);
}
inline std::uint64_t load_le(const char* in, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    return v;
}

template <std::floating_point S> std::uint64_t float_bits(S v) {
    if constexpr (sizeof(S) == 4) return std::bit_cast<std::uint32_t>(v);
    else return std::bit_cast<std::uint64_t>(v);
}
template <std::floating_point S> S from_bits(std::uint64_t b) {
    if constexpr (sizeof(S) == 4) return std::bit_cast<S>(static_cast<std::uint32_t>(b));
    else return std::bit_cast<S>(b);
}

/// A matrix a record can hold: float or double scalars, a shape and element access (Eigen's dense
/// matrices and expressions, nn::matrix).
template <class M>
concept record_matrix = (std::same_as<typename M::Scalar, float> ||
                         std::same_as<typename M::Scalar, double>)&&requires(const M& c, std::ptrdiff_t i) {
    { c.rows() } -> std::convertible_to<std::ptrdiff_t>;
    { c.cols() } -> std::convertible_to<std::ptrdiff_t>;
    { c(i, i) } -> std::convertible_to<typename M::Scalar>;
};
/// A record_matrix a reader can make: built from its shape, its elements assignable.
template <class M>
concept readable_record_matrix = record_matrix<M> && std::constructible_from<M, std::ptrdiff_t, std::ptrdiff_t> &&
    requires(M& m, std::ptrdiff_t i) {
    m(i, i) = typename M::Scalar{};
};

}  // namespace detail

/// @brief The whole record around an encoded body: tag, version, body length, body, checksum (the
/// layout above). record_writer closes its records with it; a test or fuzz harness that edits a
/// body field by field closes its own the same way, so the reader checks the values, not only the
/// checksum.
inline std::string record_bytes(std::string_view tag, std::uint32_t version, std::string_view body) {
    std::string out(tag);
    detail::append_le(out, version, 4);
    detail::append_le(out, body.size(), 8);
    out += body;
    detail::append_le(out, detail::fnv1a(out), 8);
    return out;
}

/// @brief Builds one record field by field; `bytes()` or `write()` close it with the header and
/// the checksum.
class record_writer {
public:
    /// @param tag what the record is ("goopt-ppo"); @param version the format version of its body.
    record_writer(std::string_view tag, std::uint32_t version) : tag_(tag), version_(version) {}

    record_writer& u64(std::uint64_t v) {
        type(detail::field_type::unsigned_int);
        detail::append_le(body_, v, 8);
        return *this;
    }
    record_writer& i64(std::int64_t v) {
        type(detail::field_type::signed_int);
        detail::append_le(body_, static_cast<std::uint64_t>(v), 8);
        return *this;
    }
    record_writer& f64(double v) {
        type(detail::field_type::f64);
        detail::append_le(body_, std::bit_cast<std::uint64_t>(v), 8);
        return *this;
    }
    record_writer& f32(float v) {
        type(detail::field_type::f32);
        detail::append_le(body_, std::bit_cast<std::uint32_t>(v), 4);
        return *this;
    }
    record_writer& bytes(std::string_view s) {
        type(detail::field_type::bytes);
        detail::append_le(body_, s.size(), 8);
        body_ += s;
        return *this;
    }
    /// A float or double matrix: its shape, then its values row by row.
    template <detail::record_matrix M> record_writer& matrix(const M& m) {
        using S = typename M::Scalar;
        constexpr int size = sizeof(S);
        type(size == 4 ? detail::field_type::f32_matrix : detail::field_type::f64_matrix);
        const auto rows = static_cast<std::size_t>(m.rows()), cols = static_cast<std::size_t>(m.cols());
        detail::append_le(body_, rows, 8);
        detail::append_le(body_, cols, 8);
        std::size_t at = body_.size();
        body_.resize(at + rows * cols * size);
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j, at += size)
                detail::store_le(body_.data() + at,
                                 detail::float_bits(m(static_cast<std::ptrdiff_t>(i), static_cast<std::ptrdiff_t>(j))),
                                 size);
        return *this;
    }

    /// The whole record: header, body, checksum.
    std::string bytes() const { return record_bytes(tag_, version_, body_); }
    /// Writes the record to `path` atomically (io::atomic_write).
    void write(const std::filesystem::path& path) const { atomic_write(path, bytes()); }

private:
    void type(detail::field_type t) { body_.push_back(static_cast<char>(t)); }
    std::string tag_;
    std::uint32_t version_;
    std::string body_;
};

/// @brief Reads a record back field by field, in the order it was written. The constructor checks
/// the tag, the version, the length and the checksum; each field checks its type and its bounds.
/// Every error is a goopt::error naming `where` (the file), the field and what was expected.
class record_reader {
public:
    /// @param where names the record in errors, e.g. "rl::ppo checkpoint 'a.ckpt'".
    /// @throws goopt::error for another tag, another version (saying whether older or newer), a
    /// record cut short (truncated), bytes after its end, or a checksum mismatch (corrupt).
    record_reader(std::string data, std::string where, std::string_view tag, std::uint32_t version)
        : data_(std::move(data)), where_(std::move(where)) {
        const std::size_t header = tag.size() + 12;
        const std::size_t have = std::min(data_.size(), tag.size());
        if (std::string_view(data_).substr(0, have) != tag.substr(0, have))
            throw error(where_, concat("not a '", tag, "' record"), concat("a file that starts with '", tag, "'"));
        if (data_.size() < header + 8)
            throw error(where_, concat("file ends at byte ", data_.size(), " within the header (truncated)"),
                        concat("at least ", header + 8, " bytes"));
        version_ = static_cast<std::uint32_t>(detail::load_le(data_.data() + tag.size(), 4));
        if (version_ != version)
            throw error(where_,
                        concat("format version ", version_,
                               version_ < version ? " (an older format, no longer read)" : " (a newer format)"),
                        concat("format version ", version, " (write the file again with this goopt)"));
        const std::uint64_t length = detail::load_le(data_.data() + tag.size() + 4, 8);
        const std::uint64_t need_bytes = length > data_.size() ? data_.size() + 1 : header + length + 8;
        if (data_.size() < need_bytes)
            throw error(where_, concat("file ends at byte ", data_.size(), " (truncated)"),
                        concat(header + length + 8, " bytes, as its header says"));
        if (data_.size() > need_bytes)
            throw error(where_, concat(data_.size() - need_bytes, " bytes after the end of the record"), "none");
        const std::string_view signed_part = std::string_view(data_).substr(0, data_.size() - 8);
        if (detail::load_le(data_.data() + data_.size() - 8, 8) != detail::fnv1a(signed_part))
            throw error(where_, "checksum mismatch (the file is corrupt)", "the FNV-1a of its contents");
        at_ = header;
        end_ = data_.size() - 8;
    }

    /// Reads the record in the file at `path`. @throws goopt::error when it cannot be opened.
    static record_reader from_file(const std::filesystem::path& path, std::string where, std::string_view tag,
                                   std::uint32_t version) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw error(where, "cannot open the file");
        std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (in.bad()) throw error(where, "cannot read the file");
        return record_reader(std::move(data), std::move(where), tag, version);
    }

    std::uint32_t version() const noexcept { return version_; }

    std::uint64_t u64(std::string_view field) {
        take_type(detail::field_type::unsigned_int, field);
        return take(8, field);
    }
    std::int64_t i64(std::string_view field) {
        take_type(detail::field_type::signed_int, field);
        return static_cast<std::int64_t>(take(8, field));
    }
    double f64(std::string_view field) {
        take_type(detail::field_type::f64, field);
        return std::bit_cast<double>(take(8, field));
    }
    float f32(std::string_view field) {
        take_type(detail::field_type::f32, field);
        return std::bit_cast<float>(static_cast<std::uint32_t>(take(4, field)));
    }
    std::string bytes(std::string_view field) {
        take_type(detail::field_type::bytes, field);
        const std::uint64_t n = take(8, field);
        need(n, field);
        std::string s = data_.substr(at_, static_cast<std::size_t>(n));
        at_ += static_cast<std::size_t>(n);
        return s;
    }
    /// A matrix of M's scalar type, with the shape stored (the caller checks the shape it needs).
    template <detail::readable_record_matrix M> M matrix(std::string_view field) {
        using S = typename M::Scalar;
        constexpr int size = sizeof(S);
        take_type(size == 4 ? detail::field_type::f32_matrix : detail::field_type::f64_matrix, field);
        const std::uint64_t rows = take(8, field), cols = take(8, field);
        // an empty matrix has no values to bound its other side: a side past what Eigen can index
        // would wrap to a negative size, and a huge side beside a zero one would loop for nothing
        constexpr auto most = static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());
        if (rows > most || cols > most)
            throw error(where_, concat(field, " is ", rows, " x ", cols),
                        concat("each side at most ", most, " (a corrupt shape)"));
        if (rows == 0 || cols == 0) return M(static_cast<std::ptrdiff_t>(rows), static_cast<std::ptrdiff_t>(cols));
        if (cols > (end_ - at_) / size / rows)
            throw error(where_, concat(field, " is ", rows, " x ", cols, ": the record ends at byte ", end_),
                        concat(rows * cols * size, " bytes of values (a corrupt shape)"));
        need(rows * cols * size, field);
        M m(static_cast<std::ptrdiff_t>(rows), static_cast<std::ptrdiff_t>(cols));
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j, at_ += size)
                m(static_cast<std::ptrdiff_t>(i), static_cast<std::ptrdiff_t>(j)) =
                    detail::from_bits<S>(detail::load_le(data_.data() + at_, size));
        return m;
    }

    /// @throws goopt::error when fields are left unread (a reader older than the writer).
    void finish() const {
        if (at_ != end_) throw error(where_, concat(end_ - at_, " bytes of fields after the last one read"), "none");
    }

private:
    void need(std::uint64_t n, std::string_view field) const {
        if (n > end_ - at_)
            throw error(where_, concat("the record ends at byte ", end_, " while reading ", field),
                        concat(n, " more bytes at byte ", at_));
    }
    void take_type(detail::field_type t, std::string_view field) {
        need(1, field);
        const auto found = static_cast<std::uint8_t>(data_[at_]);
        if (found != static_cast<std::uint8_t>(t))
            throw error(where_, concat(field, " is stored as ", detail::field_type_name(found)),
                        detail::field_type_name(static_cast<std::uint8_t>(t)));
        ++at_;
    }
    std::uint64_t take(int n, std::string_view field) {
        need(static_cast<std::uint64_t>(n), field);
        const std::uint64_t v = detail::load_le(data_.data() + at_, n);
        at_ += static_cast<std::size_t>(n);
        return v;
    }

    std::string data_;
    std::string where_;
    std::uint32_t version_ = 0;
    std::size_t at_ = 0, end_ = 0;
};

}  // namespace goopt::io
