// beta_binomial(size, alpha, beta), extraDistr's dbbinom(x, size, alpha, beta):
// the binomial(size, prob) with prob ~ beta(alpha, beta) integrated out.
//   log p = lchoose(size, x) + lbeta(x + alpha, size - x + beta) - lbeta(alpha, beta),
//   x in {0, 1, ..., size};
//   d/dalpha = digamma(x + alpha) - digamma(size + alpha + beta)
//              - digamma(alpha) + digamma(alpha + beta),
//   d/dbeta = digamma(size - x + beta) - digamma(size + alpha + beta)
//             - digamma(beta) + digamma(alpha + beta),
//   d/dsize = digamma(size + 1) - digamma(size - x + 1)
//             + digamma(size - x + beta) - digamma(size + alpha + beta);
// x is discrete (d/dx = 0). As binomial.hpp does, lchoose is written with
// lgamma (as greta/TFP computes it), so that a non-integer size is the
// continuous extension (dbbinom gives NaN there) and the partial in size
// exists. size < 0, alpha <= 0 or beta <= 0 (or any of them infinite) gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_BETA_BINOMIAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_BETA_BINOMIAL_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::beta_binomial> : Discrete3 {
  static constexpr int n_params = 3;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double n = p[0], a = p[1], b = p[2];
    if (!(n >= 0) || ls_isinf(n) || !(a > 0) || ls_isinf(a) || !(b > 0) || ls_isinf(b))
      return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < 0 || x > n || floor(x) != x) {
      dp[0] = dp[1] = dp[2] = 0;
      return -ls_inf();
    }
    const double m = n - x;
    // The log Betas as ratios of Gammas, each computed without cancellation
    // (log_gamma_ratio, math/log_gamma.hpp):
    //   lbeta(x + a, m + b) - lbeta(a, b) = D(a, x) + D(b, m) - D(a + b, n),
    // D(s, k) = lgamma(s + k) - lgamma(s). As lgamma differences they lost
    // everything where alpha or beta is large: at beta = 1e18 each lgamma is
    // 4e19, its rounding worth thousands, and NUTS chains found spurious
    // modes of log density +2000 there (a beta-binomial regression's chains
    // stuck at alpha = 1e-20, beta = 1e18).
    const LogGammaRatio ga = log_gamma_ratio(a, x), gb = log_gamma_ratio(b, m),
                        gab = log_gamma_ratio(a + b, n);
    // digamma(m + b) - digamma(n + a + b), the same way: n + a + b = (m + b) + (x + a)
    const LogGammaRatio gs = log_gamma_ratio(m + b, x + a);
    dp[0] = ls_digamma1p(n) - ls_digamma1p(m) - gs.dvalue;
    dp[1] = ga.dvalue - gab.dvalue;
    dp[2] = gb.dvalue - gab.dvalue;
    return ls_lfactorial(n) - ls_lfactorial(x) - ls_lfactorial(m) + ga.value + gb.value - gab.value;
  }
};

}  // namespace lockstep

#endif
