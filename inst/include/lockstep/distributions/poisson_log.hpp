// poisson_log(eta): poisson(exp(eta)), computed on the log scale (greta's
// representation; R's poisson(exp(eta)) becomes this family, as Stan's
// poisson_log):
//   log p = x eta - exp(eta) - lgamma(x + 1),  x in {0, 1, 2, ...};
//   d/deta = x - exp(eta); x is discrete (d/dx = 0).
// The rate's log is never taken (poisson(exp(eta)) computes x log(exp(eta)),
// which is -Inf once exp(eta) underflows, at eta < -745). x = 0 contributes
// exactly -exp(eta) (not 0 * -Inf at eta = -Inf). NaN eta gives NaN.
// exp is ls_exp (math/elementary.hpp) and log(x!) a table lookup on the CPU
// (ls_lfactorial), so that the element loop has no call of the C library.
#ifndef LOCKSTEP_DISTRIBUTIONS_POISSON_LOG_HPP
#define LOCKSTEP_DISTRIBUTIONS_POISSON_LOG_HPP

#include "link.hpp"

namespace lockstep {

template <> struct Dist<Family::poisson_log> : Discrete {
  static constexpr int n_params = 1;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double eta = p[0];
    if (eta != eta) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < 0 || floor(x) != x || ls_isinf(x)) {
      dp[0] = 0;
      return -ls_inf();
    }
    const double rate = ls_exp(eta);
    dp[0] = x - rate;
    return ls_count_times(x, eta) - rate - ls_lfactorial(x);
  }
};

}  // namespace lockstep

#endif
