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
