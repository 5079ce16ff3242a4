// Stochastic variational inference (svi(), issue 36): a guide q over the
// model's unconstrained free state, fitted by maximising a bound on the log
// evidence with reparameterised draws, whose particles are the target's
// chains: one engine call per iteration evaluates every particle's log
// density and gradient, as one leapfrog step of all chains does.
//
// Guides (the guide's parameters phi, updated by a first-order optimiser,
// first_order.hpp):
//   mean_field  independent normals (NumPyro's AutoNormal): phi = (mu,
//               omega), z = mu + exp(omega) eps, eps ~ N(0, I)
//   delta       a point mass at mu (AutoDelta): the MAP of the free state
//               (with the log |Jacobian|), every particle at mu
//
// Objectives, for particles z_1..z_C with log weights w_c = log p(z_c) -
// log q(z_c):
//   alpha = 1   the ELBO, mean(w)
//   alpha != 1  Renyi's bound 1 / (1 - alpha) log mean(exp((1 - alpha) w));
//               alpha = 0 is the importance-weighted bound (seed 003's
//               RenyiELBO), at least the ELBO and tighter with more particles
// whose gradient in phi is sum_c v_c d w_c / d phi, v the softmax of (1 -
// alpha) w (1 / C each for the ELBO); with z_c = mu + sigma eps_c, d w_c /
// d mu = g_c and d w_c / d omega = g_c sigma eps_c + 1 (g_c = dlog p /
// dz at z_c: log q's own dependence on phi at fixed eps is -omega's sum).
//
// Each particle's normals are drawn by the counter-based generator keyed by
// (iteration, particle, coordinate), so set.seed() repeats a run. The
// learning rate decays exponentially (seed 003's optax schedule): lr_t = lr
// decay_rate^(t / decay_steps), constant by default.
#ifndef LOCKSTEP_SVI_HPP
#define LOCKSTEP_SVI_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "executor.hpp"
#include "first_order.hpp"
#include "optimiser.hpp"

namespace lockstep {

struct SviSettings {
  std::string guide = "mean_field";  // or "delta"
  double alpha = 1;                  // Renyi's alpha: 1 the ELBO, 0 the importance-weighted bound
  OptimiserSettings optimiser;       // a first-order method ("adam" ...) and its parameters
  double decay_rate = 1, decay_steps = 1;
  double init_scale = 0.1;  // the guide's first standard deviations (NumPyro's)
};

class Svi {
 public:
  // Over `target` (its chains: the particles; it must outlive this), the
  // guide's mean starting at init_mean ([dim]). Throws std::invalid_argument
  // for an unknown guide or optimiser, or a delta guide with more than one
  // particle.
  Svi(Target& target, const SviSettings& settings, const std::vector<double>& init_mean,
      uint32_t key0, uint32_t key1);

  // One iteration: draws the particles, estimates the bound and its
  // gradient, and updates the guide. Returns the loss, minus the bound's
  // estimate; where it is not finite (every particle's log density, or the
  // gradient), the guide is left as it was and the loss is NaN.
  double step();
  // The bound's estimate at the current guide from particles drawn as
  // step() would draw them next, without updating or advancing (the
  // objective at a given guide, for tests).
  double bound();

  long iterations() const { return t_; }
  long dim() const { return D_; }
  const std::vector<double>& mean() const { return mu_; }
  // The guide's standard deviations (0 for a point mass).
  std::vector<double> sd() const;
  // Replaces the guide's parameters: its mean, and (mean field) its sds.
  void set_guide(const std::vector<double>& mean, const std::vector<double>& sd);
  // log q(z) for `rows` rows of z ([rows, dim]) (0 for a point mass).
  std::vector<double> log_q(const double* z, long rows) const;

 private:
  // The particles at iteration t (1-based) for the current guide, into z_,
  // their normals into eps_; then their log weights into w and the bound's
  // weights (the softmax) into v. Returns the bound, or NaN.
  double evaluate(long t, bool gradient, std::vector<double>& w, std::vector<double>& v);

  Target& target_;
  SviSettings s_;
  long C_, D_;
  bool point_;
  uint32_t key0_, key1_;
  long t_ = 0;
  double lr0_;
  std::vector<double> mu_, omega_;  // [D]
  std::vector<double> phi_, grad_;  // the optimiser's row: mu then omega
  std::vector<double> z_, eps_, lp_, g_;
  FirstOrder rule_;
};

}  // namespace lockstep

#endif
