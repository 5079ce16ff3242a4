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
    // lgamma(x + r) - lgamma(r) without their cancellation at a large size
    // (log_gamma_ratio, math/log_gamma.hpp)
    const LogGammaRatio g = log_gamma_ratio(r, x);
    dp[0] = g.dvalue + log(q);
    dp[1] = r / q - ls_xdivy(x, 1 - q);
    return g.value - ls_lfactorial(x) + r * log(q) + ls_xlog1py(x, -q);
  }
  // Prepared (dist.hpp): lgamma(size) and digamma(size) once per chain, prob
  // (parameter 1) the location, free to vary by element (a count
  // regression's prob = size / (size + mean)). For a count x below 16 (most
  // counts of most count models), lgamma(x + size) - lgamma(size) is the log
  // of the product of size + j over j < x, and digamma(x + size) -
  // digamma(size) the sum of their reciprocals: a few multiplications, and
  // no cancellation between two large lgammas (size is below 1e15 there, so
  // the product and the numerator stay finite); above, for a size of 10 or
  // more, log_gamma_ratio_large (Stirling's series differenced by hand: the
  // difference of math/log_gamma.hpp's lgammas of x + size and size lost
  // about size * 1e-16 to rounding, 0.004 per row at size = 1e12, where a
  // near-Poisson model's size wanders), its series at size prepared; below
  // 10, the lgamma and digamma of x + size less those of size. The element
  // loop is straight-line, so that it vectorises: sixteen factors, each 1
  // beyond x, every form computed and one selected.
  struct Prepared {
    static constexpr int location_param = 1;
    double r, lgamma_r, digamma_r, lgamma_series_r, digamma_series_r, bad;
  };
  LS_HD static Prepared prepare(const double* p) {
    const double r = p[0];
    const bool ok = r > 0 && !ls_isinf(r);
    const double w = 1 / r;
    return ok ? Prepared{r, lgamma(r), digamma(r), stirling_lgamma_series(w),
                         stirling_digamma_series(w * w), 0.0}
              : Prepared{ls_nan(), ls_nan(), ls_nan(), ls_nan(), ls_nan(), ls_nan()};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& pq, double* dx,
                                  double* dp) {
    const double r = pq.r, q = location, bad = pq.bad + nan_unless((q > 0) & (q <= 1));
    const bool count = is_count(x);
    // the reciprocals' sum as one fraction, numerator / product, so that the
    // loop has no division
    double product = 1, numerator = 0;
    LS_UNROLL
    for (int j = 0; j < 16; ++j) {
      const bool in = j < x;
      const double f = in ? r + j : 1.0;
      numerator = numerator * f + (in ? product : 0.0);
      product *= f;
    }
    const LogGamma big = ls_lgamma_digamma(x + r);
    const LogGammaRatio large = log_gamma_ratio_large(r, x, pq.lgamma_series_r,
                                                      pq.digamma_series_r);
    const bool small = (x < 16) & (r < 1e15), above = r >= 10;
    // lgamma(x + r) - lgamma(r), digamma(x + r) - digamma(r)
    const double lg = small ? ls_log(product) : (above ? large.value : big.lgamma - pq.lgamma_r);
    const double dg =
        small ? numerator / product : (above ? large.dvalue : big.digamma - pq.digamma_r);
    // the logs by the straight-line ls_log (the C library's log and log1p
    // were half of a count regression's time); log(1 - q) for log1p(-q) is
    // off by at most q's rounding in 1 - q, 1e-16 absolute
    const double log_q = ls_log(q);
    const double g1 = r / q - ls_xdivy(x, 1 - q);
    const double lp = lg - ls_lfactorial_count(x) + r * log_q + ls_count_times(x, ls_log(1 - q));
    *dx = bad;
    dp[0] = (count ? dg + log_q : 0.0) + bad;
    dp[1] = (count ? g1 : 0.0) + bad;
    return (count ? lp : -ls_inf()) + bad;
  }
};

}  // namespace lockstep

#endif
