// HMC with lockstep chains (sampler/hmc.hpp).
#include "lockstep/sampler/hmc.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lockstep {

namespace {
constexpr uint32_t purpose_momentum = 1, purpose_accept = 2, run_stream_id = 0xFFFFFFFFu;
constexpr double divergence_threshold = 1000;
}  // namespace

Hmc::Hmc(Target& target, HmcSettings settings, const std::vector<double>& init, uint32_t key0,
         uint32_t key1)
    : target_(target), settings_(settings), C_(target.chains()), D_(target.dim()) {
  if (settings.Lmin < 1 || settings.Lmax < settings.Lmin)
    throw std::invalid_argument("hmc: need 1 <= Lmin <= Lmax");
  if (!(settings.epsilon > 0)) throw std::invalid_argument("hmc: epsilon must be positive");
  if (static_cast<long>(init.size()) != C_ * D_)
    throw std::invalid_argument("hmc: initial values must have chains x dim elements");
  sd_.assign(D_, 1.0);
  if (settings.diag_sd.size() == 1) {
    sd_.assign(D_, settings.diag_sd[0]);
  } else if (static_cast<long>(settings.diag_sd.size()) == D_) {
    sd_ = settings.diag_sd;
  } else if (!settings.diag_sd.empty()) {
    throw std::invalid_argument("hmc: diag_sd must have one value or one per free parameter");
  }
  for (double s : sd_)
    if (!(s > 0)) throw std::invalid_argument("hmc: diag_sd must be positive");
  sd2_.resize(D_);
  for (long i = 0; i < D_; ++i) sd2_[i] = sd_[i] * sd_[i];
  dual_ = DualAveraging(settings.target_accept);
  epsilon_ = settings.epsilon;
  x_ = init;
  lp_.assign(C_, 0);
  grad_.assign(C_ * D_, 0);
  xn_ = x_;
  lpn_ = lp_;
  gn_ = grad_;
  p_.assign(C_ * D_, 0);
  accepted_.assign(C_, 0);
  bad_.assign(C_, 0);
  for (long c = 0; c < C_; ++c)
    chain_streams_.push_back(Stream{key0, key1, static_cast<uint32_t>(c), 0, 0});
  run_stream_ = Stream{key0, key1, run_stream_id, 0, 0};
  target_.log_density(x_.data(), lp_.data(), grad_.data());
  for (long c = 0; c < C_; ++c)
    if (!std::isfinite(lp_[c]))
      throw std::invalid_argument("hmc: the log density of chain " + std::to_string(c + 1) +
                                  " is not finite at its initial values");
}

template <class F> void Hmc::for_chains(F&& f) {
  if (ThreadPool* pool = target_.pool())
    pool->parallel_for(C_, [&](long c) { f(c); });
  else
    for (long c = 0; c < C_; ++c) f(c);
}

void Hmc::draw_momentum() {
  // p ~ N(0, M) with M = diag(1 / sd^2), so p_i = n_i / sd_i.
  for_chains([&](long c) {
    Stream& s = chain_streams_[c];
    s.purpose = purpose_momentum;
    for (long i = 0; i < D_; i += 2) {
      double a, b;
      s.normal2(&a, &b);
      p_[c * D_ + i] = a / sd_[i];
      if (i + 1 < D_) p_[c * D_ + i + 1] = b / sd_[i + 1];
    }
  });
}

double Hmc::kinetic(long c, const std::vector<double>& p) const {
  double k = 0;
  for (long i = 0; i < D_; ++i) {
    const double v = p[c * D_ + i] * sd_[i];
    k += v * v;
  }
  return 0.5 * k;
}

// Leapfrog, with the half steps of momentum between two position steps merged
// into one full step (one pass over the state fewer per step).
void Hmc::trajectory(int L, double eps) {
  lpn_ = lp_;
  for (int l = 0; l < L; ++l) {
    const double kick = l == 0 ? 0.5 * eps : eps;
    for_chains([&](long c) {
      const double* x = (l == 0 ? x_ : xn_).data() + c * D_;
      const double* g = (l == 0 ? grad_ : gn_).data() + c * D_;
      double* xn = xn_.data() + c * D_;
      double* p = p_.data() + c * D_;
      for (long i = 0; i < D_; ++i) {
        p[i] += kick * g[i];
        xn[i] = x[i] + eps * sd2_[i] * p[i];
      }
    });
    target_.log_density(xn_.data(), lpn_.data(), gn_.data());
  }
  for_chains([&](long c) {
    double* p = p_.data() + c * D_;
    const double* g = gn_.data() + c * D_;
    for (long i = 0; i < D_; ++i) p[i] += 0.5 * eps * g[i];
  });
}

double Hmc::find_reasonable_epsilon() {
  // Hoffman & Gelman (2014), algorithm 4, on the mean acceptance of all chains:
  // double or halve epsilon until one leapfrog step crosses acceptance 1/2.
  double eps = epsilon_;
  int direction = 0;
  for (int tries = 0; tries < 60; ++tries) {
    draw_momentum();
    std::vector<double> h0(C_);
    for (long c = 0; c < C_; ++c) h0[c] = -lp_[c] + kinetic(c, p_);
    trajectory(1, eps);
    double mean_accept = 0;
    for (long c = 0; c < C_; ++c) {
      const double log_a = h0[c] - (-lpn_[c] + kinetic(c, p_));
      mean_accept += std::isfinite(log_a) ? std::exp(std::fmin(0.0, log_a)) : 0.0;
    }
    mean_accept /= C_;
    const int want = mean_accept > 0.5 ? 1 : -1;
    if (direction == 0) direction = want;
    if (want != direction) break;
    const double next = direction > 0 ? eps * 2 : eps / 2;
    if (!(next > 1e-10 && next < 1e7)) break;
    eps = next;
  }
  return eps;
}

void Hmc::begin_warmup(long n) {
  warmup_total_ = n;
  warmup_done_ = 0;
  schedule_ = WarmupSchedule::make(n);
  next_window_ = 0;
  window_n_ = 0;
  window_mean_.assign(D_, 0);
  window_m2_.assign(D_, 0);
  if (n > 0) epsilon_ = find_reasonable_epsilon();
  dual_.restart(epsilon_);
}

void Hmc::iterate(bool warmup) {
  const int span = settings_.Lmax - settings_.Lmin + 1;
  int L = settings_.Lmin + static_cast<int>(run_stream_.uniform() * span);
  if (L > settings_.Lmax) L = settings_.Lmax;

  draw_momentum();
  std::vector<double> h0(C_), accept(C_);
  for_chains([&](long c) { h0[c] = -lp_[c] + kinetic(c, p_); });
  trajectory(L, epsilon_);

  for_chains([&](long c) {
    const double h1 = -lpn_[c] + kinetic(c, p_);
    double log_a = h0[c] - h1;
    const bool ok = std::isfinite(log_a) && std::fabs(log_a) < divergence_threshold;
    if (!ok) {
      ++bad_[c];
      log_a = -HUGE_VAL;
    }
    accept[c] = std::exp(std::fmin(0.0, log_a));
    Stream& s = chain_streams_[c];
    s.purpose = purpose_accept;
    if (ok && std::log(s.uniform()) < log_a) {
      ++accepted_[c];
      lp_[c] = lpn_[c];
      std::copy(xn_.begin() + c * D_, xn_.begin() + (c + 1) * D_, x_.begin() + c * D_);
      std::copy(gn_.begin() + c * D_, gn_.begin() + (c + 1) * D_, grad_.begin() + c * D_);
    }
  });
  double mean_accept = 0;
  for (long c = 0; c < C_; ++c) mean_accept += accept[c];
  mean_accept /= C_;

  if (!warmup || warmup_done_ >= warmup_total_) return;
  ++warmup_done_;
  epsilon_ = dual_.update(mean_accept);

  // Pool every chain's state into the current variance window (Welford).
  const bool in_window = next_window_ < schedule_.window_ends.size() &&
                         warmup_done_ > schedule_.first_window_start;
  if (in_window) {
    for (long c = 0; c < C_; ++c) {
      ++window_n_;
      for (long i = 0; i < D_; ++i) {
        const double v = x_[c * D_ + i], d = v - window_mean_[i];
        window_mean_[i] += d / window_n_;
        window_m2_[i] += d * (v - window_mean_[i]);
      }
    }
    if (warmup_done_ == schedule_.window_ends[next_window_]) {
      // Stan's regularisation towards 1e-3, so short windows cannot collapse a scale.
      const double n = static_cast<double>(window_n_);
      for (long i = 0; i < D_; ++i) {
        const double var = window_m2_[i] / (n - 1);
        sd_[i] = std::sqrt((n / (n + 5)) * var + 1e-3 * (5 / (n + 5)));
        sd2_[i] = sd_[i] * sd_[i];
      }
      ++next_window_;
      window_n_ = 0;
      window_mean_.assign(D_, 0);
      window_m2_.assign(D_, 0);
      epsilon_ = find_reasonable_epsilon();
      dual_.restart(epsilon_);
    }
  }
  if (warmup_done_ == warmup_total_) epsilon_ = dual_.final_epsilon();
}

}  // namespace lockstep
