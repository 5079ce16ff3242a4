// Stochastic variational inference (svi.hpp).
#include "lockstep/svi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "lockstep/rng.hpp"

namespace lockstep {

namespace {

// The particles' normals' stream purpose (beside the samplers', sampler.hpp).
constexpr uint32_t purpose_svi = 11;
constexpr double log_two_pi = 1.8378770664093454836;

}  // namespace

Svi::Svi(Target& target, const SviSettings& settings, const std::vector<double>& init_mean,
         uint32_t key0, uint32_t key1)
    : target_(target), s_(settings), C_(target.chains()), D_(target.dim()),
      point_(settings.guide == "delta"), key0_(key0), key1_(key1),
      rule_(settings.optimiser, 1, (settings.guide == "delta" ? 1 : 2) * target.dim()) {
  if (s_.guide != "mean_field" && s_.guide != "delta")
    throw std::invalid_argument("svi: unknown guide '" + s_.guide + "'");
  if (s_.optimiser.method == "bfgs" || s_.optimiser.method == "nelder_mead")
    throw std::invalid_argument("svi: the optimiser must be a first-order one, such as adam()");
  if (point_ && C_ != 1)
    throw std::invalid_argument("svi: a point mass guide takes one particle");
  if (static_cast<long>(init_mean.size()) != D_)
    throw std::invalid_argument("svi: the initial mean must have one value per free parameter");
  if (!(s_.init_scale > 0) || !(s_.decay_rate > 0) || !(s_.decay_steps > 0))
    throw std::invalid_argument("svi: init_scale, decay_rate and decay_steps must be positive");
  lr0_ = rule_.lr;
  mu_ = init_mean;
  omega_.assign(D_, std::log(s_.init_scale));
  const long P = (point_ ? 1 : 2) * D_;
  phi_.resize(P);
  grad_.resize(P);
  z_.resize(C_ * D_);
  eps_.resize(C_ * D_);
  lp_.resize(C_);
  g_.resize(C_ * D_);
}

std::vector<double> Svi::sd() const {
  std::vector<double> out(D_, 0.0);
  if (!point_)
    for (long i = 0; i < D_; ++i) out[i] = std::exp(omega_[i]);
  return out;
}

void Svi::set_guide(const std::vector<double>& mean, const std::vector<double>& sd) {
  if (static_cast<long>(mean.size()) != D_ || (!point_ && static_cast<long>(sd.size()) != D_))
    throw std::invalid_argument("svi: the guide's mean and sds must have one value per free parameter");
  mu_ = mean;
  if (!point_)
    for (long i = 0; i < D_; ++i) {
      if (!(sd[i] > 0)) throw std::invalid_argument("svi: the guide's sds must be positive");
      omega_[i] = std::log(sd[i]);
    }
}

std::vector<double> Svi::log_q(const double* z, long rows) const {
  std::vector<double> out(rows, 0.0);
  if (point_) return out;
  for (long r = 0; r < rows; ++r) {
    double s = -0.5 * D_ * log_two_pi;
    for (long i = 0; i < D_; ++i) {
      const double e = (z[r * D_ + i] - mu_[i]) * std::exp(-omega_[i]);
      s -= omega_[i] + 0.5 * e * e;
    }
    out[r] = s;
  }
  return out;
}

double Svi::evaluate(long t, bool gradient, std::vector<double>& w, std::vector<double>& v) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // each particle's own stream, positioned at the iteration's block
  const uint64_t per_iteration = static_cast<uint64_t>((D_ + 1) / 2);
  double sum_omega = 0;
  for (long i = 0; i < D_; ++i) sum_omega += omega_[i];
  w.assign(C_, 0.0);
  for (long c = 0; c < C_; ++c) {
    const Stream stream{key0_, key1_, static_cast<uint32_t>(c), purpose_svi,
                        static_cast<uint64_t>(t - 1) * per_iteration};
    double sq = 0;
    for (long i = 0; i < D_; ++i) {
      const double e = point_ ? 0.0 : stream.normal_at(static_cast<uint64_t>(i));
      eps_[c * D_ + i] = e;
      z_[c * D_ + i] = mu_[i] + (point_ ? 0.0 : std::exp(omega_[i]) * e);
      sq += e * e;
    }
    // log q at the particle (its own normals: no sd divides back)
    w[c] = point_ ? 0.0 : -(-0.5 * D_ * log_two_pi - sum_omega - 0.5 * sq);
  }
  target_.log_density(z_.data(), lp_.data(), gradient ? g_.data() : nullptr);
  for (long c = 0; c < C_; ++c) {
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
  // the loss's gradient (minus the bound's) in mu, then omega
  std::fill(grad_.begin(), grad_.end(), 0.0);
  for (long c = 0; c < C_; ++c)
    for (long i = 0; i < D_; ++i) {
      const double g = g_[c * D_ + i];
      grad_[i] -= v[c] * g;
      if (!point_) grad_[D_ + i] -= v[c] * (g * std::exp(omega_[i]) * eps_[c * D_ + i] + 1);
    }
  for (double x : grad_)
    if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  std::copy(mu_.begin(), mu_.end(), phi_.begin());
  if (!point_) std::copy(omega_.begin(), omega_.end(), phi_.begin() + D_);
  rule_.lr = lr0_ * std::pow(s_.decay_rate, static_cast<double>(t_ - 1) / s_.decay_steps);
  rule_.step(phi_.data(), grad_.data(), 0, static_cast<long>(phi_.size()), t_);
  std::copy(phi_.begin(), phi_.begin() + D_, mu_.begin());
  if (!point_) std::copy(phi_.begin() + D_, phi_.end(), omega_.begin());
  return -b;
}

}  // namespace lockstep
