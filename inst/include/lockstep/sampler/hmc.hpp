// Hamiltonian Monte Carlo as greta's hmc() defines it: a number of leapfrog
// steps drawn uniformly from Lmin..Lmax each iteration, step size epsilon, and
// diag_sd rescaling the parameter space (a diagonal mass matrix 1 / diag_sd^2).
// All chains take the same number of steps together; each accepts or rejects
// on its own. Warmup is every sampler's (sampler.hpp). A
// small model's chains may step in groups, one per thread (chain_groups.hpp):
// every group draws the same number of steps from the shared stream, so the
// draws are those of lockstep.
#ifndef LOCKSTEP_SAMPLER_HMC_HPP
#define LOCKSTEP_SAMPLER_HMC_HPP

#include <memory>
#include <vector>

#include "hamiltonian_sampler.hpp"

namespace lockstep {

struct HmcSettings {
  int Lmin = 5, Lmax = 10;
  double epsilon = 0.1;
  std::vector<double> diag_sd;  // one value, one per dim, or [chains, dim]
  bool per_chain_metric = false;  // Sampler: adapt each chain's diag_sd alone
  bool per_chain_step_size = false;  // Sampler: adapt each chain's step size alone
  bool warmup_rescue = true;  // Sampler: move stuck chains at warmup's window ends
  double target_accept = 0.8;
};

class Hmc : public HamiltonianSampler {
 public:
  Hmc(Target& target, HmcSettings settings, const std::vector<double>& init, uint32_t key0,
      uint32_t key1);

  bool can_step_in_groups() const override { return true; }

 protected:
  void transition() override;
  std::unique_ptr<Sampler> make_group_sampler(Target& target, const std::vector<double>& init,
                                              const std::vector<double>& sd) const override;

 private:
  HmcSettings settings_;
};

}  // namespace lockstep

#endif
