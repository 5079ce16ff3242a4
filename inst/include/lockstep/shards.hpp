// Shards of a planned program's observation rows, one per GPU (DESIGN.md,
// "Devices and communication").
//
// A log density is the sum of its global terms (priors and the like,
// computed from parameters alone, and the parameters' log |Jacobian|) and of
// its observation extents' terms, each a sum over rows. Shard s of S is a
// copy of the program whose every extent holds only its block s of rows,
// [R s / S, R (s + 1) / S), and which, on shards other than 0, has no global
// terms and is run without the parameters' log |Jacobian| (shard_options()).
// The shards' log densities and gradients then add up to the whole program's,
// up to the reassociation of sums. Every shard computes the global values
// (parameters, their transforms, hyperparameters) itself: they are small next
// to the rows, and computing them is cheaper than sending them.
//
// What stays whole: a node the planner did not prove row-aligned is global
// (so sharding never changes a result), and its rows, however many, are
// computed on shard 0 only. An extent whose block s is empty (fewer rows than
// shards) is not an extent of shard s: its terms are left out there, and its
// nodes stay whole and dead in the global stage. Terms left out stay in the
// program as dead density nodes, which executors skip; the shard is for
// running, not for planning again (validate() would refuse it).
//
// The same cut, without slicing (the rows are already the rank's own), is
// what a process of an MPI run other than rank 0 needs when its executor
// cannot sum across processes itself (the GPU's): rank_program() and
// WorldSumTarget.
#ifndef LOCKSTEP_SHARDS_HPP
#define LOCKSTEP_SHARDS_HPP

#include <memory>
#include <utility>
#include <vector>

#include "communicator.hpp"
#include "executor.hpp"
#include "ir.hpp"
#include "sampler/chain_vectors.hpp"

namespace lockstep {

// The first row of block `shard` of `rows` rows split into `shards` blocks
// (the last block ends at shard_first_row(rows, shards, shards) = rows).
long shard_first_row(long rows, int shard, int shards);

// Shard `shard` of `shards` of planned `p` (0 <= shard < shards): a planned
// copy holding block `shard` of every extent's rows; on shards other than 0,
// without the global terms. Throws std::invalid_argument for a bad shard.
Program shard_program(const Program& p, int shard, int shards);

// Planned `p` with each extent e cut to its rows [rows[e].first,
// rows[e].second), every term kept; an extent left without rows loses its
// terms and its place, as in shard_program(). Throws std::invalid_argument
// for ranges that are not within the extents.
Program rows_program(const Program& p, const std::vector<std::pair<long, long>>& rows);

// Planned `p` without its global terms (those of no observation extent), and
// with the nodes only they read marked dead.
Program without_global_terms(const Program& p);

// The program rank `rank` of an MPI run evaluates, when every rank holds its
// own rows of `p` and an executor that knows nothing of the other ranks runs
// it: `p` on rank 0, without_global_terms(p) elsewhere. Throws
// std::invalid_argument, as the CPU executor does across processes, when a
// likelihood is not row-aligned with its data (a term over data of many rows
// in the global stage), whose rows could then not be summed across ranks.
Program rank_program(const Program& p, int rank);

// Throws that std::invalid_argument for a program whose likelihoods cannot
// all be split by rows (the CPU executor's check across processes too).
void check_rows_split(const Program& p);

// The options a shard runs with: shards other than 0 leave out the
// parameters' log |Jacobian|, which shard 0 counts for all.
ExecOptions shard_options(ExecOptions options, int shard);

// The shards of a program each on an executor of the cpu or emulated backend,
// their log densities and gradients summed in shard order: how the cut into
// shards that the multi-GPU executor runs is tested without GPUs (on the
// emulated backend, the shards run the CUDA kernel bodies lane by lane).
class ShardedTarget : public Target {
 public:
  // `shards` executors in precision T over the shards of planned `p` (which
  // need not outlive this), each with shard_options(options, s).
  template <class T>
  static std::unique_ptr<ShardedTarget> make(const Program& p, long chains, const ExecOptions& options,
                                             int shards);

  long dim() const override { return dim_; }
  long chains() const override { return chains_; }
  void log_density(const double* state, double* lp, double* grad) override;
  // Each shard draws from its own rows (the part: its shard).
  void set_minibatch(const Minibatch& batch) override {
    for (size_t s = 0; s < targets_.size(); ++s)
      targets_[s]->set_minibatch(batch.of_part(static_cast<uint32_t>(s)));
  }
  int shards() const { return static_cast<int>(targets_.size()); }
  const Program& program(int shard) const { return *programs_[shard]; }

 private:
  ShardedTarget(long dim, long chains) : dim_(dim), chains_(chains) {}
  long dim_, chains_;
  std::vector<std::unique_ptr<Program>> programs_;  // each outlives its executor
  std::vector<std::unique_ptr<Target>> targets_;
  std::vector<double> lp_, grad_;  // a later shard's partials
};

// One rank of an MPI run over an executor that cannot sum across processes
// itself (the GPU's): `local` runs rank_program(p, rank) with
// shard_options(options, rank), and every call's log density and gradient
// are then summed over the ranks by `world` (host arrays; every rank must
// call, it is collective), so that every rank holds the whole model's.
class WorldSumTarget : public Target {
 public:
  WorldSumTarget(std::unique_ptr<Target> local, Communicator* world)
      : local_(std::move(local)), world_(world) {}
  long dim() const override { return local_->dim(); }
  long chains() const override { return local_->chains(); }
  // Each rank draws from its own rows.
  void set_minibatch(const Minibatch& batch) override {
    local_->set_minibatch(batch.of_part(static_cast<uint32_t>(world_->rank())));
  }
  void log_density(const double* state, double* lp, double* grad) override {
    local_->log_density(state, lp, grad);
    double* lps[] = {lp};
    world_->all_reduce_sum(lps, chains());
    if (grad) {
      double* grads[] = {grad};
      world_->all_reduce_sum(grads, chains() * dim());
    }
  }

 private:
  std::unique_ptr<Target> local_;
  Communicator* world_;
};

// A sampler's vectors on one rank of a run across processes whose sums may
// differ in their last bits from rank to rank (a GPU's: its per-chain sums add
// block totals with atomics, in whatever order the blocks finish): every sum
// the sampler decides from (dots, NUTS's subtree checks and leaf sums) is
// replaced by rank 0's, so that every rank takes the same decisions and so
// makes the same collective calls (ranks that disagreed would hang). The
// rest is elementwise, and the log density and gradient come from the target
// already summed the same on every rank.
class RankAgreedVectors final : public ForwardingChainVectors {
 public:
  RankAgreedVectors(std::unique_ptr<ChainVectors> inner, Communicator* world)
      : ForwardingChainVectors(std::move(inner)), world_(world) {}

 private:
  // rank 0's sums on every rank
  void combine_sums(double* out, long n) override {
    world_->broadcast_bytes(out, n * static_cast<long>(sizeof(double)));
  }
  Communicator* world_;
};

}  // namespace lockstep

#endif
