// The first-order optimisers' update rules (greta's, Keras's: optimiser.hpp
// lists them) for one coordinate, written once for every place that runs
// them: opt()'s starts and svi()'s guide in host memory (FirstOrder::step,
// first_order.hpp), and svi()'s guide where it lives on the target's
// vectors, a GPU's memory among them (ChainVectors::first_order_step), as a
// lanes-policy body. The host computes a step's scalars from the iteration
// (the bias corrections, nadam's schedule) and the body applies them to
// each coordinate, so both paths give the same numbers, to the bit.
#ifndef LOCKSTEP_KERNELS_FIRST_ORDER_STEP_HPP
#define LOCKSTEP_KERNELS_FIRST_ORDER_STEP_HPP

#include <cmath>

#include "../lanes.hpp"

namespace lockstep {

enum class FirstOrderMethod : int {
  unknown,  // (refused when a step is taken: FirstOrder::step)
  gradient_descent,
  adam,
  adamax,
  nadam,
  adagrad,
  adadelta,
  rms_prop,
  ftrl,
  proximal_gradient_descent,
  proximal_adagrad,
  adagrad_da
};

// (std::max's and std::clamp's choices, in functions a GPU can call)
LS_HD_INLINE double larger_of(double a, double b) { return a < b ? b : a; }
LS_HD_INLINE double clamped(double v, double lo, double hi) { return v < lo ? lo : hi < v ? hi : v; }

// One step of n coordinates x from their gradient g, with the method's state
// a, b, u ([n] each: moments, accumulators, velocities; which the method
// uses, as FirstOrder's constructor initialises them).
struct FirstOrderStep {
  int phases = 1, shared_per_lane = 0;
  FirstOrderMethod method = FirstOrderMethod::unknown;
  double *x = nullptr, *a = nullptr, *b = nullptr, *u = nullptr;
  const double* g = nullptr;
  long n = 0;
  // g's sign: 1 where g is the objective's gradient, -1 where it is the log
  // density's (opt() on the target's vectors: the minimum of -log p)
  double g_sign = 1;
  // where set, x's values before the step are written there too (svi()'s
  // guide keeps them, to end a diverged fit where its bound was finite)
  double* x_before = nullptr;
  // the method's tuning parameters (FirstOrder's)
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, momentum = 0, rho = 0;
  double lr_power = 0, l1 = 0, l2 = 0, l2_shrinkage = 0, ftrl_beta = 0, global_step = 0;
  bool nesterov = false, amsgrad = false, centered = false;
  // this step's: lr_t, adam's and adamax's rate with their bias corrections;
  // nadam's mu_t and mu_{t+1}, its schedule's products to t and t + 1, and
  // the second moment's correction 1 - beta2^t
  double lr_t = 0, mu_t = 0, mu_next = 0, sched_new = 0, sched_next = 0, v_correction = 1;

  // Method M's update of coordinate i (M a constant: the switch is folded,
  // and a loop over i vectorises where the rule allows).
  template <FirstOrderMethod M> LS_HD void update(long i) const {
    const double gi = g_sign * g[i];
    double &X = x[i], &A = a[i], &B = b[i], &U = u[i];
    if (x_before) x_before[i] = X;
    switch (M) {
      case FirstOrderMethod::gradient_descent:
        A = momentum * A - lr * gi;  // velocity
        X += nesterov ? momentum * A - lr * gi : A;
        break;
      case FirstOrderMethod::adam: {
        A = beta1 * A + (1 - beta1) * gi;
        B = beta2 * B + (1 - beta2) * gi * gi;
        double v = B;
        if (amsgrad) v = U = larger_of(B, U);
        X -= lr_t * A / (sqrt(v) + eps);
        break;
      }
      case FirstOrderMethod::adamax:
        A = beta1 * A + (1 - beta1) * gi;
        B = larger_of(beta2 * B, fabs(gi));
        X -= lr_t * A / (B + eps);
        break;
      case FirstOrderMethod::nadam: {
        const double gp = gi / (1 - sched_new);
        A = beta1 * A + (1 - beta1) * gi;
        B = beta2 * B + (1 - beta2) * gi * gi;
        const double mp = A / (1 - sched_next), vp = B / v_correction;
        const double m_bar = (1 - mu_t) * gp + mu_next * mp;
        X -= lr * m_bar / (sqrt(vp) + eps);
        break;
      }
      case FirstOrderMethod::adagrad:
        A += gi * gi;
        X -= lr * gi / (sqrt(A) + eps);
        break;
      case FirstOrderMethod::adadelta: {
        A = rho * A + (1 - rho) * gi * gi;
        const double step = gi * sqrt(B + eps) / sqrt(A + eps);
        B = rho * B + (1 - rho) * step * step;
        X -= lr * step;
        break;
      }
      case FirstOrderMethod::rms_prop: {
        A = rho * A + (1 - rho) * gi * gi;
        double denom = A;
        if (centered) {
          B = rho * B + (1 - rho) * gi;
          denom -= B * B;
        }
        const double step = lr * gi / (sqrt(larger_of(denom, 0.0)) + eps);
        if (momentum > 0) {
          U = momentum * U + step;
          X -= U;
        } else {
          X -= step;
        }
        break;
      }
      case FirstOrderMethod::ftrl: {
        // Follow the regularised leader (McMahan et al. 2013), as Keras's
        // Ftrl: A accumulates g^2, B is the linear term, and x is solved
        // from them at every step (0 where the L1 penalty outweighs B).
        const double gs = gi + 2 * l2_shrinkage * X;
        const double a_new = A + gi * gi;
        const double p_new = pow(a_new, -lr_power), p_old = pow(A, -lr_power);
        B += gs - (p_new - p_old) / lr * X;
        const double quadratic = (p_new + ftrl_beta) / lr + 2 * l2;
        X = fabs(B) > l1 ? (clamped(B, -l1, l1) - B) / quadratic : 0.0;
        A = a_new;
        break;
      }
      case FirstOrderMethod::proximal_gradient_descent:
      case FirstOrderMethod::proximal_adagrad: {
        // A gradient step (adagrad's, scaled by the accumulated g^2, for
        // proximal_adagrad), then the proximal map of the L1 and L2
        // penalties: shrunk towards 0 by lr l1, then scaled by 1 / (1 + lr l2).
        const bool adaptive = M == FirstOrderMethod::proximal_adagrad;
        if (adaptive) A += gi * gi;
        const double rate = adaptive ? lr / sqrt(A) : lr;
        const double v = X - rate * gi;
        const double shrunk = larger_of(fabs(v) - rate * l1, 0.0);
        X = (v > 0 ? shrunk : -shrunk) / (1 + rate * l2);
        break;
      }
      case FirstOrderMethod::adagrad_da: {
        // Adagrad's dual averaging (TensorFlow's AdagradDA): A sums the
        // gradients, B their squares, and x is solved from them; the
        // penalties scale with global_step, fixed as greta passes it.
        A += gi;
        B += gi * gi;
        const double denom = l2 * global_step * lr + sqrt(B);
        const double shrunk = larger_of(fabs(A) - l1 * global_step, 0.0);
        X = l1 > 0 ? (A > 0 ? -1.0 : 1.0) * lr * shrunk / denom : -lr * A / denom;
        break;
      }
      case FirstOrderMethod::unknown:
        break;
    }
  }
  // Coordinates first, first + stride, ... below n, the method chosen once.
  template <FirstOrderMethod M> LS_HD void update_from(long first, long stride) const {
    for (long i = first; i < n; i += stride) update<M>(i);
  }
  LS_HD void update_from(long first, long stride) const {
    switch (method) {
#define LOCKSTEP_FIRST_ORDER_CASE(name)                    \
  case FirstOrderMethod::name:                             \
    update_from<FirstOrderMethod::name>(first, stride); \
    break;
      LOCKSTEP_FIRST_ORDER_CASE(gradient_descent)
      LOCKSTEP_FIRST_ORDER_CASE(adam)
      LOCKSTEP_FIRST_ORDER_CASE(adamax)
      LOCKSTEP_FIRST_ORDER_CASE(nadam)
      LOCKSTEP_FIRST_ORDER_CASE(adagrad)
      LOCKSTEP_FIRST_ORDER_CASE(adadelta)
      LOCKSTEP_FIRST_ORDER_CASE(rms_prop)
      LOCKSTEP_FIRST_ORDER_CASE(ftrl)
      LOCKSTEP_FIRST_ORDER_CASE(proximal_gradient_descent)
      LOCKSTEP_FIRST_ORDER_CASE(proximal_adagrad)
      LOCKSTEP_FIRST_ORDER_CASE(adagrad_da)
#undef LOCKSTEP_FIRST_ORDER_CASE
      case FirstOrderMethod::unknown:
        break;
    }
  }
  // one lane per coordinate
  LS_HD void operator()(int, const Lane& lane) const { update_from(lane.index, lane.count); }
};

}  // namespace lockstep

#endif
