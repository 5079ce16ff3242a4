// hypergeometric(m, n, k), R's dhyper(x, m, n, k): the number of white balls
// among k drawn without replacement from an urn of m white and n black.
//   log p = lchoose(m, x) + lchoose(n, k - x) - lchoose(m + n, k),
//   x in {max(0, k - n), ..., min(k, m)},
// with lchoose(a, b) = lgamma(a + 1) - lgamma(b + 1) - lgamma(a - b + 1).
// Every parameter is a count: the partials are 0, and, as in dhyper, m, n or
// k negative, infinite or not whole, or k > m + n, gives NaN. x is discrete
// (d/dx = 0).
#ifndef LOCKSTEP_DISTRIBUTIONS_HYPERGEOMETRIC_HPP
#define LOCKSTEP_DISTRIBUTIONS_HYPERGEOMETRIC_HPP

#include "helpers.hpp"

namespace lockstep {

// log choose(a, b) for whole 0 <= b <= a.
LS_HD double ls_lchoose(double a, double b) {
  return lgamma(a + 1) - lgamma(b + 1) - lgamma(a - b + 1);
}

template <> struct Dist<Family::hypergeometric> : Discrete3 {
  static constexpr int n_params = 3;
  LS_HD static bool is_count(double v) { return v >= 0 && !ls_isinf(v) && floor(v) == v; }
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double m = p[0], n = p[1], k = p[2];
    if (!is_count(m) || !is_count(n) || !is_count(k) || k > m + n)
      return dist_nan(dx, dp, n_params);
    *dx = 0;
    dp[0] = dp[1] = dp[2] = 0;
    if (x < 0 || x < k - n || x > k || x > m || floor(x) != x) return -ls_inf();
    return ls_lchoose(m, x) + ls_lchoose(n, k - x) - ls_lchoose(m + n, k);
  }
};

}  // namespace lockstep

#endif
