// poisson_log(eta): poisson(exp(eta)), computed on the log scale (greta's
// representation; R's poisson(exp(eta)) becomes this family, as Stan's
// poisson_log):
//   log p = x eta - exp(eta) - lgamma(x + 1),  x in {0, 1, 2, ...};
//   d/deta = x - exp(eta); x is discrete (d/dx = 0).
// The rate's log is never taken (poisson(exp(eta)) computes x log(exp(eta)),
// which is -Inf once exp(eta) underflows, at eta < -745). x = 0 contributes
// exactly -exp(eta) (not 0 * -Inf at eta = -Inf). NaN eta gives NaN.
// exp is ls_exp (math/elementary.hpp) and log(x!) ls_lfactorial_count, so
// that the element loop has no call of the C library and no branch.
#ifndef LOCKSTEP_DISTRIBUTIONS_POISSON_LOG_HPP
#define LOCKSTEP_DISTRIBUTIONS_POISSON_LOG_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::poisson_log> : Discrete {
  static constexpr int n_params = 1;
  // Straight-line (selects; ls_exp and ls_lfactorial_count), so that a count
  // regression's element loop vectorises (density.hpp's straight_line<D>).
  static constexpr bool straight_line = true;
  // lpdf = kernel + data_term (dist.hpp's has_data_term): -log(x!) is the
  // target's alone.
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    return kernel(x, p, dx, dp) + data_term(x);
  }
  LS_HD_INLINE static double data_term(double x) {
    return is_count(x) ? -ls_lfactorial_count(x) : 0.0;
  }
  LS_HD_INLINE static double kernel(double x, const double* p, double* dx, double* dp) {
    const double eta = p[0], bad = nan_unless(eta == eta);
    const bool count = is_count(x);
    const double rate = ls_exp(eta);
    *dx = bad;
    dp[0] = (count ? x - rate : 0.0) + bad;
    return (count ? ls_count_times(x, eta) - rate : -ls_inf()) + bad;
  }
};

}  // namespace lockstep

#endif
