// Slice sampling as greta's slice(): each iteration, each chain slice-samples
// along a random direction d = diag_sd * u (u uniform on the unit sphere):
// the slice level is log p(x) - Exp(1); an interval of width w = epsilon
// around x is stepped out (Neal 2003, figure 3) by at most 2^max_doublings
// widths in all, then shrunk towards x until a point inside the slice is found
// (figure 5). Stepping out and shrinkage leave the target invariant exactly.
//
// All chains evaluate their pending points together, one engine call per
// step without gradients; a chain whose draw is done waits while the others
// finish. Every iteration moves (accept_stat 1), so warmup tunes diag_sd from
// the draws (pooled or per chain) but not the width.
#ifndef LOCKSTEP_SAMPLER_SLICE_HPP
#define LOCKSTEP_SAMPLER_SLICE_HPP

#include <vector>

#include "sampler.hpp"

namespace lockstep {

struct SliceSettings {
  int max_doublings = 5;
  double epsilon = 1;  // the initial width, in units of diag_sd
  std::vector<double> diag_sd;
  bool per_chain_metric = false;  // Sampler: adapt each chain's diag_sd alone
};

class Slice : public Sampler {
 public:
  Slice(Target& target, SliceSettings settings, const std::vector<double>& init, uint32_t key0,
        uint32_t key1);

 protected:
  void transition() override;

 private:
  SliceSettings settings_;
  std::vector<double> dir_;  // [chains, dim]
};

}  // namespace lockstep

#endif
