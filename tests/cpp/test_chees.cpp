// ChEES-HMC with lockstep chains (sampler/chees.hpp): posterior moments within
// Monte Carlo error (sampler_helpers.hpp) with many chains, the trajectory
// length it learns, reproducibility, bad settings.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "lockstep/sampler/chees.hpp"
#include "sampler_helpers.hpp"

using lockstep::Chees;
using lockstep::CheesSettings;
using namespace sampler_tests;

TEST_CASE("chees: independent Gaussians with different scales, 16 chains", "[chees][posterior]") {
  const std::vector<double> mu = {1, -2, 0.5, 3, 0};
  const std::vector<double> sd = {0.1, 1, 3, 10, 0.5};
  const long chains = 16;
  IndependentGaussian t(mu, sd, chains);
  const long n = 500;
  const Run r = run_sampler<Chees>(t, CheesSettings(), 1000, n, 41, 42);
  const double n_eff = n * chains / 10.0;
  for (long i = 0; i < 5; ++i) {
    double mean, var;
    moments(r, 5, i, &mean, &var);
    INFO("coordinate " << i << ": mean " << mean << " (" << mu[i] << "), sd " << std::sqrt(var)
                       << " (" << sd[i] << "), adapted diag_sd " << r.diag_sd[i]);
    CHECK(std::fabs(mean - mu[i]) < 5 * sd[i] / std::sqrt(n_eff));
    CHECK(std::fabs(var / (sd[i] * sd[i]) - 1) < 5 * std::sqrt(2 / n_eff));
  }
}

TEST_CASE("chees: learns a trajectory length of the order of a Gaussian's period",
          "[chees][warmup]") {
  // After the metric has learnt the scales, the problem is a standard normal
  // whose leapfrog dynamics have period about 2 pi in time (for any sd: the
  // metric rescales it). The jittered ChEES criterion E_u sin^2(u T) has its
  // best maximum at T = 2.25 and ever shallower ones beyond, so from a start
  // at the step size (0.1) warmup should reach the first period or a few.
  const long chains = 32;
  IndependentGaussian t(std::vector<double>(10, 0.0), std::vector<double>(10, 2.0), chains);
  std::vector<double> init(chains * 10);
  for (size_t k = 0; k < init.size(); ++k) init[k] = std::sin(0.7 * k);
  Chees h(t, CheesSettings(), init, 43, 44);
  h.begin_warmup(1000);
  for (int i = 0; i < 1000; ++i) h.iterate(true);
  const double T = h.trajectory_length();
  INFO("T = " << T << ", epsilon " << h.epsilon());
  CHECK(T > 1.5);
  CHECK(T < 8 * 3.14159);
}

TEST_CASE("chees: a correlated Gaussian, the same keys give the same draws, bad settings",
          "[chees][posterior][rng][errors]") {
  const double rho = 0.9;
  CorrelatedGaussian t(1, -1, 1, 2, rho, 16);
  const long n = 500;
  const Run r = run_sampler<Chees>(t, CheesSettings(), 1000, n, 45, 46);
  const double n_eff = n * 16 / 10.0;
  double m1, v1, m2, v2;
  moments(r, 2, 0, &m1, &v1);
  moments(r, 2, 1, &m2, &v2);
  INFO("means " << m1 << ", " << m2 << "; sds " << std::sqrt(v1) << ", " << std::sqrt(v2));
  CHECK(std::fabs(m1 - 1) < 5 / std::sqrt(n_eff));
  CHECK(std::fabs(m2 + 1) < 5 * 2 / std::sqrt(n_eff));
  CHECK(std::fabs(v1 - 1) < 5 * std::sqrt(2 / n_eff));
  CHECK(std::fabs(v2 / 4 - 1) < 5 * std::sqrt(2 / n_eff));
  CHECK(run_sampler<Chees>(t, CheesSettings(), 50, 20, 7, 8).draws ==
        run_sampler<Chees>(t, CheesSettings(), 50, 20, 7, 8).draws);
  CheesSettings s;
  s.max_leapfrog = 0;
  CHECK_THROWS_AS(Chees(t, s, std::vector<double>(32, 0.0), 1, 2), std::invalid_argument);
}
