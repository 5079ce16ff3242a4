// What the leapfrog samplers share (sampler/leapfrog_sampler.hpp).
#include "lockstep/sampler/leapfrog_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

namespace {
constexpr uint32_t run_stream_id = 0xFFFFFFFFu;
}

LeapfrogSampler::LeapfrogSampler(Target& target, double epsilon,
                                 const std::vector<double>& diag_sd, double target_accept,
                                 const std::vector<double>& init, uint32_t key0, uint32_t key1,
                                 const std::string& name, bool per_chain_metric)
    : target_(target), C_(target.chains()), D_(target.dim()),
      per_chain_metric_(per_chain_metric) {
  if (!(epsilon > 0)) throw std::invalid_argument(name + ": epsilon must be positive");
  if (!(target_accept > 0 && target_accept < 1))
    throw std::invalid_argument(name + ": the target acceptance must be between 0 and 1");
  if (static_cast<long>(init.size()) != C_ * D_)
    throw std::invalid_argument(name + ": initial values must have chains x dim elements");
  sd_.assign(C_ * D_, 1.0);
  if (diag_sd.size() == 1) {
    sd_.assign(C_ * D_, diag_sd[0]);
  } else if (static_cast<long>(diag_sd.size()) == D_) {
    for (long c = 0; c < C_; ++c) std::copy(diag_sd.begin(), diag_sd.end(), sd_.begin() + c * D_);
  } else if (static_cast<long>(diag_sd.size()) == C_ * D_) {
    sd_ = diag_sd;
  } else if (!diag_sd.empty()) {
    throw std::invalid_argument(
        name + ": diag_sd must have one value, one per free parameter, or one per chain and free "
               "parameter");
  }
  for (double s : sd_)
    if (!(s > 0)) throw std::invalid_argument(name + ": diag_sd must be positive");
  sd2_.resize(C_ * D_);
  for (long k = 0; k < C_ * D_; ++k) sd2_[k] = sd_[k] * sd_[k];
  dual_ = DualAveraging(target_accept);
  epsilon_ = epsilon;
  x_ = init;
  lp_.assign(C_, 0);
  grad_.assign(C_ * D_, 0);
  xn_ = x_;
  lpn_ = lp_;
  gn_ = grad_;
  accepted_.assign(C_, 0);
  bad_.assign(C_, 0);
  stats_.accept_stat.assign(C_, 0);
  stats_.n_leapfrog.assign(C_, 0);
  stats_.tree_depth.assign(C_, 0);
  stats_.divergent.assign(C_, 0);
  stats_.energy.assign(C_, 0);
  for (long c = 0; c < C_; ++c)
    chain_streams_.push_back(Stream{key0, key1, static_cast<uint32_t>(c), 0, 0});
  run_stream_ = Stream{key0, key1, run_stream_id, 0, 0};
  target_.log_density(x_.data(), lp_.data(), grad_.data());
  for (long c = 0; c < C_; ++c)
    if (!std::isfinite(lp_[c]))
      throw std::invalid_argument(name + ": the log density of chain " + std::to_string(c + 1) +
                                  " is not finite at its initial values");
}

void LeapfrogSampler::draw_momentum(std::vector<double>& p) {
  // p_i = n_i / sd_i
  p.resize(C_ * D_);
  for_chains([&](long c) {
    Stream& s = chain_streams_[c];
    s.purpose = purpose_momentum;
    const double* sd = chain_sd(c);
    for (long i = 0; i < D_; i += 2) {
      double a, b;
      s.normal2(&a, &b);
      p[c * D_ + i] = a / sd[i];
      if (i + 1 < D_) p[c * D_ + i + 1] = b / sd[i + 1];
    }
  });
}

double LeapfrogSampler::kinetic(long c, const double* p) const {
  const double* sd = chain_sd(c);
  double k = 0;
  for (long i = 0; i < D_; ++i) {
    const double v = p[i] * sd[i];
    k += v * v;
  }
  return 0.5 * k;
}

// Leapfrog, with the half steps of momentum between two position steps merged
// into one full step (one pass over the state fewer per step).
void LeapfrogSampler::trajectory(int L, double eps, std::vector<double>& p_all) {
  lpn_ = lp_;
  for (int l = 0; l < L; ++l) {
    const double kick = l == 0 ? 0.5 * eps : eps;
    for_chains([&](long c) {
      const double* x = (l == 0 ? x_ : xn_).data() + c * D_;
      const double* g = (l == 0 ? grad_ : gn_).data() + c * D_;
      double* xn = xn_.data() + c * D_;
      double* p = p_all.data() + c * D_;
      const double* m = inverse_mass(c);
      for (long i = 0; i < D_; ++i) {
        p[i] += kick * g[i];
        xn[i] = x[i] + eps * m[i] * p[i];
      }
    });
    target_.log_density(xn_.data(), lpn_.data(), gn_.data());
  }
  for_chains([&](long c) {
    double* p = p_all.data() + c * D_;
    const double* g = gn_.data() + c * D_;
    for (long i = 0; i < D_; ++i) p[i] += 0.5 * eps * g[i];
  });
}

double LeapfrogSampler::metropolis_step(long c, double h0, double h1, int L) {
  double log_a = h0 - h1;
  const bool ok = std::isfinite(log_a) && std::fabs(log_a) < divergence_threshold;
  if (!ok) {
    ++bad_[c];
    log_a = -HUGE_VAL;
  }
  const double a = std::exp(std::fmin(0.0, log_a));
  stats_.accept_stat[c] = a;
  stats_.n_leapfrog[c] = L;
  stats_.divergent[c] = ok ? 0 : 1;
  Stream& s = chain_streams_[c];
  s.purpose = purpose_accept;
  if (ok && std::log(s.uniform()) < log_a) {
    ++accepted_[c];
    lp_[c] = lpn_[c];
    std::copy(xn_.begin() + c * D_, xn_.begin() + (c + 1) * D_, x_.begin() + c * D_);
    std::copy(gn_.begin() + c * D_, gn_.begin() + (c + 1) * D_, grad_.begin() + c * D_);
    stats_.energy[c] = h1;
  } else {
    stats_.energy[c] = h0;
  }
  return a;
}

double LeapfrogSampler::find_reasonable_epsilon() {
  // Hoffman & Gelman (2014), algorithm 4, on the mean acceptance of all chains,
  // with Stan's threshold (its init_stepsize): double or halve epsilon until
  // a short trajectory crosses acceptance 0.8; four leapfrog steps rather than
  // one: beyond the leapfrog's stability limit (2 sd for a Gaussian) the
  // energy error grows geometrically with the steps, but one step can still
  // look acceptable, and a step chosen there makes every long trajectory
  // diverge.
  double eps = epsilon_;
  int direction = 0;
  std::vector<double> p;
  for (int tries = 0; tries < 60; ++tries) {
    draw_momentum(p);
    std::vector<double> h0(C_);
    for (long c = 0; c < C_; ++c) h0[c] = -lp_[c] + kinetic(c, p.data() + c * D_);
    trajectory(4, eps, p);
    double mean_accept = 0;
    for (long c = 0; c < C_; ++c) {
      const double log_a = h0[c] - (-lpn_[c] + kinetic(c, p.data() + c * D_));
      mean_accept += std::isfinite(log_a) ? std::exp(std::fmin(0.0, log_a)) : 0.0;
    }
    mean_accept /= C_;
    const int want = mean_accept > 0.8 ? 1 : -1;
    if (direction == 0) direction = want;
    if (want != direction) {
      // Going up, this step is the first that is too large: keep the last
      // acceptable one (Stan keeps the first too large, and leaves the rest
      // to dual averaging, which a short warmup may not have time for).
      if (direction > 0) eps /= 2;
      break;
    }
    const double next = direction > 0 ? eps * 2 : eps / 2;
    if (!(next > 1e-10 && next < 1e7)) break;
    eps = next;
  }
  return eps;
}

void LeapfrogSampler::begin_warmup(long n) {
  warmup_total_ = n;
  warmup_done_ = 0;
  schedule_ = WarmupSchedule::make(n);
  next_window_ = 0;
  window_n_ = 0;
  const long rows = per_chain_metric_ ? C_ : 1;
  window_mean_.assign(rows * D_, 0);
  window_m2_.assign(rows * D_, 0);
  if (n > 0) epsilon_ = find_reasonable_epsilon();
  restart_epsilon_ = epsilon_;
  dual_.restart(epsilon_);
}

void LeapfrogSampler::iterate(bool warmup) {
  adapting_ = warmup && warmup_done_ < warmup_total_;
  transition();
  if (adapting_) adapt();
}

double LeapfrogSampler::pooled_accept() const {
  double mean_accept = 0;
  for (long c = 0; c < C_; ++c) mean_accept += stats_.accept_stat[c];
  return mean_accept / C_;
}

void LeapfrogSampler::adapt() {
  const double mean_accept = pooled_accept();
  ++warmup_done_;
  if (adapt_step_size_) epsilon_ = dual_.update(mean_accept);

  // Add the chains' states to the current variance window (Welford): pooled,
  // every chain's state in turn into one [dim] window; per chain, each
  // chain's into its own row.
  const bool in_window = next_window_ < schedule_.window_ends.size() &&
                         warmup_done_ > schedule_.first_window_start;
  if (in_window) {
    if (per_chain_metric_) {
      ++window_n_;
      const double n = static_cast<double>(window_n_);
      for_chains([&](long c) {
        double *mean = window_mean_.data() + c * D_, *m2 = window_m2_.data() + c * D_;
        const double* x = x_.data() + c * D_;
        for (long i = 0; i < D_; ++i) {
          const double d = x[i] - mean[i];
          mean[i] += d / n;
          m2[i] += d * (x[i] - mean[i]);
        }
      });
    } else {
      for (long c = 0; c < C_; ++c) {
        ++window_n_;
        for (long i = 0; i < D_; ++i) {
          const double v = x_[c * D_ + i], d = v - window_mean_[i];
          window_mean_[i] += d / window_n_;
          window_m2_[i] += d * (v - window_mean_[i]);
        }
      }
    }
    if (warmup_done_ == schedule_.window_ends[next_window_]) {
      const double n = static_cast<double>(window_n_);
      if (per_chain_metric_) {
        for (long c = 0; c < C_; ++c) set_metric_row(c, window_m2_.data() + c * D_, n);
      } else {
        set_metric_row(0, window_m2_.data(), n);
        for (long c = 1; c < C_; ++c) {
          std::copy(sd_.begin(), sd_.begin() + D_, sd_.begin() + c * D_);
          std::copy(sd2_.begin(), sd2_.begin() + D_, sd2_.begin() + c * D_);
        }
      }
      ++metric_version_;
      ++next_window_;
      window_n_ = 0;
      std::fill(window_mean_.begin(), window_mean_.end(), 0.0);
      std::fill(window_m2_.begin(), window_m2_.end(), 0.0);
      epsilon_ = restart_epsilon_ = find_reasonable_epsilon();
      dual_.restart(epsilon_);
    }
  }
  if (warmup_done_ == warmup_total_) {
    // Dual averaging's average is dominated by its first iterates, which
    // explore around 10x the restart value (mu = log(10 epsilon)): after
    // fewer than 10 updates since the last restart (a very short warmup), the
    // restart value itself, which is about right, is the better choice.
    if (adapt_step_size_)
      epsilon_ = dual_.count() >= 10 ? dual_.final_epsilon() : restart_epsilon_;
  }
}

void LeapfrogSampler::set_metric_row(long c, const double* m2, double n) {
  // Stan's regularisation towards 1e-3, so short windows cannot collapse a scale.
  double *sd = sd_.data() + c * D_, *sd2 = sd2_.data() + c * D_;
  for (long i = 0; i < D_; ++i) {
    const double var = m2[i] / (n - 1);
    sd[i] = std::sqrt((n / (n + 5)) * var + 1e-3 * (5 / (n + 5)));
    sd2[i] = sd[i] * sd[i];
  }
}

}  // namespace lockstep
