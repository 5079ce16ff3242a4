// binomial(size, prob), R's dbinom.
//   log p = lchoose(size, x) + x log(prob) + (size - x) log(1 - prob),
//   x in {0, 1, ..., size};
//   d/dprob = x / prob - (size - x) / (1 - prob),
//   d/dsize = digamma(size + 1) - digamma(size - x + 1) + log(1 - prob);
// x is discrete (d/dx = 0). lchoose is lgamma(size + 1) - lgamma(x + 1) -
// lgamma(size - x + 1), as greta (TFP) computes it, so that a non-integer size
// is its continuous extension (R's dbinom gives NaN there) and the partial in
// size exists. size < 0 or prob outside [0, 1] gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial> : Discrete2 {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double n = p[0], q = p[1];
    if (!(n >= 0) || ls_isinf(n) || !(q >= 0 && q <= 1)) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < 0 || x > n || floor(x) != x) {
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double m = n - x;
    dp[0] = ls_digamma1p(n) - ls_digamma1p(m) + log1p(-q);
    dp[1] = ls_xdivy(x, q) - ls_xdivy(m, 1 - q);
    return ls_lfactorial(n) - ls_lfactorial(x) - ls_lfactorial(m) + ls_xlogy(x, q) + ls_xlog1py(m, -q);
  }
};

}  // namespace lockstep

#endif
