// ChEES-HMC with lockstep chains (sampler/chees.hpp).
#include "lockstep/sampler/chees.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

namespace {
CheesSettings checked(CheesSettings s) {
  if (s.max_leapfrog < 1) throw std::invalid_argument("chees: max_leapfrog must be at least 1");
  if (!(s.learning_rate > 0)) throw std::invalid_argument("chees: learning_rate must be positive");
  return s;
}
}  // namespace

Chees::Chees(Target& target, CheesSettings settings, const std::vector<double>& init,
             uint32_t key0, uint32_t key1)
    : LeapfrogSampler(target, settings.epsilon, settings.diag_sd, settings.target_accept, init,
                      key0, key1, "chees",
                      settings.per_chain_metric),
      settings_(checked(settings)),
      T_(settings.epsilon) {}

double Chees::pooled_accept() const {
  // harmonic mean: a chain that accepts nothing pulls the step size down
  double inv = 0;
  for (long c = 0; c < C_; ++c) inv += 1 / std::max(stats_.accept_stat[c], 1e-20);
  return C_ / inv;
}

void Chees::transition() {
  const double u = run_stream_.uniform();  // the jitter, shared by all chains
  const int L = static_cast<int>(
      std::min<double>(settings_.max_leapfrog, std::max(1.0, std::ceil(u * T_ / epsilon_))));
  draw_momentum(p_);
  std::vector<double> h0(C_);
  for_chains([&](long c) { h0[c] = -lp_[c] + kinetic(c, p_.data() + c * D_); });
  trajectory(L, epsilon_, p_);

  // ChEES's gradient needs the chains' means before and after, in the metric.
  std::vector<double> mean_x(D_, 0.0), mean_xn(D_, 0.0);
  if (adapting_) {
    for (long c = 0; c < C_; ++c)
      for (long i = 0; i < D_; ++i) {
        mean_x[i] += x_[c * D_ + i] / C_;
        mean_xn[i] += xn_[c * D_ + i] / C_;
      }
  }
  std::vector<double> grad_term(C_, 0.0);
  for_chains([&](long c) {
    const double h1 = -lpn_[c] + kinetic(c, p_.data() + c * D_);
    const double *sd = chain_sd(c), *m = inverse_mass(c);
    // ChEES's gradient term is the proposal's (accepted or not), from the
    // state before the Metropolis step replaces it
    double d_old = 0, d_new = 0, dot = 0;
    if (adapting_)
      for (long i = 0; i < D_; ++i) {
        const double zo = (x_[c * D_ + i] - mean_x[i]) / sd[i];
        const double zn = (xn_[c * D_ + i] - mean_xn[i]) / sd[i];
        d_old += zo * zo;
        d_new += zn * zn;
        // (x' - m') . M^-1 p' with M^-1 = diag(sd^2)
        dot += (xn_[c * D_ + i] - mean_xn[i]) * m[i] * p_[c * D_ + i];
      }
    const double a = metropolis_step(c, h0[c], h1, L);
    if (adapting_ && stats_.divergent[c] == 0) grad_term[c] = a * (d_new - d_old) * dot * u;
  });
  if (!adapting_) return;
  // Adam ascent on log T, on the gradient normalised by its chains' mean
  // magnitude (Adam's steps depend on the gradient's sign and consistency,
  // not its units).
  double g = 0, scale = 0;
  for (long c = 0; c < C_; ++c) {
    g += grad_term[c] / C_;
    scale += std::fabs(grad_term[c]) / C_;
  }
  if (!(scale > 0) || !std::isfinite(g)) return;
  g /= scale;
  const double b1 = 0.9, b2 = 0.999;
  ++adam_t_;
  adam_m_ = b1 * adam_m_ + (1 - b1) * g;
  adam_v_ = b2 * adam_v_ + (1 - b2) * g * g;
  const double mh = adam_m_ / (1 - std::pow(b1, adam_t_));
  const double vh = adam_v_ / (1 - std::pow(b2, adam_t_));
  T_ *= std::exp(settings_.learning_rate * mh / (std::sqrt(vh) + 1e-8));
  T_ = std::min(T_, epsilon_ * settings_.max_leapfrog);
  T_ = std::max(T_, epsilon_);
}

}  // namespace lockstep
