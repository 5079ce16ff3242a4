// The R side of running across processes with MPI (issue 4): lockstep is an
// SPMD program under `mpirun -np P Rscript fit.R`. Each process holds its own
// rows of the data and drives one rank; the executor sums the observation
// stage's partials across ranks (ExecOptions::world), and every rank runs the
// sampler redundantly on the same totals, in lockstep. The communicator sums
// in rank order, so every rank gets bitwise the same log density and gradient
// and the ranks' chains never drift apart.
//
// Without MPI at build time (configure found no mpicxx) these functions say
// so; mpi_world() throws.
#include <Rcpp.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_world.h"

#ifdef LOCKSTEP_HAS_MPI
#include "lockstep/mpi_communicator.hpp"
#endif

using namespace Rcpp;

namespace {
#ifdef LOCKSTEP_HAS_MPI
std::unique_ptr<lockstep::MpiCommunicator> world;
bool initialised_here = false;

bool mpi_initialised() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}
bool mpi_finalised() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}
#endif
}  // namespace

lockstep::Communicator* mpi_world() {
#ifdef LOCKSTEP_HAS_MPI
  if (!world)
    throw std::runtime_error("MPI is not initialised: use cpu_only(mpi = TRUE), which starts it");
  return world.get();
#else
  throw std::runtime_error("this build of lockstep has no MPI (configure found no mpicxx)");
#endif
}

// [[Rcpp::export]]
bool ls_mpi_available() {
#ifdef LOCKSTEP_HAS_MPI
  return true;
#else
  return false;
#endif
}

// Starts MPI (once) and returns this process's rank and the number of ranks.
// [[Rcpp::export]]
List ls_mpi_init() {
#ifdef LOCKSTEP_HAS_MPI
  if (!world) {
    if (mpi_finalised()) stop("MPI was already finalised in this process");
    if (!mpi_initialised()) {
      int provided = 0;
      // Only the thread that calls the engine talks to MPI.
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      initialised_here = true;
    }
    world = std::make_unique<lockstep::MpiCommunicator>(MPI_COMM_WORLD,
                                                       lockstep::MpiCommunicator::Order::rank);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return List::create(_["rank"] = rank, _["size"] = size);
#else
  stop("this build of lockstep has no MPI: install OpenMPI (libopenmpi-dev) and reinstall");
#endif
}

// [[Rcpp::export]]
void ls_mpi_finalize() {
#ifdef LOCKSTEP_HAS_MPI
  world.reset();
  if (initialised_here && mpi_initialised() && !mpi_finalised()) MPI_Finalize();
  initialised_here = false;
#endif
}

// Ends every rank of the job at once: an error on one rank (R's, or a C++
// exception that reached R) would otherwise leave the others waiting in
// their next collective call until the job's time limit (issue 51). Prints
// which rank failed and why to this rank's stderr (mpirun passes it on with
// the others' output), then MPI_Abort(), which ends every rank with a
// non-zero status. Without MPI running, only the message. R's
// options(error =) calls it (mpi_abort_on_error(), R/mpi.R).
// [[Rcpp::export]]
void ls_mpi_abort(std::string message) {
#ifdef LOCKSTEP_HAS_MPI
  const bool running = mpi_initialised() && !mpi_finalised();
  int rank = 0, size = 1;
  if (running) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  std::fprintf(stderr, "lockstep: MPI rank %d of %d failed, ending every rank: %s\n", rank, size,
               message.c_str());
  std::fflush(stderr);
  if (running) MPI_Abort(MPI_COMM_WORLD, 1);
#else
  std::fprintf(stderr, "lockstep: %s\n", message.c_str());
#endif
}

// What this process's communicator has exchanged since MPI started (or the
// last reset): collective calls and bytes of payload
// (lockstep::CommunicatorStats); reset, after reading, with `reset`.
// [[Rcpp::export]]
List ls_mpi_stats(bool reset) {
#ifdef LOCKSTEP_HAS_MPI
  lockstep::Communicator* comm = mpi_world();
  const lockstep::CommunicatorStats s = comm->stats();
  if (reset) comm->reset_stats();
  return List::create(_["calls"] = static_cast<double>(s.calls),
                      _["bytes"] = static_cast<double>(s.bytes));
#else
  (void)reset;
  stop("this build of lockstep has no MPI: install OpenMPI (libopenmpi-dev) and reinstall");
#endif
}

// Rank 0's values of x, on every rank (x must have the same length on all).
// [[Rcpp::export]]
NumericVector ls_mpi_broadcast(NumericVector x) {
#ifdef LOCKSTEP_HAS_MPI
  mpi_world();
  NumericVector out = clone(x);
  MPI_Bcast(out.begin(), static_cast<int>(out.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return out;
#else
  return x;
#endif
}

// Whether x is bitwise the same on every rank (collective).
// [[Rcpp::export]]
bool ls_mpi_same(NumericVector x) {
#ifdef LOCKSTEP_HAS_MPI
  mpi_world();
  NumericVector first = ls_mpi_broadcast(x);
  int same = std::equal(x.begin(), x.end(), first.begin()) ? 1 : 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
#else
  return true;
#endif
}

// The smallest of x over the ranks (collective): the newest checkpoint
// every rank has written (R/checkpoint.R).
// [[Rcpp::export]]
double ls_mpi_min(double x) {
#ifdef LOCKSTEP_HAS_MPI
  mpi_world();
  double out = x;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  return out;
#else
  return x;
#endif
}
