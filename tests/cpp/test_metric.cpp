// The diagonal metric pooled across chains (the default) or adapted per chain
// (Sampler's per_chain_metric): with chains that sample different
// scales, per-chain warmup gives each chain a metric near its own scales and
// correct moments within Monte Carlo error (sampler_helpers.hpp); pooled
// warmup gives every chain the same metric; with one chain the two modes are
// the same computation and give the same draws bit for bit; a [chains, dim]
// diag_sd restarts each chain from its own row.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/sampler/rwmh.hpp"
#include "sampler_helpers.hpp"

using namespace lockstep;
using namespace sampler_tests;

namespace {

// Four chains of two coordinates whose scales span three orders of magnitude
// between chains, so that no pooled metric fits every chain.
constexpr long metric_chains = 4, metric_dim = 2;
const std::vector<double> chain_mu = {0, 1, -3, 2, 10, 0, 0.5, -1};
const std::vector<double> chain_sd = {0.05, 1, 1, 20, 10, 0.2, 2, 2};

// Every chain's adapted diag_sd is within a factor of 2 of its own scales,
// and its draws have its own means and variances within Monte Carlo error.
void check_per_chain(const Run& r, long n) {
  const long C = metric_chains, D = metric_dim;
  REQUIRE(static_cast<long>(r.diag_sd.size()) == C * D);
  const double n_eff = n / 10.0;  // one chain's draws
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < D; ++i) {
      const long k = c * D + i;
      double mean, var;
      chain_moments(r, C, D, c, i, &mean, &var);
      INFO("chain " << c << " coordinate " << i << ": mean " << mean << " (" << chain_mu[k]
                    << "), sd " << std::sqrt(var) << " (" << chain_sd[k]
                    << "), adapted diag_sd " << r.diag_sd[k]);
      CHECK(r.diag_sd[k] / chain_sd[k] > 0.5);
      CHECK(r.diag_sd[k] / chain_sd[k] < 2);
      CHECK(std::fabs(mean - chain_mu[k]) < 5 * chain_sd[k] / std::sqrt(n_eff));
      CHECK(std::fabs(var / (chain_sd[k] * chain_sd[k]) - 1) < 5 * std::sqrt(2 / n_eff));
    }
}

template <class Sampler, class Settings>
void check_pooled_rows_equal(Settings s) {
  PerChainGaussian t(chain_mu, chain_sd, metric_chains);
  s.per_chain_metric = false;
  const Run r = run_sampler<Sampler>(t, s, 300, 10, 3, 4);
  const long D = metric_dim;
  REQUIRE(static_cast<long>(r.diag_sd.size()) == metric_chains * D);
  for (long c = 1; c < metric_chains; ++c)
    for (long i = 0; i < D; ++i) CHECK(r.diag_sd[c * D + i] == r.diag_sd[i]);
}

// With one chain, pooling is over that chain alone: the per-chain path must
// reproduce the pooled one exactly (draws, metric, step size).
template <class Sampler, class Settings>
void check_one_chain_same(Settings s) {
  IndependentGaussian t({1, -2, 0.5}, {0.3, 2, 5}, 1);
  s.per_chain_metric = false;
  const Run pooled = run_sampler<Sampler>(t, s, 300, 200, 7, 8);
  s.per_chain_metric = true;
  const Run own = run_sampler<Sampler>(t, s, 300, 200, 7, 8);
  CHECK(pooled.draws == own.draws);
  CHECK(pooled.diag_sd == own.diag_sd);
  CHECK(pooled.epsilon == own.epsilon);
}

// A sampler with per-chain metrics on chains with different scales: n draws
// after 1000 warmup iterations, keys k0 and k0 + 1. (Each chain has a target
// of its own here, so warmup must not move one to another's state: no
// rescue.)
template <class Sampler, class Settings> void per_chain_fits(long n, uint32_t k0) {
  PerChainGaussian t(chain_mu, chain_sd, metric_chains);
  Settings s;
  s.per_chain_metric = true;
  s.warmup_rescue = false;
  check_per_chain(run_sampler<Sampler>(t, s, 1000, n, k0, k0 + 1), n);
}

}  // namespace

TEST_CASE("nuts: per-chain metrics fit chains with different scales", "[metric][nuts]") {
  per_chain_fits<Nuts, NutsSettings>(1000, 11);
}

TEST_CASE("hmc: per-chain metrics fit chains with different scales", "[metric][hmc]") {
  per_chain_fits<Hmc, HmcSettings>(2000, 13);
}

TEST_CASE("chees: per-chain metrics fit chains with different scales", "[metric][chees]") {
  per_chain_fits<Chees, CheesSettings>(2000, 15);
}

TEST_CASE("pooled metrics are one metric for every chain", "[metric]") {
  check_pooled_rows_equal<Nuts>(NutsSettings());
  check_pooled_rows_equal<Hmc>(HmcSettings());
  check_pooled_rows_equal<Chees>(CheesSettings());
  check_pooled_rows_equal<Rwmh>(RwmhSettings());
}

TEST_CASE("with one chain per-chain and pooled metrics give the same draws", "[metric]") {
  check_one_chain_same<Nuts>(NutsSettings());
  check_one_chain_same<Hmc>(HmcSettings());
  check_one_chain_same<Chees>(CheesSettings());
  check_one_chain_same<Rwmh>(RwmhSettings());
}

TEST_CASE("a [chains x dim] diag_sd sets each chain's metric", "[metric][errors]") {
  PerChainGaussian t(chain_mu, chain_sd, metric_chains);
  const std::vector<double> init(chain_mu);  // each chain at its own mode
  NutsSettings s;
  s.diag_sd = chain_sd;
  CHECK(Nuts(t, s, init, 1, 2).diag_sd() == chain_sd);
  s.per_chain_metric = true;
  CHECK(Nuts(t, s, init, 1, 2).diag_sd() == chain_sd);
  s.diag_sd = std::vector<double>(metric_chains * metric_dim + 1, 1.0);
  CHECK_THROWS_AS(Nuts(t, s, init, 1, 2), std::invalid_argument);
  s.diag_sd = chain_sd;
  s.diag_sd[5] = 0;
  CHECK_THROWS_AS(Nuts(t, s, init, 1, 2), std::invalid_argument);
}

namespace {

// PerChainGaussian whose last chain's log density is `offset` lower
// everywhere: a chain far out in the tails that never comes in.
class WithLaggingChain : public Target {
 public:
  WithLaggingChain(PerChainGaussian& t, double offset) : t_(t), offset_(offset) {}
  long dim() const override { return t_.dim(); }
  long chains() const override { return t_.chains(); }
  void log_density(const double* x, double* lp, double* grad) override {
    t_.log_density(x, lp, grad);
    lp[t_.chains() - 1] -= offset_;
  }

 private:
  PerChainGaussian& t_;
  double offset_;
};

// Seven chains on N(0, 1) in two coordinates, and one on N(0, 100^2) whose log
// density lies `offset` below theirs.
template <class Sampler, class Settings> Run with_lagging_chain(Settings s, double offset) {
  const long C = 8, D = 2;
  std::vector<double> mu(C * D, 0.0), sd(C * D, 1.0);
  sd[(C - 1) * D] = sd[(C - 1) * D + 1] = 100;
  PerChainGaussian base(mu, sd, C);
  WithLaggingChain t(base, offset);
  s.warmup_rescue = false;  // (the lagging chain's target is its own: it must stay)
  return run_sampler<Sampler>(t, s, 500, 200, 5, 6);
}

}  // namespace

TEST_CASE("a chain far below the others' log density does not steer the pooled metric",
          "[metric][warmup]") {
  // The lagging chain's draws would put the pooled variance near
  // (7 + 100^2) / 8, a diag_sd of about 35; the step size would follow the
  // metric; the ChEES criterion would be about that chain alone.
  auto check = [](const Run& lagging, const Run& level, const char* sampler) {
    INFO(sampler << ": diag_sd " << lagging.diag_sd[0] << ", " << lagging.diag_sd[1]
                 << " (without the offset " << level.diag_sd[0] << ", " << level.diag_sd[1]
                 << "); step size " << lagging.epsilon);
    for (int i = 0; i < 2; ++i) {
      CHECK(lagging.diag_sd[i] > 0.6);
      CHECK(lagging.diag_sd[i] < 1.6);
      CHECK(level.diag_sd[i] > 10);  // the same chains without the offset steer
    }
    CHECK(lagging.epsilon > 0.3);
  };
  check(with_lagging_chain<Nuts>(NutsSettings(), 1e4), with_lagging_chain<Nuts>(NutsSettings(), 0),
        "nuts");
  check(with_lagging_chain<Chees>(CheesSettings(), 1e4),
        with_lagging_chain<Chees>(CheesSettings(), 0), "chees");
  HmcSettings hmc;
  check(with_lagging_chain<Hmc>(hmc, 1e4), with_lagging_chain<Hmc>(hmc, 0), "hmc");
}

TEST_CASE("the chains still lagging at the end of warmup are reported", "[metric][warmup]") {
  const long C = 8, D = 2;
  std::vector<double> mu(C * D, 0.0), sd(C * D, 1.0);
  PerChainGaussian base(mu, sd, C);
  WithLaggingChain t(base, 1e4);
  std::vector<double> init(C * D);
  for (long k = 0; k < C * D; ++k) init[k] = std::sin(1.7 * k + 0.3);
  NutsSettings s;
  s.warmup_rescue = false;  // (the lagging chain's target is its own: it must stay)
  Nuts h(t, s, init, 9, 10);
  CHECK(h.lag_at_warmup_end().empty());
  h.begin_warmup(100);
  for (int i = 0; i < 99; ++i) h.iterate(true);
  CHECK(h.lag_at_warmup_end().empty());  // not yet
  h.iterate(true);
  const std::vector<double>& lag = h.lag_at_warmup_end();
  REQUIRE(static_cast<long>(lag.size()) == C);
  // 1e4 below the others, against a gap of 10 + 5 sqrt(2 / 2) = 15
  CHECK(lag[C - 1] > 600);
  for (long c = 0; c < C - 1; ++c) CHECK(std::fabs(lag[c]) < 1);
}

TEST_CASE("warmup can start from a metric scaled to the gradient at the initial values",
          "[metric][warmup]") {
  // Independent normals of sd 1e-4 (below the floor), 0.01, 0.1, 2 (above the
  // cap) and 1; each chain starts at distance d = 1, 4, 1/4, 1 from the means
  // in the first four coordinates (as initial values drawn on (-2, 2) are,
  // whatever the posterior's scale), so |g| = d / sd^2 and the chains'
  // geometric mean of |g|^(-1/2) is sd (the d's multiply to 1); the last
  // coordinate starts at its mean in every chain (gradient 0).
  const std::vector<double> mu{0.5, -1, 2, 0, 3}, sd{1e-4, 0.01, 0.1, 2, 1};
  const std::vector<double> d{1, 4, 0.25, 1};
  const long C = 4, D = 5;
  IndependentGaussian t(mu, sd, C);
  std::vector<double> init(C * D);
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < D; ++i)
      init[c * D + i] = mu[i] + (i < 4 ? (c % 2 ? -1 : 1) * d[c] : 0.0);
  const std::vector<double> expected{1e-3, 0.01, 0.1, 1, 1};

  NutsSettings s;
  Nuts off(t, s, init, 1, 2);
  off.begin_warmup(100);
  CHECK(off.diag_sd() == std::vector<double>(C * D, 1.0));  // not asked for: the unit metric

  Nuts on(t, s, init, 1, 2);
  on.start_metric_from_gradient(true);
  on.begin_warmup(0);  // no warmup: the metric given is the one sampled with
  CHECK(on.diag_sd() == std::vector<double>(C * D, 1.0));
  on.begin_warmup(100);
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < D; ++i)
      CHECK(on.diag_sd()[c * D + i] == Approx(expected[i]).epsilon(1e-12));

  // HMC and ChEES start the same way, and per-chain metrics too.
  Hmc hmc(t, HmcSettings(), init, 1, 2);
  hmc.start_metric_from_gradient(true);
  hmc.begin_warmup(100);
  CheesSettings cs;
  cs.per_chain_metric = true;
  Chees chees(t, cs, init, 1, 2);
  chees.start_metric_from_gradient(true);
  chees.begin_warmup(100);
  CHECK(hmc.diag_sd() == on.diag_sd());
  CHECK(chees.diag_sd() == on.diag_sd());
}

TEST_CASE("a metric started from the gradient still adapts to the posterior", "[metric][warmup]") {
  // Scales from 0.01 to 30: the start narrows the small ones; the windows
  // then learn every one, the wide ones above the start's cap of 1 included,
  // and the draws have the right variances.
  const std::vector<double> mu{1, -2, 0, 5}, sd{0.01, 0.2, 3, 30};
  IndependentGaussian t(mu, sd, n_chains);
  NutsSettings s;
  std::vector<double> init(n_chains * mu.size());
  for (long c = 0; c < n_chains; ++c)
    for (size_t i = 0; i < mu.size(); ++i) init[c * mu.size() + i] = mu[i] + 0.5 * (c + 1) - 1;
  Nuts nuts(t, s, init, 3, 4);
  nuts.start_metric_from_gradient(true);
  nuts.begin_warmup(400);
  for (int it = 0; it < 400; ++it) nuts.iterate(true);
  for (long c = 0; c < n_chains; ++c)
    for (size_t i = 0; i < mu.size(); ++i)
      CHECK(nuts.diag_sd()[c * mu.size() + i] == Approx(sd[i]).epsilon(0.3));
  const long n = 1000, D = static_cast<long>(mu.size());
  std::vector<double> sum(D, 0.0), sum2(D, 0.0);
  for (long it = 0; it < n; ++it) {
    nuts.iterate(false);
    for (long c = 0; c < n_chains; ++c)
      for (long i = 0; i < D; ++i) {
        const double z = (nuts.state()[c * D + i] - mu[i]) / sd[i];
        sum[i] += z;
        sum2[i] += z * z;
      }
  }
  const double draws = static_cast<double>(n * n_chains), n_eff = draws / 10;
  for (long i = 0; i < D; ++i) {
    const double mean = sum[i] / draws, var = sum2[i] / draws - mean * mean;
    CHECK(std::fabs(mean) < 5 / std::sqrt(n_eff));
    CHECK(std::fabs(var - 1) < 5 * std::sqrt(2 / n_eff));
  }
}
