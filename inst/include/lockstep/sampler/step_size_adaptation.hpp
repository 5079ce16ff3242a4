// Warmup's step size (Stan's stepsize_adaptation): dual averaging
// (dual_averaging.hpp) driven by one acceptance statistic pooled over every
// chain, since all chains step together with one step size. It restarts from
// a searched step size at warmup's start and after each new metric
// (Sampler::find_reasonable_epsilon()).
#ifndef LOCKSTEP_SAMPLER_STEP_SIZE_ADAPTATION_HPP
#define LOCKSTEP_SAMPLER_STEP_SIZE_ADAPTATION_HPP

#include <algorithm>
#include <vector>

#include "dual_averaging.hpp"

namespace lockstep {

class StepSizeAdaptation {
 public:
  explicit StepSizeAdaptation(double target_accept = 0.8) : dual_(target_accept) {}

  // Pool by the harmonic mean (NUTS, ChEES: samplers whose one step size
  // must suit every chain): it is pulled down by a chain that accepts little
  // (Hoffman, Radul and Sountsov 2021, ChEES-HMC, section 4), where the mean
  // lets chains that accept nearly everything hide it (measured on
  // posteriordb: bench/RESULTS.md, "Why code is as it is").
  void pool_harmonically() { harmonic_ = true; }

  // The acceptance statistic of all chains that dual averaging drives
  // towards its target: their mean, or their harmonic mean. Every chain,
  // lagging or not: a step size fitted to the steering chains alone can be
  // far too large for a chain still out in the tails, whose every
  // trajectory then diverges, and it never comes in.
  double pooled(const std::vector<double>& accept_stat) const {
    const double chains = static_cast<double>(accept_stat.size());
    double sum = 0;
    for (double a : accept_stat) sum += harmonic_ ? 1 / std::max(a, 1e-20) : a;
    return harmonic_ ? chains / sum : sum / chains;
  }

  // Starts again around `epsilon` (warmup's start, a new metric).
  void restart(double epsilon) {
    restart_epsilon_ = epsilon;
    dual_.restart(epsilon);
  }
  // The next step size after an iteration whose chains accepted `accept_stat`.
  double update(const std::vector<double>& accept_stat) { return dual_.update(pooled(accept_stat)); }
  // The step size after warmup. Dual averaging's average is dominated by its
  // first iterates, which explore around 10x the restart value (mu =
  // log(10 epsilon)): after fewer than 10 updates since the last restart (a
  // very short warmup), the restart value itself, which is about right, is
  // the better choice.
  double final_epsilon() const {
    return dual_.count() >= 10 ? dual_.final_epsilon() : restart_epsilon_;
  }

 private:
  DualAveraging dual_;
  double restart_epsilon_ = 0;
  bool harmonic_ = false;
};

}  // namespace lockstep

#endif
