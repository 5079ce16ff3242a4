// The first-order optimisers' update rules (greta's, Keras's: optimiser.hpp
// lists them), one row of coordinates at a time: opt()'s first-order
// methods update each start's free state with them, svi() its guide's
// parameters (svi.hpp).
#ifndef LOCKSTEP_FIRST_ORDER_HPP
#define LOCKSTEP_FIRST_ORDER_HPP

#include <string>
#include <vector>

#include "kernels/first_order_step.hpp"
#include "optimiser.hpp"

namespace lockstep {

// A tuning parameter of `s`, or `fallback` where it is not given.
double optimiser_param(const OptimiserSettings& s, const std::string& name, double fallback);

// The method a name (optimiser.hpp's) stands for; unknown for any other.
FirstOrderMethod first_order_method(const std::string& method);

// The first-order methods: one update of chain c's x from its gradient g at
// iteration t (1-based), with per-method state vectors a, b, u (zeroed, or as
// the method initialises them). The rules themselves are FirstOrderStep's
// (kernels/first_order_step.hpp).
struct FirstOrder {
  std::string method;
  FirstOrderMethod kind;
  double lr, beta1, beta2, eps, momentum, rho, init_acc;
  double lr_power, l1, l2, l2_shrinkage, ftrl_beta, global_step;  // ftrl, the proximal ones
  bool nesterov, amsgrad, centered;
  std::vector<double> a, b, u;  // [C, D]: moments / accumulators
  std::vector<double> m_schedule;  // [C]: nadam's momentum schedule product

  FirstOrder(const OptimiserSettings& s, long C, long D);
  // One update of chain c's x ([D]) from its gradient g at iteration t
  // (x's values before it into x_before, where given). Throws
  // std::invalid_argument for an unknown method.
  void step(double* x, const double* g, long c, long D, long t, double* x_before = nullptr);
  // Iteration t's step of row c's n values x from g, with the method's
  // state a, b, u held elsewhere (a GPU's memory: the body a ChainVectors
  // runs; step() passes this row's), initialised as this row's are. Advances
  // row c's nadam schedule, as step() does. Throws as step() does.
  FirstOrderStep body(long t, long c, double* x, double* a, double* b, double* u, const double* g,
                      long n);
};

}  // namespace lockstep

#endif
