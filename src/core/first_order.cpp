// The first-order optimisers' update rules (first_order.hpp).
#include "lockstep/first_order.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace lockstep {

double optimiser_param(const OptimiserSettings& s, const std::string& name, double fallback) {
  auto it = s.params.find(name);
  return it == s.params.end() ? fallback : it->second;
}

FirstOrder::FirstOrder(const OptimiserSettings& s, long C, long D)
    : method(s.method), kind(first_order_method(s.method)) {
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

FirstOrderMethod first_order_method(const std::string& method) {
  static const std::pair<const char*, FirstOrderMethod> methods[] = {
      {"gradient_descent", FirstOrderMethod::gradient_descent},
      {"adam", FirstOrderMethod::adam},
      {"adamax", FirstOrderMethod::adamax},
      {"nadam", FirstOrderMethod::nadam},
      {"adagrad", FirstOrderMethod::adagrad},
      {"adadelta", FirstOrderMethod::adadelta},
      {"rms_prop", FirstOrderMethod::rms_prop},
      {"ftrl", FirstOrderMethod::ftrl},
      {"proximal_gradient_descent", FirstOrderMethod::proximal_gradient_descent},
      {"proximal_adagrad", FirstOrderMethod::proximal_adagrad},
      {"adagrad_da", FirstOrderMethod::adagrad_da}};
  for (const auto& m : methods)
    if (method == m.first) return m.second;
  return FirstOrderMethod::unknown;
}

FirstOrderStep FirstOrder::body(long t, long c, double* x, double* a_c, double* b_c, double* u_c,
                                const double* g, long n) {
  if (kind == FirstOrderMethod::unknown)
    throw std::invalid_argument("opt: unknown optimiser '" + method + "'");
  FirstOrderStep k;
  k.method = kind;
  k.x = x;
  k.a = a_c;
  k.b = b_c;
  k.u = u_c;
  k.g = g;
  k.n = n;
  k.lr = lr;
  k.beta1 = beta1;
  k.beta2 = beta2;
  k.eps = eps;
  k.momentum = momentum;
  k.rho = rho;
  k.lr_power = lr_power;
  k.l1 = l1;
  k.l2 = l2;
  k.l2_shrinkage = l2_shrinkage;
  k.ftrl_beta = ftrl_beta;
  k.global_step = global_step;
  k.nesterov = nesterov;
  k.amsgrad = amsgrad;
  k.centered = centered;
  const double tt = static_cast<double>(t);
  if (kind == FirstOrderMethod::adam)
    k.lr_t = lr * std::sqrt(1 - std::pow(beta2, tt)) / (1 - std::pow(beta1, tt));
  if (kind == FirstOrderMethod::adamax) k.lr_t = lr / (1 - std::pow(beta1, tt));
  if (kind == FirstOrderMethod::nadam) {
    // Keras's schedule: mu_t = beta1 (1 - 0.5 * 0.96^(0.004 t)); the
    // schedule's product is each row's, kept here
    k.mu_t = beta1 * (1 - 0.5 * std::pow(0.96, 0.004 * tt));
    k.mu_next = beta1 * (1 - 0.5 * std::pow(0.96, 0.004 * (tt + 1)));
    k.sched_new = m_schedule[c] * k.mu_t;
    k.sched_next = k.sched_new * k.mu_next;
    k.v_correction = 1 - std::pow(beta2, tt);
    m_schedule[c] = k.sched_new;
  }
  return k;
}

void FirstOrder::step(double* x, const double* g, long c, long D, long t, double* x_before) {
  FirstOrderStep k = body(t, c, x, a.data() + c * D, b.data() + c * D, u.data() + c * D, g, D);
  k.x_before = x_before;
  k.update_from(0, 1);
}

}  // namespace lockstep
