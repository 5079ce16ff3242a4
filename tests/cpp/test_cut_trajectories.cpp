// Trajectories cut short (Sampler::set_cut_check(): how a user's
// interrupt ends the iteration under way, rcpp_engine.cpp): where NUTS, HMC
// and ChEES stop when the check fires, and that samplers whose trajectories
// are cut at random still sample their target, since a cut trajectory is a
// transition of a shorter kernel chosen independently of the state.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "sampler_helpers.hpp"

using namespace sampler_tests;
using lockstep::Chees;
using lockstep::CheesSettings;
using lockstep::Hmc;
using lockstep::HmcSettings;
using lockstep::Nuts;
using lockstep::NutsSettings;

namespace {

// The checks take no arguments (a plain function pointer, as R's interrupt
// flag is read), so their state is here: a count of calls after which the
// check fires, or a firing with probability cut_p at each call.
long calls = 0, fire_after = 0, fired = 0;
double cut_p = 0;
std::mt19937_64 cut_rng(7);
bool count_check() { return ++calls > fire_after; }
bool random_check() {
  const bool fire = std::uniform_real_distribution<double>(0, 1)(cut_rng) < cut_p;
  fired += fire;
  return fire;
}

}  // namespace

TEST_CASE("nuts: a cut ends the transition before the leapfrog step where the check fires",
          "[cut][nuts]") {
  // a scale of 1000 and a step of 0.01: no chain's trajectory turns back
  // within 2^10 steps, so every tree is whole to its maximum depth, and every
  // cut below falls inside it
  IndependentGaussian t({0}, {1000}, n_chains);
  const std::vector<double> init(n_chains, 0.5);
  NutsSettings s;
  s.epsilon = 0.01;
  s.max_treedepth = 10;
  for (long k : {0L, 1L, 5L, 40L}) {
    Nuts h(t, s, init, 3, 4);
    h.iterate(false);  // uncut: the whole tree
    CHECK_FALSE(h.was_cut());
    for (long c = 0; c < n_chains; ++c) CHECK(h.last().tree_depth[c] == 10);
    const std::vector<double> before = h.state();
    calls = 0;
    fire_after = k;
    h.set_cut_check(count_check);
    h.iterate(false);
    INFO("cut after " << k << " leapfrog steps");
    CHECK(h.was_cut());
    CHECK(calls == k + 1);  // asked before each step, until it fired
    int depth = 0;  // the doublings completed: 2^depth - 1 <= k steps
    while ((1L << (depth + 1)) - 1 <= k) ++depth;
    for (long c = 0; c < n_chains; ++c) {
      CHECK(h.last().n_leapfrog[c] == k);
      CHECK(h.last().tree_depth[c] == depth);
      CHECK(std::isfinite(h.last().energy[c]));
    }
    if (k == 0) CHECK(h.state() == before);  // no step: every chain stays
    // the check is asked no more in this transition, and the next is whole
    h.set_cut_check(nullptr);
    h.iterate(false);
    CHECK_FALSE(h.was_cut());
    for (long c = 0; c < n_chains; ++c) CHECK(h.last().tree_depth[c] == 10);
  }
}

TEST_CASE("hmc and chees: a cut trajectory makes its Metropolis step at the point reached",
          "[cut][hmc][chees]") {
  IndependentGaussian t({0, 0}, {1, 2}, n_chains);
  const std::vector<double> init(2 * n_chains, 0.3);
  HmcSettings hs;
  hs.Lmin = hs.Lmax = 20;
  Hmc h(t, hs, init, 5, 6);
  calls = 0;
  fire_after = 4;  // the first step is always made; asked before steps 2, 3, ...
  h.set_cut_check(count_check);
  h.iterate(false);
  CHECK(h.was_cut());
  for (long c = 0; c < n_chains; ++c) CHECK(h.last().n_leapfrog[c] == 5);
  h.set_cut_check(nullptr);
  h.iterate(false);
  for (long c = 0; c < n_chains; ++c) CHECK(h.last().n_leapfrog[c] == 20);

  // ChEES's trajectories are one step until warmup has grown their length
  Chees ch(t, CheesSettings(), init, 7, 8);
  ch.begin_warmup(150);
  for (int i = 0; i < 150; ++i) ch.iterate(true);
  int cuts = 0;
  for (int i = 0; i < 10; ++i) {
    calls = 0;
    fire_after = 1;  // asked before step 2: a cut trajectory has 2 steps
    ch.set_cut_check(count_check);
    ch.iterate(false);
    const int steps = ch.last().n_leapfrog[0];
    if (ch.was_cut()) ++cuts;
    // cut: 2 steps; not cut: a trajectory of 1 or 2 steps, made whole
    for (long c = 0; c < n_chains; ++c) CHECK(ch.last().n_leapfrog[c] == steps);
    CHECK(steps <= 2);
    if (ch.was_cut()) CHECK(steps == 2);
  }
  CHECK(cuts >= 5);  // the jittered lengths of the adapted trajectories are mostly longer
}

TEST_CASE("samplers whose trajectories are cut at random still sample their target",
          "[cut][posterior]") {
  const double m1 = 1, m2 = -1, s1 = 1, s2 = 2, rho = 0.9;
  CorrelatedGaussian t(m1, m2, s1, s2, rho, n_chains);
  const long n = 1500;
  const double n_eff = n * n_chains / 10.0;
  auto check_moments = [&](const Run& r) {
    double mean1, var1, mean2, var2;
    moments(r, 2, 0, &mean1, &var1);
    moments(r, 2, 1, &mean2, &var2);
    INFO("means " << mean1 << ", " << mean2 << "; sds " << std::sqrt(var1) << ", "
                  << std::sqrt(var2) << "; cuts " << fired);
    CHECK(std::fabs(mean1 - m1) < 5 * s1 / std::sqrt(n_eff));
    CHECK(std::fabs(mean2 - m2) < 5 * s2 / std::sqrt(n_eff));
    CHECK(std::fabs(var1 / (s1 * s1) - 1) < 5 * std::sqrt(2 / n_eff));
    CHECK(std::fabs(var2 / (s2 * s2) - 1) < 5 * std::sqrt(2 / n_eff));
  };
  // NUTS here makes about 7-15 leapfrog steps per iteration: a cut at 5%
  // of steps ends about half of the trajectories early, at every depth
  fired = 0;
  cut_p = 0.05;
  check_moments(run_sampler<Nuts>(t, NutsSettings(), 1000, n, 11, 12, 1, random_check));
  CHECK(fired > n / 4);
  fired = 0;
  cut_p = 0.1;
  HmcSettings hs;
  hs.Lmin = 8;
  hs.Lmax = 16;
  check_moments(run_sampler<Hmc>(t, hs, 1000, n, 13, 14, 1, random_check));
  CHECK(fired > n / 4);
}
