// The first-order optimisers' update rules (first_order.hpp).
#include "lockstep/first_order.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

double optimiser_param(const OptimiserSettings& s, const std::string& name, double fallback) {
  auto it = s.params.find(name);
  return it == s.params.end() ? fallback : it->second;
}

FirstOrder::FirstOrder(const OptimiserSettings& s, long C, long D) : method(s.method) {
  lr = optimiser_param(s, "learning_rate",
             method == "gradient_descent" || method == "proximal_gradient_descent" ? 0.01
             : method == "adam" || method == "rms_prop"                            ? 0.1
             : method == "adagrad" || method == "adagrad_da"                       ? 0.8
             : method == "ftrl" || method == "proximal_adagrad"                    ? 1.0
                                                                                   : 0.001);
  beta1 = optimiser_param(s, "beta_1", 0.9);
  beta2 = optimiser_param(s, "beta_2", 0.999);
  eps = optimiser_param(s, "epsilon", method == "adam" || method == "adagrad" || method == "adadelta" ? 1e-8
                            : method == "rms_prop"                                         ? 1e-10
                                                                                           : 1e-7);
  momentum = optimiser_param(s, "momentum", 0);
  rho = optimiser_param(s, "rho", method == "adadelta" ? 1 : 0.9);
  init_acc = optimiser_param(s, "initial_accumulator_value", 0.1);
  nesterov = optimiser_param(s, "nesterov", 0) != 0;
  amsgrad = optimiser_param(s, "amsgrad", 0) != 0;
  centered = optimiser_param(s, "centered", 0) != 0;
  lr_power = optimiser_param(s, "learning_rate_power", -0.5);
  l1 = optimiser_param(s, "l1_regularization_strength", 0);
  l2 = optimiser_param(s, "l2_regularization_strength", 0);
  l2_shrinkage = optimiser_param(s, "l2_shrinkage_regularization_strength", 0);
  ftrl_beta = optimiser_param(s, "beta", 0);
  global_step = optimiser_param(s, "global_step", 1);
  // a: the squared-gradient accumulator of adagrad, ftrl and proximal_adagrad
  // (adagrad_da's: its gradient sum, and b its squared-gradient accumulator)
  const bool accumulates = method == "adagrad" || method == "ftrl" || method == "proximal_adagrad";
  a.assign(C * D, accumulates ? init_acc : 0.0);
  b.assign(C * D, method == "adagrad_da"
                      ? optimiser_param(s, "initial_gradient_squared_accumulator_value", 0.1)
                      : 0.0);
  u.assign(C * D, 0.0);
  m_schedule.assign(C, 1.0);
}

double FirstOrder::adam_rate(long t) const {
  const double tt = static_cast<double>(t);
  return lr * std::sqrt(1 - std::pow(beta2, tt)) / (1 - std::pow(beta1, tt));
}

AdamStep FirstOrder::adam_body(long t, double* x, double* m, double* s, double* s_max,
                               const double* g, long n) const {
  AdamStep body;
  body.x = x;
  body.m = m;
  body.s = s;
  body.s_max = s_max;
  body.g = g;
  body.lr_t = adam_rate(t);
  body.beta1 = beta1;
  body.beta2 = beta2;
  body.eps = eps;
  body.amsgrad = amsgrad;
  body.n = n;
  return body;
}

void FirstOrder::step(double* x, const double* g, long c, long D, long t) {
  double* A = a.data() + c * D;
  double* B = b.data() + c * D;
  double* U = u.data() + c * D;
  const double tt = static_cast<double>(t);
  if (method == "gradient_descent") {
    for (long i = 0; i < D; ++i) {
      A[i] = momentum * A[i] - lr * g[i];  // velocity
      x[i] += nesterov ? momentum * A[i] - lr * g[i] : A[i];
    }
  } else if (method == "adam") {
    const double lr_t = adam_rate(t);
    for (long i = 0; i < D; ++i)
      adam_update(x + i, A + i, B + i, U + i, g[i], lr_t, beta1, beta2, eps, amsgrad);
  } else if (method == "adamax") {
    const double lr_t = lr / (1 - std::pow(beta1, tt));
    for (long i = 0; i < D; ++i) {
      A[i] = beta1 * A[i] + (1 - beta1) * g[i];
      B[i] = std::max(beta2 * B[i], std::fabs(g[i]));
      x[i] -= lr_t * A[i] / (B[i] + eps);
    }
  } else if (method == "nadam") {
    // Keras's schedule: mu_t = beta1 (1 - 0.5 * 0.96^(0.004 t))
    const double mu_t = beta1 * (1 - 0.5 * std::pow(0.96, 0.004 * tt));
    const double mu_next = beta1 * (1 - 0.5 * std::pow(0.96, 0.004 * (tt + 1)));
    const double sched_new = m_schedule[c] * mu_t, sched_next = sched_new * mu_next;
    m_schedule[c] = sched_new;
    for (long i = 0; i < D; ++i) {
      const double gp = g[i] / (1 - sched_new);
      A[i] = beta1 * A[i] + (1 - beta1) * g[i];
      B[i] = beta2 * B[i] + (1 - beta2) * g[i] * g[i];
      const double mp = A[i] / (1 - sched_next), vp = B[i] / (1 - std::pow(beta2, tt));
      const double m_bar = (1 - mu_t) * gp + mu_next * mp;
      x[i] -= lr * m_bar / (std::sqrt(vp) + eps);
    }
  } else if (method == "adagrad") {
    for (long i = 0; i < D; ++i) {
      A[i] += g[i] * g[i];
      x[i] -= lr * g[i] / (std::sqrt(A[i]) + eps);
    }
  } else if (method == "adadelta") {
    for (long i = 0; i < D; ++i) {
      A[i] = rho * A[i] + (1 - rho) * g[i] * g[i];
      const double update = g[i] * std::sqrt(B[i] + eps) / std::sqrt(A[i] + eps);
      B[i] = rho * B[i] + (1 - rho) * update * update;
      x[i] -= lr * update;
    }
  } else if (method == "rms_prop") {
    for (long i = 0; i < D; ++i) {
      A[i] = rho * A[i] + (1 - rho) * g[i] * g[i];
      double denom = A[i];
      if (centered) {
        B[i] = rho * B[i] + (1 - rho) * g[i];
        denom -= B[i] * B[i];
      }
      const double step = lr * g[i] / (std::sqrt(std::max(denom, 0.0)) + eps);
      if (momentum > 0) {
        U[i] = momentum * U[i] + step;
        x[i] -= U[i];
      } else {
        x[i] -= step;
      }
    }
  } else if (method == "ftrl") {
    // Follow the regularised leader (McMahan et al. 2013), as Keras's Ftrl:
    // a accumulates g^2, b is the linear term, and x is solved from them
    // at every step (0 where the L1 penalty outweighs b).
    for (long i = 0; i < D; ++i) {
      const double gs = g[i] + 2 * l2_shrinkage * x[i];
      const double a_new = A[i] + g[i] * g[i];
      const double p_new = std::pow(a_new, -lr_power), p_old = std::pow(A[i], -lr_power);
      B[i] += gs - (p_new - p_old) / lr * x[i];
      const double quadratic = (p_new + ftrl_beta) / lr + 2 * l2;
      x[i] = std::fabs(B[i]) > l1 ? (std::clamp(B[i], -l1, l1) - B[i]) / quadratic : 0.0;
      A[i] = a_new;
    }
  } else if (method == "proximal_gradient_descent" || method == "proximal_adagrad") {
    // A gradient step (adagrad's, scaled by the accumulated g^2, for
    // proximal_adagrad), then the proximal map of the L1 and L2 penalties:
    // shrunk towards 0 by lr l1, then scaled by 1 / (1 + lr l2).
    const bool adaptive = method == "proximal_adagrad";
    for (long i = 0; i < D; ++i) {
      if (adaptive) A[i] += g[i] * g[i];
      const double rate = adaptive ? lr / std::sqrt(A[i]) : lr;
      const double v = x[i] - rate * g[i];
      const double shrunk = std::max(std::fabs(v) - rate * l1, 0.0);
      x[i] = (v > 0 ? shrunk : -shrunk) / (1 + rate * l2);
    }
  } else if (method == "adagrad_da") {
    // Adagrad's dual averaging (TensorFlow's AdagradDA): a sums the
    // gradients, b their squares, and x is solved from them; the penalties
    // scale with global_step, fixed as greta passes it.
    for (long i = 0; i < D; ++i) {
      A[i] += g[i];
      B[i] += g[i] * g[i];
      const double denom = l2 * global_step * lr + std::sqrt(B[i]);
      const double shrunk = std::max(std::fabs(A[i]) - l1 * global_step, 0.0);
      x[i] = l1 > 0 ? (A[i] > 0 ? -1.0 : 1.0) * lr * shrunk / denom : -lr * A[i] / denom;
    }
  } else {
    throw std::invalid_argument("opt: unknown optimiser '" + method + "'");
  }
}

}  // namespace lockstep
