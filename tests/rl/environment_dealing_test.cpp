// rl::deal_by_work: environments dealt to ranks by their work (longest processing time first) stay
// within Graham's 4/3 of the best dealing, which a brute force finds; every rank holds one.
#include <goopt/rl/environment_dealing.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace goopt;

namespace {

/// The busiest rank's work under `owner`.
double busiest(const std::vector<double>& work, const std::vector<std::size_t>& owner, std::size_t ranks) {
    std::vector<double> load(ranks, 0.0);
    for (std::size_t k = 0; k < work.size(); ++k) load[owner[k]] += work[k];
    return *std::max_element(load.begin(), load.end());
}

/// The least busiest-rank work over every dealing (ranks^n of them).
double best_dealing(const std::vector<double>& work, std::size_t ranks) {
    std::vector<std::size_t> owner(work.size(), 0);
    double best = std::numeric_limits<double>::infinity();
    while (true) {
        best = std::min(best, busiest(work, owner, ranks));
        std::size_t i = 0;
        while (i < owner.size() && ++owner[i] == ranks) owner[i++] = 0;
        if (i == owner.size()) return best;
    }
}

}  // namespace

TEST_CASE("deal_by_work: the heaviest first, each to the least loaded rank") {
    // 5 and 4 open the two ranks; the three 3s go to the lighter rank each time: 8 and 10
    const std::vector<double> work{5, 4, 3, 3, 3};
    CHECK(rl::deal_by_work(work, 2) == std::vector<std::size_t>{0, 1, 1, 0, 1});
    // two large and two small by index put both large ones on rank 0; by work they are split
    const std::vector<double> uneven{10, 1, 10, 1};
    CHECK(busiest(uneven, rl::deal_by_index(4, 2), 2) == 20);
    CHECK(busiest(uneven, rl::deal_by_work(uneven, 2), 2) == 11);
    // one rank: everything on it
    CHECK(rl::deal_by_work(work, 1) == std::vector<std::size_t>(5, 0));
    // equal works keep the order of the index
    CHECK(rl::deal_by_work(std::vector<double>(4, 1.0), 2) == std::vector<std::size_t>{0, 1, 0, 1});
}

TEST_CASE("deal_by_work: within 4/3 of the best dealing, and every rank holds an environment") {
    std::mt19937_64 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
        const std::size_t ranks = 2 + rng() % 2, n = ranks + rng() % (ranks == 2 ? 9 : 5);
        std::vector<double> work(n);
        for (auto& w : work) w = static_cast<double>(1 + rng() % 100);
        CAPTURE(trial);
        const auto owner = rl::deal_by_work(work, ranks);
        REQUIRE(owner.size() == n);
        std::vector<std::size_t> held(ranks, 0);
        for (std::size_t r : owner) {
            REQUIRE(r < ranks);
            ++held[r];
        }
        CHECK(*std::min_element(held.begin(), held.end()) >= 1);
        CHECK(busiest(work, owner, ranks) <= 4.0 / 3.0 * best_dealing(work, ranks) + 1e-9);
        CHECK(rl::deal_by_work(work, ranks) == owner);  // the same on every rank
    }
}

TEST_CASE("deal_by_work: bad input is refused with what was expected") {
    const std::vector<double> work{1, 2};
    CHECK_THROWS_WITH_AS(rl::deal_by_work(work, 0), doctest::Contains("at least 1"), error);
    CHECK_THROWS_WITH_AS(rl::deal_by_work(work, 3), doctest::Contains("at least one per rank"), error);
    const std::vector<double> negative{1, -2}, nan{1, std::nan("")};
    CHECK_THROWS_WITH_AS(rl::deal_by_work(negative, 2), doctest::Contains("environment 1's work"), error);
    CHECK_THROWS_WITH_AS(rl::deal_by_work(nan, 2), doctest::Contains("a finite number >= 0"), error);
    CHECK_THROWS_WITH_AS(rl::deal_by_index(2, 0), doctest::Contains("at least 1"), error);
}
