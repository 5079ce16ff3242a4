// beta(shape1, shape2), R's dbeta / pbeta.
//   log f = (shape1 - 1) log(x) + (shape2 - 1) log(1 - x) - log B(shape1, shape2),
//   0 <= x <= 1;
//   d/dx = (shape1 - 1) / x - (shape2 - 1) / (1 - x),
//   d/dshape1 = log(x) - digamma(shape1) + digamma(shape1 + shape2),
//   d/dshape2 = log(1 - x) - digamma(shape2) + digamma(shape1 + shape2)
#ifndef LOCKSTEP_DISTRIBUTIONS_BETA_HPP
#define LOCKSTEP_DISTRIBUTIONS_BETA_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::beta> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double a = p[0], b = p[1];
    if (!(a > 0) || !(b > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0 || x > 1) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double dab = digamma(a + b);
    *dx = ls_xdivy(a - 1, x) - ls_xdivy(b - 1, 1 - x);
    dp[0] = log(x) - digamma(a) + dab;
    dp[1] = log1p(-x) - digamma(b) + dab;
    return ls_xlogy(a - 1, x) + ls_xlog1py(b - 1, -x) - ls_lbeta(a, b);
  }
  // F = I_x(shape1, shape2); its partials in the shapes by central differences.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double a = p[0], b = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (!(x < 1)) return 1;
    const double ha = shape_step(a), hb = shape_step(b);
    dp[0] = (incbeta(a + ha, b, x) - incbeta(a - ha, b, x)) / (2 * ha);
    dp[1] = (incbeta(a, b + hb, x) - incbeta(a, b - hb, x)) / (2 * hb);
    return incbeta(a, b, x);
  }
  // 1 - I_x(a, b) = I_(1-x)(b, a)
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (!(x < 1)) return 0;
    return incbeta(p[1], p[0], 1 - x);
  }
};

}  // namespace lockstep

#endif
