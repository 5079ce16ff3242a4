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
    : LeapfrogSampler(target, settings.epsilon, settings.diag_sd, settings.target_accept, init,
                      key0, key1, "hmc"),
      settings_(checked(settings)) {}

void Hmc::transition() {
  const int span = settings_.Lmax - settings_.Lmin + 1;
  int L = settings_.Lmin + static_cast<int>(run_stream_.uniform() * span);
  if (L > settings_.Lmax) L = settings_.Lmax;

  draw_momentum(p_);
  std::vector<double> h0(C_);
  for_chains([&](long c) { h0[c] = -lp_[c] + kinetic(p_.data() + c * D_); });
  trajectory(L, epsilon_, p_);

  for_chains([&](long c) {
    const double h1 = -lpn_[c] + kinetic(p_.data() + c * D_);
    double log_a = h0[c] - h1;
    const bool ok = std::isfinite(log_a) && std::fabs(log_a) < divergence_threshold;
    if (!ok) {
      ++bad_[c];
      log_a = -HUGE_VAL;
    }
    stats_.accept_stat[c] = std::exp(std::fmin(0.0, log_a));
    stats_.n_leapfrog[c] = L;
    stats_.divergent[c] = ok ? 0 : 1;
    Stream& s = chain_streams_[c];
    s.purpose = purpose_accept;
    if (ok && std::log(s.uniform()) < log_a) {
      ++accepted_[c];
      lp_[c] = lpn_[c];
      std::copy(xn_.begin() + c * D_, xn_.begin() + (c + 1) * D_, x_.begin() + c * D_);
      std::copy(gn_.begin() + c * D_, gn_.begin() + (c + 1) * D_, grad_.begin() + c * D_);
      stats_.energy[c] = h1;
    } else {
      stats_.energy[c] = h0[c];
    }
  });
}

}  // namespace lockstep
