// HMC with lockstep chains (sampler/hmc.hpp) on analytic targets: posterior
// moments within Monte Carlo error, reproducibility from the keys, the warmup
// schedule, dual averaging, and refusal of bad starting points.
// Monte Carlo bounds: sampler_helpers.hpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"
#include "sampler_helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/sampler/dual_averaging.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/warmup_schedule.hpp"

using lockstep::DualAveraging;
using lockstep::Hmc;
using lockstep::HmcSettings;
using lockstep::Target;
using lockstep::WarmupSchedule;

using namespace sampler_tests;

namespace {
Run run_hmc(Target& t, HmcSettings s, long warmup, long n, uint32_t k0 = 1, uint32_t k1 = 2,
            double init_spread = 1) {
  return run_sampler<Hmc>(t, s, warmup, n, k0, k1, init_spread);
}
}  // namespace

TEST_CASE("hmc: independent Gaussians with different scales, 4 chains", "[hmc][posterior]") {
  const std::vector<double> mu = {1, -2, 0.5, 3, 0};
  const std::vector<double> sd = {0.1, 1, 3, 10, 0.5};
  IndependentGaussian t(mu, sd, n_chains);
  const long warmup = 1000, n = 1000;
  const Run r = run_hmc(t, HmcSettings(), warmup, n);
  const double n_eff = n * n_chains / 10.0;
  for (long i = 0; i < 5; ++i) {
    double mean, var;
    moments(r, 5, i, &mean, &var);
    INFO("coordinate " << i << ": mean " << mean << " (" << mu[i] << "), sd " << std::sqrt(var)
                       << " (" << sd[i] << "), adapted diag_sd " << r.diag_sd[i]);
    CHECK(std::fabs(mean - mu[i]) < 5 * sd[i] / std::sqrt(n_eff));
    CHECK(std::fabs(var / (sd[i] * sd[i]) - 1) < 5 * std::sqrt(2 / n_eff));
    // warmup learnt the scales
    CHECK(r.diag_sd[i] / sd[i] > 0.5);
    CHECK(r.diag_sd[i] / sd[i] < 2);
  }
  CHECK(r.accepted_in_sampling > n * n_chains / 2);
}

TEST_CASE("hmc: a correlated bivariate Gaussian, 4 chains", "[hmc][posterior]") {
  const double m1 = 1, m2 = -1, s1 = 1, s2 = 2, rho = 0.9;
  CorrelatedGaussian t(m1, m2, s1, s2, rho, n_chains);
  const long n = 1500;
  const Run r = run_hmc(t, HmcSettings(), 1000, n);
  const double n_eff = n * n_chains / 10.0;
  double mean1, var1, mean2, var2;
  moments(r, 2, 0, &mean1, &var1);
  moments(r, 2, 1, &mean2, &var2);
  const long m = static_cast<long>(r.draws.size()) / 2;
  double cov = 0;
  for (long k = 0; k < m; ++k) cov += (r.draws[2 * k] - mean1) * (r.draws[2 * k + 1] - mean2);
  const double corr = cov / (m - 1) / std::sqrt(var1 * var2);
  INFO("means " << mean1 << ", " << mean2 << "; sds " << std::sqrt(var1) << ", "
                << std::sqrt(var2) << "; correlation " << corr);
  CHECK(std::fabs(mean1 - m1) < 5 * s1 / std::sqrt(n_eff));
  CHECK(std::fabs(mean2 - m2) < 5 * s2 / std::sqrt(n_eff));
  CHECK(std::fabs(var1 / (s1 * s1) - 1) < 5 * std::sqrt(2 / n_eff));
  CHECK(std::fabs(var2 / (s2 * s2) - 1) < 5 * std::sqrt(2 / n_eff));
  // sd of a sample correlation: (1 - rho^2) / sqrt(n)
  CHECK(std::fabs(corr - rho) < 5 * (1 - rho * rho) / std::sqrt(n_eff));
}

TEST_CASE("hmc on an executor: posterior of a normal mean", "[hmc][posterior][executor]") {
  // y_i ~ normal(mu, 2), mu ~ normal(0, 10): the posterior of mu is normal with
  // precision 1/100 + n/4 and mean (sum y / 4) / precision.
  using namespace lstest;
  const std::vector<double> y = {1.2, 3.4, 0.7, 2.9, 2.2, 1.8, 3.1, 0.4};
  Program p;
  const int mu = p.add(param_node(1, 0));
  const int yd = p.add(data_node(y));
  const int two = p.add(data_node({2}));
  const int zero = p.add(data_node({0}));
  const int ten = p.add(data_node({10}));
  add_term(p, density_node(Family::normal, {yd, mu, two}));
  add_term(p, density_node(Family::normal, {mu, zero, ten}));
  p.n_free = 1;
  lockstep::plan(p);
  Executor<double> ex(p, n_chains);
  const long n = 1000;
  const Run r = run_hmc(ex, HmcSettings(), 500, n, 3, 4);
  double sy = 0;
  for (double v : y) sy += v;
  const double prec = 1.0 / 100 + y.size() / 4.0, post_mean = sy / 4 / prec,
               post_sd = 1 / std::sqrt(prec);
  double mean, var;
  moments(r, 1, 0, &mean, &var);
  const double n_eff = n * n_chains / 10.0;
  INFO("mean " << mean << " (" << post_mean << "), sd " << std::sqrt(var) << " (" << post_sd << ")");
  CHECK(std::fabs(mean - post_mean) < 5 * post_sd / std::sqrt(n_eff));
  CHECK(std::fabs(var / (post_sd * post_sd) - 1) < 5 * std::sqrt(2 / n_eff));
}

TEST_CASE("hmc: identical keys give identical draws, different keys differ", "[hmc][rng]") {
  const std::vector<double> mu = {0, 1, 2}, sd = {1, 2, 0.5};
  auto draws = [&](uint32_t k0, uint32_t k1) {
    IndependentGaussian t(mu, sd, n_chains);
    return run_hmc(t, HmcSettings(), 150, 50, k0, k1).draws;
  };
  const std::vector<double> a = draws(42, 7), b = draws(42, 7);
  CHECK(a == b);
  for (const auto& other : {draws(43, 7), draws(42, 8)}) {
    REQUIRE(other.size() == a.size());
    long equal = 0;
    for (size_t k = 0; k < a.size(); ++k) equal += other[k] == a[k];
    CHECK(equal < static_cast<long>(a.size()) / 10);
  }
  // the chains of one run differ from each other (each has its own stream)
  const long D = 3;
  long same = 0;
  for (size_t k = 0; k + D < a.size(); k += n_chains * D)
    for (long i = 0; i < D; ++i) same += a[k + i] == a[k + D + i];
  CHECK(same == 0);
}

TEST_CASE("WarmupSchedule::make: increasing windows ending at warmup minus the term buffer",
          "[hmc][warmup]") {
  // Stan's defaults for 1000 iterations: windows end after 100, 150, 250, 450, 950.
  const WarmupSchedule s = WarmupSchedule::make(1000);
  CHECK(s.first_window_start == 75);
  CHECK(s.window_ends == std::vector<long>({100, 150, 250, 450, 950}));

  for (long warmup : {20L, 21L, 37L, 100L, 149L, 150L, 151L, 200L, 333L, 500L, 1000L, 1999L, 2000L,
                      5000L, 12345L}) {
    INFO("warmup " << warmup);
    const WarmupSchedule w = WarmupSchedule::make(warmup);
    const long term = warmup >= 150 ? 50 : warmup / 10;
    const long init = warmup >= 150 ? 75 : warmup * 15 / 100;
    REQUIRE_FALSE(w.window_ends.empty());
    CHECK(w.first_window_start == init);
    CHECK(w.window_ends.front() > w.first_window_start);
    for (size_t k = 1; k < w.window_ends.size(); ++k) {
      CHECK(w.window_ends[k] > w.window_ends[k - 1]);
      // windows grow (the last one may absorb the remainder)
      const long prev = w.window_ends[k - 1] - (k >= 2 ? w.window_ends[k - 2] : init);
      CHECK(w.window_ends[k] - w.window_ends[k - 1] >= prev);
    }
    CHECK(w.window_ends.back() == warmup - term);
  }
  for (long warmup : {0L, 1L, 19L}) {
    const WarmupSchedule w = WarmupSchedule::make(warmup);
    CHECK(w.window_ends.empty());
  }
}

TEST_CASE("DualAveraging converges to the step size of the target acceptance",
          "[hmc][dual_averaging]") {
  // A deterministic acceptance curve a(eps) = exp(-eps): a = 0.8 at eps = -log(0.8).
  DualAveraging da(0.8);
  da.restart(1.0);
  double eps = 1.0;
  for (int i = 0; i < 3000; ++i) eps = da.update(std::exp(-eps));
  CHECK(da.count() == 3000);
  CHECK(lstest::close(da.final_epsilon(), -std::log(0.8), 0.05));
  CHECK(std::fabs(std::exp(-da.final_epsilon()) - 0.8) < 0.02);
  // another target
  DualAveraging db(0.6);
  db.restart(0.01);
  eps = 0.01;
  for (int i = 0; i < 3000; ++i) eps = db.update(std::exp(-eps));
  CHECK(std::fabs(std::exp(-db.final_epsilon()) - 0.6) < 0.02);
}

TEST_CASE("hmc: after warmup the acceptance rate is near the target", "[hmc][dual_averaging]") {
  // The averaged step size of dual averaging is the geometric mean of noisy
  // iterates, and acceptance is concave in log epsilon near the target, so
  // the realised rate sits somewhat above the target (as in Stan, where
  // adapt_delta = 0.8 typically gives 0.85). The bound allows for that.
  std::vector<double> mu(10, 0), sd(10);
  for (int i = 0; i < 10; ++i) sd[i] = 0.5 + 0.3 * i;
  std::vector<double> rates, eps;
  for (double target : {0.8, 0.95}) {
    IndependentGaussian t(mu, sd, n_chains);
    HmcSettings s;
    s.target_accept = target;
    const long n = 1000;
    const Run r = run_hmc(t, s, 1000, n, 9, 9);
    const double rate = static_cast<double>(r.accepted_in_sampling) / (n * n_chains);
    INFO("target " << target << ", acceptance " << rate << ", epsilon " << r.epsilon);
    CHECK(rate > target - 0.05);
    CHECK(rate < target + 0.15);
    rates.push_back(rate);
    eps.push_back(r.epsilon);
  }
  CHECK(rates[1] > rates[0]);
  CHECK(eps[1] < eps[0]);
}

TEST_CASE("hmc refuses a non-finite initial log density and bad settings",
          "[hmc][errors]") {
  const std::vector<double> init(n_chains, 0.1);
  BadStart minus_inf(-HUGE_VAL), nan(std::nan(""));
  CHECK_THROWS_AS(Hmc(minus_inf, HmcSettings(), init, 1, 2), std::invalid_argument);
  CHECK_THROWS_AS(Hmc(nan, HmcSettings(), init, 1, 2), std::invalid_argument);

  IndependentGaussian t({0, 0}, {1, 1}, n_chains);
  const std::vector<double> ok(n_chains * 2, 0.0);
  CHECK_NOTHROW(Hmc(t, HmcSettings(), ok, 1, 2));
  CHECK_THROWS_AS(Hmc(t, HmcSettings(), std::vector<double>(3, 0.0), 1, 2), std::invalid_argument);
  HmcSettings s;
  s.Lmin = 0;
  CHECK_THROWS_AS(Hmc(t, s, ok, 1, 2), std::invalid_argument);
  s = HmcSettings();
  s.Lmin = 5;
  s.Lmax = 4;
  CHECK_THROWS_AS(Hmc(t, s, ok, 1, 2), std::invalid_argument);
  s = HmcSettings();
  s.epsilon = 0;
  CHECK_THROWS_AS(Hmc(t, s, ok, 1, 2), std::invalid_argument);
  s = HmcSettings();
  s.diag_sd = {1, 2, 3};
  CHECK_THROWS_AS(Hmc(t, s, ok, 1, 2), std::invalid_argument);
  s.diag_sd = {-1};
  CHECK_THROWS_AS(Hmc(t, s, ok, 1, 2), std::invalid_argument);
  s.diag_sd = {2};
  // one value fills every chain's row of the [chains, dim] metric
  CHECK(Hmc(t, s, ok, 1, 2).diag_sd() == std::vector<double>(ok.size(), 2));
}
