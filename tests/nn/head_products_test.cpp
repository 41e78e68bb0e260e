// nn::head_product against Eigen's product: every tile path (row tiles, single rows, vector panels
// and leftover columns), a transposed first operand, accumulation and alpha, float and double.
#include <goopt/nn/head_products.hpp>

#include <doctest/doctest.h>

#include <array>
#include <random>

namespace {

template <class S> goopt::nn::matrix<S> head_test_matrix(Eigen::Index r, Eigen::Index c, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    goopt::nn::matrix<S> m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<S>(u(rng));
    return m;
}

template <class S> void check_head_products(double tolerance) {
    using goopt::nn::head_product;
    std::mt19937_64 rng(11);
    // (m, k, w): multiples of the row tile (2 with SSE alone, 6 with AVX2, 8 with AVX-512) and of the
    // vector (16 floats, 8 doubles), and leftovers
    for (const auto [m, k, w] : {std::array<Eigen::Index, 3>{256, 512, 16},
                                 {19, 37, 16},
                                 {8, 5, 40},
                                 {3, 9, 3},
                                 {17, 16, 33},
                                 {1, 1, 1},
                                 {24, 0, 8}}) {
        INFO("m " << m << ", k " << k << ", w " << w);
        // operands inside larger matrices, as a head's columns are
        const auto a = head_test_matrix<S>(m + 2, k + 3, rng), at = head_test_matrix<S>(k + 1, m + 4, rng);
        const auto b = head_test_matrix<S>(k + 2, w + 5, rng);
        auto c = head_test_matrix<S>(m + 1, w + 2, rng);
        const goopt::nn::matrix<S> c0 = c;
        const auto ab = a.block(1, 2, m, k), atb = at.block(1, 3, k, m), bb = b.block(2, 1, k, w);
        const S alpha = S(0.5);

        head_product(c.block(1, 2, m, w), ab, false, bb, alpha);
        goopt::nn::matrix<S> want = c0;
        want.block(1, 2, m, w) = alpha * (ab * bb);
        CHECK((c - want).cwiseAbs().maxCoeff() <= tolerance);  // also: nothing outside the block moved

        head_product(c.block(1, 2, m, w), atb, true, bb, S(1), true);
        want.block(1, 2, m, w) += atb.transpose() * bb;
        CHECK((c - want).cwiseAbs().maxCoeff() <= tolerance);
    }
}

}  // namespace

TEST_CASE("head_product equals Eigen's product up to rounding (float and double)") {
    check_head_products<double>(1e-12);
    check_head_products<float>(1e-4);
}

// The tile this build holds in registers: the module executable is compiled for the baseline
// instruction set, goopt_nn_native_tests (tests/CMakeLists.txt) for the host's, where the benchmarks'
// and most users' builds run.
TEST_CASE("head_product's register tile follows the instruction set the build targets") {
    using goopt::nn::detail::head_tile_rows;
#if defined(EIGEN_DONT_VECTORIZE)
    CHECK(head_tile_rows<float>() == 8);
#elif defined(__AVX512F__)
    CHECK(head_tile_rows<float>() == 8);
    CHECK(head_tile_rows<double>() == 8);
#elif defined(__AVX__)
    CHECK(head_tile_rows<float>() == 6);
    CHECK(head_tile_rows<double>() == 6);
#elif defined(__SSE2__)
    CHECK(head_tile_rows<float>() == 2);
    CHECK(head_tile_rows<double>() == 2);
#endif
    CHECK(head_tile_rows<float>() >= 1);
    CHECK(head_tile_rows<float>() <= 8);
}
