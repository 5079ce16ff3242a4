// cauchy(location, scale), R's dcauchy / pcauchy.
//   log f = -log(pi) - log(scale) - log(1 + z^2),  z = (x - location) / scale
//   d/dx = -2 z / (scale (1 + z^2)),  d/dlocation = -d/dx,
//   d/dscale = (2 z^2 / (1 + z^2) - 1) / scale
#ifndef LOCKSTEP_DISTRIBUTIONS_CAUCHY_HPP
#define LOCKSTEP_DISTRIBUTIONS_CAUCHY_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::cauchy> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double s = p[1];
    if (!(s > 0)) return dist_nan(dx, dp, n_params);
    const double z = (x - p[0]) / s, q = 1 + z * z;
    *dx = -2 * z / (s * q);
    dp[0] = -*dx;
    dp[1] = (2 * z * z / q - 1) / s;
    return -ls_log_pi - log(s) - log1p(z * z);
  }
  // Prepared (dist.hpp): 1 / scale and log(scale) once per chain, the
  // location free to vary by element; log1p(z^2) by the straight-line
  // ls_log1p_unit below 1 and ls_log above, so that the loop vectorises.
  struct Prepared {
    double inv_s, log_norm, bad;  // log_norm = -log(pi) - log(scale)
  };
  LS_HD_INLINE static Prepared prepare(const double* p) {
    const double s = p[1];
    return Prepared{1 / s, -ls_log_pi - ls_log(s), nan_unless(s > 0)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double z = (x - location) * q.inv_s, w = z * z, u = 1 + w;
    const double l = w <= 1 ? ls_log1p_unit(w) : ls_log(u);
    *dx = -2 * z * q.inv_s / u + q.bad;
    dp[0] = 2 * z * q.inv_s / u + q.bad;
    dp[1] = (2 * w / u - 1) * q.inv_s + q.bad;
    return q.log_norm - l + q.bad;
  }
  // F = 1/2 + atan(z)/pi, f(z) = 1 / (pi (1 + z^2)).
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double s = p[1];
    if (ls_isinf(x)) {
      dp[0] = dp[1] = 0;
      return x > 0 ? 1 : 0;
    }
    const double z = (x - p[0]) / s, f = 1 / (ls_pi * (1 + z * z));
    dp[0] = -f / s;
    dp[1] = -f * z / s;
    return 0.5 + atan(z) / ls_pi;
  }
  // 1 - F = atan(1/z)/pi for z > 0, which keeps its precision far out.
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    const double F = cdf(x, p, dp);
    for (int k = 0; k < n_params; ++k) dp[k] = -dp[k];
    const double z = (x - p[0]) / p[1];
    if (ls_isinf(x) || z <= 0) return 1 - F;
    return atan(1 / z) / ls_pi;
  }
};

}  // namespace lockstep

#endif
