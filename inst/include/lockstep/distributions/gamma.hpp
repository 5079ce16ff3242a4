// gamma(shape, rate), R's dgamma(x, shape, rate) / pgamma.
//   log f = shape log(rate) - lgamma(shape) + (shape - 1) log(x) - rate x, x >= 0;
//   d/dx = (shape - 1) / x - rate,
//   d/dshape = log(rate) - digamma(shape) + log(x),  d/drate = shape / rate - x
// (at x = 0 as R: +Inf for shape < 1, log(rate) for shape 1, -Inf above).
#ifndef LOCKSTEP_DISTRIBUTIONS_GAMMA_HPP
#define LOCKSTEP_DISTRIBUTIONS_GAMMA_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::gamma> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double a = p[0], b = p[1];
    if (!(a > 0) || !(b > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    *dx = ls_xdivy(a - 1, x) - b;
    dp[0] = log(b) - digamma(a) + log(x);
    dp[1] = a / b - x;
    return a * log(b) - lgamma(a) + ls_xlogy(a - 1, x) - b * x;
  }
  // Prepared (dist.hpp): lgamma(shape) and digamma(shape) once per chain, the
  // rate (parameter 1) the location, free to vary by element (a gamma
  // regression's rate = shape / mean); the logs by the straight-line ls_log.
  using Prepared = ShapePrepared;
  LS_HD static Prepared prepare(const double* p) { return ShapePrepared::of(p[0]); }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double a = q.a, b = location, bad = q.bad + nan_unless(b > 0);
    const bool out = x < 0;  // below the support; NaN stays NaN
    const double xs = out ? 1.0 : x, lb = ls_log(b), lx = ls_log(xs);
    const bool unit = a == 1;  // (a - 1) log x and its partial are 0, even at x = 0
    *dx = (out ? 0.0 : (unit ? 0.0 : (a - 1) / xs) - b) + bad;
    dp[0] = (out ? 0.0 : lb - q.digamma_a + lx) + bad;
    dp[1] = (out ? 0.0 : a / b - xs) + bad;
    return (out ? -ls_inf() : a * lb - q.lgamma_a + (unit ? 0.0 : (a - 1) * lx) - b * xs) + bad;
  }
  // F = P(shape, rate x): dF/drate = x g(rate x) with g the gamma(shape, 1)
  // density; dF/dshape by a central difference.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double a = p[0], b = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double y = b * x, h = shape_step(a);
    dp[1] = x * exp(gamma_log_kernel(a, y));
    dp[0] = (gamma_p(a + h, y) - gamma_p(a - h, y)) / (2 * h);
    return gamma_p(a, y);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    return gamma_q(p[0], p[1] * x);
  }
};

}  // namespace lockstep

#endif
