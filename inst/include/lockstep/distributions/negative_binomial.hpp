// negative_binomial(size, prob), R's dnbinom(x, size, prob): the number of
// failures before the size-th success.
//   log p = lgamma(x + size) - lgamma(size) - lgamma(x + 1) + size log(prob)
//           + x log(1 - prob),  x in {0, 1, 2, ...};
//   d/dsize = digamma(x + size) - digamma(size) + log(prob),
//   d/dprob = size / prob - x / (1 - prob); x is discrete (d/dx = 0).
// size <= 0 or prob outside (0, 1] gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_NEGATIVE_BINOMIAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_NEGATIVE_BINOMIAL_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::negative_binomial> : Discrete2 {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double r = p[0], q = p[1];
    if (!(r > 0) || ls_isinf(r) || !(q > 0 && q <= 1)) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < 0 || floor(x) != x || ls_isinf(x)) {
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    dp[0] = digamma(x + r) - digamma(r) + log(q);
    dp[1] = r / q - ls_xdivy(x, 1 - q);
    return lgamma(x + r) - lgamma(r) - ls_lfactorial(x) + r * log(q) + ls_xlog1py(x, -q);
  }
  // Prepared (dist.hpp): lgamma(size) and digamma(size) once per chain, prob
  // (parameter 1) the location, free to vary by element (a count
  // regression's prob = size / (size + mean)).
  struct Prepared {
    static constexpr int location_param = 1;
    double r, lgamma_r, digamma_r;
    bool ok;
  };
  LS_HD static Prepared prepare(const double* p) {
    const double r = p[0];
    const bool ok = r > 0 && !ls_isinf(r);
    return ok ? Prepared{r, lgamma(r), digamma(r), true}
              : Prepared{r, ls_nan(), ls_nan(), false};
  }
  LS_HD static double lpdf(double x, double location, const Prepared& pq, double* dx,
                           double* dp) {
    const double r = pq.r, q = location;
    if (!pq.ok || !(q > 0 && q <= 1)) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < 0 || floor(x) != x || ls_isinf(x)) {
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    dp[0] = digamma(x + r) - pq.digamma_r + log(q);
    dp[1] = r / q - ls_xdivy(x, 1 - q);
    return lgamma(x + r) - pq.lgamma_r - ls_lfactorial(x) + r * log(q) + ls_xlog1py(x, -q);
  }
};

}  // namespace lockstep

#endif
