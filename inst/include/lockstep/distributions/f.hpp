// f(df1, df2): the F distribution, R's df / pf.
//   log f = (d1 log(d1) + d2 log(d2)) / 2 + (d1 / 2 - 1) log(x)
//           - (d1 + d2) / 2 log(d2 + d1 x) - log B(d1 / 2, d2 / 2),  x >= 0;
//   with q = d2 + d1 x and psi = digamma(d1 / 2 + d2 / 2):
//   d/dx = (d1 / 2 - 1) / x - (d1 + d2) d1 / (2 q),
//   d/dd1 = (log(d1) + 1 + log(x) - log(q) - (d1 + d2) x / q - digamma(d1 / 2) + psi) / 2,
//   d/dd2 = (log(d2) + 1 - log(q) - (d1 + d2) / q - digamma(d2 / 2) + psi) / 2
#ifndef LOCKSTEP_DISTRIBUTIONS_F_HPP
#define LOCKSTEP_DISTRIBUTIONS_F_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::f> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double d1 = p[0], d2 = p[1];
    if (!(d1 > 0) || !(d2 > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double q = d2 + d1 * x, lq = log(q), s = d1 + d2, psi = digamma(0.5 * s);
    *dx = ls_xdivy(0.5 * d1 - 1, x) - 0.5 * s * d1 / q;
    dp[0] = 0.5 * (log(d1) + 1 + log(x) - lq - s * x / q - digamma(0.5 * d1) + psi);
    dp[1] = 0.5 * (log(d2) + 1 - lq - s / q - digamma(0.5 * d2) + psi);
    return 0.5 * (d1 * log(d1) + d2 * log(d2)) + ls_xlogy(0.5 * d1 - 1, x) - 0.5 * s * lq -
           ls_lbeta(0.5 * d1, 0.5 * d2);
  }
  // F = I_y(d1 / 2, d2 / 2), y = d1 x / (d1 x + d2); partials in d1, d2 by
  // central differences.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double d1 = p[0], d2 = p[1], h1 = shape_step(d1), h2 = shape_step(d2);
    dp[0] = (value(x, d1 + h1, d2) - value(x, d1 - h1, d2)) / (2 * h1);
    dp[1] = (value(x, d1, d2 + h2) - value(x, d1, d2 - h2)) / (2 * h2);
    return value(x, d1, d2);
  }
  // 1 - F = I_(d2 / (d1 x + d2))(d2 / 2, d1 / 2)
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (ls_isinf(x)) return 0;
    const double d1 = p[0], d2 = p[1];
    return incbeta(0.5 * d2, 0.5 * d1, d2 / (d1 * x + d2));
  }
  LS_HD static double value(double x, double d1, double d2) {
    return incbeta(0.5 * d1, 0.5 * d2, d1 * x / (d1 * x + d2));
  }
};

}  // namespace lockstep

#endif
