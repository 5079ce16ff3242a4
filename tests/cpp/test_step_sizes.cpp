// Per-chain step sizes (sampler.hpp, step_size_adaptation.hpp): a chain's step
// size reaches the vectors through its row of the metric, which must move
// each chain exactly as a sampler at that chain's step size would; each
// chain's search and dual averaging are its own; shared step sizes are what
// they were.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "lockstep/sampler/dual_averaging.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "sampler_helpers.hpp"

using lockstep::Hmc;
using lockstep::HmcSettings;
using lockstep::Nuts;
using lockstep::NutsSettings;
using namespace sampler_tests;

namespace {

std::vector<double> spread_init(long chains, long dim) {
  std::vector<double> init(chains * dim);
  for (long k = 0; k < chains * dim; ++k) init[k] = std::sin(1.7 * k + 0.3);
  return init;
}

template <class S, class Settings>
std::vector<double> draws_at(lockstep::Target& t, Settings s, const std::vector<double>& eps,
                             int iterations) {
  S sampler(t, s, spread_init(t.chains(), t.dim()), 31, 32);
  sampler.set_step_sizes(eps);
  std::vector<double> out;
  for (int it = 0; it < iterations; ++it) {
    sampler.iterate(false);
    out.insert(out.end(), sampler.state().begin(), sampler.state().end());
    for (int n : sampler.last().n_leapfrog) out.push_back(n);
  }
  return out;
}

// Chain c's draws and leapfrog counts of two runs of [iterations][chains x
// (dim + 1)] agree to rounding.
void check_chain_agrees(const std::vector<double>& a, const std::vector<double>& b, long chains,
                        long dim, long c) {
  REQUIRE(a.size() == b.size());
  const long per_iteration = chains * dim + chains;
  const long iterations = static_cast<long>(a.size()) / per_iteration;
  for (long it = 0; it < iterations; ++it) {
    for (long i = 0; i < dim; ++i) {
      const long k = it * per_iteration + c * dim + i;
      INFO("iteration " << it << ", chain " << c << ", coordinate " << i);
      CHECK(a[k] == Approx(b[k]).epsilon(1e-9).margin(1e-12));
    }
    const long n = it * per_iteration + chains * dim + c;
    CHECK(a[n] == b[n]);
  }
}

}  // namespace

TEST_CASE("per-chain step sizes: each chain moves as a sampler at its own step size",
          "[step_size][nuts][hmc]") {
  // The metric's row scaled by a chain's step size over a unit step is the
  // leapfrog at that step size: chain c of a per-chain sampler at (e_0, ...,
  // e_3) draws what chain c of a shared sampler at e_c draws (a chain's
  // trajectory is its own: its own stream, its own tree).
  const std::vector<double> mu = {1, -2, 0.5};
  const std::vector<double> sd = {0.3, 1, 4};
  IndependentGaussian t(mu, sd, n_chains);
  const std::vector<double> eps = {0.05, 0.2, 0.45, 1.1};
  NutsSettings per_chain;
  per_chain.per_chain_step_size = true;
  per_chain.diag_sd = {0.5, 1, 2};
  NutsSettings shared = per_chain;
  shared.per_chain_step_size = false;
  const std::vector<double> mixed = draws_at<Nuts>(t, per_chain, eps, 12);
  for (long c = 0; c < n_chains; ++c) {
    const std::vector<double> alone = draws_at<Nuts>(t, shared, std::vector<double>(n_chains, eps[c]), 12);
    check_chain_agrees(mixed, alone, n_chains, 3, c);
  }
  HmcSettings hp;
  hp.per_chain_step_size = true;
  hp.Lmin = 3, hp.Lmax = 8;
  HmcSettings hs = hp;
  hs.per_chain_step_size = false;
  const std::vector<double> hmixed = draws_at<Hmc>(t, hp, eps, 12);
  for (long c = 0; c < n_chains; ++c) {
    const std::vector<double> alone = draws_at<Hmc>(t, hs, std::vector<double>(n_chains, eps[c]), 12);
    check_chain_agrees(hmixed, alone, n_chains, 3, c);
  }
  // and the step sizes differ enough that the runs do: chain 0 and chain 3
  // take different numbers of leapfrog steps
  const long per_iteration = n_chains * 3 + n_chains;
  double steps0 = 0, steps3 = 0;
  for (long it = 0; it < 12; ++it) {
    steps0 += mixed[it * per_iteration + n_chains * 3 + 0];
    steps3 += mixed[it * per_iteration + n_chains * 3 + 3];
  }
  CHECK(steps0 > 3 * steps3);
}

TEST_CASE("per-chain step sizes: each chain's search and dual averaging are its own",
          "[step_size][nuts]") {
  // Chain c's target has scale s_c (1, 0.1, 0.01, 1): with the unit metric
  // and no metric window ending (a 200-iteration warmup's first 60 are its
  // initial buffer), each chain's searched step size follows its scale, and
  // each later one is its own dual averaging on its own acceptance.
  const std::vector<double> scale = {1, 0.1, 0.01, 1};
  std::vector<double> mu(n_chains * 2, 0.0), sd(n_chains * 2);
  for (long c = 0; c < n_chains; ++c) sd[2 * c] = sd[2 * c + 1] = scale[c];
  PerChainGaussian t(mu, sd, n_chains);
  std::vector<double> init(n_chains * 2);
  for (long c = 0; c < n_chains; ++c) init[2 * c] = 0.5 * scale[c], init[2 * c + 1] = -scale[c];
  NutsSettings s;
  s.per_chain_step_size = true;
  s.diag_sd = {1.0};
  Nuts nuts(t, s, init, 7, 8);
  REQUIRE(nuts.per_chain_step_size());
  nuts.begin_warmup(200);
  const std::vector<double> searched = nuts.step_sizes();
  INFO("searched step sizes " << searched[0] << ", " << searched[1] << ", " << searched[2]
                              << ", " << searched[3]);
  for (long c = 0; c < n_chains; ++c) {
    // within a factor of 4 of the scale (the search doubles and halves)
    CHECK(searched[c] / scale[c] > 0.25);
    CHECK(searched[c] / scale[c] < 4);
  }
  std::vector<lockstep::DualAveraging> expected(n_chains, lockstep::DualAveraging(0.8));
  for (long c = 0; c < n_chains; ++c) expected[c].restart(searched[c]);
  for (int it = 0; it < 60; ++it) {
    nuts.iterate(true);
    const std::vector<double>& a = nuts.last().accept_stat;
    const std::vector<double> eps = nuts.step_sizes();
    for (long c = 0; c < n_chains; ++c) CHECK(eps[c] == Approx(expected[c].update(a[c])).epsilon(1e-12));
  }
  const std::vector<double> eps = nuts.step_sizes();
  CHECK(eps[0] / eps[2] > 20);
  CHECK(eps[1] / eps[2] > 2);
  // The shared sampler on the same chains: one step size, every chain's.
  NutsSettings one = s;
  one.per_chain_step_size = false;
  Nuts shared(t, one, init, 7, 8);
  shared.begin_warmup(200);
  for (int it = 0; it < 10; ++it) shared.iterate(true);
  const std::vector<double> same = shared.step_sizes();
  for (long c = 1; c < n_chains; ++c) CHECK(same[c] == same[0]);
  CHECK(shared.epsilon() == same[0]);
}

TEST_CASE("per-chain step sizes: after warmup each chain keeps its averaged step size",
          "[step_size][nuts][posterior]") {
  // Chains on targets of scales 1 and 0.05 end warmup with step sizes in
  // about that ratio, and sample their own targets' moments.
  const long C = 2, D = 3;
  std::vector<double> mu(C * D), sd(C * D);
  for (long i = 0; i < D; ++i) {
    mu[i] = 1, sd[i] = 1;
    mu[D + i] = -1, sd[D + i] = 0.05;
  }
  PerChainGaussian t(mu, sd, C);
  NutsSettings s;
  s.per_chain_step_size = true;
  s.per_chain_metric = false;  // the pooled metric fits neither chain alone
  s.warmup_rescue = false;      // (each chain's target is its own: none may move)
  Nuts nuts(t, s, spread_init(C, D), 3, 4);
  nuts.begin_warmup(400);
  for (int it = 0; it < 400; ++it) nuts.iterate(true);
  const std::vector<double> eps = nuts.step_sizes();
  INFO("step sizes " << eps[0] << ", " << eps[1]);
  CHECK(eps[0] / eps[1] > 5);
  const long n = 1000;
  std::vector<double> sum(C * D, 0.0), sum2(C * D, 0.0);
  for (long it = 0; it < n; ++it) {
    nuts.iterate(false);
    for (long k = 0; k < C * D; ++k) {
      sum[k] += nuts.state()[k];
      sum2[k] += nuts.state()[k] * nuts.state()[k];
    }
    CHECK(nuts.step_sizes() == eps);  // fixed after warmup
  }
  for (long k = 0; k < C * D; ++k) {
    const double mean = sum[k] / n, var = sum2[k] / n - mean * mean;
    INFO("chain " << k / D << ", coordinate " << k % D << ": mean " << mean << ", sd "
                  << std::sqrt(var));
    // (NUTS's draws of a Gaussian are close to independent: n / 3 is safe)
    CHECK(std::fabs(mean - mu[k]) < 5 * sd[k] / std::sqrt(n / 3.0));
    CHECK(std::sqrt(var) / sd[k] > 0.8);
    CHECK(std::sqrt(var) / sd[k] < 1.2);
  }
}

TEST_CASE("step sizes: set_step_sizes() refuses the wrong count and bad values", "[step_size][errors]") {
  IndependentGaussian t({0, 0}, {1, 1}, n_chains);
  NutsSettings s;
  s.per_chain_step_size = true;
  Nuts nuts(t, s, spread_init(n_chains, 2), 1, 2);
  CHECK_THROWS_AS(nuts.set_step_sizes({0.1, 0.2}), std::invalid_argument);
  CHECK_THROWS_AS(nuts.set_step_sizes({0.1, 0.2, -1, 0.3}), std::invalid_argument);
  CHECK_THROWS_AS(nuts.set_step_sizes({0.1, 0.2, NAN, 0.3}), std::invalid_argument);
  nuts.set_step_sizes({0.1, 0.2, 0.3, 0.4});
  CHECK(nuts.step_sizes() == std::vector<double>({0.1, 0.2, 0.3, 0.4}));
  CHECK(nuts.epsilon() == 0.1);
  // shared: the first value is every chain's
  NutsSettings one;
  Nuts shared(t, one, spread_init(n_chains, 2), 1, 2);
  shared.set_step_sizes({0.25, 0.5, 0.5, 0.5});
  CHECK(shared.step_sizes() == std::vector<double>(n_chains, 0.25));
}
