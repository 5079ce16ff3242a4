// Analytic targets and a run loop shared by the sampler tests (test_hmc.cpp,
// test_nuts.cpp).
//
// Monte Carlo bounds used with them: with n draws pooled over chains, the
// effective sample size is taken conservatively as n / 10, and a mean must lie
// within 5 sd / sqrt(n_eff) of the truth, a variance within 5 sqrt(2 / n_eff)
// of it (relative).
#ifndef LOCKSTEP_TESTS_SAMPLER_HELPERS_HPP
#define LOCKSTEP_TESTS_SAMPLER_HELPERS_HPP

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "lockstep/executor.hpp"

namespace sampler_tests {

using lockstep::Target;

constexpr long n_chains = 4;

// Independent Gaussians whose means and scales differ from chain to chain
// (mu and sd [chains, dim]): each chain samples its own target, as chains
// stuck in different modes of one posterior would; for per-chain metrics.
class PerChainGaussian : public Target {
 public:
  PerChainGaussian(std::vector<double> mu, std::vector<double> sd, long chains)
      : mu_(std::move(mu)), sd_(std::move(sd)), chains_(chains) {}
  long dim() const override { return static_cast<long>(mu_.size()) / chains_; }
  long chains() const override { return chains_; }
  void log_density(const double* x, double* lp, double* grad) override {
    const long D = dim();
    for (long c = 0; c < chains_; ++c) {
      lp[c] = 0;
      for (long i = 0; i < D; ++i) {
        const long k = c * D + i;
        const double z = (x[k] - mu_[k]) / sd_[k];
        lp[c] -= 0.5 * z * z;
        if (grad) grad[k] = -z / sd_[k];
      }
    }
  }

 private:
  std::vector<double> mu_, sd_;
  long chains_;
};

// Independent Gaussians with their own means and scales, for every chain.
class IndependentGaussian : public PerChainGaussian {
 public:
  IndependentGaussian(const std::vector<double>& mu, const std::vector<double>& sd, long chains)
      : PerChainGaussian(each_chain(mu, chains), each_chain(sd, chains), chains) {}

 private:
  static std::vector<double> each_chain(const std::vector<double>& x, long chains) {
    std::vector<double> out;
    for (long c = 0; c < chains; ++c) out.insert(out.end(), x.begin(), x.end());
    return out;
  }
};

// A correlated bivariate Gaussian.
class CorrelatedGaussian : public Target {
 public:
  CorrelatedGaussian(double m1, double m2, double s1, double s2, double rho, long chains)
      : m1_(m1), m2_(m2), s1_(s1), s2_(s2), rho_(rho), chains_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return chains_; }
  void log_density(const double* x, double* lp, double* grad) override {
    const double k = 1 / (1 - rho_ * rho_);
    for (long c = 0; c < chains_; ++c) {
      const double a = (x[2 * c] - m1_) / s1_, b = (x[2 * c + 1] - m2_) / s2_;
      lp[c] = -0.5 * k * (a * a - 2 * rho_ * a * b + b * b);
      if (grad) {
        grad[2 * c] = -k * (a - rho_ * b) / s1_;
        grad[2 * c + 1] = -k * (b - rho_ * a) / s2_;
      }
    }
  }

 private:
  double m1_, m2_, s1_, s2_, rho_;
  long chains_;
};

// A target whose log density is -Inf (or NaN) in one chain at the start.
class BadStart : public Target {
 public:
  explicit BadStart(double bad) : bad_(bad) {}
  long dim() const override { return 1; }
  long chains() const override { return n_chains; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < n_chains; ++c) {
      lp[c] = c == 2 ? bad_ : -0.5 * x[c] * x[c];
      if (grad) grad[c] = -x[c];
    }
  }

 private:
  double bad_;
};

struct Run {
  std::vector<double> draws;  // [iteration, chain, dim]
  std::vector<double> diag_sd;  // [chains, dim]
  double epsilon;
  long accepted_in_sampling;
};

// Warmup, then n iterations of a leapfrog sampler (Hmc, Nuts) with its
// settings (and a check that cuts its trajectories short, if any).
template <class Sampler, class Settings>
Run run_sampler(Target& t, Settings s, long warmup, long n, uint32_t k0 = 1, uint32_t k1 = 2,
                double init_spread = 1, bool (*cut_check)() = nullptr) {
  const long C = t.chains(), D = t.dim();
  std::vector<double> init(C * D);
  for (long k = 0; k < C * D; ++k) init[k] = init_spread * std::sin(1.7 * k + 0.3);
  Sampler h(t, s, init, k0, k1);
  h.set_cut_check(cut_check);
  h.begin_warmup(warmup);
  for (long i = 0; i < warmup; ++i) h.iterate(true);
  long before = 0;
  for (long a : h.accepted()) before += a;
  Run r;
  r.draws.reserve(n * C * D);
  for (long i = 0; i < n; ++i) {
    h.iterate(false);
    r.draws.insert(r.draws.end(), h.state().begin(), h.state().end());
  }
  long after = 0;
  for (long a : h.accepted()) after += a;
  r.accepted_in_sampling = after - before;
  r.diag_sd = h.diag_sd();
  r.epsilon = h.epsilon();
  return r;
}

// Pooled mean and variance of coordinate i over all iterations and chains.
inline void moments(const Run& r, long D, long i, double* mean, double* var) {
  const long m = static_cast<long>(r.draws.size()) / D;
  double s = 0, s2 = 0;
  for (long k = 0; k < m; ++k) s += r.draws[k * D + i];
  *mean = s / m;
  for (long k = 0; k < m; ++k) s2 += (r.draws[k * D + i] - *mean) * (r.draws[k * D + i] - *mean);
  *var = s2 / (m - 1);
}

// Mean and variance of coordinate i of chain c alone.
inline void chain_moments(const Run& r, long C, long D, long c, long i, double* mean,
                          double* var) {
  const long m = static_cast<long>(r.draws.size()) / (C * D);
  double s = 0, s2 = 0;
  for (long k = 0; k < m; ++k) s += r.draws[(k * C + c) * D + i];
  *mean = s / m;
  for (long k = 0; k < m; ++k) {
    const double d = r.draws[(k * C + c) * D + i] - *mean;
    s2 += d * d;
  }
  *var = s2 / (m - 1);
}

// A sampler's draws, log densities and leapfrog steps over `warmup` adapting
// iterations (the step size search, dual averaging, the metric's window sums
// and ChEES's trajectory length) and five more, on one target, then its step
// size: per iteration chains x dim states, chains log densities and chains
// step counts, and one value at the end. For comparing the same sampler on
// two backends or two kinds of vectors.
template <class Sampler, class Settings>
std::vector<double> sampler_trace(Target& target, const Settings& s,
                                  const std::vector<double>& init, int warmup, uint32_t key0,
                                  uint32_t key1) {
  Sampler sampler(target, s, init, key0, key1);
  sampler.begin_warmup(warmup);
  std::vector<double> out;
  for (int i = 0; i < warmup + 5; ++i) {
    sampler.iterate(i < warmup);
    out.insert(out.end(), sampler.state().begin(), sampler.state().end());
    out.insert(out.end(), sampler.log_density().begin(), sampler.log_density().end());
    for (long c = 0; c < target.chains(); ++c) out.push_back(sampler.last().n_leapfrog[c]);
  }
  out.push_back(sampler.epsilon());
  return out;
}

}  // namespace sampler_tests

#endif
