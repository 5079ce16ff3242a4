// One rank of a run whose ranks own their groups (owned_shard.hpp).
#include "lockstep/owned_shard.hpp"

#include <stdexcept>

namespace lockstep {

OwnedShardTarget::OwnedShardTarget(std::unique_ptr<Target> local, const GroupSlice& slice,
                                   long full_dim, Communicator* world)
    : local_(std::move(local)), n_global_(slice.n_global), full_dim_(full_dim),
      full_index_(slice.full_index), world_(world) {
  if (local_->dim() != static_cast<long>(full_index_.size()))
    throw std::invalid_argument("OwnedShardTarget: the target is not the slice's");
  if (!world_) throw std::invalid_argument("OwnedShardTarget: no communicator");
  buf_.resize(local_->chains() * (1 + n_global_));
}

void OwnedShardTarget::log_density(const double* state, double* lp, double* grad) {
  local_->log_density(state, lp, grad);
  const long C = chains(), D = dim(), G = grad ? n_global_ : 0;
  // one all-reduce per gradient: each chain's log density, then its global
  // coordinates' gradient
  for (long c = 0; c < C; ++c) {
    buf_[c] = lp[c];
    for (long j = 0; j < G; ++j) buf_[C + c * G + j] = grad[c * D + j];
  }
  double* bufs[] = {buf_.data()};
  world_->all_reduce_sum(bufs, C * (1 + G));
  for (long c = 0; c < C; ++c) {
    lp[c] = buf_[c];
    for (long j = 0; j < G; ++j) grad[c * D + j] = buf_[C + c * G + j];
  }
}

std::unique_ptr<ChainVectors> OwnedShardTarget::vectors() {
  return std::make_unique<OwnedShardVectors>(local_->vectors(), *this, n_global_, full_index_,
                                             full_dim_, world_);
}

OwnedShardVectors::OwnedShardVectors(std::unique_ptr<ChainVectors> inner, Target& target,
                                     long n_global, std::vector<long> full_index, long full_dim,
                                     Communicator* world)
    : ChainVectors(inner->chains(), inner->dim()), inner_(std::move(inner)), target_(target),
      world_(world) {
  // the replicated global coordinates count on rank 0 alone
  inner_->count_from(world_->rank() == 0 ? 0 : n_global);
  inner_->map_coordinates(std::move(full_index), full_dim);
}

}  // namespace lockstep
