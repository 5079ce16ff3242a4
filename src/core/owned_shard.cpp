// One rank of a run whose ranks own their groups (owned_shard.hpp).
#include "lockstep/owned_shard.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lockstep/ownership.hpp"
#include "lockstep/targets.hpp"

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
  // what sum_over_ranks() sends, packed straight from the gradient's rows
  const long C = chains(), D = dim(), G = grad ? n_global_ : 0;
  std::copy(lp, lp + C, buf_.begin());
  for (long c = 0; c < C; ++c) std::copy(grad + c * D, grad + c * D + G, buf_.begin() + C + c * G);
  double* bufs[] = {buf_.data()};
  world_->all_reduce_sum(bufs, C * (1 + G));
  std::copy(buf_.begin(), buf_.begin() + C, lp);
  for (long c = 0; c < C; ++c)
    std::copy(buf_.begin() + C + c * G, buf_.begin() + C + (c + 1) * G, grad + c * D);
}

void OwnedShardTarget::max_over_parts(double* values, long n) {
  // each rank's values in its own slots, summed: every rank reads them all
  const int P = world_->ranks();
  std::vector<double> all(static_cast<size_t>(n) * P, 0.0);
  std::copy(values, values + n, all.begin() + static_cast<long>(world_->rank()) * n);
  double* bufs[] = {all.data()};
  world_->all_reduce_sum(bufs, n * P);
  for (long i = 0; i < n; ++i)
    for (int r = 0; r < P; ++r) values[i] = std::max(values[i], all[static_cast<long>(r) * n + i]);
}

void OwnedShardTarget::sum_over_ranks(double* lp, double* globals) {
  const long C = chains(), G = globals ? n_global_ : 0;
  // one all-reduce per gradient: each chain's log density, then its global
  // coordinates' gradient
  std::copy(lp, lp + C, buf_.begin());
  std::copy(globals, globals + C * G, buf_.begin() + C);
  double* bufs[] = {buf_.data()};
  world_->all_reduce_sum(bufs, C * (1 + G));
  std::copy(buf_.begin(), buf_.begin() + C, lp);
  std::copy(buf_.begin() + C, buf_.begin() + C * (1 + G), globals);
}

void OwnedShardVectors::log_density(const double* x, double* lp, double* g) {
  // the slice's own log density and gradient, wherever the vectors are (the
  // GPU's), then the global coordinates' columns through the host
  ForwardingChainVectors::log_density(x, lp, g);
  const long G = g ? target_.n_global() : 0;
  globals_.resize(chains_ * G);
  if (G > 0) read_columns(globals_.data(), g, G);
  target_.sum_over_ranks(lp, g ? globals_.data() : nullptr);
  if (G > 0) write_columns(g, globals_.data(), G);
}

std::unique_ptr<ChainVectors> OwnedShardTarget::vectors() {
  return std::make_unique<OwnedShardVectors>(local_->vectors(), *this, n_global_, full_index_,
                                             full_dim_, world_);
}

OwnedShardVectors::OwnedShardVectors(std::unique_ptr<ChainVectors> inner, OwnedShardTarget& target,
                                     long n_global, std::vector<long> full_index, long full_dim,
                                     Communicator* world)
    : ForwardingChainVectors(std::move(inner)), target_(target), world_(world) {
  // the replicated global coordinates count on rank 0 alone
  count_from(world_->rank() == 0 ? 0 : n_global);
  map_coordinates(std::move(full_index), full_dim);
}

std::unique_ptr<OwnedShardTarget> make_owned_shard_target(const GroupSlice& slice, long chains,
                                                          const ExecOptions& o, bool single,
                                                          long full_dim) {
  ExecOptions local = o;
  local.world = nullptr;
  return std::make_unique<OwnedShardTarget>(
      on_every_rank(*o.world, [&] { return make_target(slice.program, chains, local, single); }),
      slice, full_dim, o.world);
}

std::unique_ptr<GroupSlice> plan_owned_shards(const Program& p, Communicator& world) {
  const int P = world.ranks(), me = world.rank();
  // this rank's candidate: the sliceable grouping with the most local coordinates
  const std::vector<Grouping> found = find_groupings(p);
  long best_size = 0;
  const Grouping* best = largest_sliceable_grouping(p, found, &best_size);
  // every rank's view, side by side: [P, 6] = ok, groups, first and last
  // group of its rows (-1: none), its local coordinates, its free parameters
  constexpr int fields = 6;
  std::vector<double> view(static_cast<size_t>(P) * fields, 0.0);
  double* mine = view.data() + static_cast<long>(me) * fields;
  mine[0] = best ? 1 : 0;
  mine[1] = best ? static_cast<double>(best->groups) : 0;
  mine[2] = mine[3] = -1;
  if (best && !best->group_of_row.empty()) {
    const auto range = std::minmax_element(best->group_of_row.begin(), best->group_of_row.end());
    mine[2] = static_cast<double>(*range.first);
    mine[3] = static_cast<double>(*range.second);
  }
  mine[4] = static_cast<double>(best_size);
  mine[5] = static_cast<double>(p.n_free);
  double* bufs[] = {view.data()};
  world.all_reduce_sum(bufs, static_cast<long>(view.size()));
  auto at = [&](int r, int f) { return view[static_cast<size_t>(r) * fields + f]; };
  for (int r = 0; r < P; ++r)
    if (at(r, 5) != at(0, 5))
      throw std::invalid_argument(
          "lockstep: the MPI ranks' models differ (rank 0's has " +
          std::to_string(static_cast<long>(at(0, 5))) + " free parameters, rank " +
          std::to_string(r) + "'s " + std::to_string(static_cast<long>(at(r, 5))) +
          "): every rank must build the same model from its own rows");
  for (int r = 0; r < P; ++r)
    if (at(r, 0) != 1 || at(r, 1) != at(0, 1) || at(r, 4) != at(0, 4)) return nullptr;
  // ranges in rank order, disjoint: rank r owns [first_r, first of the next
  // rank with rows), rank 0 from group 0, the last to the end
  const long G = static_cast<long>(at(0, 1));
  std::vector<long> end(P, G);
  long next = G, last_hi = -1;
  for (int r = P - 1; r >= 0; --r) {
    end[r] = next;
    if (at(r, 2) >= 0) next = static_cast<long>(at(r, 2));
  }
  for (int r = 0; r < P; ++r) {
    if (at(r, 2) < 0) continue;
    if (static_cast<long>(at(r, 2)) <= last_hi)  // groups shared or out of order
      throw std::invalid_argument(
          "lockstep: the MPI ranks' rows share groups of the model's group-level parameters "
          "(rank " + std::to_string(r) + "'s rows hold groups of an earlier rank's, or come "
          "before them): split the rows with mpi_rows(n, groups = ) so that each rank holds "
          "whole groups, in rank order");
    last_hi = static_cast<long>(at(r, 3));
  }
  const long first = me == 0 ? 0 : end[me - 1];
  return std::make_unique<GroupSlice>(slice_groups(p, *best, first, end[me], me == 0));
}

WholeState::WholeState(const GroupSlice& slice, long full_dim, Communicator& world)
    : slice_(slice), full_dim_(full_dim), world_(world),
      from_(world.rank() == 0 ? 0 : slice.n_global) {
  const int P = world.ranks();
  const long mine = static_cast<long>(slice.full_index.size()) - from_;
  std::vector<double> counts(P, 0.0);
  counts[world.rank()] = static_cast<double>(mine);
  double* bufs[] = {counts.data()};
  world.all_reduce_sum(bufs, P);
  counts_.resize(P);
  long total = 0;
  for (int r = 0; r < P; ++r) {
    counts_[r] = static_cast<long>(counts[r]);
    total += counts_[r];
  }
  if (total != full_dim)
    throw std::logic_error("WholeState: the ranks' coordinates do not make the whole state");
  // (indices as doubles: exact below 2^53)
  std::vector<double> index(slice.full_index.begin() + from_, slice.full_index.end());
  std::vector<double> all(world.rank() == 0 ? total : 0);
  world.gather_to_root(index.data(), mine, all.data(), counts_.data());
  index_.assign(all.begin(), all.end());
}

void WholeState::to_root(const double* x, long chains, double* whole) {
  const int P = world_.ranks();
  const long D = static_cast<long>(slice_.full_index.size()), n = D - from_;
  send_.resize(chains * n);
  for (long c = 0; c < chains; ++c)
    std::copy(x + c * D + from_, x + (c + 1) * D, send_.begin() + c * n);
  std::vector<long> counts(counts_);
  for (long& k : counts) k *= chains;
  if (world_.rank() == 0) received_.resize(chains * full_dim_);
  world_.gather_to_root(send_.data(), chains * n, received_.data(), counts.data());
  if (world_.rank() != 0) return;
  // rank r's block: [chains, counts_[r]], its coordinates index_[at, at + counts_[r])
  long off = 0, at = 0;
  for (int r = 0; r < P; ++r) {
    const long k = counts_[r];
    for (long c = 0; c < chains; ++c)
      for (long j = 0; j < k; ++j) whole[c * full_dim_ + index_[at + j]] = received_[off + c * k + j];
    off += chains * k;
    at += k;
  }
}

void WholeState::to_all(const double* x, long chains, double* whole) {
  to_root(x, chains, whole);
  world_.broadcast_bytes(whole, chains * full_dim_ * static_cast<long>(sizeof(double)));
}

}  // namespace lockstep
