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
  // Straight-line (selects; ls_log and ls_lfactorial_count), so that the
  // element loop of a rate that varies by element (an offset's exposure
  // times exp(eta)) vectorises (density.hpp's straight_line<D>).
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
    const double l = p[0], bad = nan_unless((l >= 0) & (l < ls_inf()));
    const bool count = is_count(x);
    *dx = bad;
    // x log(lambda) and x / lambda are 0 at x = 0, also at lambda = 0
    dp[0] = (count ? ls_xdivy(x, l) - 1 : 0.0) + bad;
    return (count ? ls_count_times(x, ls_log(l)) - l : -ls_inf()) + bad;
  }
};

}  // namespace lockstep

#endif
