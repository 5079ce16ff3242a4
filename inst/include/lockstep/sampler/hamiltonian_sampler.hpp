// What the Hamiltonian samplers (hmc.hpp, nuts.hpp, chees.hpp) share beyond
// every sampler's base (sampler.hpp), in Stan's decomposition: the
// Hamiltonian of a diagonal Euclidean metric (momenta p ~ N(0, M), M =
// diag(1 / diag_sd^2) per chain, and the kinetic energy p' M^-1 p / 2; a
// dense metric is a change of variables, dense_metric.hpp), the leapfrog
// integrator, the Metropolis step of a fixed-length trajectory, and the
// step size search that warmup starts and restarts from.
#ifndef LOCKSTEP_SAMPLER_HAMILTONIAN_SAMPLER_HPP
#define LOCKSTEP_SAMPLER_HAMILTONIAN_SAMPLER_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "sampler.hpp"

namespace lockstep {

class NutsTrajectory;

class HamiltonianSampler : public Sampler {
 public:
  // As Sampler's; the vectors are made here (refusing more chains than a
  // ChainMask holds, before any work).
  HamiltonianSampler(Target& target, double epsilon, const std::vector<double>& diag_sd,
                     double target_accept, const std::vector<double>& init, uint32_t key0,
                     uint32_t key1, const std::string& name, bool per_chain_metric);

 protected:
  // NUTS's trajectory builder works on this sampler's state, metric and
  // vectors (nuts_trajectory.hpp).
  friend class NutsTrajectory;

  // p ~ N(0, M), M = diag(1 / sd^2) of each chain, into p[chains, dim].
  void draw_momentum(double* p);
  // K(p) = p' M^-1 p / 2 per chain, of the chains in `on` (0 for the others).
  std::vector<double> kinetic_energies(const double* p, const ChainMask& on);
  // L leapfrog steps of size eps from (x_v_, g_v_) with momenta p (updated in
  // place); the end point goes to z_new_v_, lpn_, g_new_v_. Returns the
  // steps made: fewer than L when cut short (cut_short(), unless !may_cut),
  // at least 1.
  int trajectory(int L, double eps, double* p, bool may_cut = true);
  // The Metropolis step of a fixed-length trajectory for chain c, from energy
  // h0 to h1 at the end point: a divergence (energy error above 1000 or not
  // finite) is rejected and counted as bad; fills the chain's stats, sets
  // lp_[c] and marks the chain in `take` when it moves, and returns its
  // acceptance probability. take_proposals() then moves the marked chains'
  // states and gradients.
  double metropolis_step(long c, double h0, double h1, int L, ChainMask& take);
  void take_proposals(const ChainMask& take);
  bool rescues_stuck_chains() const override { return true; }
  // Hoffman & Gelman's heuristic, on each chain's acceptance (per-chain step
  // sizes) or on the mean acceptance of all chains (shared): see the
  // definition.
  std::vector<double> search_step_sizes() override;

  // [chains, dim] in vectors(): the end point of a trajectory (position and
  // gradient) and the momenta
  double *z_new_v_ = nullptr, *g_new_v_ = nullptr, *p_v_ = nullptr;
};

}  // namespace lockstep

#endif
