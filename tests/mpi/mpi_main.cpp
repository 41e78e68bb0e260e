// The doctest main of goopt_mpi_tests, which runs under mpirun: MPI is initialized before the first
// test and finalized after the last, and the run fails on every rank when a test failed on any.
#define DOCTEST_CONFIG_IMPLEMENT
#include "test_session.hpp"

#include <doctest/doctest.h>

namespace {
goopt::mpi::session* the_session = nullptr;
}

goopt::mpi::session& goopt::mpi_test::world() { return *the_session; }

int main(int argc, char** argv) {
    goopt::mpi::session s(argc, argv);
    the_session = &s;
    doctest::Context context(argc, argv);
    const int status = context.run();
    if (context.shouldExit()) return status;  // --help, --list-test-cases: no test ran
    return s.all(status == 0) ? 0 : 1;
}
