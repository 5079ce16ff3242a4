// NUTS with lockstep chains (sampler/nuts.hpp).
#include "lockstep/sampler/nuts.hpp"

#include <stdexcept>

namespace lockstep {

namespace {

NutsSettings checked(NutsSettings s) {
  if (s.max_treedepth < 1 || s.max_treedepth > 30)
    throw std::invalid_argument("nuts: max_treedepth must be between 1 and 30");
  if (!(s.max_energy_error > 0))
    throw std::invalid_argument("nuts: max_energy_error must be positive (or infinite)");
  if (s.max_micro_depth < 1 || s.max_micro_depth > 12)
    throw std::invalid_argument("nuts: max_micro_depth must be between 1 and 12");
  return s;
}

}  // namespace

Nuts::Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
           uint32_t key1)
    : HamiltonianSampler(target, settings.epsilon, settings.diag_sd, settings.adapt_delta, init,
                         key0, key1, "nuts", settings.per_chain_metric),
      settings_(checked(settings)),
      tree_(settings_.max_treedepth, settings_.max_energy_error, settings_.max_micro_depth) {
  step_size_adaptation_.pool_harmonically();
  adapt_step_size_per_chain(settings_.per_chain_step_size);
  set_warmup_rescue(settings_.warmup_rescue);
}

std::unique_ptr<Sampler> Nuts::make_group_sampler(Target& target, const std::vector<double>& init,
                                                  const std::vector<double>& sd) const {
  NutsSettings s = settings_;
  s.epsilon = epsilon();  // (to_groups() hands the group its chains' own)
  s.diag_sd = sd;
  return std::make_unique<Nuts>(target, s, init, 0, 0);
}

void Nuts::transition() {
  if (in_groups()) return transition_in_groups();
  tree_.transition(*this);
}

}  // namespace lockstep
