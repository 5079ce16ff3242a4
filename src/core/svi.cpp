// Stochastic variational inference (svi.hpp).
#include "lockstep/svi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "lockstep/rng.hpp"

namespace lockstep {

namespace {

// The particles' normals' stream purpose (beside the samplers', sampler.hpp).
constexpr uint32_t purpose_svi = 11;
constexpr double log_two_pi = 1.8378770664093454836;

}  // namespace

Svi::Kind Svi::kind_of(const std::string& guide) {
  if (guide == "mean_field") return Kind::mean_field;
  if (guide == "full_rank") return Kind::full_rank;
  if (guide == "delta") return Kind::delta;
  throw std::invalid_argument("svi: unknown guide '" + guide + "'");
}

long Svi::scale_parameters(Kind kind, long D) {
  return kind == Kind::mean_field ? D : kind == Kind::full_rank ? D * (D + 1) / 2 : 0;
}

Svi::Svi(Target& target, const SviSettings& settings, const std::vector<double>& init_mean,
         uint32_t key0, uint32_t key1)
    : target_(target), s_(settings), kind_(kind_of(settings.guide)), C_(target.chains()),
      D_(target.dim()), full_index_(target.full_index()), full_dim_(target.full_dim()),
      counted_from_(target.counted_from()), key0_(key0), key1_(key1),
      rule_(settings.optimiser, 1, target.dim() + scale_parameters(kind_, target.dim())) {
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
  lr0_ = rule_.lr;
  phi_.assign(D_ + scale_parameters(kind_, D_), 0.0);
  std::copy(init_mean.begin(), init_mean.end(), phi_.begin());
  // the first scale: init_scale on the diagonal (its log), 0 off it
  const double log_scale = std::log(s_.init_scale);
  for (long i = 0; i < D_ && kind_ != Kind::delta; ++i)
    phi_[D_ + (kind_ == Kind::mean_field ? i : i * (i + 1) / 2 + i)] = log_scale;
  grad_.resize(phi_.size());
  z_.resize(C_ * D_);
  eps_.resize(C_ * D_);
  lp_.resize(C_);
  g_.resize(C_ * D_);
}

double Svi::l_at(long i, long j) const {
  switch (kind_) {
    case Kind::mean_field:
      return i == j ? std::exp(phi_[D_ + i]) : 0.0;
    case Kind::full_rank: {
      const double v = phi_[D_ + i * (i + 1) / 2 + j];
      return i == j ? std::exp(v) : v;
    }
    case Kind::delta:
      break;
  }
  return 0.0;
}

std::vector<double> Svi::scale() const {
  std::vector<double> L(D_ * D_, 0.0);
  for (long i = 0; i < D_; ++i)
    for (long j = 0; j <= i; ++j) L[i * D_ + j] = l_at(i, j);
  return L;
}

std::vector<double> Svi::sd() const {
  std::vector<double> out(D_, 0.0);
  for (long i = 0; i < D_; ++i) {
    double s = 0;
    for (long j = 0; j <= i && kind_ != Kind::mean_field; ++j) s += l_at(i, j) * l_at(i, j);
    out[i] = kind_ == Kind::mean_field ? l_at(i, i) : std::sqrt(s);
  }
  return out;
}

void Svi::set_guide(const std::vector<double>& mean, const std::vector<double>& scale) {
  if (static_cast<long>(mean.size()) != D_ ||
      (kind_ != Kind::delta && static_cast<long>(scale.size()) != D_ * D_))
    throw std::invalid_argument("svi: the guide's mean must have dim values and its scale dim x dim");
  std::copy(mean.begin(), mean.end(), phi_.begin());
  if (kind_ == Kind::delta) return;
  for (long i = 0; i < D_; ++i)
    for (long j = 0; j <= i; ++j) {
      const double v = scale[i * D_ + j];
      if (i == j && !(v > 0)) throw std::invalid_argument("svi: the guide's scale must have a positive diagonal");
      if (i != j && kind_ == Kind::mean_field && v != 0)
        throw std::invalid_argument("svi: a mean-field guide's scale is diagonal");
      const long at = kind_ == Kind::mean_field ? i : i * (i + 1) / 2 + j;
      if (i == j || kind_ == Kind::full_rank) phi_[D_ + at] = i == j ? std::log(v) : v;
    }
}

double Svi::evaluate(long t, bool gradient, std::vector<double>& w, std::vector<double>& v) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool point = kind_ == Kind::delta;
  // each particle's own stream, positioned at the iteration's block of the
  // whole state's normals
  const uint64_t per_iteration = static_cast<uint64_t>((full_dim_ + 1) / 2);
  // log q at a particle is -sum log L_ii - |eps|^2 / 2 - D log(2 pi) / 2,
  // its sums this part's (from counted_from_) made whole below
  double log_det = 0;
  for (long i = counted_from_; i < D_ && !point; ++i) log_det += std::log(l_at(i, i));
  const std::vector<double> L = kind_ == Kind::full_rank ? scale() : std::vector<double>();
  w.assign(C_, 0.0);
  for (long c = 0; c < C_; ++c) {
    const Stream stream{key0_, key1_, static_cast<uint32_t>(c), purpose_svi,
                        static_cast<uint64_t>(t - 1) * per_iteration};
    double* e = eps_.data() + c * D_;
    double* z = z_.data() + c * D_;
    double sq = 0;
    for (long i = 0; i < D_; ++i) {
      const long at = full_index_ ? (*full_index_)[i] : i;
      e[i] = point ? 0.0 : stream.normal_at(static_cast<uint64_t>(at));
      if (i >= counted_from_) sq += e[i] * e[i];
    }
    for (long i = 0; i < D_; ++i) {
      double s = phi_[i];
      if (kind_ == Kind::mean_field) s += l_at(i, i) * e[i];
      if (kind_ == Kind::full_rank)
        for (long j = 0; j <= i; ++j) s += L[i * D_ + j] * e[j];
      z[i] = s;
    }
    w[c] = point ? 0.0 : log_det + 0.5 * sq;  // -log q, but for its constant
  }
  target_.sum_over_parts(w.data(), C_);
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

double Svi::bound() {
  std::vector<double> w, v;
  return evaluate(t_ + 1, false, w, v);
}

double Svi::step() {
  std::vector<double> w, v;
  const double b = evaluate(t_ + 1, true, w, v);
  ++t_;
  if (!std::isfinite(b)) return std::numeric_limits<double>::quiet_NaN();
  // the loss's gradient (minus the bound's) in mu, then the scale's parameters
  std::fill(grad_.begin(), grad_.end(), 0.0);
  double* scale_grad = grad_.data() + D_;
  for (long c = 0; c < C_; ++c) {
    const double* g = g_.data() + c * D_;
    const double* e = eps_.data() + c * D_;
    for (long i = 0; i < D_; ++i) {
      grad_[i] -= v[c] * g[i];
      if (kind_ == Kind::mean_field) {
        scale_grad[i] -= v[c] * (g[i] * l_at(i, i) * e[i] + 1);
      } else if (kind_ == Kind::full_rank) {
        double* row = scale_grad + i * (i + 1) / 2;
        for (long j = 0; j < i; ++j) row[j] -= v[c] * g[i] * e[j];
        row[i] -= v[c] * (g[i] * l_at(i, i) * e[i] + 1);
      }
    }
  }
  // (agreed over the parts, so that every rank takes the step or none does)
  double bad = 0;
  for (double x : grad_)
    if (!std::isfinite(x)) bad = 1;
  target_.sum_over_parts(&bad, 1);
  if (bad != 0) return std::numeric_limits<double>::quiet_NaN();
  rule_.lr = lr0_ * std::pow(s_.decay_rate, static_cast<double>(t_ - 1) / s_.decay_steps);
  rule_.step(phi_.data(), grad_.data(), 0, static_cast<long>(phi_.size()), t_);
  return -b;
}

}  // namespace lockstep
