// ChEES-HMC (Hoffman, Radul & Sountsov 2021, "An adaptive MCMC scheme for
// setting trajectory lengths in Hamiltonian Monte Carlo", AISTATS): HMC in
// which every chain takes the same number of leapfrog steps, a jittered
// trajectory length T u (u uniform on (0, 1)) divided by the step size, so it
// is made for many chains in lockstep: no chain waits for another.
//
// Warmup adapts, from the chains that steer it (those not lagging far out in
// the tails: Sampler::steering_chains()):
//   - T, to maximise the ChEES criterion (the change in the chains' squared
//     distance from their mean, E[(|x' - m'|^2 - |x - m|^2)^2] / 4), by Adam
//     on log T with the paper's gradient estimate
//       g = mean_c a_c (|x'_c - m'|^2 - |x_c - m|^2) (x'_c - m') . M^-1 p'_c u
//     (a_c the chain's acceptance probability, distances in the metric);
//   - the step size, by dual averaging on the harmonic mean of the chains'
//     acceptance probabilities (target 0.651, as the paper recommends), which
//     keeps any one chain from getting stuck;
//   - diag_sd from the draws in Stan's windows (pooled or per chain), as the
//     other samplers.
//
// Warmup's initial buffer (before the first metric window: 75 iterations of
// 1000) makes NUTS transitions instead, and so do later warmup iterations
// while a chain lags (steering_chains()), up to half of warmup. There the
// chains come in from their initial values, each from its own distance and
// through its own scales, and one trajectory length cannot serve them all:
// on posteriordb's kilpisjarvi, one chain found the narrow ridge at once and
// held the shared step size near 1e-5 while another, at sigma = 3e5, needed
// a thousand times more steps than ChEES allows to come in. NUTS's
// trajectories find their own lengths per chain. (A chain still far out when
// the metric has learnt the ridge may never come in: in the metric's
// coordinates its way back is thousands of units long, and the prior's pull
// along it weak.) The ChEES criterion, about the chains' spread around
// their mean, only means something once they are in, and T grows from the
// step size from there. (T does not start from the NUTS trajectories'
// length: that is in the initial metric's time, often many periods of the
// dynamics under the first adapted metric, and Adam then settles on one of
// the criterion's later, shallower maxima.) So chees() holds NUTS's
// trajectory builder (nuts_trajectory.hpp) and its vectors too: about 22
// more [chains, dim] arrays.
#ifndef LOCKSTEP_SAMPLER_CHEES_HPP
#define LOCKSTEP_SAMPLER_CHEES_HPP

#include <vector>

#include "hamiltonian_sampler.hpp"
#include "nuts_trajectory.hpp"

namespace lockstep {

struct CheesSettings {
  double epsilon = 0.1;
  std::vector<double> diag_sd;
  bool per_chain_metric = false;  // Sampler: adapt each chain's diag_sd alone
  bool warmup_rescue = true;  // Sampler: move stuck chains at warmup's window ends
  double target_accept = 0.651;
  double learning_rate = 0.025;  // Adam's, on log T
  int max_leapfrog = 1000;       // most leapfrog steps in one iteration
};

class Chees : public HamiltonianSampler {
 public:
  Chees(Target& target, CheesSettings settings, const std::vector<double>& init, uint32_t key0,
        uint32_t key1);
  double trajectory_length() const { return T_; }

 protected:
  void transition() override;
  void metric_changed() override;
  void save_own(SavedState& s) const override;
  void restore_own(const SavedState& s) override;

 private:
  CheesSettings settings_;
  // the NUTS of the initial buffer, at Stan's default depth
  NutsTrajectory buffer_tree_{10};
  // [chains, dim] in vectors(): the chains' mean state before and after the
  // trajectory, in every row (ChEES's criterion is about the centre of the
  // steering chains)
  double *mean_x_v_ = nullptr, *mean_z_new_v_ = nullptr;
  double T_;                         // trajectory length
  double adam_m_ = 0, adam_v_ = 0;   // Adam's moments of d ChEES / d log T
  long adam_t_ = 0;
};

}  // namespace lockstep

#endif
