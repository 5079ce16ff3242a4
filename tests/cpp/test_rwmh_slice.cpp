// Random-walk Metropolis and slice sampling with lockstep chains
// (sampler/rwmh.hpp, sampler/slice.hpp): posterior moments within Monte Carlo
// error on analytic targets (sampler_helpers.hpp), with effective sample sizes
// taken conservatively for these slower-mixing samplers; reproducibility from
// the keys; bad settings refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "lockstep/sampler/rwmh.hpp"
#include "lockstep/sampler/slice.hpp"
#include "sampler_helpers.hpp"

using lockstep::Rwmh;
using lockstep::RwmhSettings;
using lockstep::Slice;
using lockstep::SliceSettings;
using namespace sampler_tests;

namespace {

template <class Sampler, class Settings>
void check_gaussian(Settings s, double ess_fraction, uint32_t seed) {
  const std::vector<double> mu = {1, -2, 0.5};
  const std::vector<double> sd = {0.1, 1, 5};
  IndependentGaussian t(mu, sd, n_chains);
  const long n = 4000;
  const Run r = run_sampler<Sampler>(t, s, 2000, n, seed, seed + 1);
  const double n_eff = n * n_chains * ess_fraction;
  for (long i = 0; i < 3; ++i) {
    double mean, var;
    moments(r, 3, i, &mean, &var);
    INFO("coordinate " << i << ": mean " << mean << " (" << mu[i] << "), sd " << std::sqrt(var)
                       << " (" << sd[i] << "), adapted diag_sd " << r.diag_sd[i]);
    CHECK(std::fabs(mean - mu[i]) < 5 * sd[i] / std::sqrt(n_eff));
    CHECK(std::fabs(var / (sd[i] * sd[i]) - 1) < 5 * std::sqrt(2 / n_eff));
    // warmup learnt the scales
    CHECK(r.diag_sd[i] / sd[i] > 0.5);
    CHECK(r.diag_sd[i] / sd[i] < 2);
  }
}

}  // namespace

TEST_CASE("rwmh: independent Gaussians with scales 0.1 to 5, normal and uniform proposals",
          "[rwmh][posterior]") {
  RwmhSettings s;
  check_gaussian<Rwmh>(s, 1.0 / 30, 21);
  s.uniform = true;
  check_gaussian<Rwmh>(s, 1.0 / 30, 23);
}

TEST_CASE("rwmh: warmup tunes the acceptance rate towards 0.234", "[rwmh][warmup]") {
  IndependentGaussian t({0, 0, 0, 0}, {1, 2, 3, 4}, n_chains);
  const Run r = run_sampler<Rwmh>(t, RwmhSettings(), 2000, 2000, 25, 26);
  const double rate = static_cast<double>(r.accepted_in_sampling) / (2000 * n_chains);
  INFO("acceptance " << rate << ", epsilon " << r.epsilon);
  CHECK(rate > 0.15);
  CHECK(rate < 0.35);
}

TEST_CASE("slice: independent Gaussians and a correlated one", "[slice][posterior]") {
  check_gaussian<Slice>(SliceSettings(), 1.0 / 10, 31);
  const double rho = 0.9;
  CorrelatedGaussian t(1, -1, 1, 2, rho, n_chains);
  const long n = 3000;
  const Run r = run_sampler<Slice>(t, SliceSettings(), 1000, n, 33, 34);
  const double n_eff = n * n_chains / 20.0;
  double m1, v1, m2, v2;
  moments(r, 2, 0, &m1, &v1);
  moments(r, 2, 1, &m2, &v2);
  INFO("means " << m1 << ", " << m2 << "; sds " << std::sqrt(v1) << ", " << std::sqrt(v2));
  CHECK(std::fabs(m1 - 1) < 5 / std::sqrt(n_eff));
  CHECK(std::fabs(m2 + 1) < 5 * 2 / std::sqrt(n_eff));
  CHECK(std::fabs(v1 - 1) < 5 * std::sqrt(2 / n_eff));
  CHECK(std::fabs(v2 / 4 - 1) < 5 * std::sqrt(2 / n_eff));
}

TEST_CASE("rwmh and slice: the same keys give the same draws", "[rwmh][slice][rng]") {
  IndependentGaussian t({0, 1}, {1, 2}, n_chains);
  CHECK(run_sampler<Rwmh>(t, RwmhSettings(), 50, 30, 5, 9).draws ==
        run_sampler<Rwmh>(t, RwmhSettings(), 50, 30, 5, 9).draws);
  CHECK(run_sampler<Slice>(t, SliceSettings(), 50, 30, 5, 9).draws ==
        run_sampler<Slice>(t, SliceSettings(), 50, 30, 5, 9).draws);
  CHECK(run_sampler<Slice>(t, SliceSettings(), 50, 30, 5, 9).draws !=
        run_sampler<Slice>(t, SliceSettings(), 50, 30, 6, 9).draws);
}

TEST_CASE("rwmh and slice refuse bad settings", "[rwmh][slice][errors]") {
  IndependentGaussian t({0}, {1}, n_chains);
  std::vector<double> ok(n_chains, 0.0);
  RwmhSettings r;
  r.epsilon = 0;
  CHECK_THROWS_AS(Rwmh(t, r, ok, 1, 2), std::invalid_argument);
  SliceSettings s;
  s.max_doublings = -1;
  CHECK_THROWS_AS(Slice(t, s, ok, 1, 2), std::invalid_argument);
  BadStart bad(-HUGE_VAL);
  CHECK_THROWS_AS(Slice(bad, SliceSettings(), ok, 1, 2), std::invalid_argument);
}
