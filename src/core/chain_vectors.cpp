// Sampler vectors in host memory (sampler/chain_vectors.hpp), and the targets'
// choice of vectors.
#include "lockstep/sampler/chain_vectors.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "lockstep/kernels/chain_sum.hpp"

namespace lockstep {

std::unique_ptr<ChainVectors> Target::vectors() {
  return std::make_unique<HostChainVectors>(*this, Launcher{}, pool());
}

template <class T> std::unique_ptr<ChainVectors> Executor<T>::vectors() {
  return std::make_unique<HostChainVectors>(*this, launch_, pool());
}
template std::unique_ptr<ChainVectors> Executor<double>::vectors();
template std::unique_ptr<ChainVectors> Executor<float>::vectors();

void ChainVectors::count_from(long first) {
  if (first != 0)
    throw std::invalid_argument("lockstep: this backend's sampler vectors cannot be sharded by groups");
}

void ChainVectors::map_coordinates(std::vector<long>, long) {
  throw std::invalid_argument("lockstep: this backend's sampler vectors cannot be sharded by groups");
}

namespace {
[[noreturn]] void no_guide() {
  throw std::logic_error("lockstep: these sampler vectors hold no variational guide");
}
}  // namespace

double* ChainVectors::make_flat(long) { no_guide(); }
void ChainVectors::upload_flat(double*, const double*, long) { no_guide(); }
void ChainVectors::download_flat(double*, const double*, long) { no_guide(); }
void ChainVectors::copy_flat(double*, const double*, long) { no_guide(); }
void ChainVectors::low_rank_gram(LowRankGramTerm, double*) { no_guide(); }
void ChainVectors::low_rank_factor(const LowRankFactorBody&) { no_guide(); }
void ChainVectors::low_rank_particles(const LowRankParticlesBody&, LowRankProjectTerm, double*) {
  no_guide();
}
void ChainVectors::low_rank_whiten(LowRankWhitenTerm, double*) { no_guide(); }
bool ChainVectors::low_rank_gradient(const LowRankGradientTerm&) { no_guide(); }
void ChainVectors::mean_field_particles(const double*, double*, double*, const MeanFieldDraw&,
                                        bool, double*) {
  no_guide();
}
bool ChainVectors::mean_field_gradient(const double*, const double*, const double*, const double*,
                                       bool, double*) {
  no_guide();
}
void ChainVectors::first_order_step(const FirstOrderStep&) { no_guide(); }

HostChainVectors::HostChainVectors(Target& target, Launcher launcher, ThreadPool* pool,
                                   long min_pooled)
    : ChainVectors(target.chains(), target.dim()), target_(target), launcher_(launcher),
      // the emulated backend runs every chain in one launch, lane by lane
      pool_(launcher.backend == Backend::cpu ? pool : nullptr), min_pooled_(min_pooled) {}

template <class MakeBody> void HostChainVectors::run(const MakeBody& make_body) {
  // A vector operation on fewer than min_pooled_ values takes less time
  // than handing it to another thread (about a microsecond with the pool's
  // threads spinning, bench/RESULTS.md): a small model's NUTS does ten of
  // them per leapfrog step.
  if (pool_ && chains_ * dim_ >= min_pooled_) {
    // one chain per task: each writes only its own rows
    pool_->parallel_for(chains_, [&](long c) { launcher_(make_body(c, c + 1)); });
  } else {
    launcher_(make_body(0, chains_));
  }
}

template <class Term> void HostChainVectors::sum_rows(Term term, long rows, double* out) {
  std::fill(out, out + rows, 0.0);
  term.c0 = 0;
  launcher_(ChainSum<Term>(term, out, rows, dim_));
}

template <class Term> bool HostChainVectors::all_finite(const Term& term) {
  double bad = 0;
  launcher_(ChainSum<Term>(term, &bad, 1, dim_));
  return bad == 0;
}

double* HostChainVectors::make() {
  const size_t n = static_cast<size_t>(chains_ * dim_);
  arrays_.emplace_back(new double[n > 0 ? n : 1]());
  return arrays_.back().get();
}

void HostChainVectors::upload(double* dst, const double* host) {
  if (dst != host) std::memcpy(dst, host, sizeof(double) * chains_ * dim_);
}

void HostChainVectors::download(double* host, const double* src) {
  if (host != src) std::memcpy(host, src, sizeof(double) * chains_ * dim_);
}

void HostChainVectors::read_columns(double* host, const double* src, long n) {
  for (long c = 0; c < chains_; ++c) std::copy(src + c * dim_, src + c * dim_ + n, host + c * n);
}

void HostChainVectors::write_columns(double* dst, const double* host, long n) {
  for (long c = 0; c < chains_; ++c) std::copy(host + c * n, host + (c + 1) * n, dst + c * dim_);
}

void HostChainVectors::copy(double* dst, const double* src, const ChainMask& on) {
  run([&](long c0, long c1) { return RowsCopy{{}, dst, src, 0.0, on, c0, c1, dim_}; });
}

void HostChainVectors::fill(double* dst, double value, const ChainMask& on) {
  run([&](long c0, long c1) { return RowsCopy{{}, dst, nullptr, value, on, c0, c1, dim_}; });
}

void HostChainVectors::add(double* dst, const double* a, const double* b, double s,
                           const ChainMask& on) {
  run([&](long c0, long c1) { return RowsAdd{{}, dst, a, b, s, on, c0, c1, dim_}; });
}

void HostChainVectors::leapfrog(double* x_out, const double* x_in, double* p, const double* g,
                                const double* m, double kick, double eps, bool drift,
                                const ChainMask& on, const ChainMask& back) {
  run([&](long c0, long c1) {
    return KickDrift{{}, x_out, p, x_in, g, m, kick, eps, drift, on, back, c0, c1, dim_};
  });
}

void HostChainVectors::momentum(double* p, const double* sd, std::vector<Stream>& streams,
                                uint32_t purpose) {
  for (Stream& s : streams) s.purpose = purpose;
  const Stream* from = streams.data();
  if (!full_index_.empty()) {
    const long* index = full_index_.data();
    run([&](long c0, long c1) {
      return MomentumDrawMapped{{}, p, sd, from, index, c0, c1, dim_};
    });
    for (Stream& s : streams) s.position += static_cast<uint64_t>((full_dim_ + 1) / 2);
    return;
  }
  run([&](long c0, long c1) { return MomentumDraw{{}, p, sd, from, c0, c1, dim_}; });
  for (Stream& s : streams) s.position += static_cast<uint64_t>((dim_ + 1) / 2);
}

void HostChainVectors::map_coordinates(std::vector<long> full_index, long full_dim) {
  if (static_cast<long>(full_index.size()) != dim_)
    throw std::invalid_argument("map_coordinates: one index per coordinate");
  for (long f : full_index)
    if (f < 0 || f >= full_dim) throw std::invalid_argument("map_coordinates: an index out of range");
  full_index_ = std::move(full_index);
  full_dim_ = full_dim;
}

void HostChainVectors::mean_over_chains(double* dst, const double* src, const ChainMask& from) {
  // across chains, so one launch (not split by chain among threads)
  launcher_(ChainMean{{}, dst, src, from, from.count(), chains_, dim_});
}

void HostChainVectors::window_update(double* mean, double* m2, const double* x, double n0,
                                     bool pooled, const ChainMask& from) {
  launcher_(WindowUpdate{{}, mean, m2, x, n0, pooled, from, chains_, dim_});
}

void HostChainVectors::metric_from_window(double* sd, double* sd2, const double* m2, double n,
                                          bool pooled) {
  launcher_(MetricFromWindow{{}, sd, sd2, m2, n, pooled, chains_, dim_});
}

void HostChainVectors::dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
                            double* out) {
  DotTerm term = DotTerm::make(specs, n, m, on, dim_);
  term.counted_from = counted_from_;
  std::fill(out, out + chains_ * n, 0.0);
  run([&](long c0, long c1) {
    DotTerm t = term;
    t.c0 = c0;
    return ChainSum<DotTerm>(t, out + c0 * n, (c1 - c0) * n, dim_);
  });
}

void HostChainVectors::subtree_checks(const SubtreeVectors& sv, const double* m,
                                      const ChainMask& on, double* out) {
  std::fill(out, out + chains_ * 6, 0.0);
  run([&](long c0, long c1) {
    return ChainSum<SubtreeChecksTerm>(SubtreeChecksTerm{sv, m, on, c0, dim_, out, counted_from_},
                                       out + c0 * 6,
                                       c1 - c0, dim_, 6);
  });
}

void HostChainVectors::leaf(const LeafVectors& v, const double* m, const ChainMask& on,
                            const ChainMask& back, double* out) {
  const int n = v.sums();
  std::fill(out, out + chains_ * n, 0.0);
  run([&](long c0, long c1) {
    return ChainSum<LeafTerm>(LeafTerm{v, m, on, back, c0, dim_, out, counted_from_}, out + c0 * n,
                              c1 - c0,
                              dim_, n);
  });
}

void HostChainVectors::log_density(const double* x, double* lp, double* g) {
  target_.log_density(x, lp, g);
}

double* HostChainVectors::make_flat(long n) {
  arrays_.emplace_back(new double[n > 0 ? n : 1]());
  return arrays_.back().get();
}

void HostChainVectors::upload_flat(double* dst, const double* host, long n) {
  if (dst != host) std::memcpy(dst, host, sizeof(double) * n);
}

void HostChainVectors::download_flat(double* host, const double* src, long n) {
  if (host != src) std::memcpy(host, src, sizeof(double) * n);
}

void HostChainVectors::copy_flat(double* dst, const double* src, long n) {
  if (dst != src && n > 0) std::memcpy(dst, src, sizeof(double) * n);
}

void HostChainVectors::mean_field_particles(const double* phi, double* z, double* eps,
                                            const MeanFieldDraw& draw, bool point, double* w) {
  std::fill(w, w + chains_, 0.0);
  run([&](long c0, long c1) {
    return ChainSum<MeanFieldParticlesTerm>(MeanFieldParticlesTerm{phi, z, eps, draw, c0, dim_, point},
                                            w + c0, c1 - c0, dim_);
  });
}

bool HostChainVectors::mean_field_gradient(const double* phi, const double* g, const double* eps,
                                           const double* v, bool point, double* grad) {
  return all_finite(MeanFieldGradientTerm{phi, g, eps, v, grad, chains_, dim_, point});
}

void HostChainVectors::first_order_step(const FirstOrderStep& step) { launcher_(step); }

void HostChainVectors::low_rank_gram(LowRankGramTerm term, double* sums) {
  sum_rows(term, term.k * term.k + 1, sums);
}

void HostChainVectors::low_rank_factor(const LowRankFactorBody& body) { launcher_(body); }

void HostChainVectors::low_rank_particles(const LowRankParticlesBody& body,
                                          LowRankProjectTerm project, double* p) {
  launcher_(body);
  sum_rows(project, chains_ * (project.k + 1), p);
}

void HostChainVectors::low_rank_whiten(LowRankWhitenTerm term, double* uw) {
  sum_rows(term, chains_ * term.k, uw);
}

bool HostChainVectors::low_rank_gradient(const LowRankGradientTerm& term) {
  return all_finite(term);
}

}  // namespace lockstep
