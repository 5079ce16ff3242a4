// Random-walk Metropolis-Hastings with lockstep chains (sampler/rwmh.hpp).
#include "lockstep/sampler/rwmh.hpp"

#include <algorithm>
#include <cmath>

namespace lockstep {

Rwmh::Rwmh(Target& target, RwmhSettings settings, const std::vector<double>& init, uint32_t key0,
           uint32_t key1)
    : Sampler(target, settings.epsilon, settings.diag_sd, settings.target_accept, init, key0,
              key1, "rwmh", settings.per_chain_metric),
      settings_(settings) {}

void Rwmh::transition() {
  // A rank that holds part of the state (owned_shard.hpp) draws each of its
  // coordinates' numbers where one process draws them, by the coordinate's
  // index in the whole state: the stream's numbers in pairs, a pair each
  // (normal2) or a number each (uniform).
  const std::vector<long>* full = target_.full_index();
  const long whole = target_.full_dim();
  for_chains([&](long c) {
    Stream& s = chain_streams_[c];
    s.purpose = purpose_momentum;
    const double* x = x_.data() + c * D_;
    double* xn = xn_.data() + c * D_;
    const double* sd = chain_sd(c);
    if (full) {
      for (long i = 0; i < D_; ++i) {
        const uint64_t f = static_cast<uint64_t>((*full)[i]);
        const double z = settings_.uniform ? 2 * s.uniform_at(f) - 1 : s.normal_at(f);
        xn[i] = x[i] + epsilon_ * sd[i] * z;
      }
      const uint64_t pairs = static_cast<uint64_t>((whole + 1) / 2);
      s.position += settings_.uniform ? 2 * pairs : pairs;
      return;
    }
    for (long i = 0; i < D_; i += 2) {
      double a, b;
      if (settings_.uniform) {
        a = 2 * s.uniform() - 1;
        b = 2 * s.uniform() - 1;
      } else {
        s.normal2(&a, &b);
      }
      xn[i] = x[i] + epsilon_ * sd[i] * a;
      if (i + 1 < D_) xn[i + 1] = x[i + 1] + epsilon_ * sd[i + 1] * b;
    }
  });
  target_.log_density(xn_.data(), lpn_.data(), nullptr);
  for_chains([&](long c) {
    double log_a = lpn_[c] - lp_[c];
    const bool ok = !std::isnan(lpn_[c]);
    if (!ok) {
      ++bad_[c];
      log_a = -HUGE_VAL;
    }
    stats_.accept_stat[c] = std::exp(std::fmin(0.0, log_a));
    stats_.n_leapfrog[c] = 0;
    stats_.divergent[c] = ok ? 0 : 1;
    Stream& s = chain_streams_[c];
    s.purpose = purpose_accept;
    if (std::log(s.uniform()) < log_a) {
      ++accepted_[c];
      lp_[c] = lpn_[c];
      std::copy(xn_.begin() + c * D_, xn_.begin() + (c + 1) * D_, x_.begin() + c * D_);
    }
    stats_.energy[c] = -lp_[c];
  });
  state_changed_on_host();
}

}  // namespace lockstep
