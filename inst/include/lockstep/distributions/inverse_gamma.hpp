// inverse_gamma(alpha, beta): 1 / x ~ gamma(alpha, rate = beta), extraDistr's
// dinvgamma(x, alpha, beta) (greta: TFP's InverseGamma(alpha, rate = beta)).
//   log f = alpha log(beta) - lgamma(alpha) - (alpha + 1) log(x) - beta / x, x > 0;
//   d/dx = -(alpha + 1) / x + beta / x^2,
//   d/dalpha = log(beta) - digamma(alpha) - log(x),  d/dbeta = alpha / beta - 1 / x
#ifndef LOCKSTEP_DISTRIBUTIONS_INVERSE_GAMMA_HPP
#define LOCKSTEP_DISTRIBUTIONS_INVERSE_GAMMA_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::inverse_gamma> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double a = p[0], b = p[1];
    if (!(a > 0) || !(b > 0)) return dist_nan(dx, dp, n_params);
    if (!(x > 0)) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double lx = log(x), ix = 1 / x;
    *dx = (b * ix - (a + 1)) * ix;
    dp[0] = log(b) - digamma(a) - lx;
    dp[1] = a / b - ix;
    return a * log(b) - lgamma(a) - (a + 1) * lx - b * ix;
  }
  // Prepared (dist.hpp): lgamma(shape) and digamma(shape) once per chain, the
  // scale (parameter 1) the location, free to vary by element; the logs by
  // the straight-line ls_log.
  using Prepared = ShapePrepared;
  LS_HD static Prepared prepare(const double* p) { return ShapePrepared::of(p[0]); }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double a = q.a, b = location, bad = q.bad + nan_unless(b > 0);
    const bool in = x > 0;
    const double xs = in ? x : 1.0, lb = ls_log(b), lx = ls_log(xs), ix = 1 / xs;
    *dx = (in ? (b * ix - (a + 1)) * ix : 0.0) + bad;
    dp[0] = (in ? lb - q.digamma_a - lx : 0.0) + bad;
    dp[1] = (in ? a / b - ix : 0.0) + bad;
    return (in ? a * lb - q.lgamma_a - (a + 1) * lx - b * ix : -ls_inf()) + bad;
  }
  // F = Q(alpha, beta / x): dF/dbeta = -g(beta / x) / x with g the
  // gamma(alpha, 1) density; dF/dalpha by a central difference.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double a = p[0], b = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double y = b / x, h = shape_step(a);
    dp[1] = -exp(gamma_log_kernel(a, y)) / x;
    dp[0] = (gamma_q(a + h, y) - gamma_q(a - h, y)) / (2 * h);
    return gamma_q(a, y);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (ls_isinf(x)) return 0;
    return gamma_p(p[0], p[1] / x);
  }
};

}  // namespace lockstep

#endif
