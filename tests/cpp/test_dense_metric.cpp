// A dense metric as a change of variables (sampler/dense_metric.hpp): the
// wrapped target's log density and gradient against the model's and finite
// differences, the maps between coordinates, the adapted factor against the
// regularised covariance, and NUTS, HMC and ChEES sampling a strongly
// correlated Gaussian with it.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/dense_metric.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "sampler_helpers.hpp"

using lockstep::DenseMetric;
using sampler_tests::CorrelatedGaussian;

namespace {

// A random lower factor per chain with a positive diagonal, [chains, D, D].
std::vector<double> random_factor(std::mt19937& rng, long chains, long D) {
  std::normal_distribution<double> n(0, 0.7);
  std::vector<double> L(chains * D * D, 0.0);
  for (long c = 0; c < chains; ++c)
    for (long i = 0; i < D; ++i)
      for (long j = 0; j <= i; ++j)
        L[c * D * D + i * D + j] = i == j ? 0.5 + std::fabs(n(rng)) : n(rng);
  return L;
}

// A sampler's draws mapped to the model's coordinates: warmup, then n kept
// iterations ([n, chains, dim]), and the mean leapfrog steps per iteration.
template <class Sampler, class Settings>
std::vector<double> dense_draws(lockstep::Target& model, Settings s, long warmup, long n,
                                double* steps) {
  const long C = model.chains(), D = model.dim();
  DenseMetric metric(model);
  std::vector<double> x0(C * D), y0(C * D);
  for (long k = 0; k < C * D; ++k) x0[k] = std::sin(1.7 * k + 0.3);
  metric.to_sampler(x0.data(), y0.data());
  Sampler sampler(metric, s, y0, 3, 4);
  sampler.use_dense_metric(metric);
  sampler.begin_warmup(warmup);
  for (long i = 0; i < warmup; ++i) sampler.iterate(true);
  std::vector<double> out(n * C * D);
  double total = 0;
  for (long i = 0; i < n; ++i) {
    sampler.iterate(false);
    sampler.to_model(sampler.state().data(), out.data() + i * C * D, C);
    for (long c = 0; c < C; ++c) total += sampler.last().n_leapfrog[c];
  }
  *steps = total / (n * C);
  return out;
}

// The metric's gradient g at y ([chains, dim]) against central differences
// of step h, to within a relative 1e-6 or `margin`.
void check_gradient(DenseMetric& metric, const std::vector<double>& y, const std::vector<double>& g,
                    double h, double margin) {
  const long C = metric.chains(), D = metric.dim();
  for (long k = 0; k < C * D; ++k) {
    std::vector<double> up = y, down = y, lu(C), ld(C);
    up[k] += h;
    down[k] -= h;
    metric.log_density(up.data(), lu.data(), nullptr);
    metric.log_density(down.data(), ld.data(), nullptr);
    CHECK(g[k] == Approx((lu[k / D] - ld[k / D]) / (2 * h)).epsilon(1e-6).margin(margin));
  }
}

// The draws' pooled mean of coordinate i and covariance of coordinates i, j.
double mean_of(const std::vector<double>& d, long D, long i) {
  const long m = static_cast<long>(d.size()) / D;
  double s = 0;
  for (long k = 0; k < m; ++k) s += d[k * D + i];
  return s / m;
}
double cov_of(const std::vector<double>& d, long D, long i, long j) {
  const long m = static_cast<long>(d.size()) / D;
  const double mi = mean_of(d, D, i), mj = mean_of(d, D, j);
  double s = 0;
  for (long k = 0; k < m; ++k) s += (d[k * D + i] - mi) * (d[k * D + j] - mj);
  return s / (m - 1);
}

}  // namespace

TEST_CASE("dense metric: the target in the metric's coordinates", "[dense_metric]") {
  std::mt19937 rng(5);
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    CorrelatedGaussian model(1, -1, 1.5, 0.5, 0.8, chains);
    const long D = 2;
    const std::vector<double> L = random_factor(rng, chains, D);
    DenseMetric metric(model, L);
    std::normal_distribution<double> n(0, 1);
    std::vector<double> y(chains * D), x(chains * D), back(chains * D);
    for (double& v : y) v = n(rng);
    // x = L y, by hand; to_sampler() inverts it
    metric.to_model(y.data(), x.data(), chains);
    for (long c = 0; c < chains; ++c)
      for (long i = 0; i < D; ++i) {
        double s = 0;
        for (long j = 0; j <= i; ++j) s += L[c * 4 + i * 2 + j] * y[c * D + j];
        CHECK(x[c * D + i] == Approx(s).epsilon(1e-14));
      }
    metric.to_sampler(x.data(), back.data());
    for (long k = 0; k < chains * D; ++k) CHECK(back[k] == Approx(y[k]).epsilon(1e-12));
    // the log density is the model's at x; the gradient L' dlp/dx, against
    // central differences in y
    std::vector<double> lp(chains), g(chains * D), lpx(chains), gx(chains * D);
    metric.log_density(y.data(), lp.data(), g.data());
    model.log_density(x.data(), lpx.data(), gx.data());
    for (long c = 0; c < chains; ++c) CHECK(lp[c] == Approx(lpx[c]).epsilon(1e-13));
    check_gradient(metric, y, g, 1e-6, 1e-8);
  }
  // one factor for every chain; bad factors refused
  CorrelatedGaussian model(0, 0, 1, 1, 0, 2);
  DenseMetric pooled(model, {2, 0, 0.5, 1});
  CHECK(pooled.factor() == std::vector<double>{2, 0, 0.5, 1, 2, 0, 0.5, 1});
  CHECK_THROWS_AS(DenseMetric(model, {1, 0.1, 0, 1}), std::invalid_argument);  // not lower
  CHECK_THROWS_AS(DenseMetric(model, {1, 0, 0, -1}), std::invalid_argument);   // diagonal
  CHECK_THROWS_AS(DenseMetric(model, {1, 0, 0}), std::invalid_argument);       // size
  // too many parameters for a dense factor: refused before anything is allocated
  sampler_tests::IndependentGaussian big(std::vector<double>(lockstep::max_dense_dim + 1, 0.0),
                                         std::vector<double>(lockstep::max_dense_dim + 1, 1.0), 2);
  CHECK_THROWS_WITH(DenseMetric(big), Catch::Contains("at most 2000 free parameters"));
}

TEST_CASE("dense metric: adapt() takes the regularised covariance of the window", "[dense_metric]") {
  std::mt19937 rng(8);
  const long D = 3, chains = 2;
  // a 3-d model: the factor is all that matters to adapt()
  sampler_tests::IndependentGaussian model({0, 0, 0}, {1, 1, 1}, chains);
  for (bool pooled : {true, false}) {
    INFO("pooled " << pooled);
    const std::vector<double> L0 = random_factor(rng, chains, D);
    DenseMetric metric(model, pooled ? std::vector<double>(L0.begin(), L0.begin() + 9) : L0);
    const std::vector<double> old_factor = metric.factor();
    // co-moments of a window (symmetric positive definite), in y
    const long rows = pooled ? 1 : chains;
    std::vector<double> m2(rows * D * D);
    const double n = 40;
    for (long r = 0; r < rows; ++r) {
      const std::vector<double> A = random_factor(rng, 1, D);
      for (long i = 0; i < D; ++i)
        for (long j = 0; j < D; ++j) {
          double s = 0;
          for (long k = 0; k < D; ++k) s += A[i * D + k] * A[j * D + k];
          m2[r * D * D + i * D + j] = s * (n - 1);
        }
    }
    std::vector<double> y(chains * D), x_before(chains * D), x_after(chains * D);
    std::normal_distribution<double> nd(0, 1);
    for (double& v : y) v = nd(rng);
    metric.to_model(y.data(), x_before.data(), chains);
    metric.adapt(m2.data(), n, pooled, nullptr, y.data());
    // the states did not move in the model's coordinates
    metric.to_model(y.data(), x_after.data(), chains);
    for (long k = 0; k < chains * D; ++k) CHECK(x_after[k] == Approx(x_before[k]).epsilon(1e-12));
    // L L' = (n / (n + 5)) S + (5 / (n + 5)) (1e-3 diag(S) + 1e-10 I),
    // S = L0 (m2 / (n - 1)) L0'

    for (long c = 0; c < chains; ++c) {
      const double* L = metric.factor().data() + c * D * D;
      const double* P = old_factor.data() + c * D * D;
      const double* W = m2.data() + (pooled ? 0 : c * D * D);
      for (long i = 0; i < D; ++i)
        for (long j = 0; j < D; ++j) {
          double want = 0;
          for (long a = 0; a < D; ++a)
            for (long b = 0; b < D; ++b) want += P[i * D + a] * W[a * D + b] / (n - 1) * P[j * D + b];
          want = want * n / (n + 5) + (i == j ? 5 / (n + 5) * (1e-3 * want + 1e-10) : 0);
          double got = 0;
          for (long k = 0; k < D; ++k) got += L[i * D + k] * L[j * D + k];
          CHECK(got == Approx(want).epsilon(1e-11));
          if (j > i) CHECK(L[i * D + j] == 0);
        }
    }
  }
}

TEST_CASE("dense metric: NUTS, HMC and ChEES sample a strongly correlated Gaussian",
          "[dense_metric][nuts][hmc][chees]") {
  // rho = 0.999 with scales 10 and 0.1: a diagonal metric needs long
  // trajectories along the ridge; with the dense metric warmup learns, the
  // posterior is close to a unit sphere in the sampler's coordinates
  const double m1 = 3, m2 = -2, s1 = 10, s2 = 0.1, rho = 0.999;
  const long C = sampler_tests::n_chains, D = 2, n = 1000;
  CorrelatedGaussian model(m1, m2, s1, s2, rho, C);
  auto check = [&](const std::vector<double>& d) {
    const double n_eff = static_cast<double>(n * C) / 10;
    CHECK(std::fabs(mean_of(d, D, 0) - m1) < 5 * s1 / std::sqrt(n_eff));
    CHECK(std::fabs(mean_of(d, D, 1) - m2) < 5 * s2 / std::sqrt(n_eff));
    const double tol = 5 * std::sqrt(2 / n_eff);
    CHECK(std::fabs(cov_of(d, D, 0, 0) / (s1 * s1) - 1) < tol);
    CHECK(std::fabs(cov_of(d, D, 1, 1) / (s2 * s2) - 1) < tol);
    // the sample correlation's sd is about (1 - rho^2) / sqrt(n_eff)
    const double r = cov_of(d, D, 0, 1) / std::sqrt(cov_of(d, D, 0, 0) * cov_of(d, D, 1, 1));
    CHECK(std::fabs(r - rho) < 5 * (1 - rho * rho) / std::sqrt(n_eff));
  };
  double steps_dense = 0, steps_diag = 0;
  SECTION("nuts") {
    check(dense_draws<lockstep::Nuts>(model, lockstep::NutsSettings(), 1000, n, &steps_dense));
    // the same sampler with its diagonal metric needs far longer trajectories
    {
      std::vector<double> init(C * D);
      for (long k = 0; k < C * D; ++k) init[k] = std::sin(1.7 * k + 0.3);
      lockstep::Nuts nuts(model, lockstep::NutsSettings(), init, 3, 4);
      nuts.begin_warmup(1000);
      for (int i = 0; i < 1000; ++i) nuts.iterate(true);
      for (int i = 0; i < 200; ++i) {
        nuts.iterate(false);
        for (long c = 0; c < C; ++c) steps_diag += nuts.last().n_leapfrog[c];
      }
      steps_diag /= 200 * C;
    }
    INFO("leapfrog steps per iteration: dense " << steps_dense << ", diagonal " << steps_diag);
    CHECK(steps_dense * 4 < steps_diag);
    CHECK(steps_dense < 8);
  }
  SECTION("hmc") {
    lockstep::HmcSettings s;
    s.Lmin = 3;
    s.Lmax = 6;
    check(dense_draws<lockstep::Hmc>(model, s, 1000, n, &steps_dense));
  }
  SECTION("chees") {
    check(dense_draws<lockstep::Chees>(model, lockstep::CheesSettings(), 1000, n, &steps_dense));
  }
}

TEST_CASE("dense metric: refused where it cannot work", "[dense_metric]") {
  CorrelatedGaussian model(0, 0, 1, 1, 0.5, 2), other(0, 0, 1, 1, 0.5, 2);
  DenseMetric metric(model);
  lockstep::Nuts on_model(model, lockstep::NutsSettings(), std::vector<double>(4, 0.1), 1, 2);
  // the sampler's target must be the metric
  CHECK_THROWS_AS(on_model.use_dense_metric(metric), std::invalid_argument);
  lockstep::Nuts on_metric(metric, lockstep::NutsSettings(), std::vector<double>(4, 0.1), 1, 2);
  CHECK_NOTHROW(on_metric.use_dense_metric(metric));
  CHECK(on_metric.dense_metric() == &metric);
  CHECK(on_metric.diag_sd() == std::vector<double>(4, 1.0));
}

TEST_CASE("dense metric: the condition number of a covariance's correlations",
          "[dense_metric]") {
  // 2 x 2 with correlation rho: eigenvalues 1 +- rho, whatever the scales
  for (double rho : {0.0, 0.5, -0.9, 0.999}) {
    const double s1 = 3, s2 = 0.01;
    const double cov[4] = {s1 * s1, rho * s1 * s2, rho * s1 * s2, s2 * s2};
    CHECK(DenseMetric::correlation_condition(cov, 2) ==
          Approx((1 + std::fabs(rho)) / (1 - std::fabs(rho))).epsilon(1e-10));
  }
  // equicorrelation rho in d dimensions, scaled: eigenvalues 1 + (d - 1) rho
  // and 1 - rho
  const long d = 7;
  const double rho = 0.3;
  std::vector<double> cov(d * d);
  for (long i = 0; i < d; ++i)
    for (long j = 0; j < d; ++j)
      cov[i * d + j] = (i == j ? 1 : rho) * (1 + i) * (1 + j);
  CHECK(DenseMetric::correlation_condition(cov.data(), d) ==
        Approx((1 + (d - 1) * rho) / (1 - rho)).epsilon(1e-10));
}

TEST_CASE("dense metric: chosen automatically, dense only where correlations call for it",
          "[dense_metric]") {
  // the rule: condition number beyond 4 ((1 + r) / (1 - r))^2, r = sqrt(4 d / n)
  const double corr[4] = {1, 0.9, 0.9, 1};  // condition 19
  // n = 1600 draws of 2: r = 0.1, chance 1.49: dense
  CHECK(DenseMetric::dense_is_worth_it(corr, 2, 1600));
  // n = 32: r = 0.5, chance 9, so 36 is needed: diagonal
  CHECK_FALSE(DenseMetric::dense_is_worth_it(corr, 2, 32));
  CHECK(DenseMetric::dense_is_worth_it(corr, 2, 64));  // r = 0.35: 17.6 is needed
  const double round[4] = {4, 0.1, 0.1, 1};  // correlation 0.05: condition 1.1
  CHECK_FALSE(DenseMetric::dense_is_worth_it(round, 2, 1e6));
  const double one[1] = {2};
  CHECK_FALSE(DenseMetric::dense_is_worth_it(one, 1, 1e6));  // nothing to correlate
  const double strong[4] = {1, 0.9999, 0.9999, 1};
  CHECK_FALSE(DenseMetric::dense_is_worth_it(strong, 2, 7));  // fewer than 4 d draws

  // The gradients: for a Gaussian their second moments are cov^-1, and a
  // dense metric fits; with curvature along x1 that the covariance does not
  // show (cov^-1 + 100 e1 e1': in the dense metric's coordinates, curvatures
  // 1 and 101; in the diagonal's, 1.7 times the correlations' condition
  // number), it does not.
  const double cov[4] = {1, 0.99, 0.99, 1};
  const double k = 1 / (1 - 0.99 * 0.99);
  const double gaussian[4] = {k, -0.99 * k, -0.99 * k, k};
  CHECK(DenseMetric::dense_fits_gradients(cov, gaussian, 2, 1e9));
  const double scaled[4] = {3 * k, -3 * 0.99 * k, -3 * 0.99 * k, 3 * k};  // evenly steeper
  CHECK(DenseMetric::dense_fits_gradients(cov, scaled, 2, 1e9));
  const double uneven[4] = {k + 100, -0.99 * k, -0.99 * k, k};
  CHECK_FALSE(DenseMetric::dense_fits_gradients(cov, uneven, 2, 1e9));
  // unless so few draws could have made 101 of a Gaussian's 1: 4 x 9 = 36
  // for 32 draws of 2 could not, 4 x 97 for 12 could
  CHECK(DenseMetric::chance_condition(2, 32) == Approx(9));
  CHECK_FALSE(DenseMetric::dense_fits_gradients(cov, uneven, 2, 32));
  CHECK(DenseMetric::dense_fits_gradients(cov, uneven, 2, 12));
  CHECK(std::isinf(DenseMetric::chance_condition(2, 8)));

  // adapt(): a window whose co-moments are uncorrelated gives a diagonal
  // factor, the square roots of the regularised variances, and one whose
  // co-moments are strongly correlated the dense factor
  sampler_tests::IndependentGaussian model({0, 0}, {1, 1}, 2);
  const double n = 400;
  for (bool correlated : {false, true}) {
    INFO("correlated " << correlated);
    DenseMetric metric(model);
    metric.set_choice(DenseMetric::Choice::automatic);
    const double r = correlated ? 0.99 : 0.02;
    const double m2[4] = {4 * (n - 1), r * 2 * 0.5 * (n - 1), r * 2 * 0.5 * (n - 1),
                          0.25 * (n - 1)};
    std::vector<double> y = {0.3, -0.2, 1.1, 0.4};
    metric.adapt(m2, n, true, nullptr, y.data());
    for (long c = 0; c < 2; ++c) {
      CHECK(metric.is_dense(c) == correlated);
      // (the gradients' moments, in the identity's coordinates, would decide
      // the same for a Gaussian, and against the dense factor for the uneven
      // curvature above: checked below)
      const double* L = metric.factor().data() + c * 4;
      const double v0 = 4 * n / (n + 5), v1 = 0.25 * n / (n + 5);
      CHECK(L[0] * L[0] == Approx(v0 + 5 / (n + 5) * (1e-3 * v0 * (n + 5) / n + 1e-10)));
      CHECK((L[2] != 0) == correlated);
      CHECK(L[2] * L[2] + L[3] * L[3] ==
            Approx(v1 + 5 / (n + 5) * (1e-3 * v1 * (n + 5) / n + 1e-10)));
    }
  }
}

TEST_CASE("dense metric: chosen automatically, adapt() hears the window's gradients",
          "[dense_metric]") {
  // the same correlated window (sd 2 and 0.5, correlation 0.99) with the
  // gradients' sums of a Gaussian of that covariance, and with extra
  // curvature along x1: dense, then diagonal
  sampler_tests::IndependentGaussian model({0, 0}, {1, 1}, 1);
  const double n = 400, r = 0.99;
  const double m2[4] = {4 * (n - 1), r * (n - 1), r * (n - 1), 0.25 * (n - 1)};
  // the regularised covariance adapt() takes, and its inverse
  const double v0 = 4 * n / (n + 5) + 5 / (n + 5) * (1e-3 * 4 + 1e-10);
  const double v1 = 0.25 * n / (n + 5) + 5 / (n + 5) * (1e-3 * 0.25 + 1e-10);
  const double v01 = r * n / (n + 5);
  const double det = v0 * v1 - v01 * v01;
  for (bool uneven : {false, true}) {
    INFO("uneven " << uneven);
    const double g2[4] = {n * (v1 / det + (uneven ? 100 / v0 : 0)), -n * v01 / det,
                          -n * v01 / det, n * v0 / det};
    DenseMetric metric(model);
    metric.set_choice(DenseMetric::Choice::automatic);
    std::vector<double> y = {0.3, -0.2};
    metric.adapt(m2, n, true, g2, y.data());
    CHECK(metric.is_dense(0) == !uneven);
  }
}

TEST_CASE("dense metric: chosen automatically, NUTS learns a dense metric for a correlated "
          "Gaussian and a diagonal one for independent Gaussians",
          "[dense_metric][nuts]") {
  const long C = sampler_tests::n_chains;
  auto warm = [&](lockstep::Target& model, DenseMetric& metric) {
    const long D = model.dim();
    metric.set_choice(DenseMetric::Choice::automatic);
    std::vector<double> x0(C * D), y0(C * D);
    for (long k = 0; k < C * D; ++k) x0[k] = std::sin(1.7 * k + 0.3);
    metric.to_sampler(x0.data(), y0.data());
    lockstep::Nuts nuts(metric, lockstep::NutsSettings(), y0, 3, 4);
    nuts.use_dense_metric(metric);
    nuts.begin_warmup(500);
    for (int i = 0; i < 500; ++i) nuts.iterate(true);
    double steps = 0;
    for (int i = 0; i < 100; ++i) {
      nuts.iterate(false);
      for (long c = 0; c < C; ++c) steps += nuts.last().n_leapfrog[c];
    }
    return steps / (100 * C);
  };
  CorrelatedGaussian correlated(3, -2, 10, 0.1, 0.999, C);
  DenseMetric m1(correlated);
  const double steps = warm(correlated, m1);
  INFO("leapfrog steps per iteration " << steps);
  for (long c = 0; c < C; ++c) CHECK(m1.is_dense(c));
  CHECK(steps < 8);
  // five independent Gaussians with scales from 0.1 to 10: the diagonal
  // metric, with the scales learnt
  const std::vector<double> sd = {0.1, 1, 3, 10, 0.5};
  sampler_tests::IndependentGaussian independent({1, -2, 0.5, 3, 0}, sd, C);
  DenseMetric m2(independent);
  warm(independent, m2);
  for (long c = 0; c < C; ++c) {
    CHECK_FALSE(m2.is_dense(c));
    for (long i = 0; i < 5; ++i) {
      const double learnt = m2.factor()[c * 25 + i * 5 + i];
      CHECK(learnt / sd[i] > 0.6);
      CHECK(learnt / sd[i] < 1.6);
    }
  }
}

namespace {

// A Gaussian whose coordinates 1 and 3 are strongly correlated (sds 10 and
// 0.1, rho 0.999) and whose others are independent with sds from 0.01 to
// 100: a hierarchical model's correlated global parameters among group-level
// ones of many scales, the case of a dense metric over some coordinates.
class BlockGaussian final : public lockstep::Target {
 public:
  BlockGaussian(long dim, long chains) : D_(dim), C_(chains), mean_(dim), sd_(dim) {
    for (long i = 0; i < D_; ++i) {
      mean_[i] = std::cos(1.3 * i);
      sd_[i] = std::pow(10.0, -2 + 4.0 * i / (D_ - 1));
    }
    sd_[1] = 10;
    sd_[3] = 0.1;
  }
  static constexpr double rho = 0.999;
  long dim() const override { return D_; }
  long chains() const override { return C_; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < C_; ++c) {
      const double* xc = x + c * D_;
      double s = 0;
      std::vector<double> z(D_);
      for (long i = 0; i < D_; ++i) z[i] = (xc[i] - mean_[i]) / sd_[i];
      std::vector<double> pz(z);  // the precision in z: 1, but 1 / (1 - rho^2) [1 -rho; -rho 1] on the block
      pz[1] = (z[1] - rho * z[3]) / (1 - rho * rho);
      pz[3] = (z[3] - rho * z[1]) / (1 - rho * rho);
      for (long i = 0; i < D_; ++i) s += z[i] * pz[i];
      lp[c] = -0.5 * s;
      if (grad)
        for (long i = 0; i < D_; ++i) grad[c * D_ + i] = -pz[i] / sd_[i];
    }
  }
  std::vector<double> mean() const { return mean_; }
  std::vector<double> sd() const { return sd_; }

 private:
  long D_, C_;
  std::vector<double> mean_, sd_;
};

}  // namespace

TEST_CASE("dense metric over some coordinates: the target, its maps and adapt()",
          "[dense_metric]") {
  std::mt19937 rng(17);
  const long D = 6;
  const std::vector<long> covered = {1, 3};
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    BlockGaussian model(D, chains);
    const std::vector<double> L = random_factor(rng, chains, 2);
    std::vector<double> scale(chains * D);
    std::uniform_real_distribution<double> u(0.2, 3);
    for (double& v : scale) v = u(rng);
    DenseMetric metric(model, L, covered, scale);
    CHECK_FALSE(metric.covers_all());
    std::normal_distribution<double> n(0, 1);
    std::vector<double> y(chains * D), x(chains * D), back(chains * D);
    for (double& v : y) v = n(rng);
    metric.to_model(y.data(), x.data(), chains);
    for (long c = 0; c < chains; ++c) {
      const double* Lc = L.data() + c * 4;
      CHECK(x[c * D + 1] == Approx(Lc[0] * y[c * D + 1]).epsilon(1e-14));
      CHECK(x[c * D + 3] == Approx(Lc[2] * y[c * D + 1] + Lc[3] * y[c * D + 3]).epsilon(1e-14));
      for (long i : {0L, 2L, 4L, 5L})
        CHECK(x[c * D + i] == Approx(scale[c * D + i] * y[c * D + i]).epsilon(1e-14));
      // the model's sds: sqrt(diag(L L')) and the scales
      const std::vector<double> sd = metric.model_sd();
      CHECK(sd[c * D + 3] == Approx(std::sqrt(Lc[2] * Lc[2] + Lc[3] * Lc[3])));
      CHECK(sd[c * D + 0] == Approx(scale[c * D + 0]));
    }
    metric.to_sampler(x.data(), back.data());
    for (long k = 0; k < chains * D; ++k) CHECK(back[k] == Approx(y[k]).epsilon(1e-12));
    std::vector<double> lp(chains), g(chains * D);
    metric.log_density(y.data(), lp.data(), g.data());
    // (the log density is quadratic: central differences are exact but for
    // rounding, which a wide step keeps small beside its large values)
    check_gradient(metric, y, g, 1e-3, 1e-6);
    // adapt(): the block's covariance as a whole metric's, the others'
    // variances regularised alike, the states unmoved in the model's
    // coordinates
    const double wn = 50;
    std::vector<double> m2 = {4 * (wn - 1), 1 * (wn - 1), 1 * (wn - 1), 2 * (wn - 1)};
    std::vector<double> rest_m2(D);
    for (long i = 0; i < D; ++i) rest_m2[i] = (0.5 + i) * (wn - 1);
    const std::vector<double> old_L = metric.factor(), old_scale = metric.model_sd();
    metric.adapt(m2.data(), wn, true, nullptr, y.data(), rest_m2.data());
    std::vector<double> x_after(chains * D);
    metric.to_model(y.data(), x_after.data(), chains);
    for (long k = 0; k < chains * D; ++k) CHECK(x_after[k] == Approx(x[k]).epsilon(1e-12));
    const std::vector<double> sd = metric.model_sd();
    for (long c = 0; c < chains; ++c)
      for (long i : {0L, 2L, 4L, 5L}) {
        double want = old_scale[i] * old_scale[i] * (0.5 + i) * wn / (wn + 5);  // pooled: chain 0's
        want += 5 / (wn + 5) * (1e-3 * want * (wn + 5) / wn + 1e-10);
        CHECK(sd[c * D + i] == Approx(std::sqrt(want)).epsilon(1e-12));
      }
    const double* P = old_L.data();  // chain 0's, pooled
    double want11 = P[0] * P[0] * 4 * wn / (wn + 5);
    want11 += 5 / (wn + 5) * (1e-3 * want11 * (wn + 5) / wn + 1e-10);
    CHECK(metric.factor()[0] == Approx(std::sqrt(want11)).epsilon(1e-12));
    CHECK(metric.is_dense(0));
  }
  BlockGaussian model(D, 2);
  CHECK_THROWS_AS(DenseMetric(model, {}, {3, 1}), std::invalid_argument);  // not increasing
  CHECK_THROWS_AS(DenseMetric(model, {}, {1, 6}), std::invalid_argument);  // beyond dim
  CHECK_THROWS_AS(DenseMetric(model, {1, 0, 0, 1}, {1, 3}, {1, 2}), std::invalid_argument);
  std::vector<double> bad_scale(D, 1.0);
  bad_scale[0] = 0;
  CHECK_THROWS_AS(DenseMetric(model, {}, {1, 3}, bad_scale), std::invalid_argument);
}

TEST_CASE("dense metric over some coordinates: NUTS samples correlated ones among scales",
          "[dense_metric][nuts]") {
  // the factor over coordinates 1 and 3 learns their correlation; the
  // others' scales, 0.01 to 100, are learnt as a diagonal metric's
  const long C = sampler_tests::n_chains, D = 8, n = 1000;
  BlockGaussian model(D, C);
  DenseMetric metric(model, {}, {1, 3});
  std::vector<double> x0(C * D), y0(C * D);
  for (long k = 0; k < C * D; ++k) x0[k] = std::sin(1.7 * k + 0.3);
  metric.to_sampler(x0.data(), y0.data());
  lockstep::Nuts sampler(metric, lockstep::NutsSettings(), y0, 3, 4);
  sampler.use_dense_metric(metric);
  sampler.begin_warmup(1000);
  for (long i = 0; i < 1000; ++i) sampler.iterate(true);
  std::vector<double> d(n * C * D);
  double steps = 0;
  for (long i = 0; i < n; ++i) {
    sampler.iterate(false);
    sampler.to_model(sampler.state().data(), d.data() + i * C * D, C);
    for (long c = 0; c < C; ++c) steps += sampler.last().n_leapfrog[c];
  }
  steps /= n * C;
  INFO("leapfrog steps per iteration " << steps);
  CHECK(steps < 12);
  const double n_eff = static_cast<double>(n * C) / 10;
  const std::vector<double> mean = model.mean(), sd = model.sd();
  for (long i = 0; i < D; ++i) {
    INFO("coordinate " << i);
    CHECK(std::fabs(mean_of(d, D, i) - mean[i]) < 5 * sd[i] / std::sqrt(n_eff));
    CHECK(std::fabs(cov_of(d, D, i, i) / (sd[i] * sd[i]) - 1) < 5 * std::sqrt(2 / n_eff));
  }
  const double r = cov_of(d, D, 1, 3) / std::sqrt(cov_of(d, D, 1, 1) * cov_of(d, D, 3, 3));
  const double rho = BlockGaussian::rho;
  CHECK(std::fabs(r - rho) < 5 * (1 - rho * rho) / std::sqrt(n_eff));
  CHECK(metric.is_dense(0));
}
