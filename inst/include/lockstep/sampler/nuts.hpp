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
// Memory per chain: about (20 + 4 x depth reached) vectors of dim doubles.
#ifndef LOCKSTEP_SAMPLER_NUTS_HPP
#define LOCKSTEP_SAMPLER_NUTS_HPP

#include <memory>
#include <vector>

#include "chain_vectors.hpp"
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

 protected:
  void transition() override;
  // The step size search runs on the base class's host state: brings the
  // gradient there first.
  double find_reasonable_epsilon() override;

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
  // The per-chain kinetic energies p' M^-1 p / 2 of the chains in `on`.
  std::vector<double> kinetic_energies(const double* p, const ChainMask& on);
  void ensure_levels(int depth);
  // Copies the base class's state and metric into the vectors where they
  // changed since, and the gradient back on request.
  void upload_state();

  NutsSettings settings_;
  std::unique_ptr<ChainVectors> v_;
  // [chains, dim] arrays in v_: the current state, gradient and metric (sd
  // and the inverse mass sd^2), mirrors of the base class's x_, grad_, sd_,
  // sd2_; the trajectory's two ends (position, momentum, gradient), the moving
  // point, the proposal of the subtree being built, and the momenta of Stan's
  // checks (forward / backward subtree ends).
  double *x_v_, *g_v_, *sd_v_, *m_v_;
  double *xf_, *pf_, *gf_, *xb_, *pb_, *gb_;
  double *xw_, *pw_, *gw_, *xp_, *gp_, *pp_, *ps_;
  double *p_ff_, *p_fb_, *p_bf_, *p_bb_, *rho_, *rho_f_, *rho_b_, *sub_first_, *sub_rho_;
  // scratch of the merge checks inside a subtree (the right sibling's rho
  // and both siblings'), kept so that no leaf allocates
  double *right_rho_, *both_rho_;
  std::vector<double> lpf_, lpb_, lpw_, lpp_;  // [chains]
  std::vector<Level> levels_;
  bool state_uploaded_ = false;  // x_v_ and g_v_ hold x_ and grad_
  bool grad_downloaded_ = true;  // grad_ holds g_v_
  long metric_uploaded_ = -1;    // the metric_version() sd_v_ and m_v_ hold
};

}  // namespace lockstep

#endif
