// A dense metric (Stan's dense_e) as a change of variables.
//
// Leapfrog dynamics with the inverse mass matrix Sigma = L L' in the model's
// coordinates x are the dynamics with the identity in y = L^-1 x: momenta,
// kinetic energy, U-turn criteria and Metropolis steps are the same numbers
// either way. So a sampler with a dense metric samples y through this
// target, which maps each chain's y to x = L y for the model and the model's
// gradient back to L' dlp/dx, and keeps a unit diagonal metric of its own:
// every leapfrog sampler, every backend's vector operations and the fused
// NUTS leaf work unchanged, and the cost is two triangular products per
// gradient (C x D^2), small beside the gradient of a model small enough to
// want a dense metric. Warmup (LeapfrogSampler::adapt()) estimates the
// covariance of the draws of each metric window, as Stan does, and moves
// the chains' states to the new coordinates (adapt()); draws leave the
// sampler through to_model().
//
// The factor is per chain ([chains, dim, dim], row-major lower triangles);
// pooled, every chain's is the same.
#ifndef LOCKSTEP_SAMPLER_DENSE_METRIC_HPP
#define LOCKSTEP_SAMPLER_DENSE_METRIC_HPP

#include <vector>

#include "../executor.hpp"

namespace lockstep {

// The most free parameters a dense metric takes: its factor is chains x D^2
// values and each gradient costs as many multiply-adds.
constexpr long max_dense_dim = 2000;

class DenseMetric final : public Target {
 public:
  // model: the model's target; factor: empty (the identity), one dim x dim
  // lower triangle (row-major) for every chain, or one per chain.
  DenseMetric(Target& model, const std::vector<double>& factor = {});

  long dim() const override { return D_; }
  long chains() const override { return C_; }
  void log_density(const double* y, double* lp, double* grad) override;
  ThreadPool* pool() override { return model_.pool(); }

  // x = L y for `rows` rows of y ([rows, dim]; row r is chain r % chains).
  void to_model(const double* y, double* x, long rows) const;
  // y = L^-1 x for every chain.
  void to_sampler(const double* x, double* y) const;
  // From the co-moments of a metric window's draws y (m2: [dim, dim] row
  // major, pooled, or [chains, dim, dim] per chain, over n draws), the
  // model's covariance S = L cov(y) L', regularised as Stan regularises it
  // but relative to each variance, (n / (n + 5)) S + (5 / (n + 5))
  // (1e-3 diag(S) + 1e-10 I), is the new Sigma = L L' (Stan's 1e-3 I, the
  // same for every scale, would swamp the covariance of a parameter whose
  // posterior sd is 0.003: the correlations a dense metric is for would be
  // lost); the chains' states y ([chains, dim]) move to the new coordinates.
  void adapt(const double* m2, double n, bool pooled, double* y);
  // [chains, dim, dim]: each chain's factor.
  const std::vector<double>& factor() const { return L_; }

 private:
  Target& model_;
  long C_, D_;
  std::vector<double> L_;       // [chains, dim, dim], lower triangles, row-major
  std::vector<double> x_, gx_;  // scratch, [chains, dim]
};

// The lower Cholesky factor of the symmetric positive definite [n, n]
// (row-major) a, in place (the upper triangle set to zero); false if a is
// not positive definite.
bool cholesky_lower(double* a, long n);

}  // namespace lockstep

#endif
