// weibull(shape, scale), R's dweibull / pweibull.
//   log f = log(shape) - log(scale) + (shape - 1) log(x / scale) - t,
//   t = (x / scale)^shape, x >= 0;
//   d/dx = ((shape - 1) - shape t) / x,
//   d/dshape = 1 / shape + log(x / scale) (1 - t),  d/dscale = shape (t - 1) / scale
#ifndef LOCKSTEP_DISTRIBUTIONS_WEIBULL_HPP
#define LOCKSTEP_DISTRIBUTIONS_WEIBULL_HPP

#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::weibull> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double k = p[0], l = p[1];
    if (!(k > 0) || !(l > 0)) return dist_nan(dx, dp, n_params);
    if (x < 0) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double r = x / l, lr = log(r), t = pow(r, k);
    // shape t / x written as shape r^(shape - 1) / scale, finite at x = 0
    *dx = ls_xdivy(k - 1, x) - k * pow(r, k - 1) / l;
    dp[0] = 1 / k + lr * (1 - t);
    dp[1] = k * (t - 1) / l;
    return log(k) - log(l) + ls_xlogy(k - 1, r) - t;
  }
  // Prepared (dist.hpp): log(shape), 1 / shape and the limits of
  // r^(shape - 1) at r = 0 and r = Inf (r = x / scale) once per chain, the
  // scale (parameter 1) the location, free to vary by element (a survival
  // regression's); (x / scale)^shape as exp(shape log(x / scale)) by the
  // straight-line functions of math/elementary.hpp (relative error about
  // |shape log(x / scale)| ulps, which pow's own argument reduction avoids).
  // The element loop selects per element on values only (the limits are
  // per-chain numbers), so that GCC if-converts every select and vectorises
  // each of its element loops.
  struct Prepared {
    static constexpr int location_param = 1;
    double k, inv_k, log_k, pow_zero, pow_inf, bad;
  };
  LS_HD_INLINE static Prepared prepare(const double* p) {
    const double k = p[0] > 0 ? p[0] : ls_nan();
    // pow(r, shape - 1) at r = 0 and at r = Inf
    const double pow_zero = k > 1 ? 0.0 : (k == 1 ? 1.0 : ls_inf());
    const double pow_inf = k > 1 ? ls_inf() : (k == 1 ? 1.0 : 0.0);
    return Prepared{k, 1 / k, ls_log(k), pow_zero, pow_inf, nan_unless(p[0] > 0)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double k = q.k, l = location, bad = q.bad + nan_unless(l > 0);
    // Below the support the logs below are NaN, selected away at the end
    // (taken of x itself: see beta.hpp). NaN stays NaN.
    const bool out = x < 0;
    const double r = x / l, lr = ls_log(r), t = ls_exp(k * lr);
    // r^(shape - 1): t / r, or pow's value at r = 0 and r = Inf, where t / r
    // is 0 / 0 or Inf / Inf (told by t / r != itself: a quiet comparison,
    // where r < Inf "could trap" for GCC and left a branch in the loop)
    const double ratio = t / r, edge = r > 0 ? q.pow_inf : q.pow_zero;
    const double t1 = ratio == ratio ? ratio : edge;
    // (shape - 1) log r and its partial are 0 at shape 1, even at r = 0
    const double kx = ls_xdivy(k - 1, x), klr = ls_count_times(k - 1, lr);
    const double gx = kx - k * t1 / l, gk = q.inv_k + lr * (1 - t), gl = k * (t - 1) / l;
    const double lp = q.log_k - ls_log(l) + klr - t;
    *dx = (out ? 0.0 : gx) + bad;
    dp[0] = (out ? 0.0 : gk) + bad;
    dp[1] = (out ? 0.0 : gl) + bad;
    return (out ? -ls_inf() : lp) + bad;
  }
  // F = 1 - exp(-t): dF/dshape = exp(-t) t log(x / scale),
  // dF/dscale = -exp(-t) shape t / scale.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double k = p[0], l = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double r = x / l, t = pow(r, k), e = exp(-t);
    dp[0] = e * t * log(r);
    dp[1] = -e * k * t / l;
    return -expm1(-t);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (ls_isinf(x)) return 0;
    return exp(-pow(x / p[1], p[0]));
  }
};

}  // namespace lockstep

#endif
