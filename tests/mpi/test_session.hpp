#pragma once
// The MPI session of goopt_mpi_tests (made by mpi_main.cpp before any test runs).
#include <goopt/mpi/session.hpp>

namespace goopt::mpi_test {
/// The run's session (MPI_COMM_WORLD); never null while a test runs.
mpi::session& world();
}  // namespace goopt::mpi_test
