// Stochastic variational inference (svi.hpp).
#include "lockstep/svi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "lockstep/rng.hpp"
#include "lockstep/kernels/low_rank.hpp"
#include "lockstep/math/linalg.hpp"

namespace lockstep {

namespace {

// The particles' normals' stream purpose (beside the samplers', sampler.hpp).
constexpr uint32_t purpose_svi = 11;
constexpr double log_two_pi = 1.8378770664093454836;
// Coordinates per task of the guide's own work on threads (even: normals
// come in pairs, normals_at).
constexpr long particle_block = 4096;

}  // namespace

Svi::Kind Svi::kind_of(const std::string& guide) {
  if (guide == "mean_field") return Kind::mean_field;
  if (guide == "full_rank") return Kind::full_rank;
  if (guide == "low_rank") return Kind::low_rank;
  if (guide == "delta") return Kind::delta;
  throw std::invalid_argument("svi: unknown guide '" + guide + "'");
}

long Svi::scale_parameters(Kind kind, long D, long k) {
  switch (kind) {
    case Kind::mean_field: return D;
    case Kind::full_rank: return D * (D + 1) / 2;
    case Kind::low_rank: return D * k + D;
    case Kind::delta: break;
  }
  return 0;
}

Svi::Svi(Target& target, const SviSettings& settings, const std::vector<double>& init_mean,
         uint32_t key0, uint32_t key1)
    : target_(target), s_(settings), kind_(kind_of(settings.guide)), C_(target.chains()),
      D_(target.dim()), K_(kind_ == Kind::low_rank ? settings.rank : 0),
      full_index_(target.full_index()), full_dim_(target.full_dim()),
      counted_from_(target.counted_from()), key0_(key0), key1_(key1),
      rule_(settings.optimiser, 1,
            target.dim() + scale_parameters(kind_, target.dim(), settings.rank)) {
  if (kind_ == Kind::low_rank && (K_ < 1 || K_ > full_dim_))
    throw std::invalid_argument("svi: a low-rank guide's rank must be from 1 to the free parameters");
  if (s_.optimiser.method == "bfgs" || s_.optimiser.method == "nelder_mead")
    throw std::invalid_argument("svi: the optimiser must be a first-order one, such as adam()");
  if (kind_ == Kind::delta && C_ != 1)
    throw std::invalid_argument("svi: a point mass guide takes one particle");
  if (kind_ == Kind::full_rank && D_ > max_full_rank_dim)
    throw std::invalid_argument(
        "svi: a full-rank guide is for models of at most " + std::to_string(max_full_rank_dim) +
        " free parameters; this one has " + std::to_string(D_) + ": use the mean-field guide");
  if (kind_ == Kind::full_rank && full_index_)
    throw std::invalid_argument(
        "svi: a full-rank guide needs the whole state: use it without sharding the groups");
  if (static_cast<long>(init_mean.size()) != D_)
    throw std::invalid_argument("svi: the initial mean must have one value per free parameter");
  if (!(s_.init_scale > 0) || !(s_.decay_rate > 0) || !(s_.decay_steps > 0))
    throw std::invalid_argument("svi: init_scale, decay_rate and decay_steps must be positive");
  if (!(s_.batch_fraction > 0 && s_.batch_fraction <= 1))
    throw std::invalid_argument("svi: the minibatches' fraction of the data must be in (0, 1]");
  target_.set_minibatch(minibatch(0));  // (throws here, not at the first step)
  lr0_ = rule_.lr;
  phi_.assign(D_ + scale_parameters(kind_, D_, K_), 0.0);
  std::copy(init_mean.begin(), init_mean.end(), phi_.begin());
  // the first scale: init_scale on the diagonal (its log), 0 off it (a
  // low-rank guide's W)
  const double log_scale = std::log(s_.init_scale);
  for (long i = 0; i < D_ && kind_ != Kind::delta; ++i)
    phi_[D_ + (kind_ == Kind::mean_field  ? i
               : kind_ == Kind::full_rank ? i * (i + 1) / 2 + i
                                          : D_ * K_ + i)] = log_scale;
  if (kind_ == Kind::low_rank) {
    e1_.resize(C_ * K_);
    u_.resize(C_ * D_);
    sw_.resize(D_ * K_);
    sdiag_.resize(D_);
  }
  grad_.resize(phi_.size());
  lp_.resize(C_);
  // A mean-field, point mass or low-rank guide on a target whose vectors
  // hold a guide lives there (a GPU's memory: SviSettings::resident), with
  // its optimiser's state; the rest on the host. (A low-rank guide's sums
  // are rows of a ChainMask: K's k^2 + 1, and C (k + 1) of the particles'.)
  const bool low_rank_fits = kind_ == Kind::low_rank && K_ * K_ + 1 <= max_mask_chains &&
                             C_ * (K_ + 1) <= max_mask_chains;
  const bool may_reside = s_.resident >= 0 &&
                          (kind_ == Kind::mean_field || kind_ == Kind::delta || low_rank_fits) &&
                          !full_index_ && counted_from_ == 0;
  if (may_reside) {
    std::unique_ptr<ChainVectors> vectors = target_.vectors();
    if (vectors->holds_optimiser() && (s_.resident == 1 || vectors->on_device())) {
      resident_ = std::make_unique<Resident>();
      Resident& r = *resident_;
      const long n = static_cast<long>(phi_.size());
      for (double** a : {&r.phi, &r.grad, &r.a, &r.b, &r.u, &r.phi_before})
        *a = vectors->make_flat(n);
      for (double** a : {&r.z, &r.eps, &r.g}) *a = vectors->make();
      vectors->upload_flat(r.phi, phi_.data(), n);
      // (the optimiser's state starts as its host row does: zeros, or an
      // accumulator's initial value)
      vectors->upload_flat(r.a, rule_.a.data(), n);
      vectors->upload_flat(r.b, rule_.b.data(), n);
      vectors->upload_flat(r.u, rule_.u.data(), n);
      if (kind_ == Kind::low_rank) {
        r.whitened = vectors->make();
        r.sw = vectors->make_flat(D_ * K_);
        r.sdiag = vectors->make_flat(D_);
        r.kinv = vectors->make_flat(K_ * K_);
        for (double** a : {&r.e1, &r.kp, &r.uw}) *a = vectors->make_flat(C_ * K_);
        r.v = vectors->make_flat(C_);
      }
      r.vectors = std::move(vectors);
      return;
    }
  }
  // (a resident guide's work is its vectors': it needs no host threads)
  if (s_.threads > 1) own_pool_ = std::make_unique<ThreadPool>(s_.threads);
  z_.resize(C_ * D_);
  eps_.resize(C_ * D_);
  g_.resize(C_ * D_);
}

uint64_t Svi::normals_position(long t) const {
  return static_cast<uint64_t>(t - 1) * static_cast<uint64_t>((K_ + full_dim_ + 1) / 2);
}

void Svi::pull() const {
  if (!resident_ || !phi_stale_) return;
  resident_->vectors->download_flat(phi_.data(), resident_->phi, static_cast<long>(phi_.size()));
  phi_stale_ = false;
}

MeanFieldDraw Svi::draw_at(long t) const {
  MeanFieldDraw draw;
  draw.key0 = key0_;
  draw.key1 = key1_;
  draw.purpose = purpose_svi;
  draw.position = normals_position(t);
  return draw;
}

void Svi::resident_particles(long t, std::vector<double>& w) {
  if (kind_ == Kind::low_rank) {
    resident_low_rank_particles(t, w);
    return;
  }
  resident_->vectors->mean_field_particles(resident_->phi, resident_->z, resident_->eps,
                                           draw_at(t), kind_ == Kind::delta, w.data());
}

double Svi::l_at(long i, long j) const {
  switch (kind_) {
    case Kind::mean_field:
      return i == j ? std::exp(phi_[D_ + i]) : 0.0;
    case Kind::full_rank: {
      const double v = phi_[D_ + i * (i + 1) / 2 + j];
      return i == j ? std::exp(v) : v;
    }
    case Kind::low_rank:
    case Kind::delta:
      break;
  }
  return 0.0;
}

std::vector<double> Svi::factor() const {
  if (kind_ != Kind::low_rank) return {};
  pull();
  return std::vector<double>(phi_.begin() + D_, phi_.begin() + D_ + D_ * K_);
}

std::vector<double> Svi::diagonal() const {
  pull();
  std::vector<double> d(D_, 0.0);
  for (long i = 0; i < D_ && kind_ == Kind::low_rank; ++i) d[i] = std::exp(phi_[D_ + D_ * K_ + i]);
  return d;
}

std::vector<double> Svi::scale() const {
  pull();
  std::vector<double> L(D_ * D_, 0.0);
  for (long i = 0; i < D_; ++i)
    for (long j = 0; j <= i; ++j) L[i * D_ + j] = l_at(i, j);
  return L;
}

std::vector<double> Svi::sd() const {
  pull();
  std::vector<double> out(D_, 0.0);
  if (kind_ == Kind::low_rank) {
    const std::vector<double> d = diagonal();
    for (long i = 0; i < D_; ++i) {
      double s = d[i] * d[i];
      for (long b = 0; b < K_; ++b) s += phi_[D_ + i * K_ + b] * phi_[D_ + i * K_ + b];
      out[i] = std::sqrt(s);
    }
    return out;
  }
  for (long i = 0; i < D_; ++i) {
    double s = 0;
    for (long j = 0; j <= i && kind_ != Kind::mean_field; ++j) s += l_at(i, j) * l_at(i, j);
    out[i] = kind_ == Kind::mean_field ? l_at(i, i) : std::sqrt(s);
  }
  return out;
}

void Svi::set_guide(const std::vector<double>& mean, const std::vector<double>& scale) {
  if (kind_ == Kind::low_rank) throw std::invalid_argument("svi: set_guide() takes no low-rank guide");
  if (static_cast<long>(mean.size()) != D_ ||
      (kind_ != Kind::delta && static_cast<long>(scale.size()) != D_ * D_))
    throw std::invalid_argument("svi: the guide's mean must have dim values and its scale dim x dim");
  // (checked whole first, so that a bad scale leaves the guide as it was)
  for (long i = 0; i < D_ && kind_ != Kind::delta; ++i)
    for (long j = 0; j <= i; ++j) {
      const double v = scale[i * D_ + j];
      if (i == j && !(v > 0)) throw std::invalid_argument("svi: the guide's scale must have a positive diagonal");
      if (i != j && kind_ == Kind::mean_field && v != 0)
        throw std::invalid_argument("svi: a mean-field guide's scale is diagonal");
    }
  std::copy(mean.begin(), mean.end(), phi_.begin());
  stepped_ = false;  // (a guide set is where a fit goes back to)
  for (long i = 0; i < D_ && kind_ != Kind::delta; ++i)
    for (long j = 0; j <= i; ++j) {
      const double v = scale[i * D_ + j];
      const long at = kind_ == Kind::mean_field ? i : i * (i + 1) / 2 + j;
      if (i == j || kind_ == Kind::full_rank) phi_[D_ + at] = i == j ? std::log(v) : v;
    }
  if (resident_) {  // (every entry of a mean-field phi, or a point mass's, was just written)
    resident_->vectors->upload_flat(resident_->phi, phi_.data(), static_cast<long>(phi_.size()));
    phi_stale_ = false;
  }
}

ThreadPool* Svi::pool() { return own_pool_ ? own_pool_.get() : target_.pool(); }

long Svi::coordinate_blocks() const { return (D_ + particle_block - 1) / particle_block; }

void Svi::coordinate_block(long b, long* a0, long* a1) const {
  *a0 = b * particle_block;
  *a1 = std::min(D_, *a0 + particle_block);
}

template <class F> std::vector<double> Svi::sum_in_blocks(long width, F&& add) {
  const long blocks = coordinate_blocks();
  std::vector<double> partial(blocks * width, 0.0), out(width, 0.0);
  parallel(blocks, [&](long b) {
    long a0, a1;
    coordinate_block(b, &a0, &a1);
    add(a0, a1, partial.data() + b * width);
  });
  for (long b = 0; b < blocks; ++b)
    for (long j = 0; j < width; ++j) out[j] += partial[b * width + j];
  return out;
}

template <class F> void Svi::parallel(long n, F&& f) {
  ThreadPool* threads = pool();
  if (threads && n > 1) {
    threads->parallel_for(n, f);
    return;
  }
  for (long k = 0; k < n; ++k) f(k);
}

void Svi::normal_particles(long t, std::vector<double>& w) {
  const bool point = kind_ == Kind::delta;
  // each particle's own stream, positioned at the iteration's block of the
  // whole state's normals
  // log q at a particle is -sum log L_ii - |eps|^2 / 2 - D log(2 pi) / 2,
  // its sums this part's (from counted_from_) made whole below
  double log_det = 0;
  for (long i = counted_from_; i < D_ && !point; ++i) log_det += std::log(l_at(i, i));
  const std::vector<double> L = kind_ == Kind::full_rank ? scale() : std::vector<double>();
  std::vector<double> sigma(kind_ == Kind::mean_field ? D_ : 0);
  for (long i = 0; i < static_cast<long>(sigma.size()); ++i) sigma[i] = std::exp(phi_[D_ + i]);
  // Tasks of one particle's block of coordinates (all of them for a
  // full-rank guide, whose z_i reads every e_j, j <= i): a fixed cut, so
  // the sums are the same on any number of threads; blocks of an even
  // length keep normals_at's pairs whole.
  const long block = kind_ == Kind::full_rank ? std::max(1L, D_) : particle_block;
  const long blocks = (D_ + block - 1) / block;
  std::vector<double> sq(C_ * blocks, 0.0);
  parallel(C_ * blocks, [&](long task) {
    const long c = task / blocks, b = task % blocks;
    const long i0 = b * block, i1 = std::min(D_, i0 + block);
    const Stream stream{key0_, key1_, static_cast<uint32_t>(c), purpose_svi, normals_position(t)};
    double* e = eps_.data() + c * D_;
    double* z = z_.data() + c * D_;
    if (point) std::fill(e + i0, e + i1, 0.0);
    else if (full_index_) normals_at(stream, 0, full_index_->data() + i0, i1 - i0, e + i0);
    else normals_at(stream, static_cast<uint64_t>(i0), nullptr, i1 - i0, e + i0);
    double s2 = 0;
    for (long i = std::max(i0, counted_from_); i < i1; ++i) s2 += e[i] * e[i];
    sq[task] = s2;
    for (long i = i0; i < i1; ++i) {
      if (kind_ == Kind::mean_field) {
        z[i] = mean_field_particle(phi_[i], sigma[i], e[i]);
        continue;
      }
      double s = phi_[i];
      if (kind_ == Kind::full_rank)
        for (long j = 0; j <= i; ++j) s += L[i * D_ + j] * e[j];
      z[i] = s;
    }
  });
  for (long c = 0; c < C_; ++c) {
    double s2 = 0;
    for (long b = 0; b < blocks; ++b) s2 += sq[c * blocks + b];
    w[c] = point ? 0.0 : log_det + 0.5 * s2;
  }
  target_.sum_over_parts(w.data(), C_);
}

double Svi::evaluate(long t, bool gradient, std::vector<double>& w, std::vector<double>& v) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool point = kind_ == Kind::delta;
  w.assign(C_, 0.0);
  if (resident_)
    resident_particles(t, w);
  else if (kind_ == Kind::low_rank)
    low_rank_particles(t, w);
  else
    normal_particles(t, w);
  if (s_.batch_fraction < 1) target_.set_minibatch(minibatch(t));
  if (resident_)
    resident_->vectors->log_density(resident_->z, lp_.data(), gradient ? resident_->g : nullptr);
  else
    target_.log_density(z_.data(), lp_.data(), gradient ? g_.data() : nullptr);
  for (long c = 0; c < C_; ++c) {
    if (!point) w[c] += 0.5 * full_dim_ * log_two_pi;
    w[c] += lp_[c];
    if (!std::isfinite(w[c])) return nan;
  }
  v.assign(C_, 1.0 / C_);
  if (s_.alpha == 1) {
    double mean = 0;
    for (double x : w) mean += x;
    return mean / C_;
  }
  // (1 / a) log mean exp(a w), a = 1 - alpha, and its weights softmax(a w)
  const double a = 1 - s_.alpha;
  double top = -std::numeric_limits<double>::infinity();
  for (double x : w) top = std::max(top, a * x);
  double total = 0;
  for (long c = 0; c < C_; ++c) total += (v[c] = std::exp(a * w[c] - top));
  for (double& x : v) x /= total;
  return (top + std::log(total / C_)) / a;
}

double Svi::low_rank_solve(const std::vector<double>& sums, std::vector<double>& kinv) const {
  const long k = K_;
  // K = R' R (K is positive definite: I plus a Gram matrix; symmetric, so
  // either layout), its log determinant and K^-1 (math/linalg.hpp)
  std::vector<double> kmat(sums.begin(), sums.begin() + k * k), r(k * k), work(k);
  kinv.assign(k * k, 0.0);
  for (long b = 0; b < k; ++b) kmat[b * k + b] += 1;
  chol_upper(kmat.data(), r.data(), k);
  chol2inv_forward(r.data(), kinv.data(), work.data(), k);
  double log_det_sigma = 2 * sums[k * k];
  for (long b = 0; b < k; ++b) log_det_sigma += 2 * std::log(r[b * k + b]);
  return log_det_sigma;
}

void Svi::low_rank_weights(const std::vector<double>& p, const std::vector<double>& kinv,
                           double log_det_sigma, std::vector<double>& kp,
                           std::vector<double>& w) const {
  const long k = K_;
  kp.assign(C_ * k, 0.0);
  for (long c = 0; c < C_; ++c) {
    const double* pc = p.data() + c * (k + 1);
    double quad = pc[k];
    for (long b = 0; b < k; ++b) {
      for (long e = 0; e < k; ++e) kp[c * k + b] += kinv[b * k + e] * pc[e];
      quad -= pc[b] * kp[c * k + b];
    }
    w[c] = 0.5 * quad + 0.5 * log_det_sigma;  // -log q, but for its constant
  }
}

void Svi::resident_low_rank_particles(long t, std::vector<double>& w) {
  Resident& r = *resident_;
  const long D = D_, k = K_;
  std::vector<double> sums(k * k + 1), kinv, p(C_ * (k + 1)), kp;
  r.vectors->low_rank_gram(LowRankGramTerm{r.phi, k, D, 0}, sums.data());
  const double log_det_sigma = low_rank_solve(sums, kinv);
  r.vectors->upload_flat(r.kinv, kinv.data(), k * k);
  LowRankFactorBody factor;
  factor.phi = r.phi;
  factor.kinv = r.kinv;
  factor.sw = r.sw;
  factor.sdiag = r.sdiag;
  factor.k = k;
  factor.dim = D;
  r.vectors->low_rank_factor(factor);
  // each particle's first k normals (shared by its coordinates) drawn here
  const MeanFieldDraw draw = draw_at(t);
  for (long c = 0; c < C_; ++c) {
    const Stream stream{key0_, key1_, static_cast<uint32_t>(c), purpose_svi, draw.position};
    for (long b = 0; b < k; ++b) e1_[c * k + b] = stream.normal_at(static_cast<uint64_t>(b));
  }
  r.vectors->upload_flat(r.e1, e1_.data(), C_ * k);
  LowRankParticlesBody body;
  body.phi = r.phi;
  body.e1 = r.e1;
  body.z = r.z;
  body.eps = r.eps;
  body.draw = draw;
  body.chains = C_;
  body.k = k;
  body.dim = D;
  r.vectors->low_rank_particles(body, LowRankProjectTerm{r.phi, r.e1, r.eps, k, D, 0}, p.data());
  low_rank_weights(p, kinv, log_det_sigma, kp, w);
  r.vectors->upload_flat(r.kp, kp.data(), C_ * k);
  uw_.resize(C_ * k);
  r.vectors->low_rank_whiten(LowRankWhitenTerm{r.phi, r.kp, r.z, r.whitened, k, D, 0}, uw_.data());
}

void Svi::low_rank_particles(long t, std::vector<double>& w) {
  const long D = D_, k = K_, from = counted_from_;
  const double* mu = phi_.data();
  const double* W = phi_.data() + D;
  std::vector<double> d = diagonal(), delta(D);
  for (long a = 0; a < D; ++a) delta[a] = 1 / (d[a] * d[a]);
  // (the coordinates' work in fixed blocks on the pool's threads: the same
  // sums on any number of threads)
  const long blocks = coordinate_blocks();
  // K = I + W' diag(d^-2) W and sum log d, this part's then the whole's
  std::vector<double> sums = sum_in_blocks(k * k + 1, [&](long a0, long a1, double* s) {
    for (long a = std::max(a0, from); a < a1; ++a) {
      for (long b = 0; b < k; ++b)
        for (long c = 0; c < k; ++c) s[b * k + c] += W[a * k + b] * W[a * k + c] * delta[a];
      s[k * k] += std::log(d[a]);
    }
  });
  target_.sum_over_parts(sums.data(), k * k + 1);
  std::vector<double> kinv;
  const double log_det_sigma = low_rank_solve(sums, kinv);
  // Sigma^-1 W = diag(d^-2) W K^-1 and diag(Sigma^-1), per coordinate
  parallel(blocks, [&](long blk) {
    long a0, a1;
    coordinate_block(blk, &a0, &a1);
    for (long a = a0; a < a1; ++a)
      sdiag_[a] = low_rank_factor_at(W + a * k, kinv.data(), k, delta[a], sw_.data() + a * k);
  });
  // the particles: k + D normals each, the first k shared by the whole state
  std::vector<double> p(C_ * (k + 1), 0.0);  // per particle: W' diag(d^-2) r, r' diag(d^-2) r
  parallel(C_, [&](long c) {
    const Stream stream{key0_, key1_, static_cast<uint32_t>(c), purpose_svi, normals_position(t)};
    double* e1 = e1_.data() + c * k;
    double* e2 = eps_.data() + c * D;
    double* z = z_.data() + c * D;
    double* pc = p.data() + c * (k + 1);
    for (long b = 0; b < k; ++b) e1[b] = stream.normal_at(static_cast<uint64_t>(b));
    normals_at(stream, static_cast<uint64_t>(k), full_index_ ? full_index_->data() : nullptr, D, e2);
    for (long a = 0; a < D; ++a) {
      const double r = low_rank_offset(W + a * k, e1, k, d[a], e2[a]);
      z[a] = mu[a] + r;
      if (a < from) continue;
      for (long b = 0; b < k; ++b) pc[b] += W[a * k + b] * delta[a] * r;
      pc[k] += delta[a] * r * r;
    }
  });
  target_.sum_over_parts(p.data(), C_ * (k + 1));
  std::vector<double> kp;  // K^-1 p per particle
  low_rank_weights(p, kinv, log_det_sigma, kp, w);
  // u = diag(d^-2) r - diag(d^-2) W K^-1 p
  parallel(C_ * blocks, [&](long task) {
    const long c = task / blocks;
    long a0, a1;
    coordinate_block(task % blocks, &a0, &a1);
    const double* z = z_.data() + c * D;
    for (long a = a0; a < a1; ++a)
      u_[c * D + a] = low_rank_whitened(W + a * k, kp.data() + c * k, k, delta[a], z[a], mu[a]);
  });
}

void Svi::low_rank_gradient(const std::vector<double>& v) {
  const long D = D_, k = K_, from = counted_from_;
  const double* W = phi_.data() + D;
  // (in fixed blocks of coordinates on the pool's threads, as
  // low_rank_particles) u' W per particle, made whole
  std::vector<double> uw = sum_in_blocks(C_ * k, [&](long a0, long a1, double* s) {
    for (long c = 0; c < C_; ++c)
      for (long a = std::max(a0, from); a < a1; ++a)
        for (long b = 0; b < k; ++b) s[c * k + b] += u_[c * D + a] * W[a * k + b];
  });
  target_.sum_over_parts(uw.data(), C_ * k);
  // each coordinate's entries (mu's, W's, rho's), the particles in order
  parallel(coordinate_blocks(), [&](long blk) {
    long a0, a1;
    coordinate_block(blk, &a0, &a1);
    for (long a = a0; a < a1; ++a)
      low_rank_gradient_at(a, C_, D, k, phi_[D + D * k + a], g_.data(), u_.data(),
                           eps_.data(), e1_.data(), uw.data(), sw_.data() + a * k, sdiag_[a],
                           v.data(), &grad_[a], &grad_[D + a * k], &grad_[D + D * k + a]);
  });
}

Minibatch Svi::minibatch(long t) const {
  Minibatch batch;
  batch.fraction = s_.batch_fraction;
  batch.key0 = key0_;
  batch.key1 = key1_;
  batch.draw = static_cast<uint64_t>(t);
  return batch;
}

double Svi::bound() {
  std::vector<double> w, v;
  return evaluate(t_ + 1, false, w, v);
}

double Svi::step() {
  std::vector<double> w, v;
  const double b = evaluate(t_ + 1, true, w, v);
  ++t_;
  if (!std::isfinite(b)) return std::numeric_limits<double>::quiet_NaN();
  rule_.lr = lr0_ * std::pow(s_.decay_rate, static_cast<double>(t_ - 1) / s_.decay_steps);
  if (resident_) {  // the gradient and the optimiser's step where the guide lives
    Resident& r = *resident_;
    bool finite;
    if (kind_ == Kind::low_rank) {
      r.vectors->upload_flat(r.uw, uw_.data(), C_ * K_);
      r.vectors->upload_flat(r.v, v.data(), C_);
      finite = r.vectors->low_rank_gradient(LowRankGradientTerm{
          r.phi, r.g, r.whitened, r.eps, r.e1, r.uw, r.sw, r.sdiag, r.v, r.grad, C_, K_, D_});
    } else {
      finite = r.vectors->mean_field_gradient(r.phi, r.g, r.eps, v.data(), kind_ == Kind::delta,
                                              r.grad);
    }
    if (!finite) return std::numeric_limits<double>::quiet_NaN();
    FirstOrderStep body =
        rule_.body(t_, 0, r.phi, r.a, r.b, r.u, r.grad, static_cast<long>(phi_.size()));
    body.x_before = r.phi_before;
    r.vectors->first_order_step(body);
    stepped_ = true;
    phi_stale_ = true;
    return -b;
  }
  // the loss's gradient (minus the bound's) in mu, then the scale's parameters
  std::fill(grad_.begin(), grad_.end(), 0.0);
  double* scale_grad = grad_.data() + D_;
  if (kind_ == Kind::full_rank) {
    for (long c = 0; c < C_; ++c) {
      const double* g = g_.data() + c * D_;
      const double* e = eps_.data() + c * D_;
      for (long i = 0; i < D_; ++i) {
        grad_[i] -= v[c] * g[i];
        double* row = scale_grad + i * (i + 1) / 2;
        for (long j = 0; j < i; ++j) row[j] -= v[c] * g[i] * e[j];
        row[i] -= v[c] * (g[i] * l_at(i, i) * e[i] + 1);
      }
    }
  } else if (kind_ == Kind::low_rank) {
    low_rank_gradient(v);  // (mu's, W's and rho's entries)
  } else {
    // mean field, point mass: coordinate by coordinate, the particles in
    // order (the same sums on any number of threads), blocks of
    // coordinates on the target's threads
    const bool mean_field = kind_ == Kind::mean_field;
    const long block = particle_block, blocks = (D_ + block - 1) / block;
    parallel(blocks, [&](long k) {
      for (long i = k * block; i < std::min(D_, (k + 1) * block); ++i) {
        if (mean_field) {
          mean_field_gradient_at(i, C_, D_, phi_[D_ + i], g_.data(), eps_.data(), v.data(),
                                 &grad_[i], &scale_grad[i]);
          continue;
        }
        for (long c = 0; c < C_; ++c) grad_[i] -= v[c] * g_[c * D_ + i];
      }
    });
  }
  // (agreed over the parts, so that every rank takes the step or none does)
  double bad = 0;
  for (double x : grad_)
    if (!std::isfinite(x)) bad = 1;
  target_.sum_over_parts(&bad, 1);
  if (bad != 0) return std::numeric_limits<double>::quiet_NaN();
  phi_before_.resize(phi_.size());
  rule_.step(phi_.data(), grad_.data(), 0, static_cast<long>(phi_.size()), t_, phi_before_.data());
  stepped_ = true;
  return -b;
}

void Svi::restore_last_finite() {
  if (!stepped_) return;
  const long n = static_cast<long>(phi_.size());
  if (resident_) {
    resident_->vectors->copy_flat(resident_->phi, resident_->phi_before, n);
    phi_stale_ = true;
  } else {
    phi_ = phi_before_;
  }
  stepped_ = false;
}

SavedState Svi::save_state() const {
  SavedState s;
  const long n = static_cast<long>(phi_.size());
  s.put("svi_shape", {static_cast<double>(C_), static_cast<double>(D_), static_cast<double>(n)});
  s.put("svi_t", static_cast<double>(t_));
  s.put("svi_stepped", stepped_ ? 1.0 : 0.0);
  pull();
  s.put("svi_phi", phi_);
  std::vector<double> before = phi_before_, a = rule_.a, b = rule_.b, u = rule_.u;
  if (resident_) {  // (the optimiser's state and the last finite guide live there)
    before.resize(n);
    for (auto* v : {&a, &b, &u}) v->resize(n);
    const Resident& r = *resident_;
    r.vectors->download_flat(before.data(), r.phi_before, n);
    r.vectors->download_flat(a.data(), r.a, n);
    r.vectors->download_flat(b.data(), r.b, n);
    r.vectors->download_flat(u.data(), r.u, n);
  }
  s.put("svi_phi_before", std::move(before));
  s.put("svi_moment_a", std::move(a));
  s.put("svi_moment_b", std::move(b));
  s.put("svi_moment_u", std::move(u));
  s.put("svi_schedule", rule_.m_schedule);
  return s;
}

void Svi::restore_state(const SavedState& s) {
  const long n = static_cast<long>(phi_.size());
  const std::vector<double>& shape = s.get("svi_shape", 3);
  if (shape[0] != static_cast<double>(C_) || shape[1] != static_cast<double>(D_) ||
      shape[2] != static_cast<double>(n))
    throw std::invalid_argument(
        "svi: the saved fit has " + std::to_string(static_cast<long>(shape[0])) +
        " particles, " + std::to_string(static_cast<long>(shape[1])) + " free parameters and " +
        std::to_string(static_cast<long>(shape[2])) + " guide parameters; this one " +
        std::to_string(C_) + ", " + std::to_string(D_) + " and " + std::to_string(n));
  t_ = static_cast<long>(s.scalar("svi_t"));
  stepped_ = s.scalar("svi_stepped") != 0;
  phi_ = s.get("svi_phi", n);
  const std::vector<double>& before = s.get("svi_phi_before");
  if (!before.empty() && static_cast<long>(before.size()) != n)
    throw std::invalid_argument("svi: the saved fit's last finite guide is damaged");
  phi_before_ = before;
  const long moments = static_cast<long>(rule_.a.size());
  rule_.a = s.get("svi_moment_a", resident_ ? n : moments);
  rule_.b = s.get("svi_moment_b", resident_ ? n : moments);
  rule_.u = s.get("svi_moment_u", resident_ ? n : moments);
  rule_.m_schedule = s.get("svi_schedule", static_cast<long>(rule_.m_schedule.size()));
  rule_.lr = lr0_ * std::pow(s_.decay_rate, static_cast<double>(std::max(0L, t_ - 1)) / s_.decay_steps);
  if (resident_) {
    Resident& r = *resident_;
    r.vectors->upload_flat(r.phi, phi_.data(), n);
    if (!phi_before_.empty()) r.vectors->upload_flat(r.phi_before, phi_before_.data(), n);
    r.vectors->upload_flat(r.a, rule_.a.data(), n);
    r.vectors->upload_flat(r.b, rule_.b.data(), n);
    r.vectors->upload_flat(r.u, rule_.u.data(), n);
    phi_stale_ = false;
  }
}

}  // namespace lockstep
