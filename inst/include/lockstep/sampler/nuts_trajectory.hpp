// NUTS's trajectory builder (Stan's base_nuts transition), in the iterative,
// fixed-memory form that lets every chain take its leapfrog steps together
// (nuts.hpp says how). It works on a Hamiltonian sampler's state, metric,
// random streams and vectors; nuts.hpp makes every transition with it, and
// chees.hpp those of its initial buffer.
//
// One transition, step by step (transition()):
//   start()              the momentum of the draw; both ends of the
//                        trajectory at the current point
//   for each depth d, while a chain is still going:
//     choose_directions()  each chain draws a direction and starts its new
//                          subtree at that end
//     build_subtree(d)     2^d leapfrog steps for every chain still building:
//                          each leaf's weight, the streaming multinomial draw
//                          within the subtree, and the subtree's internal
//                          U-turn and divergence checks
//     join_subtrees()      each valid subtree joins its trajectory (biased
//                          progressive sampling may move the draw there); a
//                          U-turn across the whole trajectory, or an invalid
//                          subtree, ends the chain's tree
//   finish()             the iteration's statistics
//
// With a finite max_energy_error, each leaf of a sampling iteration (warmup's
// steps are taken whole) is a macro step of WALNUTS (Bou-
// Rabee, Carpenter, Kleppe and Liu 2025, "the within-orbit adaptive step-
// length no-U-turn sampler"), for the chains whose leapfrog step changed the
// energy by that much or more: the step is taken again as 2^c steps of eps /
// 2^c, for the least c (at most max_micro_depth) whose energy error is below
// max_energy_error, and is reversible only if the same rule, from its end
// with the momentum reversed, picks the same c; a leaf reached by a step that
// is not has weight 0, as has every leaf beyond it in that direction (they
// still count for the U-turn checks, which then match from every leaf of
// non-zero weight). A chain none of whose c is below max_energy_error
// diverges. A leaf that one leapfrog step keeps within max_energy_error is
// NUTS's leaf, the same numbers: where no step needs splitting the draws are
// NUTS's (refine_leaves()). The price where none does: the new leaf's
// position and momentum are written beside the old rather than over them
// (two vectors' traffic a leaf).
#ifndef LOCKSTEP_SAMPLER_NUTS_TRAJECTORY_HPP
#define LOCKSTEP_SAMPLER_NUTS_TRAJECTORY_HPP

#include <cmath>
#include <vector>

#include "hamiltonian_sampler.hpp"

namespace lockstep {

class NutsTrajectory {
 public:
  explicit NutsTrajectory(int max_treedepth, double max_energy_error = HUGE_VAL,
                          int max_micro_depth = 6)
      : max_treedepth_(max_treedepth),
        max_energy_error_(max_energy_error),
        max_micro_depth_(max_micro_depth) {}

  // One NUTS transition of every chain of `s` from its state, which it
  // updates, with its statistics and tallies.
  void transition(HamiltonianSampler& s);

 private:
  // The per-level memory of the subtree being built: for level j, the first
  // momentum of the open block (begin), the rho prefix before it (prefix),
  // and the completed left sibling's last momentum and rho (left_end, left_rho).
  // The levels a leaf starts all start with the same begin and prefix, so
  // they are written once, to a Start that the levels share (start_of_);
  // level 0, a block of one leaf that starts and ends in the leaf's own pass,
  // has none (its begin is the leaf's momentum, its prefix S - p, and its
  // left sibling's end the begin of level 1). Which levels share which
  // Start, and which leaves store what, depends on the leaf's index alone,
  // the same for every chain.
  struct Level {
    double *left_end, *left_rho;
  };
  struct Start {
    double *begin, *prefix;
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

  void start();
  bool all_done() const;
  void choose_directions();
  void build_subtree(int depth);
  void join_subtrees();
  void finish();

  // Makes the vectors below on the first transition (a sampler that builds
  // on NUTS may never need them), and the levels of a subtree of `depth`.
  void ensure_vectors();
  void ensure_levels(int depth);

  // WALNUTS (above): after the leaf pass `lv` of the chains in `on`, whose
  // new leaves are z_next_, p_next_, g_next_, lp_next_ (from the start
  // z_leaf_, p_leaf_ (its half step), g_leaf_, lp_leaf_, of energy H_leaf_),
  // the chains whose step's energy error is at least max_energy_error take it
  // again in smaller steps, which replace their new leaf and its row of
  // leaf_sums_; marks the steps that are not reversible (blocked_) and the
  // chains none of whose steps kept the error down (micro_failed_).
  void refine_leaves(const LeafVectors& lv, const ChainMask& on);
  // n leapfrog steps of h from (z, p, g) for the chains in `on` (in time's
  // direction, reversed on the chains in `back`), in z_w_, p_w_, g_w_ and
  // lp_w_; returns their energies at the end (NaN for the other chains).
  std::vector<double> micro_steps(const double* z, const double* p, const double* g, long n,
                                  double h, const ChainMask& on, const ChainMask& back);
  bool adaptive() const { return max_energy_error_ < HUGE_VAL; }

  int max_treedepth_;
  double max_energy_error_;
  int max_micro_depth_;
  HamiltonianSampler* s_ = nullptr;  // the sampler of the transition under way
  // [chains, dim] arrays in the sampler's vectors(): the trajectory's two
  // ends (position, momentum, gradient); the newest leaf; the proposal of
  // the subtree being built; the momentum of the draw; the momenta at the
  // ends of the forward and backward parts of the trajectory (Stan's
  // p_fwd_fwd, p_fwd_bck, p_bck_fwd, p_bck_bck: the forward part's forward
  // end, ...) and their rhos (sums of momenta); the subtree's first momentum
  // and rho.
  double *z_fwd_ = nullptr, *p_fwd_, *g_fwd_, *z_bck_, *p_bck_, *g_bck_;
  double *z_leaf_, *p_leaf_, *g_leaf_, *z_propose_, *g_propose_, *p_propose_, *p_sample_;
  double *p_fwd_fwd_, *p_fwd_bck_, *p_bck_fwd_, *p_bck_bck_, *rho_, *rho_fwd_, *rho_bck_;
  double *subtree_p_first_, *subtree_rho_;
  std::vector<double> lp_fwd_, lp_bck_, lp_leaf_, lp_propose_;  // [chains]
  // WALNUTS's (adaptive() only): the new leaf, written beside the one it
  // steps from; the start's momentum rebuilt, and the micro steps' state;
  // zeros (a kick that leaves the momentum as it is); per chain, the
  // energies at the trajectory's ends, at the newest leaf, and at the newest
  // leaf as one whole step made it (the acceptance statistic's), whether the
  // trajectory has passed a step that is not reversible forward, backward,
  // and whether the newest leaf's step could not be kept within the error.
  double *z_next_ = nullptr, *p_next_, *g_next_, *p_start_, *z_w_, *p_w_, *g_w_, *zeros_;
  std::vector<double> lp_next_, lp_w_, H_fwd_, H_bck_, H_leaf_, H_whole_;
  std::vector<int> blocked_fwd_, blocked_bck_, micro_failed_;
  // Whether chain c's trajectory has passed a step that is not reversible in
  // the direction it is building now.
  int& blocked(long c) { return (direction_[c] > 0 ? blocked_fwd_ : blocked_bck_)[c]; }
  std::vector<double> leaf_sums_;  // [chains, LeafVectors::sums()]
  std::vector<Level> levels_;
  std::vector<Start> starts_;  // at least as many as levels
  std::vector<int> start_of_;  // level j's index in starts_ (j >= 1)
  // The begin and prefix of level j >= 1, and the begin of the block of
  // 2^(j + 1) leaves that holds level j's block (the subtree's first
  // momentum at the top), for the subtree of depth d.
  const Start& start(int j) const { return starts_[start_of_[j]]; }
  const double* outer_begin(int j, int d) const;

  // Per chain, the transition under way: the initial energy; the log sums
  // of the leaves' weights of the trajectory and of the subtree being built;
  // the sum of the leaves' Metropolis acceptance probabilities (the
  // acceptance statistic); the tree depth reached; whether the chain's tree
  // is done, whether it is building a subtree now, whether that subtree is
  // still valid, its direction (+1 forward, -1 backward); leapfrog steps
  // (gradients), leaves (WALNUTS's split steps are one each), divergence,
  // and whether the draw moved.
  std::vector<double> H0_, log_sum_weight_, log_sum_weight_subtree_, sum_metro_prob_;
  std::vector<int> depth_, done_, building_, valid_, direction_;
  std::vector<int> n_leapfrog_, n_leaves_, divergent_, moved_;
  ChainMask forward_, backward_;  // the chains building forward, backward
  std::vector<double> merge_sums_;  // the merge checks' sums, [chains, 6]
};

}  // namespace lockstep

#endif
