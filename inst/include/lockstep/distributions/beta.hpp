// beta(shape1, shape2), R's dbeta / pbeta.
//   log f = (shape1 - 1) log(x) + (shape2 - 1) log(1 - x) - log B(shape1, shape2),
//   0 <= x <= 1;
//   d/dx = (shape1 - 1) / x - (shape2 - 1) / (1 - x),
//   d/dshape1 = log(x) - digamma(shape1) + digamma(shape1 + shape2),
//   d/dshape2 = log(1 - x) - digamma(shape2) + digamma(shape1 + shape2)
#ifndef LOCKSTEP_DISTRIBUTIONS_BETA_HPP
#define LOCKSTEP_DISTRIBUTIONS_BETA_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::beta> {
  static constexpr int n_params = 2;
  // Straight-line (no branch on an element's values, only selects, and
  // math/log_gamma.hpp's lgamma and digamma): in a mean-precision beta
  // regression both shapes vary by element, so nothing can be prepared once
  // per chain, and the element loop vectorises instead (density.hpp's
  // straight_line<D>).
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double a = p[0], b = p[1];
    const double bad = nan_unless((a > 0) & (b > 0));
    // Outside the support the logs below are NaN, and selected away at the
    // end. (Taken of x itself: of a placeholder selected for x there, GCC
    // specialised ls_log1p's selects into a select of masks of two widths,
    // which it then could not vectorise.)
    const bool out = (x < 0) | (x > 1);  // NaN stays NaN
    const double lx = ls_log(x), l1x = ls_log1p(-x);
    const LogGamma ga = ls_lgamma_digamma(a), gb = ls_lgamma_digamma(b);
    const LogGamma gab = ls_lgamma_digamma(a + b);
    // (shape - 1) log(x) and (shape - 1) / x are 0 at shape 1, even at x = 0
    const double gx = ls_xdivy(a - 1, x) - ls_xdivy(b - 1, 1 - x);
    const double g1 = lx - ga.digamma + gab.digamma, g2 = l1x - gb.digamma + gab.digamma;
    const double lp = ls_count_times(a - 1, lx) + ls_count_times(b - 1, l1x) -
                      (ga.lgamma + gb.lgamma - gab.lgamma);
    *dx = (out ? 0.0 : gx) + bad;
    dp[0] = (out ? 0.0 : g1) + bad;
    dp[1] = (out ? 0.0 : g2) + bad;
    return (out ? -ls_inf() : lp) + bad;
  }
  // F = I_x(shape1, shape2); its partials in the shapes by central differences.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double a = p[0], b = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (!(x < 1)) return 1;
    const double ha = shape_step(a), hb = shape_step(b);
    dp[0] = (incbeta(a + ha, b, x) - incbeta(a - ha, b, x)) / (2 * ha);
    dp[1] = (incbeta(a, b + hb, x) - incbeta(a, b - hb, x)) / (2 * hb);
    return incbeta(a, b, x);
  }
  // 1 - I_x(a, b) = I_(1-x)(b, a)
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (!(x < 1)) return 0;
    return incbeta(p[1], p[0], 1 - x);
  }
};

}  // namespace lockstep

#endif
