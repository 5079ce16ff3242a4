// HMC with lockstep chains (sampler/hmc.hpp).
#include "lockstep/sampler/hmc.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

namespace {
HmcSettings checked(HmcSettings s) {
  if (s.Lmin < 1 || s.Lmax < s.Lmin) throw std::invalid_argument("hmc: need 1 <= Lmin <= Lmax");
  return s;
}
}  // namespace

Hmc::Hmc(Target& target, HmcSettings settings, const std::vector<double>& init, uint32_t key0,
         uint32_t key1)
    : HamiltonianSampler(target, settings.epsilon, settings.diag_sd, settings.target_accept, init,
                         key0, key1, "hmc", settings.per_chain_metric),
      settings_(checked(settings)) {
  adapt_step_size_per_chain(settings_.per_chain_step_size);
  set_warmup_rescue(settings_.warmup_rescue);
}

std::unique_ptr<Sampler> Hmc::make_group_sampler(Target& target, const std::vector<double>& init,
                                                 const std::vector<double>& sd) const {
  HmcSettings s = settings_;
  s.epsilon = epsilon();  // (to_groups() hands the group its chains' own)
  s.diag_sd = sd;
  return std::make_unique<Hmc>(target, s, init, 0, 0);
}

void Hmc::transition() {
  if (in_groups()) return transition_in_groups();
  const int span = settings_.Lmax - settings_.Lmin + 1;
  int L = settings_.Lmin + static_cast<int>(run_stream_.uniform() * span);
  if (L > settings_.Lmax) L = settings_.Lmax;

  sync_vectors();
  draw_momentum(p_v_);
  const ChainMask all = ChainMask::all(C_);
  const std::vector<double> k0 = kinetic_energies(p_v_, all);
  L = trajectory(L, epsilon_, p_v_);
  const std::vector<double> k1 = kinetic_energies(p_v_, all);
  ChainMask take;
  for (long c = 0; c < C_; ++c) metropolis_step(c, -lp_[c] + k0[c], -lpn_[c] + k1[c], L, take);
  take_proposals(take);
  state_to_host();
}

}  // namespace lockstep
