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

std::vector<double> HamiltonianSampler::search_step_sizes() {
  // Hoffman & Gelman (2014), algorithm 4, with Stan's threshold (its
  // init_stepsize): double or halve epsilon until a short trajectory crosses
  // acceptance 0.8; four leapfrog steps rather than one: beyond the
  // leapfrog's stability limit (2 sd for a Gaussian) the energy error grows
  // geometrically with the steps, but one step can still look acceptable,
  // and a step chosen there makes every long trajectory diverge. Per chain,
  // each chain searches on its own acceptance (all chains step every try; a
  // chain whose search has ended keeps its step size); shared, every chain
  // on the mean acceptance of all.
  const bool per_chain = per_chain_step_size();
  std::vector<double> eps = step_sizes();
  std::vector<int> direction(C_, 0);
  std::vector<char> searching(C_, 1);
  const ChainMask all = ChainMask::all(C_);
  std::vector<double> accept(C_);
  for (int tries = 0; tries < 60; ++tries) {
    set_step_sizes(eps);
    sync_vectors();
    draw_momentum(p_v_);
    const std::vector<double> k0 = kinetic_energies(p_v_, all);
    trajectory(4, epsilon_, p_v_, false);  // (a cut iteration's window end still searches whole)
    const std::vector<double> k1 = kinetic_energies(p_v_, all);
    double mean_accept = 0;
    for (long c = 0; c < C_; ++c) {
      const double h0 = -lp_[c] + k0[c];
      const double log_a = h0 - (-lpn_[c] + k1[c]);
      accept[c] = std::isfinite(log_a) ? std::exp(std::fmin(0.0, log_a)) : 0.0;
      mean_accept += accept[c];
    }
    mean_accept /= C_;
    bool any = false;
    for (long c = 0; c < C_; ++c) {
      if (!searching[c]) continue;
      const int want = (per_chain ? accept[c] : mean_accept) > 0.8 ? 1 : -1;
      if (direction[c] == 0) direction[c] = want;
      if (want != direction[c]) {
        // Going up, this step is the first that is too large: keep the last
        // acceptable one (Stan keeps the first too large, and leaves the
        // rest to dual averaging, which a short warmup may not have time
        // for).
        if (direction[c] > 0) eps[c] /= 2;
        searching[c] = 0;
        continue;
      }
      const double next = direction[c] > 0 ? eps[c] * 2 : eps[c] / 2;
      if (!(next > 1e-10 && next < 1e7)) {
        searching[c] = 0;
        continue;
      }
      eps[c] = next;
      any = true;
    }
    if (!any) break;
  }
  return eps;
}

}  // namespace lockstep
