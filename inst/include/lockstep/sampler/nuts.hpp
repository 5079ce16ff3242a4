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
// Memory per chain: about (20 + 4 x depth reached) vectors of dim doubles
// (twice that in chain groups).
#ifndef LOCKSTEP_SAMPLER_NUTS_HPP
#define LOCKSTEP_SAMPLER_NUTS_HPP

#include <memory>
#include <string>
#include <vector>

#include "leapfrog_sampler.hpp"

namespace lockstep {

struct NutsSettings {
  int max_treedepth = 10;
  double epsilon = 0.1;
  std::vector<double> diag_sd;
  double adapt_delta = 0.8;
  bool per_chain_metric = false;  // LeapfrogSampler: adapt each chain's diag_sd alone
};

class Nuts : public LeapfrogSampler {
 public:
  Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
       uint32_t key1);

  bool can_step_in_groups() const override { return true; }

 protected:
  // For a sampler that makes some of its transitions with NUTS's (ChEES, in
  // its initial buffer): `name` prefixes its error messages.
  Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
       uint32_t key1, const std::string& name);
  void transition() override;
  std::unique_ptr<LeapfrogSampler> make_group_sampler(
      Target& target, const std::vector<double>& init,
      const std::vector<double>& sd) const override;

 private:
  // The per-level memory of the subtree being built: for level j, the first
  // momentum of the open block (begin), the rho prefix before it (prefix),
  // and the completed left sibling's last momentum and rho (left_end, left_rho).
  struct Level {
    double *begin, *prefix, *left_end, *left_rho;
  };
  // Generalised U-turn criterion (Betancourt 2017): no U-turn while
  // rho . M^-1 p_minus > 0 and rho . M^-1 p_plus > 0, in chain c's metric.
  // criteria() evaluates up to three of them for every chain in `on`, each
  // with rho (+ extra, when not null): Stan's checks across merged subtrees
  // extend one subtree's rho by the nearest point of the other. Returns, per
  // chain, whether all hold.
  struct Check {
    const double *p_minus, *p_plus, *rho, *extra;
  };
  std::vector<int> criteria(const Check* checks, int n, const ChainMask& on);
  void ensure_levels(int depth);
  // Makes the vectors below on the first transition (a sampler that builds
  // on NUTS may never need them).
  void ensure_vectors();

  NutsSettings settings_;
  // [chains, dim] arrays in vectors() (besides the base class's): the
  // trajectory's two ends (position, momentum, gradient), the moving point,
  // the proposal of the subtree being built, and the momenta of Stan's checks
  // (forward / backward subtree ends).
  double *xf_ = nullptr, *pf_, *gf_, *xb_, *pb_, *gb_;
  double *xw_, *pw_, *gw_, *xp_, *gp_, *pp_, *ps_;
  double *p_ff_, *p_fb_, *p_bf_, *p_bb_, *rho_, *rho_f_, *rho_b_, *sub_first_, *sub_rho_;
  std::vector<double> lpf_, lpb_, lpw_, lpp_;  // [chains]
  std::vector<double> leaf_sums_;              // [chains, LeafVectors::sums()]
  std::vector<Level> levels_;

};

}  // namespace lockstep

#endif
