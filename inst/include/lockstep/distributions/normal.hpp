// normal(mean, sd), R's dnorm / pnorm.
//   log f = -log(sqrt(2 pi)) - log(sd) - z^2 / 2,  z = (x - mean) / sd
//   d/dx = -z / sd,  d/dmean = z / sd,  d/dsd = (z^2 - 1) / sd
// sd <= 0 gives NaN, as dnorm does for sd < 0.
#ifndef LOCKSTEP_DISTRIBUTIONS_NORMAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_NORMAL_HPP

#include "../math/elementary.hpp"
#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::normal> {
  static constexpr int n_params = 2;
  // Invalid sd (<= 0, or NaN) makes every output NaN through arithmetic, not
  // a branch, so that element loops over this density vectorise.
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double sd = p[1] > 0 ? p[1] : ls_nan();
    const double inv_sd = 1 / sd, z = (x - p[0]) * inv_sd;
    *dx = -z * inv_sd;
    dp[0] = z * inv_sd;
    dp[1] = (z * z - 1) * inv_sd;
    return -ls_log_sqrt_2pi - ls_log(sd) - 0.5 * z * z;
  }
  // The mean is the location (dist.hpp): a regression's likelihood, with a
  // mean per element and one sd per chain, prepares too. log_norm is computed
  // as lpdf() computes it (ls_log, inlined into the same element loop), so
  // that a prepared term's values are lpdf()'s to the bit.
  struct Prepared {
    double inv_sd, log_norm;  // log_norm = -log(sqrt(2 pi)) - log(sd); NaN if sd <= 0
  };
  LS_HD_INLINE static Prepared prepare(const double* p) {
    const double sd = p[1] > 0 ? p[1] : ls_nan();
    return Prepared{1 / sd, -ls_log_sqrt_2pi - ls_log(sd)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double z = (x - location) * q.inv_sd;
    *dx = -z * q.inv_sd;
    dp[0] = z * q.inv_sd;
    dp[1] = (z * z - 1) * q.inv_sd;
    return q.log_norm - 0.5 * z * z;
  }
  // F(x) and dF/dp; location-scale: dF/dmean = -f(z)/sd, dF/dsd = -f(z) z/sd.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double sd = p[1];
    if (ls_isinf(x)) {
      dp[0] = dp[1] = 0;
      return x > 0 ? 1 : 0;
    }
    const double z = (x - p[0]) / sd, f = std_normal_pdf(z);
    dp[0] = -f / sd;
    dp[1] = -f * z / sd;
    return std_normal_cdf(z);
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    const double F = cdf(x, p, dp);
    for (int k = 0; k < n_params; ++k) dp[k] = -dp[k];
    if (ls_isinf(x)) return 1 - F;
    return std_normal_cdf(-(x - p[0]) / p[1]);
  }
};

}  // namespace lockstep

#endif
