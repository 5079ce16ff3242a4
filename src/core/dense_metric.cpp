// A dense metric as a change of variables (sampler/dense_metric.hpp).
#include "lockstep/sampler/dense_metric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lockstep {

bool cholesky_lower(double* a, long n) {
  for (long j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (long k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0) || !std::isfinite(d)) return false;
    const double ljj = std::sqrt(d);
    a[j * n + j] = ljj;
    for (long i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (long k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / ljj;
    }
    for (long k = j + 1; k < n; ++k) a[j * n + k] = 0;
  }
  return true;
}

DenseMetric::DenseMetric(Target& model, const std::vector<double>& factor)
    : model_(model), C_(model.chains()), D_(model.dim()) {
  if (D_ > max_dense_dim)
    throw std::invalid_argument(
        "a dense metric is for models with at most " + std::to_string(max_dense_dim) +
        " free parameters (it keeps chains x " + std::to_string(D_) + "^2 values and costs as "
        "many per gradient); this one has " + std::to_string(D_) + ": use the diagonal metric");
  const long DD = D_ * D_;
  L_.assign(C_ * DD, 0.0);
  if (factor.empty()) {
    for (long c = 0; c < C_; ++c)
      for (long i = 0; i < D_; ++i) L_[c * DD + i * D_ + i] = 1;
  } else if (static_cast<long>(factor.size()) == DD) {
    for (long c = 0; c < C_; ++c) std::copy(factor.begin(), factor.end(), L_.begin() + c * DD);
  } else if (static_cast<long>(factor.size()) == C_ * DD) {
    L_ = factor;
  } else {
    throw std::invalid_argument(
        "dense metric: the factor must have dim x dim values, or chains x dim x dim");
  }
  for (long c = 0; c < C_; ++c)
    for (long i = 0; i < D_; ++i) {
      const double* row = L_.data() + c * DD + i * D_;
      if (!(row[i] > 0) || !std::isfinite(row[i]))
        throw std::invalid_argument("dense metric: the factor's diagonal must be positive");
      for (long j = 0; j < D_; ++j)
        if (j > i ? row[j] != 0 : !std::isfinite(row[j]))
          throw std::invalid_argument(
              "dense metric: the factor must be lower triangular, with finite values");
    }
  x_.assign(C_ * D_, 0.0);
  gx_.assign(C_ * D_, 0.0);
}

void DenseMetric::to_model(const double* y, double* x, long rows) const {
  const long DD = D_ * D_;
  for (long r = 0; r < rows; ++r) {
    const double* L = L_.data() + (r % C_) * DD;
    const double* yr = y + r * D_;
    double* xr = x + r * D_;
    for (long i = 0; i < D_; ++i) {
      double s = 0;
      for (long j = 0; j <= i; ++j) s += L[i * D_ + j] * yr[j];
      xr[i] = s;
    }
  }
}

void DenseMetric::to_sampler(const double* x, double* y) const {
  const long DD = D_ * D_;
  for (long c = 0; c < C_; ++c) {
    const double* L = L_.data() + c * DD;
    const double* xc = x + c * D_;
    double* yc = y + c * D_;
    for (long i = 0; i < D_; ++i) {  // forward substitution
      double s = xc[i];
      for (long j = 0; j < i; ++j) s -= L[i * D_ + j] * yc[j];
      yc[i] = s / L[i * D_ + i];
    }
  }
}

void DenseMetric::log_density(const double* y, double* lp, double* grad) {
  to_model(y, x_.data(), C_);
  model_.log_density(x_.data(), lp, grad ? gx_.data() : nullptr);
  if (!grad) return;
  // dlp/dy = L' dlp/dx
  const long DD = D_ * D_;
  for (long c = 0; c < C_; ++c) {
    const double* L = L_.data() + c * DD;
    const double* g = gx_.data() + c * D_;
    double* out = grad + c * D_;
    for (long j = 0; j < D_; ++j) {
      double s = 0;
      for (long i = j; i < D_; ++i) s += L[i * D_ + j] * g[i];
      out[j] = s;
    }
  }
}

void DenseMetric::adapt(const double* m2, double n, bool pooled, double* y) {
  const long DD = D_ * D_;
  // the model's coordinates of the states, under the old factor
  std::vector<double> x(C_ * D_);
  to_model(y, x.data(), C_);
  std::vector<double> cov(DD), tmp(DD);
  for (long c = 0; c < C_; ++c) {
    if (pooled && c > 0) {
      std::copy(L_.begin(), L_.begin() + DD, L_.begin() + c * DD);
      continue;
    }
    const double* w = m2 + (pooled ? 0 : c * DD);
    const double* L = L_.data() + c * DD;
    // Sigma = L (m2 / (n - 1)) L', regularised towards 1e-3 I
    for (long i = 0; i < D_; ++i)
      for (long j = 0; j < D_; ++j) {
        double s = 0;
        for (long k = 0; k < D_; ++k) s += w[i * D_ + k] * L[j * D_ + k];  // (W L')[i, j]
        tmp[i * D_ + j] = s / (n - 1);
      }
    for (long i = 0; i < D_; ++i)
      for (long j = 0; j < D_; ++j) {
        double s = 0;
        for (long k = 0; k <= i; ++k) s += L[i * D_ + k] * tmp[k * D_ + j];
        cov[i * D_ + j] = s * (n / (n + 5));
      }
    // Stan's regularisation, relative to each variance (Stan adds 1e-3 to
    // every variance whatever its scale, which swamps the covariance of a
    // parameter whose posterior sd is 0.003), with a floor that keeps the
    // factor positive definite when a coordinate did not move
    for (long i = 0; i < D_; ++i)
      cov[i * D_ + i] += (5 / (n + 5)) * (1e-3 * cov[i * D_ + i] * (n + 5) / n + 1e-10);
    // symmetric to the last bit, then factored; a factor that fails (a
    // window too short for its dimension) keeps the previous one
    for (long i = 0; i < D_; ++i)
      for (long j = 0; j < i; ++j) cov[i * D_ + j] = cov[j * D_ + i] = 0.5 * (cov[i * D_ + j] + cov[j * D_ + i]);
    if (cholesky_lower(cov.data(), D_)) std::copy(cov.begin(), cov.end(), L_.begin() + c * DD);
  }
  to_sampler(x.data(), y);
}

}  // namespace lockstep
