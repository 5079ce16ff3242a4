// pareto(a, b): shape a, scale b, extraDistr's dpareto(x, a, b) (and greta's).
//   log f = log(a) + a log(b) - (a + 1) log(x) for x >= b, -Inf below;
//   d/dx = -(a + 1) / x,  d/da = 1 / a + log(b / x),  d/db = a / b
#ifndef LOCKSTEP_DISTRIBUTIONS_PARETO_HPP
#define LOCKSTEP_DISTRIBUTIONS_PARETO_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::pareto> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double a = p[0], b = p[1];
    if (!(a > 0) || !(b > 0)) return dist_nan(dx, dp, n_params);
    if (x < b) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double lx = log(x), lb = log(b);
    *dx = -(a + 1) / x;
    dp[0] = 1 / a + lb - lx;
    dp[1] = a / b;
    return log(a) + a * lb - (a + 1) * lx;
  }
  // F = 1 - r, r = (b / x)^a: dF/da = -r log(b / x), dF/db = -a r / b.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double a = p[0], b = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > b)) return 0;
    if (ls_isinf(x)) return 1;
    const double lr = log(b / x), r = exp(a * lr);
    dp[0] = -r * lr;
    dp[1] = -a * r / b;
    return -expm1(a * lr);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > p[1])) return 1;
    if (ls_isinf(x)) return 0;
    return exp(p[0] * log(p[1] / x));
  }
};

}  // namespace lockstep

#endif
