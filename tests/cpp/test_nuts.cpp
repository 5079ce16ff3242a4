// NUTS with lockstep chains (sampler/nuts.hpp) on analytic targets: posterior
// moments within Monte Carlo error (sampler_helpers.hpp), a hundred
// dimensions, tree depths that grow with the posterior's scale ratio,
// divergences reported, reproducibility from the keys, bad settings refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"
#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/dense_metric.hpp"
#include "lockstep/sampler/dual_averaging.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "sampler_helpers.hpp"

using lockstep::Nuts;
using lockstep::NutsSettings;
using namespace sampler_tests;
using namespace lstest;
using lockstep::Executor;

TEST_CASE("nuts: independent Gaussians with different scales, 4 chains", "[nuts][posterior]") {
  const std::vector<double> mu = {1, -2, 0.5, 3, 0};
  const std::vector<double> sd = {0.1, 1, 3, 10, 0.5};
  IndependentGaussian t(mu, sd, n_chains);
  const long n = 1000;
  const Run r = run_sampler<Nuts>(t, NutsSettings(), 1000, n);
  const double n_eff = n * n_chains / 10.0;
  for (long i = 0; i < 5; ++i) {
    double mean, var;
    moments(r, 5, i, &mean, &var);
    INFO("coordinate " << i << ": mean " << mean << " (" << mu[i] << "), sd " << std::sqrt(var)
                       << " (" << sd[i] << "), adapted diag_sd " << r.diag_sd[i]);
    CHECK(std::fabs(mean - mu[i]) < 5 * sd[i] / std::sqrt(n_eff));
    CHECK(std::fabs(var / (sd[i] * sd[i]) - 1) < 5 * std::sqrt(2 / n_eff));
    CHECK(r.diag_sd[i] / sd[i] > 0.5);
    CHECK(r.diag_sd[i] / sd[i] < 2);
  }
}

TEST_CASE("nuts: a strongly correlated bivariate Gaussian, 4 chains", "[nuts][posterior]") {
  const double m1 = 1, m2 = -1, s1 = 1, s2 = 2, rho = 0.95;
  CorrelatedGaussian t(m1, m2, s1, s2, rho, n_chains);
  const long n = 1500;
  const Run r = run_sampler<Nuts>(t, NutsSettings(), 1000, n, 5, 6);
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
  CHECK(std::fabs(corr - rho) < 5 * (1 - rho * rho) / std::sqrt(n_eff));
}

TEST_CASE("nuts: 100 independent standard normals, nearly independent draws",
          "[nuts][posterior]") {
  const long D = 100;
  IndependentGaussian t(std::vector<double>(D, 0.0), std::vector<double>(D, 1.0), n_chains);
  const long n = 500;
  const Run r = run_sampler<Nuts>(t, NutsSettings(), 500, n, 7, 8);
  // NUTS on an iid Gaussian mixes in a step or two: ESS near n, so use a
  // tighter bound than the conservative n / 10 (n / 3) on the pooled
  // second moment summed over coordinates (chi-square with ~n_eff * D dof).
  const double n_eff = n * n_chains / 3.0;
  double sum_mean2 = 0, sum_var = 0;
  for (long i = 0; i < D; ++i) {
    double mean, var;
    moments(r, D, i, &mean, &var);
    sum_mean2 += mean * mean * n_eff;
    sum_var += var;
  }
  INFO("sum of n_eff mean^2 " << sum_mean2 << " (about " << D << "), mean variance " << sum_var / D);
  CHECK(sum_mean2 < D + 5 * std::sqrt(2.0 * D) * 3);
  CHECK(std::fabs(sum_var / D - 1) < 5 * std::sqrt(2 / (n_eff * D)) * 2);
}

TEST_CASE("nuts: tree depth, leapfrog steps and acceptance are reported per chain",
          "[nuts][diagnostics]") {
  // Scales of 1 and 100 with a unit metric and no warmup: a fixed small step
  // needs long trajectories to U-turn in the wide direction.
  IndependentGaussian t({0, 0}, {1, 100}, n_chains);
  std::vector<double> init(2 * n_chains, 0.5);
  NutsSettings s;
  s.epsilon = 0.5;
  s.max_treedepth = 12;
  Nuts h(t, s, init, 3, 3);
  double depth = 0;
  for (int it = 0; it < 50; ++it) {
    h.iterate(false);
    for (long c = 0; c < n_chains; ++c) {
      const auto& st = h.last();
      CHECK(st.tree_depth[c] >= 1);
      CHECK(st.tree_depth[c] <= 12);
      // a trajectory of depth d that ends by a U-turn in its last subtree has
      // between 2^(d-1) + 1 and 2^(d+1) - 1 points
      CHECK(st.n_leapfrog[c] >= (1 << (st.tree_depth[c] - 1)));
      CHECK(st.n_leapfrog[c] < (1 << (st.tree_depth[c] + 1)));
      CHECK(st.accept_stat[c] >= 0);
      CHECK(st.accept_stat[c] <= 1);
      CHECK(std::isfinite(st.energy[c]));
      depth += st.tree_depth[c];
    }
  }
  // about log2(100 / 0.5) = 7.6 doublings to span the wide direction
  CHECK(depth / (50 * n_chains) > 5);
  // max_treedepth caps it
  s.max_treedepth = 3;
  Nuts capped(t, s, init, 3, 3);
  for (int it = 0; it < 20; ++it) {
    capped.iterate(false);
    for (long c = 0; c < n_chains; ++c) {
      CHECK(capped.last().tree_depth[c] <= 3);
      CHECK(capped.last().n_leapfrog[c] <= 7);
    }
  }
}

TEST_CASE("nuts: a step far too large diverges, and divergences are counted as bad",
          "[nuts][diagnostics]") {
  IndependentGaussian t({0}, {0.01}, n_chains);
  std::vector<double> init(n_chains, 0.001);
  NutsSettings s;
  s.epsilon = 5;
  Nuts h(t, s, init, 1, 1);
  for (int it = 0; it < 5; ++it) h.iterate(false);
  long bad = 0;
  for (long b : h.bad()) bad += b;
  CHECK(bad == 5 * n_chains);
  for (long c = 0; c < n_chains; ++c) CHECK(h.last().divergent[c] == 1);
  // the draw never moves to a divergent point
  for (long c = 0; c < n_chains; ++c) CHECK(std::fabs(h.state()[c]) < 0.05);
}

TEST_CASE("nuts: identical keys give identical draws, different keys differ", "[nuts][rng]") {
  IndependentGaussian t({0, 1}, {1, 2}, n_chains);
  auto draws = [&](uint32_t k0, uint32_t k1) {
    return run_sampler<Nuts>(t, NutsSettings(), 100, 30, k0, k1).draws;
  };
  CHECK(draws(5, 9) == draws(5, 9));
  CHECK(draws(5, 9) != draws(6, 9));
}

TEST_CASE("nuts on an executor with threads equals nuts without", "[nuts][executor]") {
  // eight schools' shape: the same draws whether the chains' vector work runs
  // on the executor's threads or not
  const Program planned = eight_schools_shape();
  std::vector<std::vector<double>> out;
  for (int threads : {1, 2}) {
    lockstep::ExecOptions o;
    o.threads = threads;
    Executor<double> ex(planned, 3, o);
    out.push_back(run_sampler<Nuts>(ex, NutsSettings(), 50, 20, 11, 12).draws);
  }
  CHECK(out[0] == out[1]);
}

TEST_CASE("nuts refuses bad settings and a non-finite start", "[nuts][errors]") {
  IndependentGaussian t({0}, {1}, n_chains);
  std::vector<double> ok(n_chains, 0.0);
  NutsSettings s;
  s.max_treedepth = 0;
  CHECK_THROWS_AS(Nuts(t, s, ok, 1, 2), std::invalid_argument);
  s = NutsSettings();
  s.adapt_delta = 1;
  CHECK_THROWS_AS(Nuts(t, s, ok, 1, 2), std::invalid_argument);
  s = NutsSettings();
  s.epsilon = -1;
  CHECK_THROWS_AS(Nuts(t, s, ok, 1, 2), std::invalid_argument);
  BadStart minus_inf(-HUGE_VAL);
  CHECK_THROWS_AS(Nuts(minus_inf, NutsSettings(), ok, 1, 2), std::invalid_argument);
}

TEST_CASE("warmup's step size: dual averaging on the harmonic mean of the chains' "
          "acceptance for nuts, on their mean for hmc",
          "[nuts][hmc][warmup]") {
  // Chains started at different distances from the mode of a narrow and a
  // wide direction accept differently; the first iterations of warmup (the
  // initial buffer: no metric window ends) each update the step size once.
  IndependentGaussian t({0, 0}, {0.2, 5}, n_chains);
  std::vector<double> init(2 * n_chains);
  for (long c = 0; c < n_chains; ++c) init[2 * c] = 0.3 * c, init[2 * c + 1] = 4.0 * c;
  auto harmonic = [](const std::vector<double>& a) {
    double inv = 0;
    for (double x : a) inv += 1 / std::max(x, 1e-20);
    return static_cast<double>(a.size()) / inv;
  };
  auto mean = [](const std::vector<double>& a) {
    double sum = 0;
    for (double x : a) sum += x;
    return sum / static_cast<double>(a.size());
  };
  auto check = [&](lockstep::Sampler& h, bool use_harmonic) {
    h.begin_warmup(200);
    lockstep::DualAveraging ours(0.8), other(0.8);
    ours.restart(h.epsilon());
    other.restart(h.epsilon());
    bool differ = false;
    for (int it = 0; it < 20; ++it) {
      h.iterate(true);
      const std::vector<double>& a = h.last().accept_stat;
      const double expected = ours.update(use_harmonic ? harmonic(a) : mean(a));
      const double not_expected = other.update(use_harmonic ? mean(a) : harmonic(a));
      CHECK(h.epsilon() == Approx(expected).epsilon(1e-12));
      differ = differ || std::fabs(expected - not_expected) > 1e-6 * expected;
    }
    CHECK(differ);  // the chains' acceptance differed: the test tells the two apart
  };
  Nuts nuts(t, NutsSettings(), init, 11, 12);
  check(nuts, true);
  lockstep::HmcSettings hs;
  lockstep::Hmc hmc(t, hs, init, 11, 12);
  check(hmc, false);
}

namespace {

// A sampler of the kind the chain-group tests run: NUTS, or HMC with a
// number of steps drawn each iteration from the stream all chains share.
// With per_chain_step, each chain adapts its own step size; NUTS splits
// steps whose energy error reaches max_energy_error (WALNUTS).
std::unique_ptr<lockstep::Sampler> group_test_sampler(bool hmc, lockstep::Target& t,
                                                      const std::vector<double>& init,
                                                      bool per_chain_step,
                                                      double max_energy_error) {
  if (!hmc) {
    NutsSettings s;
    s.per_chain_step_size = per_chain_step;
    s.max_energy_error = max_energy_error;
    return std::make_unique<Nuts>(t, s, init, 21, 22);
  }
  lockstep::HmcSettings s;
  s.Lmin = 2;
  s.Lmax = 9;
  s.per_chain_step_size = per_chain_step;
  return std::make_unique<lockstep::Hmc>(t, s, init, 21, 22);
}

// Warmup then sampling of NUTS (or HMC) on an executor over `chains` chains
// of `program`, in `groups` chain groups on `threads` threads (groups 0:
// lockstep): every iteration's draws, tree depths, leapfrog steps and
// acceptance statistics, then the step sizes and metric.
// With `dense`, through a dense metric (each group's over its executor) of
// that choice: the dense metric's factor, or the one chosen automatically.
std::vector<double> nuts_trace(const Program& program, long chains, long groups, int threads,
                               bool hmc = false, const lockstep::DenseMetric::Choice* dense = nullptr,
                               bool per_chain_step = false,
                               double max_energy_error = HUGE_VAL) {
  Executor<double> ex(program, chains, lockstep::ExecOptions());
  const long D = ex.dim();
  std::vector<double> init(chains * D);
  for (long k = 0; k < chains * D; ++k) init[k] = std::sin(1.3 * k + 0.2);
  std::unique_ptr<lockstep::DenseMetric> metric;
  lockstep::Target* target = &ex;
  if (dense) {
    metric = std::make_unique<lockstep::DenseMetric>(ex);
    metric->set_choice(*dense);
    target = metric.get();
  }
  std::unique_ptr<lockstep::Sampler> sampler =
      group_test_sampler(hmc, *target, init, per_chain_step, max_energy_error);
  lockstep::Sampler& nuts = *sampler;
  if (dense) nuts.use_dense_metric(*metric);
  if (groups > 0)
    nuts.step_in_groups(lockstep::ChainGroups::make(
        chains, groups, threads, [&](long n) -> std::unique_ptr<lockstep::Target> {
          auto group_ex = std::make_unique<Executor<double>>(program, n, lockstep::ExecOptions());
          if (!dense) return group_ex;
          return std::make_unique<lockstep::DenseMetric>(std::move(group_ex));
        }));
  std::vector<double> out;
  auto append_last = [&] {  // the last iteration's draw and statistics
    const lockstep::IterationStats& st = nuts.last();
    out.insert(out.end(), nuts.state().begin(), nuts.state().end());
    out.insert(out.end(), st.accept_stat.begin(), st.accept_stat.end());
    out.insert(out.end(), st.tree_depth.begin(), st.tree_depth.end());
    out.insert(out.end(), st.n_leapfrog.begin(), st.n_leapfrog.end());
    out.insert(out.end(), st.energy.begin(), st.energy.end());
  };
  nuts.begin_warmup(60);
  for (int it = 0; it < 60; ++it) {
    nuts.iterate(true);
    append_last();
  }
  // Sampling: in lockstep one iteration at a time; in groups, chunks of
  // iterations that each group makes on its own (iterate_apart()).
  CHECK(nuts.steps_apart() == (groups > 0));
  for (long chunk : {7L, 1L, 12L}) {
    lockstep::IterationRecord r;
    if (groups > 0) nuts.iterate_apart(chunk, r);
    for (long it = 0; it < chunk; ++it) {
      if (groups == 0) nuts.iterate(false);
      const long at = it * chains;
      auto rows = [&](const auto& v, long width) {  // this iteration's rows of v
        out.insert(out.end(), v.begin() + at * width, v.begin() + (at + chains) * width);
      };
      if (groups > 0) {
        rows(r.x, D);
        rows(r.accept_stat, 1), rows(r.tree_depth, 1), rows(r.n_leapfrog, 1), rows(r.energy, 1);
      } else {
        append_last();
      }
    }
  }
  // after the chunks, the sampler's own state is the last iteration's
  out.insert(out.end(), nuts.state().begin(), nuts.state().end());
  out.insert(out.end(), nuts.log_density().begin(), nuts.log_density().end());
  const std::vector<double> eps = nuts.step_sizes();
  out.insert(out.end(), eps.begin(), eps.end());
  out.insert(out.end(), nuts.diag_sd().begin(), nuts.diag_sd().end());
  if (metric) out.insert(out.end(), metric->factor().begin(), metric->factor().end());
  for (long c = 0; c < chains; ++c) {
    out.push_back(static_cast<double>(nuts.accepted()[c]));
    out.push_back(static_cast<double>(nuts.bad()[c]));
  }
  return out;
}

}  // namespace

TEST_CASE("nuts in chain groups draws exactly what nuts in lockstep draws",
          "[nuts][chain_groups]") {
  // Groups of one, two and uneven sizes, on fewer threads than groups and as
  // many: each chain's trees are its own, whichever target computes them.
  const Program planned = eight_schools_shape();
  const long chains = 5;
  const std::vector<double> lockstep_run = nuts_trace(planned, chains, 0, 1);
  for (long groups : {1L, 2L, 3L, 5L})
    for (int threads : {1, 2, 3}) {
      INFO("groups " << groups << ", threads " << threads);
      CHECK(nuts_trace(planned, chains, groups, threads) == lockstep_run);
    }
  // and the run sampled: every chain's state moved between the first
  // iteration and the last, and trees had several depths
  const long D = 9, per_iteration = chains * D + 4 * chains;
  const double* first = lockstep_run.data();
  const double* last = lockstep_run.data() + 79 * per_iteration;
  std::vector<double> depths;
  for (long it = 0; it < 80; ++it)
    for (long c = 0; c < chains; ++c)
      depths.push_back(lockstep_run[it * per_iteration + chains * D + 2 * chains + c]);
  for (long c = 0; c < chains; ++c) CHECK(first[c * D] != last[c * D]);
  CHECK(*std::min_element(depths.begin(), depths.end()) <
        *std::max_element(depths.begin(), depths.end()));
}

TEST_CASE("nuts with split steps (WALNUTS) in chain groups draws what it draws in lockstep",
          "[nuts][walnuts][chain_groups]") {
  // Split steps only in sampling: warmup is NUTS's own, in lockstep and in
  // groups alike (a group's sampler knows it is in warmup).
  const Program planned = eight_schools_shape();
  const long chains = 5, D = 9, per_iteration = chains * D + 4 * chains;
  const double error = 0.05;  // small: many sampling steps are split
  const std::vector<double> lockstep_run = nuts_trace(planned, chains, 0, 1, false, nullptr,
                                                      false, error);
  for (long groups : {2L, 5L}) {
    INFO("groups " << groups);
    CHECK(nuts_trace(planned, chains, groups, 2, false, nullptr, false, error) == lockstep_run);
  }
  const std::vector<double> plain = nuts_trace(planned, chains, 0, 1);
  CHECK(std::equal(plain.begin(), plain.begin() + 60 * per_iteration, lockstep_run.begin()));
  // and steps were split in sampling: more leapfrog steps than a tree of
  // that depth holds
  long split = 0;
  for (long it = 60; it < 80; ++it)
    for (long c = 0; c < chains; ++c) {
      // (an iteration's row: states, then acceptance, depths, steps, energies)
      const double* depth = lockstep_run.data() + it * per_iteration + chains * D + chains;
      const double* steps = depth + chains;
      split += steps[c] > std::pow(2.0, depth[c] + 1) - 1;
    }
  CHECK(split > 0);
}

TEST_CASE("nuts and hmc with per-chain step sizes in chain groups draw what they draw in lockstep",
          "[nuts][hmc][chain_groups][step_size]") {
  const Program planned = eight_schools_shape();
  const long chains = 5;
  for (bool hmc : {false, true}) {
    const std::vector<double> lockstep_run = nuts_trace(planned, chains, 0, 1, hmc, nullptr, true);
    for (long groups : {2L, 5L}) {
      INFO((hmc ? "hmc" : "nuts") << ", groups " << groups);
      CHECK(nuts_trace(planned, chains, groups, 2, hmc, nullptr, true) == lockstep_run);
    }
    // and the chains' step sizes differ (the trace ends with them, the
    // metric and the tallies)
    const long D = 9;
    const double* eps = lockstep_run.data() + lockstep_run.size() - (chains + chains * D + 2 * chains);
    CHECK(*std::min_element(eps, eps + chains) < *std::max_element(eps, eps + chains));
    // and differ from the shared run's
    CHECK(nuts_trace(planned, chains, 0, 1, hmc) != lockstep_run);
  }
}

TEST_CASE("hmc in chain groups draws exactly what hmc in lockstep draws",
          "[hmc][chain_groups]") {
  // Every group draws each iteration's number of steps from its copy of the
  // shared stream, so all take the number lockstep takes; the acceptance
  // decisions are each chain's own.
  const Program planned = eight_schools_shape();
  const long chains = 5;
  const std::vector<double> lockstep_run = nuts_trace(planned, chains, 0, 1, true);
  for (long groups : {1L, 2L, 5L})
    for (int threads : {1, 2}) {
      INFO("groups " << groups << ", threads " << threads);
      CHECK(nuts_trace(planned, chains, groups, threads, true) == lockstep_run);
    }
  // the run moved, and the number of steps varied between iterations (the
  // n_leapfrog of chain 0 over the 80 iterations)
  const long D = 9, per_iteration = chains * D + 4 * chains;
  std::vector<double> steps;
  for (long it = 0; it < 80; ++it) steps.push_back(lockstep_run[it * per_iteration + chains * D + 2 * chains]);
  CHECK(*std::min_element(steps.begin(), steps.end()) < *std::max_element(steps.begin(), steps.end()));
  CHECK(lockstep_run[0] != lockstep_run[79 * per_iteration]);
}

TEST_CASE("nuts and hmc with a dense metric in chain groups draw what they draw in lockstep",
          "[nuts][hmc][chain_groups][dense_metric]") {
  // Each group's dense metric holds its chains' factors; a new factor at a
  // window's end moves the chains to its coordinates in every group. Both
  // choices: always dense, and chosen automatically (the 60 iterations'
  // window is one of 45 draws per chain; eight schools' shape, 9 free
  // parameters: 4 x 45 pooled draws are enough to choose).
  const Program planned = eight_schools_shape();
  const long chains = 5;
  for (auto choice : {lockstep::DenseMetric::Choice::dense, lockstep::DenseMetric::Choice::automatic})
    for (bool hmc : {false, true}) {
      INFO((choice == lockstep::DenseMetric::Choice::dense ? "dense" : "automatic")
           << (hmc ? ", hmc" : ", nuts"));
      const std::vector<double> lockstep_run = nuts_trace(planned, chains, 0, 1, hmc, &choice);
      // the metric changed: the factor at the end is not the identity
      const long D = 9;
      const double* factor = lockstep_run.data() + lockstep_run.size() - 2 * chains - chains * D * D;
      CHECK(factor[0] != 1.0);
      for (long groups : {2L, 3L})
        for (int threads : {1, 2}) {
          INFO("groups " << groups << ", threads " << threads);
          CHECK(nuts_trace(planned, chains, groups, threads, hmc, &choice) == lockstep_run);
        }
    }
}

TEST_CASE("chain groups: which samplers step in groups, and how the chains split",
          "[nuts][chain_groups]") {
  const Program small = eight_schools_shape();
  lockstep::ExecOptions o;
  o.threads = 2;
  CHECK(lockstep::chain_group_count(small, 4, o) == 2);
  CHECK(lockstep::chain_group_count(small, 1, o) == 1);  // one chain: nothing to split
  o.threads = 8;
  CHECK(lockstep::chain_group_count(small, 3, o) == 3);  // at most one group per chain
  o.threads_auto = true;
  CHECK(lockstep::chain_group_count(small, 3, o) == 3);
  o.threads = 1;
  CHECK(lockstep::chain_group_count(small, 4, o) == 1);
  o.threads = 2;
  o.devices = 2;  // sharded by request: the chains stay in lockstep
  CHECK(lockstep::chain_group_count(small, 4, o) == 1);
  o.devices = 1;
  o.backend = lockstep::Backend::emulated;
  CHECK(lockstep::chain_group_count(small, 4, o) == 1);
  o.backend = lockstep::Backend::cpu;
  // A gradient the executor would split between two threads stays in
  // lockstep: 2 x min_work_per_thread values per call.
  Program big;
  const long n = lockstep::min_work_per_thread;
  const int x = big.add(param_node(n, 0, lockstep::Transform::none, 0, 0, {n, 1}));
  big.n_free = n;
  const int zero = big.add(data_node({0}));
  const int one = big.add(data_node({1}));
  add_term(big, density_node(lockstep::Family::normal, {x, zero, one}));
  lockstep::plan(big);
  CHECK(lockstep::effective_threads(big, 4, [] {
          lockstep::ExecOptions a;
          a.threads = 2;
          a.threads_auto = true;
          return a;
        }()) == 2);
  CHECK(lockstep::chain_group_count(big, 4, o) == 1);
  CHECK(lockstep::chain_group_count(big, 1, o) == 1);

  // the split: contiguous, as even as can be
  auto g = lockstep::ChainGroups::make(7, 3, 2, [&](long c) {
    return std::make_unique<Executor<double>>(small, c, lockstep::ExecOptions());
  });
  CHECK(g->first == std::vector<long>{0, 2, 4, 7});
  CHECK(g->targets[2]->chains() == 3);
  CHECK(g->pool->threads() == 2);
  auto make = [&](long c) {
    return std::make_unique<Executor<double>>(small, c, lockstep::ExecOptions());
  };
  CHECK_THROWS_AS(lockstep::ChainGroups::make(3, 4, 2, make), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::ChainGroups::make(3, 0, 2, make), std::invalid_argument);
  // groups that do not cover the sampler's chains are refused
  Executor<double> ex(small, 4, lockstep::ExecOptions());
  Nuts nuts(ex, NutsSettings(), std::vector<double>(4 * 9, 0.1), 1, 2);
  CHECK_THROWS_AS(nuts.step_in_groups(lockstep::ChainGroups::make(3, 2, 2, make)),
                  std::invalid_argument);
  // samplers without groups refuse them: ChEES adapts its trajectory from
  // every chain each iteration, rwmh and slice are not leapfrog samplers'
  // transitions of their own
  lockstep::CheesSettings cs;
  lockstep::Chees chees(ex, cs, std::vector<double>(4 * 9, 0.1), 1, 2);
  CHECK_FALSE(chees.can_step_in_groups());
  CHECK_THROWS_AS(chees.step_in_groups(lockstep::ChainGroups::make(4, 2, 2, make)),
                  std::invalid_argument);
  CHECK(nuts.can_step_in_groups());
}
