// Which executor runs a model's log density: the backend's, with the
// fallbacks of a GPU rank of an MPI run, and a cache of them per (chains,
// options) for callers that evaluate the same model again and again (R's
// log density, tracing, opt()). The Rcpp glue converts and calls.
#ifndef LOCKSTEP_TARGETS_HPP
#define LOCKSTEP_TARGETS_HPP

#include <memory>
#include <vector>

#include "executor.hpp"

namespace lockstep {

// An executor of the planned `program` (which must outlive it) for `chains`
// chains: on the cpu and emulated backends Executor<double>, or
// Executor<float> (float32 values, double sums) when `single`; on the cuda
// backend a CUDA executor (one GPU, several, or with options.world a GPU rank
// of an MPI run: NCCL across the ranks where every rank can, else MPI on the
// host, all ranks deciding together). Throws std::invalid_argument for the
// cuda backend in a build without CUDA.
std::unique_ptr<Target> make_target(const Program& program, long chains, const ExecOptions& o,
                                    bool single);

// The targets of one program, made on first use, one per chain count and
// options (compared field by field: ExecOptions::fields()). At most
// max_kept are kept: executors for very many chains (tracing batches) are not
// worth keeping, so the cache empties when a new one would exceed it.
class TargetCache {
 public:
  static constexpr size_t max_kept = 8;

  // `program` must outlive the cache, and `rows`, when given, each get():
  // the store of the program's row data that its targets share
  // (ExecOptions::row_store).
  TargetCache(const Program& program, bool single, RowStore* rows = nullptr)
      : program_(program), single_(single), rows_(rows) {}

  Target& get(long chains, const ExecOptions& o);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    long chains;
    ExecOptions options;
    std::unique_ptr<Target> target;
  };
  const Program& program_;
  bool single_;
  RowStore* rows_;
  std::vector<Entry> entries_;
};

}  // namespace lockstep

#endif
