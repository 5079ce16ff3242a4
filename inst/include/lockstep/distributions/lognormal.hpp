// lognormal(meanlog, sdlog), R's dlnorm / plnorm.
//   log f = -log(x) - log(sqrt(2 pi)) - log(sdlog) - z^2 / 2,
//   z = (log(x) - meanlog) / sdlog, for x > 0 (-Inf at and below 0);
//   d/dx = -(1 + z / sdlog) / x,  d/dmeanlog = z / sdlog,
//   d/dsdlog = (z^2 - 1) / sdlog
#ifndef LOCKSTEP_DISTRIBUTIONS_LOGNORMAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_LOGNORMAL_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::lognormal> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double s = p[1];
    if (!(s > 0)) return dist_nan(dx, dp, n_params);
    if (!(x > 0)) {
      *dx = 0;
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double lx = log(x), z = (lx - p[0]) / s;
    *dx = -(1 + z / s) / x;
    dp[0] = z / s;
    dp[1] = (z * z - 1) / s;
    return -lx - ls_log_sqrt_2pi - log(s) - 0.5 * z * z;
  }
  // Prepared (dist.hpp): log(sdlog) and 1 / sdlog once per chain, meanlog
  // the location; log(x) by the straight-line ls_log, so that the element
  // loop vectorises. Outside the support (x <= 0, or NaN) -Inf with zero
  // partials, as lpdf(); an invalid sdlog makes everything NaN.
  struct Prepared {
    double inv_s, log_norm, bad;  // log_norm = -log(sqrt(2 pi)) - log(sdlog)
  };
  LS_HD_INLINE static Prepared prepare(const double* p) {
    const double s = p[1];
    return Prepared{1 / s, -ls_log_sqrt_2pi - ls_log(s), nan_unless(s > 0)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const bool in = x > 0;
    const double xs = in ? x : 1.0, lx = ls_log(xs), z = (lx - location) * q.inv_s;
    *dx = (in ? -(1 + z * q.inv_s) / xs : 0.0) + q.bad;
    dp[0] = (in ? z * q.inv_s : 0.0) + q.bad;
    dp[1] = (in ? (z * z - 1) * q.inv_s : 0.0) + q.bad;
    return (in ? q.log_norm - lx - 0.5 * z * z : -ls_inf()) + q.bad;
  }
  // F = Phi(z): dF/dmeanlog = -phi(z) / sdlog, dF/dsdlog = -phi(z) z / sdlog.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double s = p[1];
    dp[0] = dp[1] = 0;
    if (!(x > 0)) return 0;
    if (ls_isinf(x)) return 1;
    const double z = (log(x) - p[0]) / s, f = std_normal_pdf(z);
    dp[0] = -f / s;
    dp[1] = -f * z / s;
    return std_normal_cdf(z);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (!(x > 0)) return 1;
    if (ls_isinf(x)) return 0;
    return std_normal_cdf(-(log(x) - p[0]) / p[1]);
  }
};

}  // namespace lockstep

#endif
