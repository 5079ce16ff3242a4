// The No-U-Turn sampler with lockstep chains: Stan's NUTS (multinomial
// sampling of the trajectory's points, the generalised U-turn criterion with
// Stan's extra checks across merged subtrees, biased progressive sampling
// between the old trajectory and each new subtree, divergence when the energy
// error exceeds 1000), in the iterative, fixed-memory form that lets every
// chain take its leapfrog steps together:
//
//   Each iteration doubles every chain's trajectory up to max_treedepth times,
//   in a direction each chain draws for itself. A new subtree of 2^d points is
//   built one leapfrog step at a time for all chains at once (one engine call
//   per step). Its internal U-turn checks follow the binary counter of its
//   leaves: after leaf k, each level j at which k + 1 completes a right
//   sibling merges it with the stored left sibling of that level, so only one
//   left sibling per level (its first and last momenta and its rho) is kept,
//   never the tree. The point drawn from a subtree is kept by streaming
//   multinomial sampling (each leaf replaces it with probability
//   w_leaf / w_so_far), which is the same distribution as Stan's recursive
//   uniform merges because an invalid subtree is discarded whole.
//
//   A chain whose trajectory has U-turned, diverged or reached the maximum
//   depth is masked: it waits (its state unchanged) while the others finish.
//
//   The vectors live where the target's ChainVectors put them (Target::
//   vectors()): with a GPU executor, in device memory, so that a leapfrog
//   step moves only per-chain numbers (log densities, energies, the U-turn
//   checks' dot products) between the GPU and the host; the draw comes back
//   once per iteration. At most max_mask_chains chains.
//
//   A small model's sampler may instead build its trees in groups of chains,
//   each group on its own thread with its own target (chain_groups.hpp),
//   meeting once per iteration in warmup and once per batch of iterations in
//   sampling; the draws are the same.
//
// The trajectory builder is nuts_trajectory.hpp; this class is the sampler
// around it (settings, chain groups). Memory per chain: about (20 + 4 x depth
// reached) vectors of dim doubles (twice that in chain groups).
#ifndef LOCKSTEP_SAMPLER_NUTS_HPP
#define LOCKSTEP_SAMPLER_NUTS_HPP

#include <memory>
#include <vector>

#include "hamiltonian_sampler.hpp"
#include "nuts_trajectory.hpp"

namespace lockstep {

struct NutsSettings {
  int max_treedepth = 10;
  double epsilon = 0.1;
  std::vector<double> diag_sd;
  double adapt_delta = 0.8;
  bool per_chain_metric = false;  // Sampler: adapt each chain's diag_sd alone
  bool per_chain_step_size = false;  // Sampler: adapt each chain's step size alone
  bool warmup_rescue = true;  // Sampler: move stuck chains at warmup's window ends
  // WALNUTS's leaves (nuts_trajectory.hpp): a leapfrog step whose energy
  // error is at least max_energy_error is split into up to 2^max_micro_depth
  // steps; infinite: NUTS's leaves.
  double max_energy_error = HUGE_VAL;
  int max_micro_depth = 6;
};

class Nuts : public HamiltonianSampler {
 public:
  Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
       uint32_t key1);

  bool can_step_in_groups() const override { return true; }

 protected:
  void transition() override;
  std::unique_ptr<Sampler> make_group_sampler(Target& target, const std::vector<double>& init,
                                              const std::vector<double>& sd) const override;

 private:
  NutsSettings settings_;
  NutsTrajectory tree_;
};

}  // namespace lockstep

#endif
