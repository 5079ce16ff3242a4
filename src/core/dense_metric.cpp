// A dense metric as a change of variables (sampler/dense_metric.hpp).
#include "lockstep/sampler/dense_metric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "lockstep/math/eigen.hpp"
#include "lockstep/math/linalg.hpp"

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
  find_diagonal_factors();
}

DenseMetric::DenseMetric(std::unique_ptr<Target> model, const std::vector<double>& factor)
    : DenseMetric(*model, factor) {
  owned_ = std::move(model);
}

void DenseMetric::find_diagonal_factors() {
  const long DD = D_ * D_;
  diagonal_.assign(C_, 1);
  for (long c = 0; c < C_; ++c)
    for (long i = 0; i < D_ && diagonal_[c]; ++i)
      for (long j = 0; j < i; ++j)
        if (L_[c * DD + i * D_ + j] != 0) {
          diagonal_[c] = 0;
          break;
        }
}

void DenseMetric::set_factor(const double* factor) {
  std::copy(factor, factor + C_ * D_ * D_, L_.begin());
  find_diagonal_factors();
}

namespace {

// The smallest and largest eigenvalues of the symmetric [d, d] a, by the
// eigen op's Jacobi rotations (math/eigen.hpp): d is at most
// max_auto_dense_dim, and this runs a few times per metric window.
void eigen_range(const std::vector<double>& a, long d, double* lo, double* hi) {
  std::vector<double> y(d * (d + 1)), work(2 * d * d);
  sym_eigen_forward(a.data(), y.data(), work.data(), d);
  *hi = y[0];  // column 0: the eigenvalues, decreasing
  *lo = y[d - 1];
}

// The correlation matrix of cov, [d, d].
std::vector<double> correlations(const double* cov, long d) {
  std::vector<double> r(d * d);
  for (long i = 0; i < d; ++i)
    for (long j = 0; j < d; ++j)
      r[i * d + j] = cov[i * d + j] / std::sqrt(cov[i * d + i] * cov[j * d + j]);
  return r;
}

// L' a L for lower triangular L, all [d, d] row-major.
std::vector<double> congruence(const double* a, const double* L, long d) {
  std::vector<double> aL(d * d, 0.0), out(d * d, 0.0);
  for (long i = 0; i < d; ++i)
    for (long j = 0; j < d; ++j) {
      double s = 0;
      for (long k = j; k < d; ++k) s += a[i * d + k] * L[k * d + j];
      aL[i * d + j] = s;
    }
  for (long i = 0; i < d; ++i)
    for (long j = 0; j < d; ++j) {
      double s = 0;
      for (long k = i; k < d; ++k) s += L[k * d + i] * aL[k * d + j];
      out[i * d + j] = s;
    }
  return out;
}

}  // namespace

double DenseMetric::correlation_condition(const double* cov, long d) {
  double lo, hi;
  eigen_range(correlations(cov, d), d, &lo, &hi);
  return lo > 0 ? hi / lo : HUGE_VAL;
}

bool DenseMetric::dense_fits_gradients(const double* cov, const double* grad2, long d,
                                       double n) {
  // dense: L = chol(cov), whose L^-1 cov L^-T is the identity
  std::vector<double> L(cov, cov + d * d);
  if (!cholesky_lower(L.data(), d)) return false;
  double lo, dense_curvature, diagonal_curvature, r_lo, r_hi;
  eigen_range(congruence(grad2, L.data(), d), d, &lo, &dense_curvature);
  // diagonal: L = diag(sd), whose L^-1 cov L^-T is the correlation matrix
  std::vector<double> sd(d * d, 0.0);
  for (long i = 0; i < d; ++i) sd[i * d + i] = std::sqrt(cov[i * d + i]);
  eigen_range(congruence(grad2, sd.data(), d), d, &lo, &diagonal_curvature);
  eigen_range(correlations(cov, d), d, &r_lo, &r_hi);
  // each unevenness is 1 for a Gaussian: the diagonal's is its curvature times
  // r_hi over the correlations' condition number r_hi / r_lo
  return dense_curvature <= std::max(4 * chance_condition(d, n), 2 * diagonal_curvature * r_lo);
}

double DenseMetric::chance_condition(long d, double n) {
  const double r = std::sqrt(4.0 * d / n);
  if (!(r < 1)) return HUGE_VAL;
  return (1 + r) * (1 + r) / ((1 - r) * (1 - r));
}

bool DenseMetric::dense_is_worth_it(const double* cov, long d, double n) {
  if (d < 2 || !(n >= 4.0 * d)) return false;
  return correlation_condition(cov, d) > 4 * chance_condition(d, n);
}

void DenseMetric::to_model(const double* y, double* x, long rows) const {
  const long DD = D_ * D_;
  for (long r = 0; r < rows; ++r) {
    const double* L = L_.data() + (r % C_) * DD;
    const double* yr = y + r * D_;
    double* xr = x + r * D_;
    if (diagonal_[r % C_]) {
      for (long i = 0; i < D_; ++i) xr[i] = L[i * D_ + i] * yr[i];
      continue;
    }
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
    if (diagonal_[c]) {
      for (long i = 0; i < D_; ++i) yc[i] = xc[i] / L[i * D_ + i];
      continue;
    }
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
    if (diagonal_[c]) {
      for (long j = 0; j < D_; ++j) out[j] = L[j * D_ + j] * g[j];
      continue;
    }
    for (long j = 0; j < D_; ++j) {
      double s = 0;
      for (long i = j; i < D_; ++i) s += L[i * D_ + j] * g[i];
      out[j] = s;
    }
  }
}

void DenseMetric::adapt(const double* m2, double n, bool pooled, const double* g2, double* y) {
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
    // chosen automatically, the diagonal metric unless the correlations are
    // worth a dense one that the gradients say suits the whole posterior
    if (choice_ == Choice::automatic) {
      bool dense = dense_is_worth_it(cov.data(), D_, n);
      if (dense && g2) {
        // the gradients' second moments in the model's coordinates: dlp/dx =
        // L^-T dlp/dy, so L^-T (g2 / n) L^-1, by two triangular solves
        // (L, row-major lower, is L' column-major, as tri_solve() reads it;
        // g2 and the result are symmetric, so either layout)
        const double* gy = g2 + (pooled ? 0 : c * DD);
        std::vector<double> a(gy, gy + DD), gx(DD);
        for (double& v : a) v /= n;
        for (long j = 0; j < D_; ++j) tri_solve(L, a.data() + j * D_, D_, false, false);
        for (long i = 0; i < D_; ++i)  // L^-T (g2 / n), transposed: (g2 / n) L^-1
          for (long j = 0; j < D_; ++j) gx[i + j * D_] = a[j + i * D_];
        for (long j = 0; j < D_; ++j) tri_solve(L, gx.data() + j * D_, D_, false, false);
        dense = dense_fits_gradients(cov.data(), gx.data(), D_, n);
      }
      if (!dense)
        for (long i = 0; i < D_; ++i)
          for (long j = 0; j < D_; ++j)
            if (i != j) cov[i * D_ + j] = 0;
    }
    if (cholesky_lower(cov.data(), D_)) std::copy(cov.begin(), cov.end(), L_.begin() + c * DD);
  }
  find_diagonal_factors();
  to_sampler(x.data(), y);
}

}  // namespace lockstep
