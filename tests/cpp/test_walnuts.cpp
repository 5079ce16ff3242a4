// NUTS with WALNUTS's leaves (nuts_trajectory.hpp, NutsSettings::
// max_energy_error): where no step needs splitting, NUTS's draws to the last
// bit; where many do, draws of the right distribution (a Gaussian, and Neal's
// funnel, whose neck plain NUTS with one step size cannot enter), within
// Monte Carlo error; bad settings refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "lockstep/sampler/nuts.hpp"
#include "sampler_helpers.hpp"

using lockstep::Nuts;
using lockstep::NutsSettings;
using lockstep::Target;
using namespace sampler_tests;

namespace {

// Neal's funnel: v ~ N(0, 3^2), x_i | v ~ N(0, exp(v / 2)^2), i = 1 ... K;
// v's marginal is N(0, 9) exactly.
class Funnel : public Target {
 public:
  Funnel(long K, long chains) : K_(K), chains_(chains) {}
  long dim() const override { return K_ + 1; }
  long chains() const override { return chains_; }
  void log_density(const double* x, double* lp, double* grad) override {
    const long D = dim();
    for (long c = 0; c < chains_; ++c) {
      const double v = x[c * D], inv = std::exp(-v);
      double l = -v * v / 18, gv = -v / 9;
      for (long i = 1; i < D; ++i) {
        const double xi = x[c * D + i];
        l += -0.5 * xi * xi * inv - 0.5 * v;
        gv += 0.5 * xi * xi * inv - 0.5;
        if (grad) grad[c * D + i] = -xi * inv;
      }
      lp[c] = l;
      if (grad) grad[c * D] = gv;
    }
  }

 private:
  long K_, chains_;
};

NutsSettings walnuts(double max_energy_error) {
  NutsSettings s;
  s.max_energy_error = max_energy_error;
  return s;
}

// Warmup and n kept iterations: the kept draws [iteration, chain, dim] and
// the leapfrog steps of all of them.
struct Kept {
  std::vector<double> draws;
  long steps = 0;
};
Kept run(Target& t, const NutsSettings& s, long warmup, long n, uint32_t k0, uint32_t k1) {
  const long C = t.chains(), D = t.dim();
  std::vector<double> init(C * D);
  for (long k = 0; k < C * D; ++k) init[k] = std::sin(1.7 * k + 0.3);
  Nuts h(t, s, init, k0, k1);
  h.begin_warmup(warmup);
  for (long i = 0; i < warmup; ++i) h.iterate(true);
  Kept out;
  for (long i = 0; i < n; ++i) {
    h.iterate(false);
    out.draws.insert(out.draws.end(), h.state().begin(), h.state().end());
    for (long c = 0; c < C; ++c) out.steps += h.last().n_leapfrog[c];
  }
  return out;
}

double mean_of(const std::vector<double>& draws, long D, long i, double* var) {
  const long m = static_cast<long>(draws.size()) / D;
  double s = 0, s2 = 0;
  for (long k = 0; k < m; ++k) s += draws[k * D + i];
  const double mean = s / m;
  for (long k = 0; k < m; ++k) s2 += (draws[k * D + i] - mean) * (draws[k * D + i] - mean);
  *var = s2 / (m - 1);
  return mean;
}

}  // namespace

TEST_CASE("walnuts: where no step needs splitting, the draws are nuts's to the last bit",
          "[nuts][walnuts]") {
  // The leaves are written beside the old ones rather than over them, the
  // same numbers: with an error no step reaches, warmup and sampling follow
  // plain NUTS exactly.
  for (long C : {1L, 4L}) {
    IndependentGaussian t({1, -2, 0.5}, {0.1, 1, 3}, C);
    std::vector<double> init(C * 3);
    for (long k = 0; k < C * 3; ++k) init[k] = std::cos(0.9 * k);
    const std::vector<double> plain = sampler_trace<Nuts>(t, NutsSettings(), init, 60, 3, 4);
    const std::vector<double> split = sampler_trace<Nuts>(t, walnuts(1e300), init, 60, 3, 4);
    INFO(C << " chains");
    CHECK(plain == split);
  }
}

TEST_CASE("walnuts: split steps keep a Gaussian's moments", "[nuts][walnuts][posterior]") {
  // An error so small that many leapfrog steps are split (and some are not
  // reversible): the draws must still be the target's.
  const std::vector<double> mu = {1, -2, 0.5}, sd = {0.1, 1, 3};
  IndependentGaussian t(mu, sd, n_chains);
  const long n = 1000;
  const Kept plain = run(t, NutsSettings(), 500, n, 5, 6);
  const Kept r = run(t, walnuts(0.02), 500, n, 5, 6);
  INFO("leapfrog steps: nuts " << plain.steps << ", walnuts " << r.steps);
  CHECK(r.steps > 1.5 * plain.steps);  // steps were split
  const double n_eff = n * n_chains / 10.0;
  for (long i = 0; i < 3; ++i) {
    double var;
    const double mean = mean_of(r.draws, 3, i, &var);
    INFO("coordinate " << i << ": mean " << mean << " (" << mu[i] << "), sd " << std::sqrt(var)
                       << " (" << sd[i] << ")");
    CHECK(std::fabs(mean - mu[i]) < 5 * sd[i] / std::sqrt(n_eff));
    CHECK(std::fabs(var / (sd[i] * sd[i]) - 1) < 5 * std::sqrt(2 / n_eff));
  }
}

TEST_CASE("walnuts: Neal's funnel, neck included", "[nuts][walnuts][posterior]") {
  // v ~ N(0, 9) exactly. NUTS with one step size undersamples the neck
  // (v far below 0, where x's scale is exp(v / 2)): its draws of v have too
  // high a mean and too small a variance. With split steps the chains go in.
  Funnel t(4, n_chains);
  const long n = 3000;
  const Kept r = run(t, walnuts(0.5), 1000, n, 7, 8);
  const long D = t.dim(), m = static_cast<long>(r.draws.size()) / D;
  double var;
  const double mean = mean_of(r.draws, D, 0, &var);
  double below = 0;  // the share of draws with v < -5 (0.048 exactly)
  for (long k = 0; k < m; ++k) below += r.draws[k * D] < -5;
  below /= m;
  const double n_eff = n * n_chains / 20.0;
  INFO("v: mean " << mean << " (0), sd " << std::sqrt(var) << " (3), below -5 " << below
                  << " (0.048); leapfrog steps " << r.steps);
  CHECK(std::fabs(mean) < 5 * 3 / std::sqrt(n_eff));
  CHECK(std::fabs(var / 9 - 1) < 5 * std::sqrt(2 / n_eff));
  CHECK(std::fabs(below - 0.0478) < 5 * std::sqrt(0.0478 * 0.952 / n_eff));
}

TEST_CASE("walnuts: bad settings are refused", "[nuts][walnuts][errors]") {
  IndependentGaussian t({0}, {1}, 2);
  const std::vector<double> init(2, 0.0);
  for (double e : {0.0, -1.0, std::nan("")})
    CHECK_THROWS_AS(Nuts(t, walnuts(e), init, 1, 2), std::invalid_argument);
  for (int d : {0, 13}) {
    NutsSettings s = walnuts(1);
    s.max_micro_depth = d;
    CHECK_THROWS_AS(Nuts(t, s, init, 1, 2), std::invalid_argument);
  }
}
