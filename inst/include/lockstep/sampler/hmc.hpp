// Hamiltonian Monte Carlo as greta's hmc() defines it: a number of leapfrog
// steps drawn uniformly from Lmin..Lmax each iteration, step size epsilon, and
// diag_sd rescaling the parameter space (a diagonal mass matrix 1 / diag_sd^2).
//
// All chains step together: one Target::log_density call evaluates every
// chain at each leapfrog step; each chain accepts or rejects on its own.
// Warmup adapts one step size from all chains by dual averaging, and diag_sd
// from the pooled variances of all chains in Stan's windows.
#ifndef LOCKSTEP_SAMPLER_HMC_HPP
#define LOCKSTEP_SAMPLER_HMC_HPP

#include <cstdint>
#include <vector>

#include "../executor.hpp"
#include "../rng.hpp"
#include "dual_averaging.hpp"
#include "warmup_schedule.hpp"

namespace lockstep {

struct HmcSettings {
  int Lmin = 5, Lmax = 10;
  double epsilon = 0.1;
  std::vector<double> diag_sd;  // length dim, or one value for all
  double target_accept = 0.8;
};

class Hmc {
 public:
  // init: [chains, dim]; every chain must have a finite log density there.
  Hmc(Target& target, HmcSettings settings, const std::vector<double>& init, uint32_t key0,
      uint32_t key1);

  // Prepares adaptation over the next `n` warmup iterations.
  void begin_warmup(long n);
  // One iteration of every chain; adapts when inside warmup.
  void iterate(bool warmup);

  const std::vector<double>& state() const { return x_; }
  const std::vector<double>& log_density() const { return lp_; }
  double epsilon() const { return epsilon_; }
  const std::vector<double>& diag_sd() const { return sd_; }
  // Per chain: accepted proposals, and proposals rejected as numerically bad
  // (non-finite log density or energy error above 1000), since construction.
  const std::vector<long>& accepted() const { return accepted_; }
  const std::vector<long>& bad() const { return bad_; }

 private:
  // One leapfrog trajectory of L steps from (x, p); returns proposals in xn, lpn, gn.
  void trajectory(int L, double eps);
  double find_reasonable_epsilon();
  void draw_momentum();
  double kinetic(long c, const std::vector<double>& p) const;
  // Runs f(c) for every chain, on the target's threads when it has some: each
  // chain's vectors (and random stream) are its own, so chains never race.
  template <class F> void for_chains(F&& f);

  Target& target_;
  HmcSettings settings_;
  long C_, D_;
  std::vector<double> x_, lp_, grad_;      // current state
  std::vector<double> xn_, lpn_, gn_, p_;  // proposal and momentum
  std::vector<double> sd_, sd2_;  // diag_sd and its square (the inverse mass)
  double epsilon_;
  std::vector<Stream> chain_streams_;
  Stream run_stream_;
  std::vector<long> accepted_, bad_;

  // warmup
  DualAveraging dual_{0.8};
  WarmupSchedule schedule_;
  long warmup_total_ = 0, warmup_done_ = 0;
  size_t next_window_ = 0;
  long window_n_ = 0;
  std::vector<double> window_mean_, window_m2_;
};

}  // namespace lockstep

#endif
