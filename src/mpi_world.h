// The process's MPI communicator for the executor (rcpp_mpi.cpp), or an
// exception when MPI was not started or not built.
#ifndef LOCKSTEP_SRC_MPI_WORLD_H
#define LOCKSTEP_SRC_MPI_WORLD_H

#include "lockstep/communicator.hpp"

lockstep::Communicator* mpi_world();

#endif
