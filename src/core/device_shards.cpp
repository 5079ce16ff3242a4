// Devices of one process that own their groups (device_shards.hpp).
#include "lockstep/device_shards.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "lockstep/ownership.hpp"
#include "lockstep/row_order.hpp"
#include "lockstep/shards.hpp"
#include "lockstep/targets.hpp"

namespace lockstep {

namespace {

// plan_device_shards() of `p` by `best`, one of its groupings, whose rows
// are sorted by group.
std::vector<GroupSlice> slices_of_sorted(const Program& p, const Grouping& best, int shards) {
  const std::vector<long>& group = best.group_of_row;
  const std::vector<long> bounds = balanced_group_bounds(group, best.groups, shards);
  std::vector<GroupSlice> slices;
  for (int s = 0; s < shards; ++s) {
    std::vector<std::pair<long, long>> rows;
    for (int e = 0; e < static_cast<int>(p.extents.size()); ++e) {
      if (e == best.extent) {
        rows.emplace_back(std::lower_bound(group.begin(), group.end(), bounds[s]) - group.begin(),
                          std::lower_bound(group.begin(), group.end(), bounds[s + 1]) - group.begin());
        if (rows.back().first == rows.back().second) return {};  // a shard without groups' rows
      } else {
        rows.emplace_back(shard_first_row(p.extents[e], s, shards),
                          shard_first_row(p.extents[e], s + 1, shards));
      }
    }
    const Program mine = rows_program(p, rows);
    // the same grouping in the shard's rows (its extent may be numbered anew)
    const std::vector<Grouping> here = find_groupings(mine);
    const auto same = std::find_if(here.begin(), here.end(),
                                   [&](const Grouping& g) { return g.locals == best.locals; });
    if (same == here.end()) return {};
    slices.push_back(slice_groups(mine, *same, bounds[s], bounds[s + 1], s == 0));
  }
  return slices;
}

}  // namespace

std::vector<GroupSlice> plan_device_shards(const Program& p, int shards) {
  if (shards < 2) return {};
  const std::vector<Grouping> found = find_groupings(p);
  const Grouping* best = largest_sliceable_grouping(p, found);
  if (!best) return {};
  const auto sorted = [](const Grouping& g) {
    return std::is_sorted(g.group_of_row.begin(), g.group_of_row.end());
  };
  if (sorted(*best)) return slices_of_sorted(p, *best, shards);
  // Rows in the data's order: in the order the executors run them, sorted by
  // the index of the largest gather (row_order.hpp), the grouping's own when
  // its locals are the largest values gathered (a shard's rows must be whole
  // groups, a contiguous range of them).
  const Program ordered = with_rows_ordered(p);
  const std::vector<Grouping> again = find_groupings(ordered);
  const auto same = std::find_if(again.begin(), again.end(),
                                 [&](const Grouping& g) { return g.locals == best->locals; });
  if (same == again.end() || !sorted(*same)) return {};
  return slices_of_sorted(ordered, *same, shards);
}

bool runs_on_device_shards(const ExecOptions& o) {
  if (o.world) return false;
  if (o.backend == Backend::cuda) return o.gpus.size() >= 2;
  return o.backend == Backend::emulated && o.devices >= 2;
}

std::unique_ptr<DeviceShardsTarget> make_device_shards(const Program& p, long chains,
                                                       const ExecOptions& o, bool single) {
  if (!runs_on_device_shards(o)) return nullptr;
  const bool gpus = o.backend == Backend::cuda;
  const int shards = gpus ? static_cast<int>(o.gpus.size()) : o.devices;
  std::vector<GroupSlice> slices = plan_device_shards(p, shards);
  if (slices.empty()) return nullptr;
  std::vector<std::unique_ptr<Target>> targets;
  for (int s = 0; s < shards; ++s) {
    ExecOptions mine = o;
    if (gpus) {
      mine.gpu = o.gpus[s];
      mine.gpus.clear();
    } else {
      mine.devices = 1;
    }
    // (an executor keeps a pointer to its program, which moving the vector
    // of slices leaves where it is)
    targets.push_back(make_target(slices[s].program, chains, mine, single));
  }
  return std::make_unique<DeviceShardsTarget>(std::move(slices), std::move(targets), p.n_free);
}

DeviceShardsTarget::DeviceShardsTarget(std::vector<GroupSlice> slices,
                                       std::vector<std::unique_ptr<Target>> targets, long full_dim)
    : slices_(std::move(slices)), targets_(std::move(targets)), full_dim_(full_dim),
      chains_(targets_.empty() ? 0 : targets_[0]->chains()) {
  if (targets_.size() < 2 || targets_.size() != slices_.size())
    throw std::invalid_argument("DeviceShardsTarget: one target per slice, two or more");
  for (size_t s = 0; s < targets_.size(); ++s)
    if (targets_[s]->chains() != chains_ ||
        targets_[s]->dim() != static_cast<long>(slices_[s].full_index.size()) ||
        slices_[s].n_global != slices_[0].n_global)
      throw std::invalid_argument("DeviceShardsTarget: shard " + std::to_string(s) +
                                  "'s target is not its slice's");
}

void DeviceShardsTarget::count_gradient(bool with_gradient) {
  ++exchanged_.calls;
  // every shard but the first sends its part; the sum comes back to each
  exchanged_.bytes += (shards() - 1) * chains_ * (1 + (with_gradient ? n_global() : 0)) *
                      static_cast<long>(sizeof(double));
}

void DeviceShardsTarget::log_density(const double* state, double* lp, double* grad) {
  const long C = chains_, G = n_global();
  std::vector<double> lp_s(C);
  std::fill(lp, lp + C, 0.0);
  for (int s = 0; s < shards(); ++s) {
    const GroupSlice& slice = slices_[s];
    const long D = static_cast<long>(slice.full_index.size());
    const std::vector<double> x = slice.of_whole(state, C, full_dim_);
    std::vector<double> g(grad ? C * D : 0);
    targets_[s]->log_density(x.data(), lp_s.data(), grad ? g.data() : nullptr);
    for (long c = 0; c < C; ++c) lp[c] += lp_s[c];
    if (!grad) continue;
    for (long c = 0; c < C; ++c)
      for (long j = 0; j < D; ++j) {
        double& to = grad[c * full_dim_ + slice.full_index[j]];
        // the global coordinates' gradient summed, each local one its owner's
        to = (j < G && s > 0) ? to + g[c * D + j] : g[c * D + j];
      }
  }
  count_gradient(grad != nullptr);
}

std::unique_ptr<ChainVectors> DeviceShardsTarget::vectors() {
  std::vector<std::unique_ptr<ChainVectors>> inner;
  for (int s = 0; s < shards(); ++s) {
    std::unique_ptr<ChainVectors> v = targets_[s]->vectors();
    v->map_coordinates(slices_[s].full_index, full_dim_);
    // the global coordinates count in the first shard's sums alone
    v->count_from(s == 0 ? 0 : slices_[s].n_global);
    inner.push_back(std::move(v));
  }
  return std::make_unique<DeviceShardsVectors>(*this, std::move(inner));
}

DeviceShardsVectors::DeviceShardsVectors(DeviceShardsTarget& target,
                                         std::vector<std::unique_ptr<ChainVectors>> inner)
    : ChainVectors(target.chains(), target.dim()), target_(target), inner_(std::move(inner)),
      part_(inner_.size()) {}

double* DeviceShardsVectors::make() {
  std::vector<double*> mine;
  for (auto& v : inner_) mine.push_back(v->make());
  handles_.push_back(std::make_unique<double>(0.0));
  double* handle = handles_.back().get();
  arrays_.emplace(handle, std::move(mine));
  return handle;
}

double* DeviceShardsVectors::at(const double* a, int s) const {
  if (!a) return nullptr;
  const auto it = arrays_.find(a);
  if (it == arrays_.end())
    throw std::logic_error("DeviceShardsVectors: an array these vectors did not make");
  return it->second[s];
}

SubtreeVectors DeviceShardsVectors::at(const SubtreeVectors& v, int s) const {
  return SubtreeVectors{at(v.S, s),        at(v.prefix, s), at(v.left_rho, s), at(v.left_begin, s),
                        at(v.p, s),        at(v.right_begin, s), at(v.left_end, s)};
}

void DeviceShardsVectors::upload(double* dst, const double* host) {
  for (int s = 0; s < shards(); ++s)
    inner_[s]->upload(at(dst, s), target_.slice(s).of_whole(host, chains_, dim_).data());
}

void DeviceShardsVectors::download(double* host, const double* src) {
  for (int s = 0; s < shards(); ++s) {
    const std::vector<long>& index = target_.slice(s).full_index;
    const long D = static_cast<long>(index.size());
    std::vector<double>& part = part_[s];
    part.resize(chains_ * D);
    inner_[s]->download(part.data(), at(src, s));
    for (long c = 0; c < chains_; ++c)
      for (long j = 0; j < D; ++j) host[c * dim_ + index[j]] = part[c * D + j];
  }
}

void DeviceShardsVectors::read_columns(double* host, const double* src, long n) {
  if (n > target_.n_global())
    throw std::invalid_argument("DeviceShardsVectors: columns past the global coordinates");
  inner_[0]->read_columns(host, at(src, 0), n);
}

void DeviceShardsVectors::write_columns(double* dst, const double* host, long n) {
  if (n > target_.n_global())
    throw std::invalid_argument("DeviceShardsVectors: columns past the global coordinates");
  for (int s = 0; s < shards(); ++s) inner_[s]->write_columns(at(dst, s), host, n);
}

void DeviceShardsVectors::copy(double* dst, const double* src, const ChainMask& on) {
  for (int s = 0; s < shards(); ++s) inner_[s]->copy(at(dst, s), at(src, s), on);
}

void DeviceShardsVectors::fill(double* dst, double value, const ChainMask& on) {
  for (int s = 0; s < shards(); ++s) inner_[s]->fill(at(dst, s), value, on);
}

void DeviceShardsVectors::add(double* dst, const double* a, const double* b, double scale,
                              const ChainMask& on) {
  for (int s = 0; s < shards(); ++s) inner_[s]->add(at(dst, s), at(a, s), at(b, s), scale, on);
}

void DeviceShardsVectors::leapfrog(double* x_out, const double* x_in, double* p, const double* g,
                                   const double* m, double kick, double eps, bool drift,
                                   const ChainMask& on, const ChainMask& back) {
  for (int s = 0; s < shards(); ++s)
    inner_[s]->leapfrog(at(x_out, s), at(x_in, s), at(p, s), at(g, s), at(m, s), kick, eps, drift,
                        on, back);
}

void DeviceShardsVectors::momentum(double* p, const double* sd, std::vector<Stream>& streams,
                                   uint32_t purpose) {
  // every shard from the same streams: each draws its coordinates' numbers
  // by their index in the whole state, and all advance the streams alike
  const std::vector<Stream> from = streams;
  for (int s = 0; s < shards(); ++s) {
    std::vector<Stream> mine = from;
    inner_[s]->momentum(at(p, s), at(sd, s), mine, purpose);
    if (s == 0) streams = mine;
  }
}

void DeviceShardsVectors::mean_over_chains(double* dst, const double* src, const ChainMask& from) {
  for (int s = 0; s < shards(); ++s) inner_[s]->mean_over_chains(at(dst, s), at(src, s), from);
}

void DeviceShardsVectors::window_update(double* mean, double* m2, const double* x, double n0,
                                        bool pooled, const ChainMask& from) {
  for (int s = 0; s < shards(); ++s)
    inner_[s]->window_update(at(mean, s), at(m2, s), at(x, s), n0, pooled, from);
}

void DeviceShardsVectors::metric_from_window(double* sd, double* sd2, const double* m2, double n,
                                             bool pooled) {
  for (int s = 0; s < shards(); ++s)
    inner_[s]->metric_from_window(at(sd, s), at(sd2, s), at(m2, s), n, pooled);
}

template <class Sum> void DeviceShardsVectors::add_over_shards(double* out, long n, const Sum& sum) {
  for (int s = 0; s < shards(); ++s) {
    std::vector<double>& part = part_[s];
    part.assign(chains_ * n, 0.0);
    sum(s, part.data());
  }
  for (long k = 0; k < chains_ * n; ++k) {
    double total = 0;
    for (int s = 0; s < shards(); ++s) total += part_[s][k];
    out[k] = total;
  }
}

void DeviceShardsVectors::dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
                               double* out) {
  add_over_shards(out, n, [&](int s, double* part) {
    DotSpec mine[DotTerm::max_specs];
    for (int k = 0; k < n; ++k)
      mine[k] = DotSpec{at(specs[k].a, s), at(specs[k].b, s), at(specs[k].c, s), specs[k].kind};
    inner_[s]->dots(mine, n, at(m, s), on, part);
  });
}

void DeviceShardsVectors::subtree_checks(const SubtreeVectors& v, const double* m,
                                         const ChainMask& on, double* out) {
  add_over_shards(out, 6, [&](int s, double* part) {
    inner_[s]->subtree_checks(at(v, s), at(m, s), on, part);
  });
}

void DeviceShardsVectors::leaf(const LeafVectors& v, const double* m, const ChainMask& on,
                               const ChainMask& back, double* out) {
  add_over_shards(out, v.sums(), [&](int s, double* part) {
    LeafVectors mine = v;
    mine.p = at(v.p, s);
    mine.g = at(v.g, s);
    mine.sd = at(v.sd, s);
    mine.S = at(v.S, s);
    mine.first = at(v.first, s);
    mine.p_from = at(v.p_from, s);
    for (int k = 0; k < v.starts; ++k) {
      mine.begin[k] = at(v.begin[k], s);
      mine.prefix[k] = at(v.prefix[k], s);
    }
    mine.left_end = at(v.left_end, s);
    mine.left_rho = at(v.left_rho, s);
    mine.left_prefix = at(v.left_prefix, s);
    for (int k = 0; k < v.checks; ++k) mine.check[k] = at(v.check[k], s);
    inner_[s]->leaf(mine, at(m, s), on, back, part);
  });
}

void DeviceShardsVectors::log_density(const double* x, double* lp, double* g) {
  const long C = chains_, G = g ? target_.n_global() : 0;
  // every shard's gradient queued before any is waited for: GPUs at once
  for (int s = 0; s < shards(); ++s) {
    part_[s].assign(C * (1 + G), 0.0);
    inner_[s]->start_log_density(at(x, s), part_[s].data(), at(g, s));
  }
  for (int s = 0; s < shards(); ++s) {
    inner_[s]->finish_log_density(part_[s].data());
    if (G > 0) inner_[s]->read_columns(part_[s].data() + C, at(g, s), G);
  }
  // the log densities and the global coordinates' gradient, summed in shard
  // order, to every shard
  sum_.assign(C * (1 + G), 0.0);
  for (int s = 0; s < shards(); ++s)
    for (long k = 0; k < C * (1 + G); ++k) sum_[k] += part_[s][k];
  std::copy(sum_.begin(), sum_.begin() + C, lp);
  if (G > 0)
    for (int s = 0; s < shards(); ++s) inner_[s]->write_columns(at(g, s), sum_.data() + C, G);
  target_.count_gradient(g != nullptr);
}

}  // namespace lockstep
