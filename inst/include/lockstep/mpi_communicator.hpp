// A Communicator over MPI, for CPU ranks in separate processes (DESIGN.md,
// "Devices and communication"; the project's issue 4). Header-only, and
// compiled only with LOCKSTEP_HAS_MPI defined (and <mpi.h> on the include
// path): without it this header is empty, so builds without MPI (the R
// package today) are unaffected.
//
// How it is used (SPMD, one rank per process):
//   - mpirun starts P processes; each calls MPI_Init and drives ONE rank of
//     MPI_COMM_WORLD (or of the communicator it is given), so ranks() = P and
//     all_reduce_sum reads and writes buffers[0] only: this process's buffer.
//   - Every process builds the same Program (same nodes, same parameters, the
//     same free state and chains), but each holds only its own rows of the
//     observation data: rank r takes a contiguous slice of every row-aligned
//     data node and gather index (its own rows), evaluates its partial log
//     density and gradient, and all_reduce_sum sums lp[chains] and
//     grad[chains, D] across ranks. Every rank then holds the full log density
//     and gradient and runs the sampler redundantly, in lockstep.
//   - Global terms (priors on parameters) must be counted once in total, not
//     once per rank: e.g. only rank 0 includes them (as tests/mpi does), or the
//     executor reduces only the observation stage's partials. Within a process
//     the in-process shards (ExecOptions::devices) and threads still apply;
//     the MPI sum comes after their in-process reduction.
//   - Every rank must call all_reduce_sum the same number of times with the
//     same n (it is collective); an exception on one rank leaves the others
//     waiting, so callers abort (MPI_Abort) rather than unwind past a
//     collective.
//
// Determinism. Two orders are offered:
//   - Order::allreduce (default): MPI_Allreduce(MPI_IN_PLACE, ..., MPI_SUM).
//     For a fixed number of ranks and a fixed n, OpenMPI's default (tuned)
//     algorithms pick the same algorithm and hence the same reduction order
//     from run to run, so results are reproducible; but that order is the
//     library's choice (it changes with the rank count, the message size, the
//     OpenMPI version and MCA settings), so results agree with a serial sum
//     only up to rounding, and the MPI standard only recommends (does not
//     require) that every rank receive bitwise the same result.
//   - Order::rank: MPI_Allgather of every rank's buffer, then a sum in rank
//     order on every rank, exactly as InProcessCommunicator sums (in T, rank
//     0 first). Bitwise identical on every rank and equal to an in-process run
//     with the same shards, whatever MPI's algorithms; costs P times the
//     memory and traffic (fine for lp[chains] and gradients of modest size).
// Floats: Order::allreduce sums float buffers in double (converted to a
// double scratch buffer, reduced as MPI_DOUBLE, rounded back once), for
// accuracy and so that the result does not depend on the float rounding of
// intermediate partial sums; Order::rank sums floats in float, as
// InProcessCommunicator does.
//
// Counts larger than MPI's int count are sent in chunks of at most max_count
// elements (INT_MAX by default; tests use a small one to exercise chunking).
#ifndef LOCKSTEP_MPI_COMMUNICATOR_HPP
#define LOCKSTEP_MPI_COMMUNICATOR_HPP

#ifdef LOCKSTEP_HAS_MPI

// Only MPI's C API is used: leave out the deprecated C++ bindings (and their
// warnings) unless mpi.h was included before with them.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "communicator.hpp"

namespace lockstep {

class MpiCommunicator : public Communicator {
 public:
  enum class Order { allreduce, rank };

  // MPI must be initialised (MPI_Init) before, and finalised after, the
  // communicator's use. `comm` is not duplicated or freed: it must outlive this.
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD, Order order = Order::allreduce,
                           long max_count = INT_MAX)
      : comm_(comm), order_(order), max_count_(max_count) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) throw std::logic_error("MpiCommunicator: MPI is not initialised");
    if (max_count_ < 1 || max_count_ > INT_MAX)
      throw std::invalid_argument("MpiCommunicator: max_count must be in [1, INT_MAX]");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  }

  int ranks() const override { return size_; }
  int rank() const override { return rank_; }
  Order order() const { return order_; }
  MPI_Comm comm() const { return comm_; }

 protected:
  // buffers[0]: this process's n values, replaced by their sum over ranks.
  void reduce_sum(double* const* buffers, long n) override {
    if (n <= 0) return;
    if (order_ == Order::rank) return rank_order_sum(buffers[0], n, MPI_DOUBLE);
    in_place_sum(buffers[0], n);
  }

  void broadcast(void* data, long bytes) override {
    char* p = static_cast<char*>(data);
    for (long i = 0; i < bytes; i += max_count_) {
      const int count = static_cast<int>(std::min(max_count_, bytes - i));
      check(MPI_Bcast(p + i, count, MPI_BYTE, 0, comm_), "MPI_Bcast");
    }
  }

  // In rounds of at most max_count values per rank (MPI's counts are ints).
  void gather(const double* mine, long n, double* all, const long* counts) override {
    long most = 0;
    std::vector<long> offset(static_cast<size_t>(size_) + 1, 0);
    for (int r = 0; r < size_; ++r) {
      most = std::max(most, counts[r]);
      offset[r + 1] = offset[r] + counts[r];
    }
    if (counts[rank_] != n) throw std::invalid_argument("MpiCommunicator: gather counts disagree");
    std::vector<int> sizes(size_), displs(size_);
    std::vector<double> received;
    for (long start = 0; start < most; start += max_count_) {
      long total = 0;
      for (int r = 0; r < size_; ++r) {
        sizes[r] = static_cast<int>(std::max(0L, std::min(max_count_, counts[r] - start)));
        total += sizes[r];
      }
      for (int r = 0; r < size_; ++r) displs[r] = r == 0 ? 0 : displs[r - 1] + sizes[r - 1];
      if (rank_ == 0) received.resize(static_cast<size_t>(std::max(total, 1L)));
      check(MPI_Gatherv(mine + std::min(start, n), sizes[rank_], MPI_DOUBLE, received.data(),
                        sizes.data(), displs.data(), MPI_DOUBLE, 0, comm_),
            "MPI_Gatherv");
      if (rank_ != 0) continue;
      for (int r = 0; r < size_; ++r)
        std::copy(received.begin() + displs[r], received.begin() + displs[r] + sizes[r],
                  all + offset[r] + start);
    }
  }

  void reduce_sum(float* const* buffers, long n) override {
    if (n <= 0) return;
    if (order_ == Order::rank) return rank_order_sum(buffers[0], n, MPI_FLOAT);
    // In double (see above), rounded to float once.
    std::vector<double> wide(buffers[0], buffers[0] + n);
    in_place_sum(wide.data(), n);
    for (long i = 0; i < n; ++i) buffers[0][i] = static_cast<float>(wide[i]);
  }

 private:
  static void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string("MpiCommunicator: ") + what + " failed: " +
                             std::string(msg, static_cast<size_t>(len)));
  }

  void in_place_sum(double* buf, long n) const {
    for (long i = 0; i < n; i += max_count_) {
      const int count = static_cast<int>(std::min(max_count_, n - i));
      check(MPI_Allreduce(MPI_IN_PLACE, buf + i, count, MPI_DOUBLE, MPI_SUM, comm_),
            "MPI_Allreduce");
    }
  }

  // Gathers every rank's chunk, then sums in rank order: the same operations
  // in the same order on every rank.
  template <class T> void rank_order_sum(T* buf, long n, MPI_Datatype type) {
    const long chunk = std::min(n, max_count_);
    std::vector<T> all(static_cast<size_t>(chunk) * static_cast<size_t>(size_));
    for (long i = 0; i < n; i += chunk) {
      const long m = std::min(chunk, n - i);
      const int count = static_cast<int>(m);
      check(MPI_Allgather(buf + i, count, type, all.data(), count, type, comm_), "MPI_Allgather");
      for (long k = 0; k < m; ++k) {
        T s = all[k];
        for (int r = 1; r < size_; ++r) s += all[static_cast<size_t>(r) * m + k];
        buf[i + k] = s;
      }
    }
  }

  MPI_Comm comm_;
  Order order_;
  long max_count_;
  int size_ = 1, rank_ = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_HAS_MPI

#endif
