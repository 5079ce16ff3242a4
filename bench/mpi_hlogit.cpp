// The seed model's gradient across MPI ranks, two ways (issue 35): every rank
// holding the whole state and summing whole gradients (the executor with a
// world communicator), and ranks owning their groups (owned_shard.hpp: each
// holds the globals and its groups' local parameters, and sums the log
// density and the globals' gradient alone). Each rank holds its own rows,
// whole groups of them, balanced by row count.
//
//   mpicxx -std=gnu++17 -O2 -fno-trapping-math -fvect-cost-model=dynamic -DLOCKSTEP_HAS_MPI \
//       -Iinst/include bench/mpi_hlogit.cpp src/core/*.cpp -o build/mpi_hlogit -lpthread
//   mpirun -np 1 build/mpi_hlogit --n 1e6 --chains 4 --reps 5
//   mpirun -np 2 build/mpi_hlogit --n 1e6 --chains 4 --reps 5
//   mpirun -np 2 build/mpi_hlogit --n 1e6 --chains 4 --reps 5 --ways owned
//   (as root add --allow-run-as-root; on 2 cores, --bind-to none is fine)
//
// Prints, from rank 0, per way: milliseconds per gradient of all chains (the
// slowest rank's minimum over reps, after a warm-up call), bytes this rank
// all-reduced per gradient, the rank's free coordinates, the resident memory
// of rank 0 after the whole program built here to slice from is dropped, and
// the first chain's log density (which must agree between the ways).
// `--ways owned` runs the owned groups alone: the rank then drops the whole
// state it drew its slice from and hands freed memory back to the system
// (malloc_trim) before measuring, so that its resident memory is what a rank
// owning its groups holds (a rank of an R run reads only its rows,
// mpi_rows(n, groups = ), and never builds the whole program).
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lockstep/executor.hpp"
#include "lockstep/group_slice.hpp"
#include "lockstep/mpi_communicator.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/ownership.hpp"
#include "lockstep/row_order.hpp"
#include "lockstep/shards.hpp"

#include "hlogit_program.hpp"

using namespace lockstep;

namespace {

long resident_kb() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      long kb = 0;
      f >> kb;
      return kb;
    }
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

// The slowest rank's best time of `reps` calls of `call`.
template <class F> double best_seconds(int reps, F&& call) {
  call();  // warm-up
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    call();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  double slowest = 0;
  MPI_Allreduce(&best, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double n = 1e6;
  long chains = 4;
  int reps = 5, threads = 1;
  std::string ways = "whole,owned";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") n = std::atof(argv[i + 1]);
    else if (a == "--chains") chains = std::atol(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--ways") ways = argv[i + 1];
  }
  const long N = static_cast<long>(n), G = std::max(1L, N / 10), K = 20;
  MpiCommunicator world(MPI_COMM_WORLD, MpiCommunicator::Order::rank);
  std::unique_ptr<Program> rows;
  std::unique_ptr<GroupSlice> slice;
  long full_dim = 0;
  {
    // the whole program, rows sorted by group, then this rank's whole groups
    const Program sorted = with_rows_ordered(hlogit_bench::hlogit(N, G, K, 20240601u));
    full_dim = sorted.n_free;
    const Grouping grouping = find_groupings(sorted).at(0);
    const std::vector<long> bounds = balanced_group_bounds(grouping.group_of_row, G, size);
    const std::vector<long>& g = grouping.group_of_row;
    const long first = std::lower_bound(g.begin(), g.end(), bounds[rank]) - g.begin();
    const long last = std::lower_bound(g.begin(), g.end(), bounds[rank + 1]) - g.begin();
    rows = std::make_unique<Program>(rows_program(sorted, {{first, last}}));
  }
  slice = plan_owned_shards(*rows, world);
  if (!slice) {
    std::fprintf(stderr, "rank %d: the seed model did not shard by groups\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  ExecOptions o;
  o.threads = threads;
  o.alias_parameters = true;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> z(0, 0.5);
  std::vector<double> state(chains * full_dim);
  for (double& v : state) v = z(rng);
  std::vector<double> lp(chains), grad(chains * full_dim);

  if (rank == 0)
    std::printf("%8s %5s %6s %-34s %12s %12s %10s %10s %22s\n", "N", "ranks", "chains", "way",
                "ms/gradient", "bytes/grad", "coords", "RSS MB", "log density (chain 1)");
  auto report = [&](const char* way, double seconds, long bytes, long coords) {
    if (rank == 0)
      std::printf("%8ld %5d %6ld %-34s %12.2f %12ld %10ld %10.0f %22.10f\n", N, size, chains, way,
                  1e3 * seconds, bytes, coords, resident_kb() / 1024.0, lp[0]);
    std::fflush(stdout);
  };
  if (ways.find("whole") != std::string::npos) {
    // every rank the whole state, whole gradients summed
    ExecOptions across = o;
    across.world = &world;
    Executor<double> ex(*rows, chains, across);
    const double s = best_seconds(reps, [&] { ex.log_density(state.data(), lp.data(), grad.data()); });
    world.reset_stats();
    ex.log_density(state.data(), lp.data(), grad.data());
    report("whole state, whole gradients", s, world.stats().bytes, full_dim);
  }
  if (ways.find("owned") != std::string::npos) {
    // owned groups: the globals and this rank's groups
    const long D = static_cast<long>(slice->full_index.size());
    std::vector<double> mine = slice->of_whole(state.data(), chains, full_dim), g(chains * D);
    OwnedShardTarget target(std::make_unique<Executor<double>>(slice->program, chains, o), *slice,
                            full_dim, &world);
    rows.reset();  // (the slice's program holds what the rank needs)
    if (ways.find("whole") == std::string::npos) {
      std::vector<double>().swap(state);  // (this bench's whole state and gradient)
      std::vector<double>().swap(grad);
      malloc_trim(0);
    }
    const double s = best_seconds(reps, [&] { target.log_density(mine.data(), lp.data(), g.data()); });
    world.reset_stats();
    target.log_density(mine.data(), lp.data(), g.data());
    report("owned groups, globals summed", s, world.stats().bytes, D);
  }
  MPI_Finalize();
  return 0;
}
