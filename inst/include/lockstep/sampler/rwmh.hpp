// Random-walk Metropolis-Hastings as greta's rwmh(): each chain proposes
// x' = x + epsilon * diag_sd * e, with e standard normal or uniform on
// (-1, 1) in every coordinate, and accepts with probability
// min(1, p(x') / p(x)). All chains propose together (one engine call per
// iteration, without gradients). Warmup tunes epsilon by dual averaging
// towards an acceptance rate of 0.234 (Roberts, Gelman & Gilks 1997) and
// diag_sd from the draws (pooled or per chain), as for the other samplers.
#ifndef LOCKSTEP_SAMPLER_RWMH_HPP
#define LOCKSTEP_SAMPLER_RWMH_HPP

#include <vector>

#include "sampler.hpp"

namespace lockstep {

struct RwmhSettings {
  bool uniform = false;  // proposal: normal (false) or uniform
  double epsilon = 1;
  std::vector<double> diag_sd;
  bool per_chain_metric = false;  // Sampler: adapt each chain's diag_sd alone
  double target_accept = 0.234;
};

class Rwmh : public Sampler {
 public:
  Rwmh(Target& target, RwmhSettings settings, const std::vector<double>& init, uint32_t key0,
       uint32_t key1);

 protected:
  void transition() override;

 private:
  RwmhSettings settings_;
};

}  // namespace lockstep

#endif
