// laplace(mu, sigma), extraDistr's dlaplace(x, mu, sigma).
//   log f = -log(2 sigma) - |z|,  z = (x - mu) / sigma;
//   d/dx = -sign(z) / sigma,  d/dmu = sign(z) / sigma,  d/dsigma = (|z| - 1) / sigma
#ifndef LOCKSTEP_DISTRIBUTIONS_LAPLACE_HPP
#define LOCKSTEP_DISTRIBUTIONS_LAPLACE_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::laplace> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double s = p[1];
    if (!(s > 0)) return dist_nan(dx, dp, n_params);
    const double z = (x - p[0]) / s, sign = z > 0 ? 1.0 : (z < 0 ? -1.0 : 0.0), az = fabs(z);
    *dx = -sign / s;
    dp[0] = sign / s;
    dp[1] = (az - 1) / s;
    return -log(2 * s) - az;
  }
  // Prepared (dist.hpp): 1 / scale and log(2 scale) once per chain, the
  // location free to vary by element.
  struct Prepared {
    double inv_s, log_2s, bad;
  };
  LS_HD_INLINE static Prepared prepare(const double* p) {
    const double s = p[1];
    return Prepared{1 / s, ls_log(2 * s), nan_unless(s > 0)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double z = (x - location) * q.inv_s, az = fabs(z);
    const double sign = z > 0 ? 1.0 : (z < 0 ? -1.0 : 0.0);
    *dx = -sign * q.inv_s + q.bad;
    dp[0] = sign * q.inv_s + q.bad;
    dp[1] = (az - 1) * q.inv_s + q.bad;
    return -q.log_2s - az + q.bad;
  }
  // F = exp(z) / 2 below mu, 1 - exp(-z) / 2 above; dF/dmu = -f,
  // dF/dsigma = -f z with f = exp(-|z|) / (2 sigma).
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double s = p[1];
    if (ls_isinf(x)) {
      dp[0] = dp[1] = 0;
      return x > 0 ? 1 : 0;
    }
    const double z = (x - p[0]) / s, h = 0.5 * exp(-fabs(z));
    dp[0] = -h / s;
    dp[1] = -h * z / s;
    return z < 0 ? h : 1 - h;
  }
  // by symmetry, F at -z
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    const double F = cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (ls_isinf(x)) return 1 - F;
    const double z = (x - p[0]) / p[1], h = 0.5 * exp(-fabs(z));
    return z > 0 ? h : 1 - h;
  }
};

}  // namespace lockstep

#endif
