// Warmup's step size (Stan's stepsize_adaptation): dual averaging
// (dual_averaging.hpp), either one per chain, each driven by its own chain's
// acceptance statistic (per_chain: Stan's, NumPyro's and nutpie's chains each
// adapt alone), or one for all chains, driven by their acceptance statistics
// pooled (shared: ChEES, whose one trajectory length is fitted to one step
// size, and rwmh and slice). It restarts from searched step sizes at
// warmup's start and after each new metric (Sampler::search_step_sizes()).
//
// Why per chain by default: with one step size, a chain that lands where the
// posterior needs a much smaller step (a funnel's neck) cannot get it, since
// the others outvote it; it then diverges on almost every transition and
// barely moves for the rest of the run (greta's eight schools, one chain in
// about ten runs: issue 49).
#ifndef LOCKSTEP_SAMPLER_STEP_SIZE_ADAPTATION_HPP
#define LOCKSTEP_SAMPLER_STEP_SIZE_ADAPTATION_HPP

#include <algorithm>
#include <vector>

#include "dual_averaging.hpp"
#include "../saved_state.hpp"

namespace lockstep {

class StepSizeAdaptation {
 public:
  explicit StepSizeAdaptation(double target_accept = 0.8) : target_accept_(target_accept) {}

  // Each chain its own dual averaging (per_chain) or one for all (shared,
  // the default): set before restart().
  void adapt_per_chain(bool on) { per_chain_ = on; }
  bool per_chain() const { return per_chain_; }

  // Shared: pool by the harmonic mean (NUTS, ChEES: samplers whose one step
  // size must suit every chain): it is pulled down by a chain that accepts
  // little (Hoffman, Radul and Sountsov 2021, ChEES-HMC, section 4), where
  // the mean lets chains that accept nearly everything hide it (measured on
  // posteriordb: bench/RESULTS.md, "Why code is as it is").
  void pool_harmonically() { harmonic_ = true; }

  // Shared: the acceptance statistic of all chains that dual averaging
  // drives towards its target: their mean, or their harmonic mean. Every
  // chain, lagging or not: a step size fitted to the steering chains alone
  // can be far too large for a chain still out in the tails, whose every
  // trajectory then diverges, and it never comes in.
  double pooled(const std::vector<double>& accept_stat) const {
    const double chains = static_cast<double>(accept_stat.size());
    double sum = 0;
    for (double a : accept_stat) sum += harmonic_ ? 1 / std::max(a, 1e-20) : a;
    return harmonic_ ? chains / sum : sum / chains;
  }

  // Starts again around the step sizes `epsilon`, one per chain (shared:
  // all equal; the first is taken) at warmup's start and after a new metric.
  void restart(const std::vector<double>& epsilon) {
    restart_epsilon_ = epsilon;
    dual_.assign(per_chain_ ? epsilon.size() : 1, DualAveraging(target_accept_));
    for (size_t k = 0; k < dual_.size(); ++k) dual_[k].restart(epsilon[k]);
  }
  // The next step sizes, one per chain, after an iteration whose chains
  // accepted `accept_stat`.
  std::vector<double> update(const std::vector<double>& accept_stat) {
    std::vector<double> next(accept_stat.size());
    if (per_chain_) {
      for (size_t c = 0; c < next.size(); ++c) next[c] = dual_[c].update(accept_stat[c]);
    } else {
      std::fill(next.begin(), next.end(), dual_[0].update(pooled(accept_stat)));
    }
    return next;
  }
  // The step sizes after warmup. Dual averaging's average is dominated by
  // its first iterates, which explore around 10x the restart value (mu =
  // log(10 epsilon)): after fewer than 10 updates since the last restart (a
  // very short warmup), the restart value itself, which is about right, is
  // the better choice.
  std::vector<double> final_epsilon() const {
    std::vector<double> eps = restart_epsilon_;
    for (size_t c = 0; c < eps.size(); ++c) {
      const DualAveraging& d = dual_[per_chain_ ? c : 0];
      if (d.count() >= 10) eps[c] = d.final_epsilon();
    }
    return eps;
  }

  // Its state (each dual averaging's, and the step sizes it restarted
  // from), to save and restore (sampler_state.hpp); the settings are the
  // sampler's.
  void save(SavedState& s) const {
    std::vector<double> dual(4 * dual_.size());
    for (size_t k = 0; k < dual_.size(); ++k) dual_[k].state(dual.data() + 4 * k);
    s.put("step_size_dual", dual);
    s.put("step_size_restart", restart_epsilon_);
  }
  void restore(const SavedState& s, long chains) {
    const long n = per_chain_ ? chains : 1;
    const std::vector<double>& dual = s.get("step_size_dual", 4 * n);
    dual_.assign(n, DualAveraging(target_accept_));
    for (long k = 0; k < n; ++k) dual_[k].set_state(dual.data() + 4 * k);
    restart_epsilon_ = s.get("step_size_restart", chains);
  }

 private:
  double target_accept_;
  std::vector<DualAveraging> dual_;
  std::vector<double> restart_epsilon_;
  bool harmonic_ = false, per_chain_ = false;
};

}  // namespace lockstep

#endif
