// poisson(lambda), R's dpois.
//   log p = x log(lambda) - lambda - lgamma(x + 1), x in {0, 1, 2, ...};
//   d/dlambda = x / lambda - 1; x is discrete (d/dx = 0). lambda = 0 puts all
//   mass on 0; lambda < 0 gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_POISSON_HPP
#define LOCKSTEP_DISTRIBUTIONS_POISSON_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::poisson> : Discrete {
  static constexpr int n_params = 1;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double l = p[0];
    if (!(l >= 0) || ls_isinf(l)) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < 0 || floor(x) != x || ls_isinf(x)) {
      dp[0] = 0;
      return -ls_inf();
    }
    dp[0] = ls_xdivy(x, l) - 1;
    return ls_xlogy(x, l) - l - ls_lfactorial(x);
  }
};

}  // namespace lockstep

#endif
