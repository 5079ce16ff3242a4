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
#ifndef LOCKSTEP_SAMPLER_NUTS_TRAJECTORY_HPP
#define LOCKSTEP_SAMPLER_NUTS_TRAJECTORY_HPP

#include <vector>

#include "hamiltonian_sampler.hpp"

namespace lockstep {

class NutsTrajectory {
 public:
  explicit NutsTrajectory(int max_treedepth) : max_treedepth_(max_treedepth) {}

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

  int max_treedepth_;
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
  // still valid, its direction (+1 forward, -1 backward); leapfrog steps,
  // divergence, and whether the draw moved.
  std::vector<double> H0_, log_sum_weight_, log_sum_weight_subtree_, sum_metro_prob_;
  std::vector<int> depth_, done_, building_, valid_, direction_;
  std::vector<int> n_leapfrog_, divergent_, moved_;
  ChainMask forward_, backward_;  // the chains building forward, backward
  std::vector<double> merge_sums_;  // the merge checks' sums, [chains, 6]
};

}  // namespace lockstep

#endif
