// logistic(location, scale), R's dlogis / plogis.
//   log f = -|z| - log(scale) - 2 log(1 + exp(-|z|)),  z = (x - location) / scale
//   (symmetric in z, so finite for any z);
//   d/dx = -tanh(z / 2) / scale,  d/dlocation = -d/dx,
//   d/dscale = (z tanh(z / 2) - 1) / scale
#ifndef LOCKSTEP_DISTRIBUTIONS_LOGISTIC_HPP
#define LOCKSTEP_DISTRIBUTIONS_LOGISTIC_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::logistic> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double s = p[1];
    if (!(s > 0)) return dist_nan(dx, dp, n_params);
    const double z = (x - p[0]) / s, az = fabs(z), t = tanh(0.5 * z);
    *dx = -t / s;
    dp[0] = t / s;
    dp[1] = (z * t - 1) / s;
    return -az - log(s) - 2 * log1p_nonneg(exp(-az));
  }
  // Prepared (dist.hpp): 1 / scale and log(scale) once per chain, the
  // location free to vary by element; tanh(z / 2) = (1 - e) / (1 + e) and
  // log1p(e) from e = exp(-|z|) by the straight-line functions of
  // math/elementary.hpp, so that the element loop vectorises.
  struct Prepared {
    double inv_s, log_s, bad;
  };
  LS_HD_INLINE static Prepared prepare(const double* p) {
    const double s = p[1];
    return Prepared{1 / s, ls_log(s), nan_unless(s > 0)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double z = (x - location) * q.inv_s, az = fabs(z), e = ls_exp_nonpos(-az);
    const double th = (1 - e) / (1 + e), t = z < 0 ? -th : th;
    *dx = -t * q.inv_s + q.bad;
    dp[0] = t * q.inv_s + q.bad;
    dp[1] = (z * t - 1) * q.inv_s + q.bad;
    return -az - q.log_s - 2 * ls_log1p_unit(e) + q.bad;
  }
  // F = plogis(z) = 1 / (1 + exp(-z)); dF/dlocation = -f / scale,
  // dF/dscale = -f z / scale with f = exp(-|z|) / (1 + exp(-|z|))^2.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double s = p[1];
    if (ls_isinf(x)) {
      dp[0] = dp[1] = 0;
      return x > 0 ? 1 : 0;
    }
    const double z = (x - p[0]) / s, e = exp(-fabs(z)), f = e / ((1 + e) * (1 + e));
    dp[0] = -f / s;
    dp[1] = -f * z / s;
    return z >= 0 ? 1 / (1 + e) : e / (1 + e);
  }
  // by symmetry, F at -z
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    const double F = cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (ls_isinf(x)) return 1 - F;
    const double z = (x - p[0]) / p[1], e = exp(-fabs(z));
    return z <= 0 ? 1 / (1 + e) : e / (1 + e);
  }
};

}  // namespace lockstep

#endif
