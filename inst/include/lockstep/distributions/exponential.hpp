// exponential(rate), R's dexp / pexp.
//   log f = log(rate) - rate x for x >= 0, -Inf below;
//   d/dx = -rate,  d/drate = 1/rate - x
#ifndef LOCKSTEP_DISTRIBUTIONS_EXPONENTIAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_EXPONENTIAL_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::exponential> {
  static constexpr int n_params = 1;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double r = p[0];
    if (!(r > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0) {
      *dx = 0;
      dp[0] = 0;
      return -ls_inf();
    }
    *dx = -r;
    dp[0] = 1 / r - x;
    return log(r) - r * x;
  }
  // F = 1 - exp(-rate x), dF/drate = x exp(-rate x).
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double r = p[0];
    if (x <= 0) {
      dp[0] = 0;
      return 0;
    }
    if (ls_isinf(x)) {
      dp[0] = 0;
      return 1;
    }
    const double e = exp(-r * x);
    dp[0] = x * e;
    return -expm1(-r * x);
  }
  // 1 - F = exp(-rate x), d/drate = -x exp(-rate x).
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    const double F = cdf(x, p, dp);
    dp[0] = -dp[0];
    if (x <= 0 || ls_isinf(x)) return 1 - F;
    return exp(-p[0] * x);
  }
};

}  // namespace lockstep

#endif
