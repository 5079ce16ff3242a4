// exponential(rate), R's dexp / pexp.
//   log f = log(rate) - rate x for x >= 0, -Inf below;
//   d/dx = -rate,  d/drate = 1/rate - x
#ifndef LOCKSTEP_DISTRIBUTIONS_EXPONENTIAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_EXPONENTIAL_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::exponential> {
  static constexpr int n_params = 1;
  // Straight-line (selects, ls_log): a regression's rate varies by element
  // (exponential(1 / exp(mu))), so nothing is prepared per chain and the
  // element loop vectorises instead (density.hpp's straight_line<D>).
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double r = p[0], bad = nan_unless(r > 0);
    const bool out = x < 0;  // below the support; NaN stays NaN
    const double gr = 1 / r - x, lp = ls_log(r) - r * x;
    *dx = (out ? 0.0 : -r) + bad;
    dp[0] = (out ? 0.0 : gr) + bad;
    return (out ? -ls_inf() : lp) + bad;
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
