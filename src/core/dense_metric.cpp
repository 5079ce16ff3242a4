// A dense metric as a change of variables (sampler/dense_metric.hpp).
#include "lockstep/sampler/dense_metric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "lockstep/math/eigen.hpp"
#include "lockstep/math/linalg.hpp"
#include "lockstep/sampler/chain_vectors.hpp"

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

DenseMetric::DenseMetric(Target& model, const std::vector<double>& factor,
                         std::vector<long> dense, const std::vector<double>& scale)
    : model_(model), C_(model.chains()), D_(model.dim()), dense_(std::move(dense)) {
  if (dense_.empty()) {
    dense_.resize(D_);
    for (long i = 0; i < D_; ++i) dense_[i] = i;
  }
  for (size_t k = 0; k < dense_.size(); ++k)
    if (dense_[k] < 0 || dense_[k] >= D_ || (k > 0 && dense_[k] <= dense_[k - 1]))
      throw std::invalid_argument(
          "dense metric: its coordinates must be increasing and within the model's");
  G_ = static_cast<long>(dense_.size());
  for (long i = 0, k = 0; i < D_; ++i) {
    if (k < G_ && dense_[k] == i) {
      ++k;
      continue;
    }
    rest_.push_back(i);
  }
  if (G_ > max_dense_dim)
    throw std::invalid_argument(
        G_ == D_
            ? "a dense metric is for models with at most " + std::to_string(max_dense_dim) +
                  " free parameters (it keeps chains x " + std::to_string(D_) +
                  "^2 values and costs as many per gradient); this one has " +
                  std::to_string(D_) + ": use the diagonal metric"
            : "a dense metric covers at most " + std::to_string(max_dense_dim) +
                  " parameters (it keeps chains x their number squared); this model has " +
                  std::to_string(G_) + " global ones: use the diagonal metric");
  const long GG = G_ * G_;
  L_.assign(C_ * GG, 0.0);
  if (factor.empty()) {
    for (long c = 0; c < C_; ++c)
      for (long i = 0; i < G_; ++i) L_[c * GG + i * G_ + i] = 1;
  } else if (static_cast<long>(factor.size()) == GG) {
    for (long c = 0; c < C_; ++c) std::copy(factor.begin(), factor.end(), L_.begin() + c * GG);
  } else if (static_cast<long>(factor.size()) == C_ * GG) {
    L_ = factor;
  } else {
    throw std::invalid_argument(
        "dense metric: the factor must have g x g values, or chains x g x g, for its g "
        "coordinates (" + std::to_string(G_) + ")");
  }
  for (long c = 0; c < C_; ++c)
    for (long i = 0; i < G_; ++i) {
      const double* row = L_.data() + c * GG + i * G_;
      if (!(row[i] > 0) || !std::isfinite(row[i]))
        throw std::invalid_argument("dense metric: the factor's diagonal must be positive");
      for (long j = 0; j < G_; ++j)
        if (j > i ? row[j] != 0 : !std::isfinite(row[j]))
          throw std::invalid_argument(
              "dense metric: the factor must be lower triangular, with finite values");
    }
  scale_.assign(C_ * D_, 1.0);
  if (static_cast<long>(scale.size()) == D_) {
    for (long c = 0; c < C_; ++c) std::copy(scale.begin(), scale.end(), scale_.begin() + c * D_);
  } else if (static_cast<long>(scale.size()) == C_ * D_) {
    scale_ = scale;
  } else if (!scale.empty()) {
    throw std::invalid_argument("dense metric: the scales must have dim values, or chains x dim");
  }
  for (long c = 0; c < C_; ++c)
    for (long i : rest_)
      if (!(scale_[c * D_ + i] > 0) || !std::isfinite(scale_[c * D_ + i]))
        throw std::invalid_argument("dense metric: the scales must be positive and finite");
  x_.assign(C_ * D_, 0.0);
  gx_.assign(C_ * D_, 0.0);
  find_diagonal_factors();
}

DenseMetric::DenseMetric(std::unique_ptr<Target> model, const std::vector<double>& factor,
                         std::vector<long> dense, const std::vector<double>& scale)
    : DenseMetric(*model, factor, std::move(dense), scale) {
  owned_ = std::move(model);
}

void DenseMetric::set_factors(const std::vector<double>& factor,
                              const std::vector<double>& scale) {
  if (factor.size() != L_.size() || scale.size() != scale_.size())
    throw std::invalid_argument("a saved dense metric has another shape than this sampler's");
  L_ = factor;
  scale_ = scale;
  find_diagonal_factors();
}

void DenseMetric::find_diagonal_factors() {
  const long GG = G_ * G_;
  diagonal_.assign(C_, 1);
  for (long c = 0; c < C_; ++c)
    for (long i = 0; i < G_ && diagonal_[c]; ++i)
      for (long j = 0; j < i; ++j)
        if (L_[c * GG + i * G_ + j] != 0) {
          diagonal_[c] = 0;
          break;
        }
}

void DenseMetric::take_chains(const DenseMetric& whole, long c0) {
  if (whole.G_ != G_ || whole.D_ != D_ || c0 < 0 || c0 + C_ > whole.C_)
    throw std::invalid_argument("dense metric: a chain group's metric must be over its sampler's");
  const long GG = G_ * G_;
  std::copy(whole.L_.begin() + c0 * GG, whole.L_.begin() + (c0 + C_) * GG, L_.begin());
  std::copy(whole.scale_.begin() + c0 * D_, whole.scale_.begin() + (c0 + C_) * D_, scale_.begin());
  find_diagonal_factors();
}

std::vector<double> DenseMetric::model_sd() const {
  std::vector<double> sd(scale_);
  const long GG = G_ * G_;
  for (long c = 0; c < C_; ++c)
    for (long i = 0; i < G_; ++i) {
      const double* row = L_.data() + c * GG + i * G_;
      double s = 0;
      for (long j = 0; j <= i; ++j) s += row[j] * row[j];
      sd[c * D_ + dense_[i]] = std::sqrt(s);
    }
  return sd;
}

namespace {

// Host vectors whose per-chain sums are made whole over a target's parts
// (a rank's slice of the state, owned_shard.hpp).
class SummedOverParts final : public ForwardingChainVectors {
 public:
  SummedOverParts(std::unique_ptr<ChainVectors> inner, Target& parts)
      : ForwardingChainVectors(std::move(inner)), parts_(parts) {}

 private:
  void combine_sums(double* out, long n) override { parts_.sum_over_parts(out, n); }
  Target& parts_;
};

}  // namespace

std::unique_ptr<ChainVectors> DenseMetric::vectors() {
  std::unique_ptr<ChainVectors> host = Target::vectors();
  if (!model_.full_index()) return host;
  auto v = std::make_unique<SummedOverParts>(std::move(host), model_);
  v->count_from(model_.counted_from());
  v->map_coordinates(*model_.full_index(), model_.full_dim());
  return v;
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

// Every chain's dense block is gathered to contiguous scratch and scattered
// back (a copy where it covers every coordinate), so that the triangular
// products run over contiguous rows.
void DenseMetric::to_model(const double* y, double* x, long rows) const {
  const long GG = G_ * G_;
  std::vector<double> yg(G_);
  for (long r = 0; r < rows; ++r) {
    const long c = r % C_;
    const double* L = L_.data() + c * GG;
    const double* yr = y + r * D_;
    double* xr = x + r * D_;
    for (long i : rest_) xr[i] = scale_[c * D_ + i] * yr[i];
    for (long k = 0; k < G_; ++k) yg[k] = yr[dense_[k]];
    if (diagonal_[c]) {
      for (long i = 0; i < G_; ++i) xr[dense_[i]] = L[i * G_ + i] * yg[i];
      continue;
    }
    for (long i = 0; i < G_; ++i) {
      double s = 0;
      for (long j = 0; j <= i; ++j) s += L[i * G_ + j] * yg[j];
      xr[dense_[i]] = s;
    }
  }
}

void DenseMetric::to_sampler(const double* x, double* y) const {
  const long GG = G_ * G_;
  std::vector<double> xg(G_), yg(G_);
  for (long c = 0; c < C_; ++c) {
    const double* L = L_.data() + c * GG;
    const double* xc = x + c * D_;
    double* yc = y + c * D_;
    for (long i : rest_) yc[i] = xc[i] / scale_[c * D_ + i];
    for (long k = 0; k < G_; ++k) xg[k] = xc[dense_[k]];
    if (diagonal_[c]) {
      for (long i = 0; i < G_; ++i) yg[i] = xg[i] / L[i * G_ + i];
    } else {
      for (long i = 0; i < G_; ++i) {  // forward substitution
        double s = xg[i];
        for (long j = 0; j < i; ++j) s -= L[i * G_ + j] * yg[j];
        yg[i] = s / L[i * G_ + i];
      }
    }
    for (long k = 0; k < G_; ++k) yc[dense_[k]] = yg[k];
  }
}

void DenseMetric::log_density(const double* y, double* lp, double* grad) {
  to_model(y, x_.data(), C_);
  model_.log_density(x_.data(), lp, grad ? gx_.data() : nullptr);
  if (!grad) return;
  // dlp/dy = L' dlp/dx
  const long GG = G_ * G_;
  std::vector<double> gg(G_);
  for (long c = 0; c < C_; ++c) {
    const double* L = L_.data() + c * GG;
    const double* g = gx_.data() + c * D_;
    double* out = grad + c * D_;
    for (long i : rest_) out[i] = scale_[c * D_ + i] * g[i];
    for (long k = 0; k < G_; ++k) gg[k] = g[dense_[k]];
    if (diagonal_[c]) {
      for (long j = 0; j < G_; ++j) out[dense_[j]] = L[j * G_ + j] * gg[j];
      continue;
    }
    for (long j = 0; j < G_; ++j) {
      double s = 0;
      for (long i = j; i < G_; ++i) s += L[i * G_ + j] * gg[i];
      out[dense_[j]] = s;
    }
  }
}

void DenseMetric::adapt(const double* m2, double n, bool pooled, const double* g2, double* y,
                        const double* rest_m2) {
  const long GG = G_ * G_;
  if (!rest_.empty() && !rest_m2)
    throw std::invalid_argument("dense metric: adapt() needs the other coordinates' sums");
  // the model's coordinates of the states, under the old factor
  std::vector<double> x(C_ * D_);
  to_model(y, x.data(), C_);
  std::vector<double> cov(GG), tmp(GG);
  for (long c = 0; c < C_; ++c) {
    if (pooled && c > 0) {
      std::copy(L_.begin(), L_.begin() + GG, L_.begin() + c * GG);
      std::copy(scale_.begin(), scale_.begin() + D_, scale_.begin() + c * D_);
      continue;
    }
    // the other coordinates' variances, regularised as the dense ones'
    // diagonal is below (x_i = s_i y_i)
    for (long i : rest_) {
      double& s = scale_[c * D_ + i];
      double v = s * s * rest_m2[(pooled ? 0 : c * D_) + i] / (n - 1) * (n / (n + 5));
      v += (5 / (n + 5)) * (1e-3 * v * (n + 5) / n + 1e-10);
      if (v > 0 && std::isfinite(v)) s = std::sqrt(v);
    }
    const double* w = m2 + (pooled ? 0 : c * GG);
    const double* L = L_.data() + c * GG;
    // Sigma = L (m2 / (n - 1)) L', regularised towards 1e-3 I
    for (long i = 0; i < G_; ++i)
      for (long j = 0; j < G_; ++j) {
        double s = 0;
        for (long k = 0; k < G_; ++k) s += w[i * G_ + k] * L[j * G_ + k];  // (W L')[i, j]
        tmp[i * G_ + j] = s / (n - 1);
      }
    for (long i = 0; i < G_; ++i)
      for (long j = 0; j < G_; ++j) {
        double s = 0;
        for (long k = 0; k <= i; ++k) s += L[i * G_ + k] * tmp[k * G_ + j];
        cov[i * G_ + j] = s * (n / (n + 5));
      }
    // Stan's regularisation, relative to each variance (Stan adds 1e-3 to
    // every variance whatever its scale, which swamps the covariance of a
    // parameter whose posterior sd is 0.003), with a floor that keeps the
    // factor positive definite when a coordinate did not move
    for (long i = 0; i < G_; ++i)
      cov[i * G_ + i] += (5 / (n + 5)) * (1e-3 * cov[i * G_ + i] * (n + 5) / n + 1e-10);
    // symmetric to the last bit, then factored; a factor that fails (a
    // window too short for its dimension) keeps the previous one
    for (long i = 0; i < G_; ++i)
      for (long j = 0; j < i; ++j) cov[i * G_ + j] = cov[j * G_ + i] = 0.5 * (cov[i * G_ + j] + cov[j * G_ + i]);
    // chosen automatically, the diagonal metric unless the correlations are
    // worth a dense one that the gradients say suits the whole posterior
    if (choice_ == Choice::automatic) {
      bool dense = dense_is_worth_it(cov.data(), G_, n);
      if (dense && g2) {
        // the gradients' second moments in the model's coordinates: dlp/dx =
        // L^-T dlp/dy, so L^-T (g2 / n) L^-1, by two triangular solves
        // (L, row-major lower, is L' column-major, as tri_solve() reads it;
        // g2 and the result are symmetric, so either layout)
        const double* gy = g2 + (pooled ? 0 : c * GG);
        std::vector<double> a(gy, gy + GG), gx(GG);
        for (double& v : a) v /= n;
        for (long j = 0; j < G_; ++j) tri_solve(L, a.data() + j * G_, G_, false, false);
        for (long i = 0; i < G_; ++i)  // L^-T (g2 / n), transposed: (g2 / n) L^-1
          for (long j = 0; j < G_; ++j) gx[i + j * G_] = a[j + i * G_];
        for (long j = 0; j < G_; ++j) tri_solve(L, gx.data() + j * G_, G_, false, false);
        dense = dense_fits_gradients(cov.data(), gx.data(), G_, n);
      }
      if (!dense)
        for (long i = 0; i < G_; ++i)
          for (long j = 0; j < G_; ++j)
            if (i != j) cov[i * G_ + j] = 0;
    }
    if (cholesky_lower(cov.data(), G_)) std::copy(cov.begin(), cov.end(), L_.begin() + c * GG);
  }
  find_diagonal_factors();
  to_sampler(x.data(), y);
}

}  // namespace lockstep
