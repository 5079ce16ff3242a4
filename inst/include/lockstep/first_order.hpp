// The first-order optimisers' update rules (greta's, Keras's: optimiser.hpp
// lists them), one row of coordinates at a time: opt()'s first-order
// methods update each start's free state with them, svi() its guide's
// parameters (svi.hpp).
#ifndef LOCKSTEP_FIRST_ORDER_HPP
#define LOCKSTEP_FIRST_ORDER_HPP

#include <string>
#include <vector>

#include "kernels/mean_field.hpp"
#include "optimiser.hpp"

namespace lockstep {

// A tuning parameter of `s`, or `fallback` where it is not given.
double optimiser_param(const OptimiserSettings& s, const std::string& name, double fallback);

// The first-order methods: one update of chain c's x from its gradient g at
// iteration t (1-based), with per-method state vectors a, b, u (zeroed, or as
// the method initialises them).
struct FirstOrder {
  std::string method;
  double lr, beta1, beta2, eps, momentum, rho, init_acc;
  double lr_power, l1, l2, l2_shrinkage, ftrl_beta, global_step;  // ftrl, the proximal ones
  bool nesterov, amsgrad, centered;
  std::vector<double> a, b, u;  // [C, D]: moments / accumulators
  std::vector<double> m_schedule;  // [C]: nadam's momentum schedule product

  FirstOrder(const OptimiserSettings& s, long C, long D);
  // One update of chain c's x ([D]) from its gradient g at iteration t.
  void step(double* x, const double* g, long c, long D, long t);
  // Adam's rate at iteration t: lr with its bias corrections (adam_update,
  // kernels/mean_field.hpp, takes it).
  double adam_rate(long t) const;
  // Adam's step at iteration t on n values x with moments m, s (and s_max)
  // held elsewhere (a GPU's memory: the body a ChainVectors runs).
  AdamStep adam_body(long t, double* x, double* m, double* s, double* s_max, const double* g,
                     long n) const;
};

}  // namespace lockstep

#endif
