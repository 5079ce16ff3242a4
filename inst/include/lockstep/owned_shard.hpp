// One rank of a run whose ranks own their groups' local parameters (DESIGN.md,
// "Ownership"; issue 35): its target and its sampler's vectors.
//
// Every rank runs the slice of the program it owns (group_slice.hpp) and a
// sampler over the slice's state: the global coordinates, replicated, then
// its local rows. The ranks' sums are then made whole by all-reduces of per-
// chain scalars and of the globals' gradient alone:
// - OwnedShardTarget sums the log density and the global coordinates'
//   gradient across ranks (the local coordinates' gradient is complete on
//   their owner), so every rank's replicated global coordinates see the same
//   gradient and move alike;
// - OwnedShardVectors sums the sampler's per-chain sums (kinetic energy,
//   NUTS's U-turn and merge checks, dot products) across ranks, counting the
//   replicated global coordinates on rank 0 only, and draws each coordinate's
//   momentum by its index in the whole state.
// So every rank takes the same decisions from the same numbers (and makes
// the same collective calls), and the draws equal one process's up to the
// order of sums. What crosses ranks per gradient of C chains is C x (1 +
// globals) values, and a few values per chain per sampler reduction: nothing
// that grows with the rows or the groups.
#ifndef LOCKSTEP_OWNED_SHARD_HPP
#define LOCKSTEP_OWNED_SHARD_HPP

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "communicator.hpp"
#include "executor.hpp"
#include "group_slice.hpp"
#include "sampler/chain_vectors.hpp"

namespace lockstep {

class OwnedShardTarget final : public Target {
 public:
  // `local` runs this rank's slice (its dim: the slice's n_free); `world`
  // reaches the other ranks (collective: every rank calls log_density
  // together). Both must outlive this.
  OwnedShardTarget(std::unique_ptr<Target> local, const GroupSlice& slice, long full_dim,
                   Communicator* world);
  long dim() const override { return local_->dim(); }
  long chains() const override { return local_->chains(); }
  long full_dim() const override { return full_dim_; }
  void log_density(const double* state, double* lp, double* grad) override;
  ThreadPool* pool() override { return local_->pool(); }
  // The local target's vectors, made whole across ranks (OwnedShardVectors).
  std::unique_ptr<ChainVectors> vectors() override;
  long n_global() const { return n_global_; }
  const std::vector<long>* full_index() const override { return &full_index_; }
  long counted_from() const override { return world_->rank() == 0 ? 0 : n_global_; }
  void max_over_parts(double* values, long n) override;
  // Each rank draws from its own rows (the part: its rank).
  void set_minibatch(const Minibatch& batch) override {
    local_->set_minibatch(batch.of_part(static_cast<uint32_t>(world_->rank())));
  }
  void sum_over_parts(double* values, long n) override {
    double* bufs[] = {values};
    world_->all_reduce_sum(bufs, n);
  }
  // Each chain's log density lp[chains] and, unless null, the global
  // coordinates' gradient globals[chains, n_global] (host memory), summed
  // over the ranks in place: what crosses ranks per gradient.
  void sum_over_ranks(double* lp, double* globals);

 private:
  std::unique_ptr<Target> local_;
  long n_global_, full_dim_;
  std::vector<long> full_index_;
  Communicator* world_;
  std::vector<double> buf_;  // [chains, 1 + n_global]: what one gradient sends
};

class OwnedShardVectors final : public ForwardingChainVectors {
 public:
  // `inner`'s log density and gradient (in its memory: the host's or a
  // GPU's), with `target`'s sums over the ranks.
  OwnedShardVectors(std::unique_ptr<ChainVectors> inner, OwnedShardTarget& target, long n_global,
                    std::vector<long> full_index, long full_dim, Communicator* world);
  void log_density(const double* x, double* lp, double* g) override;

 private:
  // each rank's part of the sums, summed over the ranks
  void combine_sums(double* out, long n) override {
    double* bufs[] = {out};
    world_->all_reduce_sum(bufs, n);
  }
  OwnedShardTarget& target_;
  Communicator* world_;
  std::vector<double> globals_;  // [chains, n_global]
};

// make() on this rank, where every rank makes its own (collective): when one
// rank fails (its GPU cannot be set up), every rank throws, rather than the
// others going on to wait in a collective call it never makes: the failure's
// own message where it failed, elsewhere that another rank failed to set up
// `what`.
template <class Make>
auto on_every_rank(Communicator& world, const Make& make, const char* what = "its model")
    -> decltype(make()) {
  decltype(make()) made;
  std::string failure;
  try {
    made = make();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  double ok = made ? 1 : 0;
  double* oks[] = {&ok};
  world.all_reduce_sum(oks, 1);
  if (ok != world.ranks())
    throw std::runtime_error(failure.empty()
                                 ? std::string("lockstep: another MPI rank failed to set up ") + what
                                 : failure);
  return made;
}

// This rank's target over `slice` of a model of `full_dim` free parameters:
// an executor of the slice's program with `o` but on this process alone
// (make_target(); `single`: float32), its sums over o.world's ranks
// (collective: made on every rank, or an error on every rank).
std::unique_ptr<OwnedShardTarget> make_owned_shard_target(const GroupSlice& slice, long chains,
                                                          const ExecOptions& o, bool single,
                                                          long full_dim);

// Whether and how this rank owns groups in a run across `world` (collective:
// every rank calls it, and all get the same answer): the slice of planned
// `p` (this rank's rows) by the grouping with the most local coordinates,
// when every rank finds that grouping sliceable and the ranks' rows hold
// disjoint ranges of its groups in rank order (as mpi_rows(n, groups = )
// gives them); rank r then owns the groups from its first one to the next
// rank's first. nullptr otherwise: the run keeps every parameter on every
// rank and sums whole gradients, as before sharding (never a different
// result). Throws std::invalid_argument on every rank when the ranks' models
// have different numbers of free parameters, and when the ranks could own
// their groups but their rows share groups (the user's own row split, not
// mpi_rows(n, groups = )'s): a run that silently held every parameter on
// every rank would cost each gradient the whole model's traffic.
std::unique_ptr<GroupSlice> plan_owned_shards(const Program& p, Communicator& world);

// The ranks' slice states ([chains, slice dim] each, slice.full_index their
// coordinates) made into the whole [chains, full_dim] state, for what R reads
// whole: kept draws of local variables (on rank 0 alone: each rank sends its
// own coordinates once, O(full_dim / ranks) a rank, and only rank 0 holds
// the whole), and the last state and metric from which a run continues (on
// every rank). The global coordinates are rank 0's, the same everywhere.
// Made and used collectively: every rank makes the same calls.
class WholeState {
 public:
  // (collective: rank 0 learns every rank's coordinates once, here)
  WholeState(const GroupSlice& slice, long full_dim, Communicator& world);
  // `whole` is written on rank 0 only; elsewhere it may be null.
  void to_root(const double* x, long chains, double* whole);
  void to_all(const double* x, long chains, double* whole);

 private:
  const GroupSlice& slice_;
  long full_dim_;
  Communicator& world_;
  long from_;                     // the first slice coordinate this rank sends (after the globals but on rank 0)
  std::vector<long> counts_;      // the coordinates each rank sends
  std::vector<long> index_;       // rank 0: those coordinates' whole-state indices, rank after rank
  std::vector<double> send_, received_;
};

}  // namespace lockstep

#endif
