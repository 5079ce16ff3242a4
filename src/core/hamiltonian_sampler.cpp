// What the Hamiltonian samplers share (sampler/hamiltonian_sampler.hpp).
#include "lockstep/sampler/hamiltonian_sampler.hpp"

#include <algorithm>
#include <cmath>

namespace lockstep {

HamiltonianSampler::HamiltonianSampler(Target& target, double epsilon,
                                       const std::vector<double>& diag_sd, double target_accept,
                                       const std::vector<double>& init, uint32_t key0,
                                       uint32_t key1, const std::string& name,
                                       bool per_chain_metric)
    : Sampler(target, epsilon, diag_sd, target_accept, init, key0, key1, name, per_chain_metric) {
  ChainVectors& v = vectors();
  for (double** a : {&z_new_v_, &g_new_v_, &p_v_}) *a = v.make();
}

void HamiltonianSampler::draw_momentum(double* p) {
  // p_i = n_i / sd_i
  vectors().momentum(p, sd_v_, chain_streams_, purpose_momentum);
}

std::vector<double> HamiltonianSampler::kinetic_energies(const double* p, const ChainMask& on) {
  const DotSpec spec{p, sd_v_, nullptr, DotKind::square};
  std::vector<double> k(C_);
  vectors().dots(&spec, 1, m_v_, on, k.data());
  for (double& e : k) e *= 0.5;
  return k;
}

// Leapfrog, with the half steps of momentum between two position steps merged
// into one full step (one pass over the state fewer per step).
int HamiltonianSampler::trajectory(int L, double eps, double* p, bool may_cut) {
  ChainVectors& v = vectors();
  const ChainMask all = ChainMask::all(C_), forward;
  lpn_ = lp_;
  int l = 0;
  for (; l < L; ++l) {
    if (l > 0 && may_cut && cut_short()) break;
    const double kick = l == 0 ? 0.5 * eps : eps;
    v.leapfrog(z_new_v_, l == 0 ? x_v_ : z_new_v_, p, l == 0 ? g_v_ : g_new_v_, m_v_, kick, eps,
               true, all, forward);
    v.log_density(z_new_v_, lpn_.data(), g_new_v_);
  }
  v.leapfrog(nullptr, nullptr, p, g_new_v_, m_v_, 0.5 * eps, eps, false, all, forward);
  return l;
}

double HamiltonianSampler::metropolis_step(long c, double h0, double h1, int L, ChainMask& take) {
  double log_a = h0 - h1;
  const bool ok = std::isfinite(log_a) && std::fabs(log_a) < divergence_threshold;
  if (!ok) {
    ++bad_[c];
    log_a = -HUGE_VAL;
  }
  const double a = std::exp(std::fmin(0.0, log_a));
  stats_.accept_stat[c] = a;
  stats_.n_leapfrog[c] = L;
  stats_.divergent[c] = ok ? 0 : 1;
  Stream& s = chain_streams_[c];
  s.purpose = purpose_accept;
  if (ok && std::log(s.uniform()) < log_a) {
    ++accepted_[c];
    lp_[c] = lpn_[c];
    take.set(c);
    stats_.energy[c] = h1;
  } else {
    stats_.energy[c] = h0;
  }
  return a;
}

void HamiltonianSampler::take_proposals(const ChainMask& take) {
  vectors().copy(x_v_, z_new_v_, take);
  vectors().copy(g_v_, g_new_v_, take);
}

double HamiltonianSampler::find_reasonable_epsilon() {
  // Hoffman & Gelman (2014), algorithm 4, on the mean acceptance of all chains,
  // with Stan's threshold (its init_stepsize): double or halve epsilon until
  // a short trajectory crosses acceptance 0.8; four leapfrog steps rather than
  // one: beyond the leapfrog's stability limit (2 sd for a Gaussian) the
  // energy error grows geometrically with the steps, but one step can still
  // look acceptable, and a step chosen there makes every long trajectory
  // diverge.
  double eps = epsilon_;
  int direction = 0;
  sync_vectors();
  const ChainMask all = ChainMask::all(C_);
  for (int tries = 0; tries < 60; ++tries) {
    draw_momentum(p_v_);
    const std::vector<double> k0 = kinetic_energies(p_v_, all);
    trajectory(4, eps, p_v_, false);  // (a cut iteration's window end still searches whole)
    const std::vector<double> k1 = kinetic_energies(p_v_, all);
    double mean_accept = 0;
    for (long c = 0; c < C_; ++c) {
      const double h0 = -lp_[c] + k0[c];
      const double log_a = h0 - (-lpn_[c] + k1[c]);
      mean_accept += std::isfinite(log_a) ? std::exp(std::fmin(0.0, log_a)) : 0.0;
    }
    mean_accept /= C_;
    const int want = mean_accept > 0.8 ? 1 : -1;
    if (direction == 0) direction = want;
    if (want != direction) {
      // Going up, this step is the first that is too large: keep the last
      // acceptable one (Stan keeps the first too large, and leaves the rest
      // to dual averaging, which a short warmup may not have time for).
      if (direction > 0) eps /= 2;
      break;
    }
    const double next = direction > 0 ? eps * 2 : eps / 2;
    if (!(next > 1e-10 && next < 1e7)) break;
    eps = next;
  }
  return eps;
}

}  // namespace lockstep
