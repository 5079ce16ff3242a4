// Sums partial results across shards (DESIGN.md, "Devices and communication").
// A shard computes a partial log density and partial adjoints over its rows;
// all_reduce_sum leaves every rank's buffer holding the sum over all ranks.
// In process (threads and virtual devices on one machine) the ranks' buffers
// are all visible; NCCL across GPUs and MPI across hosts implement the same
// interface over the ranks this process drives.
#ifndef LOCKSTEP_COMMUNICATOR_HPP
#define LOCKSTEP_COMMUNICATOR_HPP

#include <algorithm>
#include <stdexcept>

namespace lockstep {

// What a communicator has exchanged since it was made (or reset): collective
// calls, and the bytes of payload this rank contributed to them (an
// all-reduce of n values of T: n * sizeof(T), whatever the transport adds;
// a broadcast: its bytes). For tests and benchmarks that assert how much
// crosses shards per gradient.
struct CommunicatorStats {
  long calls = 0;
  long bytes = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int ranks() const = 0;
  // The first rank this process drives (an MPI process: its own rank).
  virtual int rank() const { return 0; }
  // buffers[r] is rank r's buffer of n values.
  void all_reduce_sum(double* const* buffers, long n) {
    record(n * static_cast<long>(sizeof(double)));
    reduce_sum(buffers, n);
  }
  void all_reduce_sum(float* const* buffers, long n) {
    record(n * static_cast<long>(sizeof(float)));
    reduce_sum(buffers, n);
  }
  // Rank 0's `bytes` bytes at `data` into every rank's (collective).
  void broadcast_bytes(void* data, long bytes) {
    record(bytes);
    broadcast(data, bytes);
  }
  // Every rank's `n` values at `mine` into rank 0's `all`, rank after rank
  // (collective; `all` is read only on rank 0, which must have room for
  // every rank's). counts[r] is rank r's n, the same array on every rank.
  // For what only rank 0 needs whole (draws of the locals that ranks own):
  // each rank sends its own part once, where an all-reduce would send the
  // whole to every rank.
  void gather_to_root(const double* mine, long n, double* all, const long* counts) {
    record(n * static_cast<long>(sizeof(double)));
    gather(mine, n, all, counts);
  }
  // A collective call another transport made on these ranks' behalf (NCCL
  // between the GPUs of MPI ranks), `bytes` this rank's payload: counted as
  // this communicator's own.
  void count_call(long bytes) { record(bytes); }
  const CommunicatorStats& stats() const { return stats_; }
  void reset_stats() { stats_ = CommunicatorStats(); }

 protected:
  virtual void reduce_sum(double* const* buffers, long n) = 0;
  virtual void reduce_sum(float* const* buffers, long n) = 0;
  // Ranks in one process share rank 0's buffer: nothing to do.
  virtual void broadcast(void* data, long bytes) {
    (void)data;
    (void)bytes;
  }
  // One rank in this process: its values are all there are. (Shards in one
  // process share their memory and are never gathered.)
  virtual void gather(const double* mine, long n, double* all, const long* counts) {
    (void)counts;
    if (ranks() != 1) throw std::logic_error("gather_to_root: this communicator's ranks share a process");
    std::copy(mine, mine + n, all);
  }

 private:
  void record(long bytes) {
    ++stats_.calls;
    stats_.bytes += bytes;
  }
  CommunicatorStats stats_;
};

// Ranks are shards in this process: a plain sum, in rank order (so results do
// not depend on thread timing).
class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(int ranks) : ranks_(ranks) {}
  int ranks() const override { return ranks_; }

 protected:
  void reduce_sum(double* const* buffers, long n) override { sum(buffers, n); }
  void reduce_sum(float* const* buffers, long n) override { sum(buffers, n); }

 private:
  template <class T> void sum(T* const* buffers, long n) {
    for (int r = 1; r < ranks_; ++r)
      for (long i = 0; i < n; ++i) buffers[0][i] += buffers[r][i];
    for (int r = 1; r < ranks_; ++r)
      for (long i = 0; i < n; ++i) buffers[r][i] = buffers[0][i];
  }
  int ranks_;
};

}  // namespace lockstep

#endif
