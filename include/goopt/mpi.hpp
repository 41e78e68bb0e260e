#pragma once
// goopt: optional-edge (needs MPI: link goopt::mpi, Debian's libopenmpi-dev)
/// @file
/// @brief goopt beyond one machine (link goopt::mpi): an MPI session with its fault rule, and PPO's
/// samples and rule generation's work shared among the ranks. Not part of <goopt/goopt.hpp>: no core header includes
/// <mpi.h>.

#include <goopt/mpi/generation_sharding.hpp>
#include <goopt/mpi/sample_sharding.hpp>
#include <goopt/mpi/session.hpp>
