// nn/tall_products.hpp against plain products: row chunks, partial sums of sub-blocks, accumulation,
// and row counts that are not multiples of a chunk.
#include <goopt/nn/tall_products.hpp>

#include <doctest/doctest.h>

#include <random>

namespace {

goopt::nn::matrix<double> tall_test_matrix(Eigen::Index r, Eigen::Index c, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    goopt::nn::matrix<double> m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
    return m;
}

}  // namespace

TEST_CASE("tall products equal the plain products up to rounding, at any row count") {
    using namespace goopt::nn;
    std::mt19937_64 rng(5);
    // below one chunk, several chunks, and a weight-gradient chunk of 1,024 rows with a short tail
    for (const Eigen::Index n : {1, 255, 256, 700, 1024, 2500}) {
        CAPTURE(n);
        const auto a = tall_test_matrix(n, 12, rng), b = tall_test_matrix(n, 7, rng);
        const auto w = tall_test_matrix(12, 9, rng);
        matrix<double> y;
        multiply_rows(y, a, w);
        CHECK((y - a * w).cwiseAbs().maxCoeff() < 1e-12);
        multiply_rows(y, a, w, true);
        CHECK((y - 2 * (a * w)).cwiseAbs().maxCoeff() < 1e-12);
        matrix<double> g = tall_test_matrix(12, 7, rng);
        const matrix<double> g0 = g;
        add_transposed_product(g, a, b);
        CHECK((g - (g0 + a.transpose() * b)).cwiseAbs().maxCoeff() < 1e-11);
    }
}
