// chi_squared(df), R's dchisq / pchisq: gamma(df / 2, rate 1 / 2).
//   log f = -(df / 2) log(2) - lgamma(df / 2) + (df / 2 - 1) log(x) - x / 2, x >= 0;
//   d/dx = (df / 2 - 1) / x - 1 / 2,
//   d/ddf = (log(x / 2) - digamma(df / 2)) / 2
#ifndef LOCKSTEP_DISTRIBUTIONS_CHI_SQUARED_HPP
#define LOCKSTEP_DISTRIBUTIONS_CHI_SQUARED_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::chi_squared> {
  static constexpr int n_params = 1;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double k = 0.5 * p[0];
    if (!(k > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0) {
      *dx = 0;
      dp[0] = 0;
      return -ls_inf();
    }
    constexpr double log2 = 0.69314718055994530942;
    *dx = ls_xdivy(k - 1, x) - 0.5;
    dp[0] = 0.5 * (log(x) - log2 - digamma(k));
    return -k * log2 - lgamma(k) + ls_xlogy(k - 1, x) - 0.5 * x;
  }
  // F = P(df / 2, x / 2); dF/ddf by a central difference.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double v = p[0];
    dp[0] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double h = shape_step(v);
    dp[0] = (gamma_p(0.5 * (v + h), 0.5 * x) - gamma_p(0.5 * (v - h), 0.5 * x)) / (2 * h);
    return gamma_p(0.5 * v, 0.5 * x);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    if (!(x > 0)) return 1;
    return gamma_q(0.5 * p[0], 0.5 * x);
  }
};

}  // namespace lockstep

#endif
