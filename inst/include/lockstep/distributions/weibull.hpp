// weibull(shape, scale), R's dweibull / pweibull.
//   log f = log(shape) - log(scale) + (shape - 1) log(x / scale) - t,
//   t = (x / scale)^shape, x >= 0;
//   d/dx = ((shape - 1) - shape t) / x,
//   d/dshape = 1 / shape + log(x / scale) (1 - t),  d/dscale = shape (t - 1) / scale
#ifndef LOCKSTEP_DISTRIBUTIONS_WEIBULL_HPP
#define LOCKSTEP_DISTRIBUTIONS_WEIBULL_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::weibull> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double k = p[0], l = p[1];
    if (!(k > 0) || !(l > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double r = x / l, lr = log(r), t = pow(r, k);
    // shape t / x written as shape r^(shape - 1) / scale, finite at x = 0
    *dx = ls_xdivy(k - 1, x) - k * pow(r, k - 1) / l;
    dp[0] = 1 / k + lr * (1 - t);
    dp[1] = k * (t - 1) / l;
    return log(k) - log(l) + ls_xlogy(k - 1, r) - t;
  }
  // F = 1 - exp(-t): dF/dshape = exp(-t) t log(x / scale),
  // dF/dscale = -exp(-t) shape t / scale.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double k = p[0], l = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double r = x / l, t = pow(r, k), e = exp(-t);
    dp[0] = e * t * log(r);
    dp[1] = -e * k * t / l;
    return -expm1(-t);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (ls_isinf(x)) return 0;
    return exp(-pow(x / p[1], p[0]));
  }
};

}  // namespace lockstep

#endif
